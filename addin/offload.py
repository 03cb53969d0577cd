"""The generated custom functions as xlwings Server runs them: off the event loop.

xlwings Server (1.20) calls a plain `def` custom function directly inside its asyncio
event loop (`xlwings.pro.udfs_officejs.custom_functions_call`: `ret = func(*args)`), so a
600x1000 array call would stall every other user's request until it finished. A coroutine
function is awaited instead, so each generated function is wrapped in one that runs the
real work in a bounded worker-thread pool and awaits it: the loop keeps accepting and
answering small calls while a big one computes.

Only the server uses this module: xlwings Lite (Pyodide) has no threads and the classic
add-in has its own calling convention, so both keep `addin.functions` as it is.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from . import functions

THREADS_ENV = "FLOPSHEET_THREADS"
THREADS = int(os.environ.get(THREADS_ENV, "0") or 0) or min(8, (os.cpu_count() or 1) + 2)
_POOL = ThreadPoolExecutor(THREADS, thread_name_prefix="flopsheet-udf")
# A long call holds the GIL for the whole switch interval between the loop's turns; a
# shorter one lets the loop answer small calls promptly while a big array computes.
sys.setswitchinterval(min(sys.getswitchinterval(), 0.001))


def off_loop(udf):
    """An async function with `udf`'s name, signature, help and xlwings metadata
    (functools.wraps copies __xlfunc__) that runs `udf` in the worker pool."""
    @functools.wraps(udf)
    async def run_in_pool(*args, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(_POOL, functools.partial(udf, *args, **kwargs))
    return run_in_pool


_FUNCTIONS = {name: off_loop(getattr(functions, name)) for name in functions.__all__}
if set(_FUNCTIONS) & set(globals()):  # would silently replace a helper of this module
    raise RuntimeError(f"worksheet function(s) {sorted(set(_FUNCTIONS) & set(globals()))} clash with addin.offload")
globals().update(_FUNCTIONS)
__all__ = sorted(_FUNCTIONS)
