"""Flopsheet: GPU sizing and AI-compute budgeting as worksheet functions.

`udfs.call("GPU_TOKENS_PER_SEC", "H100", 14)` evaluates any registered worksheet function;
`udfs.functions()` lists them. Only the standard library is imported here.
"""

__version__ = "0.1.0"

from .errors import FlopsheetError
from .api.registry import call, call_array, functions, get

__all__ = ["FlopsheetError", "call", "call_array", "functions", "get", "__version__"]
