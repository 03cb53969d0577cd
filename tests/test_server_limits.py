"""Issue 14 on the real xlwings Server (`flopsheet serve` on 127.0.0.1, called over HTTP the
way Excel's custom-functions runtime calls it): one big request must not stall other users,
an oversized request is a short 413, a bad input is neither an ERROR log line nor logged
with its value, a 400-digit number is a clear #NUM!, and a one-row range works."""

from __future__ import annotations

import importlib.util
import json
import threading
import time

import pytest

httpx = pytest.importorskip("httpx")
if importlib.util.find_spec("xlwings_server") is None:
    pytest.skip("xlwings-server is not installed (pip install 'flopsheet[server]')", allow_module_level=True)

from .serve import start_serve, stop  # noqa: E402

pytestmark = pytest.mark.server
LIMIT_MB = 6          # set with --max-request-mb: a 600x1000 range (~4 MB of JSON) fits, 50 MB does not
MARKER = "SECRETCELLVALUE"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc, client = start_serve(tmp_path_factory, "--max-request-mb", str(LIMIT_MB), "--log-level", "info",
                               timeout=120)
    yield client
    client.close()
    stop(proc)


def payload(name, args):
    return {"func_name": name.lower(), "args": args, "caller_address": "[Book1.xlsx]Sheet1!A1",
            "client": "Office.js", "version": "0.37.8", "runtime": "1.4", "culture_info_name": "en-US",
            "date_format": "M/d/yyyy", "session_id": "limits"}


def call(server, name, args, **kw):
    return server.post("/xlwings/custom-functions-call", json=payload(name, args), **kw)


def test_small_calls_are_answered_while_a_big_array_computes(server):
    """A 600x1000 range (several seconds of work) in flight: small calls still come back,
    and before it does (its work runs in a worker thread, not in the event loop)."""
    big = [[[12.5] * 1000 for _ in range(600)], [[10]]]
    finished = {}

    def run_big():
        r = call(server, "JOB_COST", big)
        finished["big"] = time.monotonic()
        finished["status"] = r.status_code
        finished["cells"] = len(r.json()["result"]) * len(r.json()["result"][0]) if r.status_code == 200 else r.text

    worker = threading.Thread(target=run_big)
    worker.start()
    time.sleep(1.0)             # the big request is uploaded and computing
    small = []
    for _ in range(5):
        r = call(server, "JOB_COST", [[[2.0]], [[3.0]]])
        assert r.status_code == 200 and r.json()["result"] == [[6.0]], r.text
        small.append(time.monotonic())
    worker.join(120)
    assert finished.get("status") == 200, finished
    assert finished["cells"] == 600_000
    assert max(small) < finished["big"], "the small calls waited for the big one"


def test_an_oversized_request_is_a_short_413(server):
    body = json.dumps(payload("JOB_COST", [[["1" * 1000] * 1000 for _ in range(60)], [[1]]]))  # ~60 MB
    assert len(body) > LIMIT_MB * 1024 * 1024
    r = server.post("/xlwings/custom-functions-call", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 413, r.status_code
    assert len(r.text) < 500 and "MB" in r.text and "1111111111" not in r.text
    log = server.log.read_text()
    assert "1111111111" not in log and max(map(len, log.splitlines() or [""])) < 2000


def test_an_oversized_chunked_request_without_a_length_is_refused(server):
    chunk = b" " * (1024 * 1024)

    def body():
        yield b'{"func_name": "job_cost", "args": [[[1]], [[1]]], "pad": "'
        for _ in range(LIMIT_MB + 2):
            yield chunk
        yield b'"}'

    r = server.post("/xlwings/custom-functions-call", content=body(), headers={"content-type": "application/json"})
    assert r.status_code == 413, r.status_code


def test_a_request_under_the_limit_is_served(server):
    r = call(server, "JOB_COST", [[[1.5] * 1000 for _ in range(30)], [[2]]])
    assert r.status_code == 200 and r.json()["result"][29][999] == 3.0


def test_bad_inputs_are_not_errors_in_the_log_and_not_logged_with_their_values(server):
    for args in ([[[MARKER]], [[10]]], [[[MARKER * 5000]], [[10]]], [[[-1.0]], [[MARKER]]]):
        r = call(server, "JOB_COST", args)
        assert r.status_code == 400, r.text
        assert len(r.text) <= 500, len(r.text)
    time.sleep(0.5)
    log = server.log.read_text()
    assert MARKER not in log, [line for line in log.splitlines() if MARKER in line][:3]
    assert not [line for line in log.splitlines() if "ERROR" in line], log[-2000:]
    assert "JOB_COST" in log or "job_cost" in log     # still logged, below ERROR


def test_a_400_digit_number_is_a_clear_num_error_without_a_traceback(server):
    body = json.dumps(payload("JOB_COST", [[[1]], [[1]]])).replace("[[1]], [[1]]", "[[1]], [[" + "9" * 400 + "]]")
    r = server.post("/xlwings/custom-functions-call", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.text.startswith("#NUM!"), r.text
    assert "9" * 60 not in r.text
    assert "Traceback" not in server.log.read_text()


def test_a_single_row_range_works_like_a_column(server):
    """Office.js sends a 1xN range as [[a, b]]; xlwings hands it over as the flat list [a, b]."""
    row = call(server, "JOB_COST", [[[2.0, 3.0]], [[10]]])
    column = call(server, "JOB_COST", [[[2.0], [3.0]], [[10]]])
    assert column.status_code == 200 and column.json()["result"] == [[20.0], [30.0]], column.text
    assert row.status_code == 200 and row.json()["result"] == [[20.0, 30.0]], row.text


def test_non_finite_results_are_400_not_500(server):
    r = call(server, "GPU_MEMORY_TABLE", [[[1e308]]])
    assert r.status_code == 400 and r.text.startswith("#NUM!"), (r.status_code, r.text)
