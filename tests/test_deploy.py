"""The team deployment files in docs/deploy/: the systemd unit passes `systemd-analyze
verify` (where systemd is installed) and the commands of the unit and the Containerfile use
options that `flopsheet serve` really accepts. No container engine runs here, so the
Containerfile is checked instruction by instruction, not built."""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "docs" / "deploy"
INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER",
                "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}


def unit_exec_start() -> list[str]:
    text = (DEPLOY / "flopsheet.service").read_text().replace("\\\n", " ")
    line = next(x for x in text.splitlines() if x.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart="))


def containerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    lines = [x for x in (DEPLOY / "Containerfile").read_text().splitlines() if not x.lstrip().startswith("#")]
    joined = "\n".join(lines).replace("\\\n", " ")
    return [(x.split(None, 1)[0], x.split(None, 1)[1] if " " in x.strip() else "")
            for x in joined.splitlines() if x.strip()]


def serve_accepts(args: list[str], tmp_path) -> None:
    """Run `flopsheet serve ARGS` with the certificate paths pointing nowhere: it must get past
    argument parsing (argparse would say "unrecognized arguments") to the file check."""
    args = [a.replace("%d", str(tmp_path / "nowhere")) for a in args]
    env = dict(os.environ, XLWINGS_LICENSE_KEY="noncommercial", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "udfs", *args, "--port", "1", "--workers", "0"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=60)
    assert "unrecognized arguments" not in r.stderr and "invalid" not in r.stderr, r.stderr
    assert r.returncode == 2 and "--workers must be 1 or more" in r.stderr, r.stderr  # stopped by our check


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_unit_verifies(tmp_path):
    # verify also checks that ExecStart's program exists: point it at this environment's flopsheet
    flopsheet = shutil.which("flopsheet", path=str(Path(sys.executable).parent)) or shutil.which("flopsheet")
    assert flopsheet, "the flopsheet console script is not installed"
    unit = tmp_path / "flopsheet.service"
    unit.write_text((DEPLOY / "flopsheet.service").read_text().replace("/opt/flopsheet/venv/bin/flopsheet", flopsheet))
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=120)
    problems = [x for x in r.stderr.splitlines() if "flopsheet.service" in x]
    assert r.returncode == 0 and not problems, r.stderr


def test_systemd_unit_runs_serve_with_accepted_options(tmp_path):
    command = unit_exec_start()
    assert command[0] == "/opt/flopsheet/venv/bin/flopsheet" and command[1] == "serve"
    assert "--ssl-certfile" in command and "--workers" in command
    serve_accepts(command[1:], tmp_path)


def test_containerfile_instructions():
    steps = containerfile()
    assert steps[0][0] == "FROM" and steps[0][1].startswith("python:3.")
    assert all(name in INSTRUCTIONS for name, _ in steps), [n for n, _ in steps if n not in INSTRUCTIONS]
    by_name = {}
    for name, args in steps:
        by_name.setdefault(name, []).append(args)
    assert by_name["USER"] and by_name["USER"][-1] != "root"
    assert "-py3-none-any.whl)[server]" in " ".join(by_name["RUN"])  # the built wheel, with the server extra


def test_containerfile_command_and_health_check(tmp_path):
    steps = dict(containerfile())
    command = json.loads(steps["CMD"])
    assert command[:2] == ["flopsheet", "serve"]
    port = command[command.index("--port") + 1]
    assert steps["EXPOSE"] == port
    health = steps["HEALTHCHECK"]
    assert f"http://127.0.0.1:{port}/health" in health
    json.loads(health.split("CMD", 1)[1])  # exec form: valid JSON
    serve_accepts(command[1:], tmp_path)
