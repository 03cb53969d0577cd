"""The ASGI app that `flopsheet serve` runs: xlwings Server's app plus `GET /health`.

Imported by uvicorn in each worker, after `addin.server.serve` has put the settings in the
environment (xlwings Server reads them when first imported).
"""

from importlib.metadata import PackageNotFoundError, version

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
