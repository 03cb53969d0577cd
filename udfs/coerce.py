"""Turning what a cell (or the command line) holds into the value a function needs.

One coercer per argument type. Blank means "use the default"; an Excel error value
passed in is passed on; text in a number cell, NaN and infinities become clear errors.
"""

from __future__ import annotations

import math
import re

from . import catalog, spec
from .errors import EXCEL_ERRORS, FlopsheetError, num_error, value_error

_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "bn": 1e9, "t": 1e12}
_COUNT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*(k|m|b|bn|t)?\s*$", re.I)


def is_blank(value) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def check_error_value(name: str, value) -> None:
    if isinstance(value, str) and value.strip().upper() in EXCEL_ERRORS:
        raise FlopsheetError(f"{name} is the error value {value.strip().upper()}", value.strip().upper())


def _float(name: str, text: str) -> float | None:
    try:
        return float(text.replace(",", "").replace("_", "").strip())
    except ValueError:
        return None


def to_number(name: str, value) -> float:
    if isinstance(value, bool):
        raise value_error(f"{name} must be a number, not {str(value).upper()}")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        number = _float(name, value)
        if number is None:
            raise value_error(f"{name} must be a number, got text {value!r}")
    else:
        raise value_error(f"{name} must be a number, got {type(value).__name__}")
    if math.isnan(number) or math.isinf(number):
        raise num_error(f"{name} must be a finite number, got {value}")
    return number


def to_count(name: str, value) -> float:
    """A parameter or token count: 7e9, "7B", "1.5T", "350M", "2,000,000"."""
    if isinstance(value, str):
        m = _COUNT.match(value.replace(",", ""))
        if m:
            return float(m.group(1)) * _SUFFIX.get((m.group(2) or "").lower(), 1.0)
    return to_number(name, value)


def is_number_text(text: str) -> bool:
    """True when text reads as a plain number ("3.35", "2,000")."""
    return _float("", text) is not None


def is_count(text: str) -> bool:
    """True when text is a number or a count with a suffix ("7B", "1.5T", "2,000")."""
    return bool(_COUNT.match(text.replace(",", ""))) or is_number_text(text)


def _is_count(value) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    return isinstance(value, str) and is_count(value)


def to_model(name: str, value, counts: bool = True):
    """A model: a MODEL_DEFINE spec, a catalog name or Hugging Face id, or (where `counts`)
    a bare parameter count, which gives a model known only by its size."""
    if counts and _is_count(value):
        params = to_count(name, value)
        if params <= 0:
            raise num_error(f"{name} must be > 0 parameters, got {params:g}")
        return catalog.size_only_model(params)
    text = to_text(name, value)
    return spec.model(text) if spec.is_model_spec(text) else catalog.model(text)


def to_gpu(name: str, value):
    """A GPU: a GPU_DEFINE spec or a catalog name."""
    text = to_text(name, value)
    return spec.gpu(text) if spec.is_gpu_spec(text) else catalog.gpu(text)


def to_params(name: str, value) -> float:
    """A parameter count, or a model (catalog name, MODEL_DEFINE spec) giving its total parameters."""
    if isinstance(value, str) and not is_count(value):
        m = to_model(name, value, counts=False)
        if not m.params:
            raise value_error(f"the catalog has no parameter count for {m.name}")
        return m.params
    return to_count(name, value)


def to_bool(name: str, value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "y", "1", "false", "no", "n", "0"):
        return value.strip().lower() in ("true", "yes", "y", "1")
    raise value_error(f"{name} must be TRUE or FALSE, got {value!r}")


def to_text(name: str, value) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def to_choice(name: str, value, choices: tuple[str, ...]) -> str:
    text = to_text(name, value).lower().replace("_", "-").replace(" ", "-")
    for choice in choices:
        if text == choice.lower().replace("_", "-"):
            return choice
    raise value_error(f"{name} must be one of {', '.join(choices)}; got {value!r}")
