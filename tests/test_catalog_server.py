"""A model and a price added through FLOPSHEET_CATALOG are what the team server answers
with: `flopsheet serve` started on 127.0.0.1 with the variable set, called as Excel does."""

import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
if importlib.util.find_spec("xlwings_server") is None:
    pytest.skip("xlwings-server is not installed (pip install 'flopsheet[server]')", allow_module_level=True)

pytestmark = pytest.mark.server
ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("team-catalog")
    (folder / "models.csv").write_text("name,layers,hidden,heads,kv_heads,ffn,vocab,source,as_of\n"
                                       "Acme Chat 8B,32,4096,32,8,14336,128256,internal,2026-11-01\n")
    (folder / "gpus.csv").write_text("name,price_usd\nH100,24500\n")
    with socket.socket() as s:
        s.bind((HOST, 0))
        port = s.getsockname()[1]
    env = dict(os.environ, XLWINGS_LICENSE_KEY="noncommercial", FLOPSHEET_CATALOG=str(folder),
               XDG_CACHE_HOME=str(tmp_path_factory.mktemp("cache")))
    env.pop("XLWINGS_FUNCTIONS_NAMESPACE", None)
    log = tmp_path_factory.mktemp("log") / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "udfs", "serve", "--host", HOST, "--port", str(port)],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    client = httpx.Client(base_url=f"http://{HOST}:{port}", timeout=30)
    deadline = time.monotonic() + 90
    while True:
        try:
            if client.get("/manifest").status_code == 200:
                break
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"flopsheet serve did not start:\n{log.read_text()}")
        time.sleep(0.3)
    yield client
    client.close()
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def call(server, name, *args):
    body = {"func_name": name.lower(), "args": [[[a]] for a in args], "caller_address": "[Book1.xlsx]Sheet1!A1",
            "client": "Office.js", "version": "0.37.8", "runtime": "1.4", "culture_info_name": "en-US",
            "date_format": "M/d/yyyy", "session_id": "test-session"}
    r = server.post("/xlwings/custom-functions-call", json=body)
    assert r.status_code == 200, r.text
    return r.json()["result"]


def test_private_model_by_name_through_the_server(server):
    assert call(server, "PARAM_COUNT", "Acme Chat 8B") == [[8030261248]]
    assert call(server, "DECODE_TOKENS_PER_SEC", "Acme Chat 8B", "H100") == \
        call(server, "DECODE_TOKENS_PER_SEC", "Llama 3 8B", "H100")


def test_private_price_through_the_server(server):
    assert call(server, "GPU_SPEC", "H100", "price_usd") == [[24500]]


def test_specs_through_the_server(server):
    spec = call(server, "MODEL_DEFINE", 32, 4096, 32, 8, 14336, 128256)[0][0]
    assert spec == "model: 32L d4096 h32/kv8 ffn14336 v128256"
    assert call(server, "PARAM_COUNT", spec) == [[8030261248]]
    gpu = call(server, "GPU_DEFINE", 80, 3.35, 989.5, 1979, "HBM3", "", "", "", "", "", "NVIDIA")[0][0]
    assert call(server, "DECODE_TOKENS_PER_SEC", spec, gpu) == call(server, "DECODE_TOKENS_PER_SEC", "Llama 3 8B", "H100")
