"""Start the real `flopsheet serve` on a free loopback port for a test, and stop it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"  # only ever loopback


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start_serve(tmp_path_factory, *options, env: dict | None = None, scheme="http", verify=True, timeout=30):
    """(process, client) once the server answers; the client's `log` is the server's output file."""
    port = free_port()
    full_env = dict(os.environ, XLWINGS_LICENSE_KEY="noncommercial",
                    XDG_CACHE_HOME=str(tmp_path_factory.mktemp("cache")), **(env or {}))
    full_env.pop("XLWINGS_FUNCTIONS_NAMESPACE", None)
    log = tmp_path_factory.mktemp("log") / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "udfs", "serve", "--host", HOST, "--port", str(port), *options],
                                cwd=ROOT, env=full_env, stdout=out, stderr=subprocess.STDOUT)
    client = httpx.Client(base_url=f"{scheme}://{HOST}:{port}", timeout=timeout, verify=verify)
    client.log = log
    deadline = time.monotonic() + 90
    while True:
        try:
            if client.get("/manifest").status_code == 200:
                return proc, client
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            pytest.fail(f"flopsheet serve did not start:\n{log.read_text()}")
        time.sleep(0.3)


def stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
