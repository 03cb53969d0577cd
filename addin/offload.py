"""The generated custom functions as xlwings Server runs them: off the event loop, in two lanes.

xlwings Server (1.20) calls a plain `def` custom function directly inside its asyncio
event loop (`xlwings.pro.udfs_officejs.custom_functions_call`: `ret = func(*args)`), so a
600x1000 array call would stall every other user's request until it finished. A coroutine
function is awaited instead, so each generated function is wrapped in one that runs the
real work in a worker thread and awaits it: the loop keeps accepting and answering.

Two pools, so that small calls never queue behind big ones: a call whose ranges make at most
SMALL_CELLS result cells (nearly every call a worksheet makes) runs in the small lane; a
bigger one in the big lane, whose few threads bound how much of the machine big calls take.
A call over the cell limit is refused at once, in the small lane (its refusal is no work).
Each call also stops after its time budget (FLOPSHEET_CALL_SECONDS, addin/functions.py).

Only the server uses this module: xlwings Lite (Pyodide) has no threads and the classic
add-in has its own calling convention, so both keep `addin.functions` as it is.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from udfs.api import registry
from udfs.errors import quote

from . import functions

THREADS_ENV = "FLOPSHEET_THREADS"
THREADS = int(os.environ.get(THREADS_ENV, "0") or 0) or min(8, (os.cpu_count() or 1) + 2)
SMALL_CELLS = 1000        # a 1000-cell range: tens of milliseconds of work, a small call
BIG_THREADS = 1           # one big call computes at a time: the others wait, small calls keep the GIL
_SMALL = ThreadPoolExecutor(THREADS, thread_name_prefix="flopsheet-udf")
_BIG = ThreadPoolExecutor(BIG_THREADS, thread_name_prefix="flopsheet-udf-big")
# A long call holds the GIL for the whole switch interval between the loop's turns; a
# shorter one lets the loop answer small calls promptly while a big array computes.
sys.setswitchinterval(min(sys.getswitchinterval(), 0.001))


def result_cells(args) -> int:
    """The cells a call's ranges broadcast to (rows x columns of the largest), cheaply: a
    lane is chosen from it before any work; the registry checks the shapes properly."""
    rows = cols = 1
    for a in args:
        if isinstance(a, list) and a:
            height, width = (len(a), len(a[0])) if isinstance(a[0], list) else (1, len(a))
            rows, cols = max(rows, height), max(cols, width)
    return rows * cols


def lane(args) -> ThreadPoolExecutor:
    cells = result_cells(args)
    return _SMALL if cells <= SMALL_CELLS or cells > functions.MAX_CELLS else _BIG


def off_loop(udf):
    """An async function with `udf`'s name, signature, help and xlwings metadata
    (functools.wraps copies __xlfunc__) that runs `udf` in its lane's worker pool."""
    @functools.wraps(udf)
    async def run_in_pool(*args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(lane(args), functools.partial(udf, *args, **kwargs))
    return run_in_pool


class UnknownFunction(functions.CellError, AttributeError):
    """A call naming no function: a 400 with the registry's message (and close matches), and
    still an AttributeError, so hasattr() and getattr(module, name, default) behave."""


def function_named(name: str):
    """The generated package's module __getattr__ (addin/server.py): xlwings looks the called
    name up with getattr(custom_functions, name); an unknown one is a short 400 logged in one
    line (it was a 500 with a traceback)."""
    if name.startswith("__"):        # import machinery and introspection: the ordinary answer
        raise AttributeError(name)
    try:
        registry.get(name)
        text = f"#NAME?: unknown function {quote(name)}; the add-in sends names in lower case"
    except Exception as exc:  # noqa: BLE001 - FlopsheetError (#NAME? with close matches), or a hostile name
        text = str(exc)
    raise UnknownFunction(text, f"unknown function {quote(name, 60)}")


_FUNCTIONS = {name: off_loop(getattr(functions, name)) for name in functions.__all__}
if set(_FUNCTIONS) & set(globals()):  # would silently replace a helper of this module
    raise RuntimeError(f"worksheet function(s) {sorted(set(_FUNCTIONS) & set(globals()))} clash with addin.offload")
globals().update(_FUNCTIONS)
__all__ = sorted(_FUNCTIONS)
