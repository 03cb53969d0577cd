"""Turning what a cell (or the command line) holds into the value a function needs.

One coercer per argument type. Blank means "use the default"; an Excel error value
passed in is passed on; text in a number cell, NaN and infinities become clear errors.
"""

from __future__ import annotations

from .. import numbers
from ..catalogs import resolve
from ..errors import EXCEL_ERRORS, FlopsheetError, num_error, quote, value_error


def is_blank(value) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def check_error_value(name: str, value) -> None:
    if isinstance(value, str) and value.strip().upper() in EXCEL_ERRORS:
        raise FlopsheetError(f"{name} is the error value {value.strip().upper()}", value.strip().upper())


def to_number(name: str, value) -> float:
    """A finite number: a number, or text under the one rule ($12,000, 70%, 1.5k, 2T)."""
    return numbers.read(name, value)


def to_count(name: str, value) -> float:
    """A parameter or token count: 7e9, "7B", "1.5T", "350M", "2,000,000"."""
    return to_number(name, value)


def is_number_text(text: str) -> bool:
    """True when text writes a number under the one rule ("3.35", "2,000", "$5", "70%", "7B")."""
    return numbers.try_parse(text) is not None or numbers.overflows(text)


is_count = is_number_text       # counts are numbers: the rule already reads "7B", "1.5T"


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
        return resolve.model(params)
    return resolve.model(to_text(name, value))


def to_gpu(name: str, value):
    """A GPU: a GPU_DEFINE spec or a catalog name."""
    return resolve.gpu(to_text(name, value))


def to_params(name: str, value) -> float:
    """A parameter count, or a model (catalog name, MODEL_DEFINE spec) giving its total parameters."""
    if isinstance(value, str) and not is_count(value):
        return to_model(name, value, counts=False).total_params
    return to_count(name, value)


def to_bool(name: str, value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "y", "1", "false", "no", "n", "0"):
        return value.strip().lower() in ("true", "yes", "y", "1")
    raise value_error(f"{name} must be TRUE or FALSE, got {quote(value)}")


def to_text(name: str, value) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def to_name(name: str, value) -> str:
    """A label (a model's or GPU's name, a vendor): text with a letter in it that does not read
    as a number, so that "inf", "NaN" or 1e308 never become part of a spec or a result."""
    text = to_text(name, value)
    try:
        float(text.replace(",", ""))
    except ValueError:
        if any(ch.isalpha() for ch in text):
            return text
    raise value_error(f"{name} must be a name (text with letters), got {quote(text)}")


def to_choice(name: str, value, choices: tuple[str, ...]) -> str:
    text = to_text(name, value).lower().replace("_", "-").replace(" ", "-")
    for choice in choices:
        if text == choice.lower().replace("_", "-"):
            return choice
    raise value_error(f"{name} must be one of {', '.join(choices)}; got {quote(value)}")
