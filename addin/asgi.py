"""The ASGI app `flopsheet serve` runs: xlwings Server's app behind Flopsheet's limits.

* A request-size limit: a body over FLOPSHEET_MAX_REQUEST_MB (default 8 MB, which holds a
  600x1000 range of numbers, about 4 MB of JSON) is refused with a short 413 and never
  parsed, echoed back or logged; it is read to its end first (up to 64 MB), so that a client
  that sends its whole body before reading gets the 413, not a reset connection.
* A body deadline: the whole body must arrive within FLOPSHEET_BODY_TIMEOUT_S (default 60 s),
  else 408 (the header deadline and the connection cap are in addin/connections.py).
* A malformed call (no function name, arguments that are not a list) is a 400 with a message
  logged in one line, not a 500 with a traceback (addin/server_app.py).
* Bad inputs are not server errors: xlwings Server logs every XlwingsError (a #VALUE! or
  #NUM! cell) at ERROR level with its message, which quotes the cell. Those records are
  lowered to INFO and logged without the message (the function's name and Excel error only).

Importable by name (`addin.asgi:app`) so uvicorn can start several worker processes; the
settings come from the environment that `flopsheet serve` sets before starting uvicorn.
"""

from __future__ import annotations

import asyncio
import logging
import os

MAX_REQUEST_ENV = "FLOPSHEET_MAX_REQUEST_MB"
DEFAULT_MAX_REQUEST_MB = 8.0


def max_request_bytes() -> int:
    try:
        mb = float(os.environ.get(MAX_REQUEST_ENV, DEFAULT_MAX_REQUEST_MB))
    except ValueError:
        mb = DEFAULT_MAX_REQUEST_MB
    return int(mb * 1024 * 1024)


BODY_TIMEOUT_ENV = "FLOPSHEET_BODY_TIMEOUT_S"
DEFAULT_BODY_TIMEOUT_S = 60.0      # 8 MB at 1 Mbit/s; a body still arriving after that is held open
DRAIN_BYTES = 64 * 1024 * 1024     # an oversized body is read (and dropped) up to this much before the 413


def body_timeout_s() -> float:
    try:
        seconds = float(os.environ.get(BODY_TIMEOUT_ENV, DEFAULT_BODY_TIMEOUT_S))
    except ValueError:
        return DEFAULT_BODY_TIMEOUT_S
    return seconds if seconds > 0 else DEFAULT_BODY_TIMEOUT_S


def _answer(status: int, text: str):
    body = text.encode()
    return ({"type": "http.response.start", "status": status,
             "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                         (b"connection", b"close")]},
            {"type": "http.response.body", "body": body})


class RequestSizeLimit:
    """ASGI middleware: the whole body is read here, within a deadline, then replayed to the
    app. Over the size limit (declared or not), the body is still read to its end (up to
    DRAIN_BYTES) and dropped before the 413 goes out: a client that sends its whole body before
    reading, as browsers do, would otherwise see the connection reset, not the answer."""

    def __init__(self, app, max_bytes: int, timeout_s: float = DEFAULT_BODY_TIMEOUT_S):
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_big = declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes)
        if too_big and (not declared.isdigit() or int(declared) > DRAIN_BYTES):
            return await self._send(send, *self._refusal())      # not worth reading: say so and close
        body = await self._read(receive, too_big)
        if body is None:                                          # too slow (or gone): 408 and close
            return await self._send(send, *_answer(408, f"#VALUE!: the request body did not arrive within "
                                                        f"{self.timeout_s:g} s"))
        if body is False:
            return await self._send(send, *self._refusal())
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _read(self, receive, too_big: bool):
        """The body; False when it is over the limit (read to its end and dropped); None when
        the client left or did not finish within the deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        chunks, seen, more = [], 0, True
        while more:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                return None
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            seen += len(chunk)
            too_big = too_big or seen > self.max_bytes
            if too_big and seen > DRAIN_BYTES:
                return False
            if not too_big:
                chunks.append(chunk)
            more = message.get("more_body", False)
        return False if too_big else b"".join(chunks)

    @staticmethod
    async def _send(send, start, body):
        try:
            await send(start)
            await send(body)
        except OSError:  # the client has gone: nothing to tell it
            pass

    def _refusal(self):
        mb = self.max_bytes / 1024 / 1024
        return _answer(413, f"#VALUE!: the request is larger than the server's limit of {mb:g} MB; use a smaller range "
                            f"or ask the administrator to raise it (flopsheet serve --max-request-mb)")


class BadInputsBelowError(logging.Filter):
    """Lower xlwings Server's ERROR record of a bad cell input to INFO, without its text."""

    def filter(self, record: logging.LogRecord) -> bool:
        from .functions import CellError
        if isinstance(record.msg, CellError):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg, record.args = record.msg.log_line, ()
            return logging.getLogger(record.name).isEnabledFor(logging.INFO)
        return True


def build():
    from .server_app import main_app  # xlwings Server's app with /health; reads its settings on import
    logging.getLogger("xlwings_server.main").addFilter(BadInputsBelowError())
    return RequestSizeLimit(main_app, max_request_bytes(), body_timeout_s())


app = build()
