"""Numbers as people type them: the one parser behind every numeric argument (CLI,
Excel cells holding text, scenario files).

The rule (docs/inputs.md repeats it for users):

- digits with an optional decimal point (`12000`, `0.7`, `.5`) or scientific notation (`7e9`);
- commas only as thousands separators, in groups of three (`12,000`, `1,234,567.5`);
  `12,00` or `1,5` is refused: it reads as a decimal comma in much of the world;
- an optional `$` (or `US$`) before the digits: amounts are US dollars; another currency
  sign (€, £, ¥, ...) is refused rather than silently taken as dollars;
- an optional scale after the digits, any case: `k` thousand, `M` million, `B`/`bn` billion,
  `T` trillion (`1.5k`, `8B`, `2T`, `$1.2M`); or `%`, a percentage as a fraction (`70%` = 0.7);
- an optional sign (`-5`, `+5`, `-$5`, `$-5`, the typographic minus `−5`) or accounting
  parentheses (`(5)`, `($5)`) for a negative;
- spaces around the whole and between the number and its scale or `%` (`2 T`, `70 %`);
  nothing else: `7B parameters`, `12 000` or `70% of peak` are refused, never half-read.

A scale and `%` together, `$` with `%`, or an exponent with a scale are refused too.
"""

from __future__ import annotations

import math
import re

from .errors import num_error, quote, value_error

RULE = ("numbers may be written 12000, 12,000, $12,000, 70% (= 0.7), 1.5k, 8B, 2T, 7e9, "
        "-5 or (5)")

SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "bn": 1e9, "t": 1e12, "%": 0.01}
_MINUS = "-\u2212"
_OTHER_CURRENCY = "€£¥₹₩₽¢"

_NUMBER = re.compile(r"""
    ^\s*
    (?P<open>\(\s*)?
    (?P<sign>[-+\u2212]\s*)?
    (?P<currency>(?:US)?\$\s*)?
    (?P<sign2>[-+\u2212]\s*)?
    (?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)
    (?P<exponent>[eE][-+]?\d+)?
    \s*(?P<scale>%|bn|[kmbt])?
    (?P<close>\s*\))?
    \s*$""", re.IGNORECASE | re.VERBOSE)


def try_parse(text: str) -> float | None:
    """The number `text` writes under the rule above, or None when it writes none."""
    m = _NUMBER.match(text)
    if m is None or bool(m["open"]) != bool(m["close"]):
        return None
    if (m["sign"] and m["sign2"]) or (m["open"] and (m["sign"] or m["sign2"])):
        return None
    scale = (m["scale"] or "").lower()
    if (scale == "%" and m["currency"]) or (scale and m["exponent"]):
        return None
    number = float(m["digits"].replace(",", "") + (m["exponent"] or "")) * SCALE[scale]
    negative = m["open"] or (m["sign"] or m["sign2"] or "+").strip() in _MINUS
    number = -number if negative else number
    return number if math.isfinite(number) else None


def overflows(text: str) -> bool:
    """True when `text` is written as a number but is too large for a float (400 digits)."""
    m = _NUMBER.match(text)
    if m is None or try_parse(text) is not None:
        return False
    return not math.isfinite(float(m["digits"].replace(",", "") + (m["exponent"] or "")))


def parse(name: str, text: str) -> float:
    """`try_parse`, or a #VALUE! error naming the argument and the rule (#NUM! for a number
    too large to compute with)."""
    number = try_parse(text)
    if number is not None:
        return number
    if overflows(text):
        raise num_error(f"{name} is too large to compute with, got {quote(text)}")
    if any(sign in text for sign in _OTHER_CURRENCY):
        raise value_error(f"{name} must be an amount in US dollars, got {quote(text)}: convert it to $ first")
    raise value_error(f"{name} must be a number, got text {quote(text)} ({RULE})")
