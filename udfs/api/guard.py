"""The one output guard.

`check_result(name, kind, result)` runs on every worksheet function's result (scalar or
table) before any front end sees it: a number that is not finite, or a negative number of a
kind that cannot be negative (money, memory, rates, counts, times, ...: `kinds.KINDS`),
becomes a `#NUM!` error with the reason, so no CLI, add-in cell or JSON answer ever shows
inf, NaN or a negative cost. The kind is declared by the function (`@worksheet(kind=...)`);
a table's columns and a catalog field take theirs from `kinds.COLUMNS`. Standard library
only: the engine runs it.
"""

from __future__ import annotations

import math

from ..errors import num_error
from . import kinds


def _bad_number(value, kind: str | None) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"is not a finite number ({value}): the inputs are too large or too small to compute with"
    if kind and kinds.KINDS[kind].non_negative and value < 0:
        return f"would be negative {kind} ({value:.6g}): check the inputs"
    return None


def check_result(name: str, kind: str, result, field: str | None = None):
    """Return `result` unchanged, or raise #NUM! naming the first bad number and why. `field`:
    the catalog field asked for, where the kind is "field" (GPU_SPEC, MODEL_SPEC)."""
    if kind == "field":
        kind = kinds.of_column(str(field or "")) or "text"
    header = getattr(result, "header", None)
    if header is not None:
        column_kinds = [kinds.of_column(str(column)) for column in header]
        for row in result.rows:
            for column, column_kind, value in zip(header, column_kinds, row):
                reason = _bad_number(value, column_kind)
                if reason:
                    raise num_error(f"{name}: {column} {reason}")
        return result
    if isinstance(result, (list, tuple)):
        for row in result:
            for value in (row if isinstance(row, (list, tuple)) else [row]):
                reason = _bad_number(value, kind)
                if reason:
                    raise num_error(f"{name}: a result {reason}")
        return result
    reason = _bad_number(result, kind)
    if reason:
        raise num_error(f"{name}: the result {reason}")
    return result
