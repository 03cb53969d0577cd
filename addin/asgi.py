"""The ASGI app `flopsheet serve` runs: xlwings Server's app behind Flopsheet's limits.

* A request-size limit: a body over FLOPSHEET_MAX_REQUEST_MB (default 8 MB, which holds a
  600x1000 range of numbers, about 4 MB of JSON) is refused with a short 413 before it is
  read, so a 50 MB argument is never parsed, echoed back or logged.
* Bad inputs are not server errors: xlwings Server logs every XlwingsError (a #VALUE! or
  #NUM! cell) at ERROR level with its message, which quotes the cell. Those records are
  lowered to INFO and logged without the message (the function's name and Excel error only).

Importable by name (`addin.asgi:app`) so uvicorn can start several worker processes; the
settings come from the environment that `flopsheet serve` sets before starting uvicorn.
"""

from __future__ import annotations

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


class RequestSizeLimit:
    """ASGI middleware: 413 for a declared Content-Length over the limit, and for a body
    without one (chunked) that grows past it while this middleware reads it."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            return await self._refuse(send)
        if declared is not None:
            return await self.app(scope, receive, send)
        # No declared length (chunked): read the body here, up to the limit, then replay it.
        chunks, seen, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.max_bytes:
                return await self._refuse(send)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, send):
        mb = self.max_bytes / 1024 / 1024
        body = (f"#VALUE!: the request is larger than the server's limit of {mb:g} MB; use a smaller range "
                f"or ask the administrator to raise it (flopsheet serve --max-request-mb)").encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


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
    return RequestSizeLimit(main_app, max_request_bytes())


app = build()
