"""The one output guard.

`check_result(name, unit, result)` runs on every worksheet function's result (scalar or
table) before any front end sees it: a number that is not finite, or money or memory that
is negative, becomes a `#NUM!` error with the reason, so no CLI, add-in cell or JSON answer
ever shows inf, NaN or a negative cost. Standard library only: the engine runs it.
"""

from __future__ import annotations

import math
from functools import cache

from ..errors import num_error

# Units (of a function's result, or words in a table's column name) that can never be negative.
NON_NEGATIVE_UNITS = {"$": "money", "usd": "money", "cost": "money", "price": "money",
                      "gb": "memory", "gib": "memory", "vram": "memory"}


@cache                       # a few dozen distinct units and column names: parse each once
def kind_of(unit: str) -> str | None:
    """'money' or 'memory' when a unit (or a table column name) must never be negative."""
    words = unit.lower().replace("/", " ").replace("_", " ").replace("(", " ").split()
    if unit.lstrip().startswith("$"):
        return "money"
    return next((NON_NEGATIVE_UNITS[w] for w in words if w in NON_NEGATIVE_UNITS), None)


def _bad_number(value, kind: str | None) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"is not a finite number ({value}): the inputs are too large or too small to compute with"
    if kind and value < 0:
        return f"would be negative {kind} ({value:.6g}): check the inputs"
    return None


def check_result(name: str, unit: str, result):
    """Return `result` unchanged, or raise #NUM! naming the first bad number and why."""
    header = getattr(result, "header", None)
    if header is not None:
        kinds = [kind_of(unit) or kind_of(str(column)) for column in header]
        for row in result.rows:
            for column, kind, value in zip(header, kinds, row):
                reason = _bad_number(value, kind)
                if reason:
                    raise num_error(f"{name}: {column} {reason}")
        return result
    if isinstance(result, (list, tuple)):
        kind = kind_of(unit)
        for row in result:
            for value in (row if isinstance(row, (list, tuple)) else [row]):
                reason = _bad_number(value, kind)
                if reason:
                    raise num_error(f"{name}: a result {reason}")
        return result
    reason = _bad_number(result, kind_of(unit))
    if reason:
        raise num_error(f"{name}: the result {reason}")
    return result
