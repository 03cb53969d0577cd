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


# ---------------------------------------------------------------- issue 23 items 2, 3, 9 (limits of round two)
import socket  # noqa: E402


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """A server with short deadlines, so that the tests of them are quick."""
    proc, client = start_serve(tmp_path_factory, "--max-request-mb", "4", "--header-timeout", "2", "--body-timeout", "3",
                               "--log-level", "info", timeout=60)
    yield client
    client.close()
    stop(proc)


def _address(client):
    return client.base_url.host, client.base_url.port


def test_a_4_million_cell_broadcast_is_refused_at_once_while_small_calls_answer(guarded):
    """A 1x2000 row by a 2000x1 column: 26 KB of request, 4 million cells of work (item 2)."""
    refused = {}

    def big():
        start = time.monotonic()
        r = call(guarded, "JOB_COST", [[[12.5] * 2000], [[float(i)] for i in range(2000)]])
        refused.update(status=r.status_code, text=r.text, seconds=time.monotonic() - start)

    worker = threading.Thread(target=big)
    worker.start()
    small = []
    for _ in range(5):
        start = time.monotonic()
        r = call(guarded, "JOB_COST", [[[2.0]], [[3.0]]])
        small.append(time.monotonic() - start)
        assert r.status_code == 200 and r.json()["result"] == [[6.0]], r.text
    worker.join(60)
    assert refused["status"] == 400 and "1,000,000 cells" in refused["text"], refused
    assert refused["seconds"] < 1.0, refused
    assert sorted(small)[2] < 0.1, small


@pytest.mark.parametrize("args,words", [
    ([[[1, 2], [3]], [[1]]], "not a rectangular range"),
    ([[[1, 2], 3], [[1]]], "not a rectangular range"),
    ([[[]], [[1]]], "must be a number"),
    ([[[1, 2, 3], [4, 5, 6]], [[1, 2], [3, 4], [5, 6]]], "does not fit"),
])
def test_ragged_or_odd_ranges_are_a_clear_400(guarded, args, words):
    r = call(guarded, "JOB_COST", args)
    assert r.status_code == 400 and words in r.text and "unexpectedly" not in r.text, (r.status_code, r.text)


@pytest.mark.parametrize("body,words", [
    ({"func_name": "no_such_function", "args": [[[1]]]}, "unknown function"),
    ({"func_name": "job_cots", "args": [[[1]]]}, "JOB_COST"),
    ({"args": [[[1]]]}, "malformed"),
    ({"func_name": "job_cost", "args": 5}, "malformed"),
])
def test_unknown_or_missing_function_names_are_a_400_logged_in_one_line(guarded, body, words):
    full = {k: v for k, v in payload(body.get("func_name", "x"), body["args"]).items() if k in body or k not in
            ("func_name", "args")}
    r = guarded.post("/xlwings/custom-functions-call", json=full)
    assert r.status_code == 400 and words in r.text and len(r.text) < 500, (r.status_code, r.text)
    time.sleep(0.3)
    log = guarded.log.read_text()
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]


def test_held_connections_do_not_stop_health_and_are_closed_after_the_header_deadline(guarded):
    """300 clients that connect and send half a request line (item 3)."""
    held = []
    try:
        for i in range(300):
            s = socket.create_connection(_address(guarded), timeout=5)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n" if i % 2 else b"POST /xlwin")
            held.append(s)
        start = time.monotonic()
        assert guarded.get("/health").status_code == 200
        assert time.monotonic() - start < 1.0
        time.sleep(3.5)                          # past the 2 s header deadline
        closed = 0
        for s in held:
            s.settimeout(2)
            try:
                closed += s.recv(1) == b""
            except ConnectionResetError:
                closed += 1
            except TimeoutError:         # still open
                pass
        assert closed == len(held)
    finally:
        for s in held:
            s.close()


def test_a_body_that_stops_arriving_is_answered_408(guarded):
    with socket.create_connection(_address(guarded), timeout=10) as s:
        s.sendall(b"POST /xlwings/custom-functions-call HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                  b"content-length: 1000\r\n\r\n{\"func_name\"")
        answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert guarded.get("/health").status_code == 200


def test_a_client_that_sends_a_30_mb_body_before_reading_gets_the_413(guarded):
    """Like a browser: the whole body goes out first, then the answer is read (no reset)."""
    busy = threading.Thread(target=call, args=(guarded, "JOB_COST", [[[1.5] * 1000 for _ in range(300)], [[2]]]))
    busy.start()                                  # and the server is busy meanwhile
    body = b'{"func_name": "job_cost", "args": [[["' + b"1" * (30 * 1024 * 1024) + b'"]]]}'
    with socket.create_connection(_address(guarded), timeout=60) as s:
        s.sendall(b"POST /xlwings/custom-functions-call HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                  b"content-length: %d\r\n\r\n" % len(body) + body)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b")"):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    busy.join(120)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"4 MB" in answer and b"1111111111" not in answer
