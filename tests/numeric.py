"""The tests' tolerance rules, in one place."""

import math


def same_number(actual, expected, rel: float = 1e-9) -> bool:
    """Equal as values a spreadsheet or server would return: text and TRUE/FALSE exactly,
    numbers to `rel` (what different but correct float orders of evaluation give)."""
    if isinstance(expected, (str, bool)) or isinstance(actual, (str, bool)):
        return actual == expected
    return math.isclose(float(actual), float(expected), rel_tol=rel, abs_tol=1e-12)


def shown_decimals(expected: float) -> int:
    text = repr(float(expected))
    if "e" in text:
        mantissa, exp = text.split("e")
        return max(0, len(mantissa.split(".")[1].rstrip("0")) - int(exp))
    return len(text.split(".")[1].rstrip("0")) if "." in text else 0


def matches_shown(actual, expected) -> bool:
    """`expected` is `actual` rounded to the decimals it shows (hand-checked figures are
    written as a person would round them)."""
    if isinstance(expected, (bool, str)) or expected is None:
        return actual == expected
    if isinstance(expected, int) and isinstance(actual, int):
        return actual == expected
    # to the decimals shown, or (for figures written in scientific notation or with
    # trailing zeros) to five significant figures
    tolerance = max(0.5 * 10 ** -shown_decimals(expected), 5e-5 * abs(expected))
    return math.isclose(actual, expected, abs_tol=tolerance)
