"""Numbers as people type them: the one parser and the one range check behind every number
that enters (worksheet cells, CLI arguments, scenario files, private catalog cells, imported
Hugging Face configs).

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

`read(name, value)` turns a cell value (a number, or text under the rule) into a finite float;
`Range` says which values an input allows (> 0, <= 1, whole, ...) and `check` applies one.
Every front end and every file reader calls these, so the same text is the same number, or
the same refusal with the same message, wherever it is typed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .errors import FlopsheetError, num_error, quote, value_error

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


def read(name: str, value) -> float:
    """A finite number from a cell value: a number, or text under the rule (#VALUE! for text,
    TRUE/FALSE, lists and other types; #NUM! for NaN, infinities and numbers too large)."""
    if isinstance(value, bool):
        raise value_error(f"{name} must be a number, not {str(value).upper()}")
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # a whole number of hundreds of digits (JSON and TOML allow them)
            raise num_error(f"{name} is too large to compute with, got {quote(value)}") from None
    elif isinstance(value, str):
        number = parse(name, value)
    else:
        raise value_error(f"{name} must be a number, got {_kind(value)}")
    if not math.isfinite(number):
        raise num_error(f"{name} must be a finite number, got {quote(value)}")
    return number


def _kind(value) -> str:
    return {list: "a list", tuple: "a list", dict: "a table", type(None): "nothing"}.get(type(value),
                                                                                   type(value).__name__)


@dataclass(frozen=True)
class Range:
    """The values a number may take: bounds (each inclusive unless `*_open`) and whether it
    must be whole. One check and one wording for arguments, scenario fields and catalog cells."""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    whole: bool = False

    def text(self) -> str:
        """"> 0 and <= 1" (empty when any number goes)."""
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        return " and ".join(parts)

    def why(self, x: float) -> str | None:
        """Why `x` is not allowed ("must be > 0", "must be a whole number"), or None."""
        if self.whole and not float(x).is_integer():
            return "must be a whole number"
        low_bad = self.low is not None and (x < self.low or (self.low_open and x == self.low))
        high_bad = self.high is not None and (x > self.high or (self.high_open and x == self.high))
        return f"must be {self.text()}" if low_bad or high_bad else None


ANY = Range()


def check(name: str, value, allowed: Range = ANY) -> float:
    """`read` then the range: the number, or a #NUM! naming the input, the range and the value."""
    number = read(name, value)
    why = allowed.why(number)
    if why:
        raise num_error(f"{name} {why}, got {number:g}")
    return int(number) if allowed.whole else number


def reason(name: str, value, allowed: Range = ANY) -> str | None:
    """Why `value` is refused (the message `check` raises, without the error code), or None.
    File readers (private catalogs) collect these instead of stopping at the first."""
    try:
        check(name, value, allowed)
    except FlopsheetError as e:
        return e.message
    return None
