"""The ASGI app that `flopsheet serve` runs: xlwings Server's app plus `GET /health`.

Imported by uvicorn in each worker, after `addin.server.serve` has put the settings in the
environment (xlwings Server reads them when first imported).
"""

import logging
from importlib.metadata import PackageNotFoundError, version

from fastapi.responses import PlainTextResponse

from xlwings_server.config import settings
from xlwings_server.main import app, main_app  # noqa: F401 - main_app is what uvicorn serves

import udfs
from addin import functions


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


HEALTH = {"status": "ok", "flopsheet": udfs.__version__, "functions": len(functions.__all__),
          "xlwings": _version("xlwings"), "xlwings_server": _version("xlwings-server")}


@app.get(f"{settings.app_path}/health")
async def health() -> dict:
    """For load balancers, systemd and container health checks: 200 once the functions load."""
    return HEALTH


CALL_PATH = f"{settings.app_path}/xlwings/custom-functions-call"
_log = logging.getLogger("flopsheet.server")


async def malformed_call(request, exc: Exception):
    """A custom-function call xlwings cannot read (no func_name or args, wrong JSON types):
    every worksheet function catches its own failures, so on the call path these come from
    the request itself. A 400 saying so, one log line; elsewhere, the server's usual 500."""
    if request.url.path != CALL_PATH:
        raise exc
    _log.info("custom-functions-call: malformed request (%s)", type(exc).__name__)
    return PlainTextResponse(f"#VALUE!: a malformed custom-function call ({type(exc).__name__}); Excel's "
                             "add-in sends func_name and args", status_code=400)


for _error in (KeyError, TypeError, IndexError, ValueError, AttributeError):
    app.add_exception_handler(_error, malformed_call)
