"""Compute every formula cell of an openpyxl workbook in pure Python, so the workbooks and
reports can be saved with stored values (previewers, Protected View, pandas and openpyxl
`data_only` show figures, not blanks).

It covers the Excel subset the templates and reports write: arithmetic (+ - * / ^ %, unary
minus), comparisons, `&`, cell and range references across sheets, defined names, array
constants, and the functions in `FUNCTIONS` / `LAZY`. Semantics follow Excel (and LibreOffice,
which the tests compare against): a blank is 0 in arithmetic and "" in text comparisons, text
compares case-insensitively, numbers < text < logicals, errors propagate, ROUNDUP/INT/CEILING
first round to 15 significant digits as both applications do.

A call to a Flopsheet worksheet function (the add-in sheet) gets the value the engine
computes (`udfs.api.registry.call_array`): what Excel with the add-in (Server, Lite) shows, so a
preview of the add-in sheet shows the same figure as the native column beside it. An engine
error becomes its Excel error value; the add-in sheet's
`IFERROR(call, IF(ERROR.TYPE(call)=5, "needs the Flopsheet add-in", "n/a"))` then stores "n/a"
(the engine refused, as the native sheet's "n/a"), while "needs the Flopsheet add-in" (#NAME?,
no add-in) only appears once Excel or LibreOffice recalculates without the add-in. Anything
outside the subset (an unknown function, a circular reference) raises `Unsupported`: a workbook
is never saved with a silently wrong value.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable

from openpyxl.utils.cell import column_index_from_string, get_column_letter

import udfs
from udfs.errors import FlopsheetError


class Unsupported(ValueError):
    """A formula outside the subset this evaluator computes."""


@dataclass(frozen=True)
class Err:
    """An Excel error value (#N/A, #VALUE!, ...)."""
    code: str


@dataclass(frozen=True)
class Range:
    sheet: str
    top: int
    left: int
    bottom: int
    right: int


ERROR_TYPES = {"#NULL!": 1, "#DIV/0!": 2, "#VALUE!": 3, "#REF!": 4, "#NAME?": 5, "#NUM!": 6, "#N/A": 7}
MISSING = object()       # an empty argument: IF(c,,x), GPU_MEMORY(a,,b)

# ---------------------------------------------------------------- tokens
_TOKEN = re.compile(r"""
 (?P<ws>\s+)
|(?P<string>"(?:[^"]|"")*")
|(?P<error>\#(?:NULL!|DIV/0!|VALUE!|REF!|NAME\?|NUM!|N/A))
|(?P<ref>(?:(?:'(?:[^']|'')+'|[A-Za-z_][\w.]*)!)?\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?)(?![\w(.!])
|(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
|(?P<func>[A-Za-z_][\w.]*)\s*\(
|(?P<name>(?:(?:'(?:[^']|'')+'|[A-Za-z_][\w.]*)!)?[A-Za-z_\\][\w.]*)
|(?P<op><>|<=|>=|[-+*/^&=<>%(),;{}])
""", re.VERBOSE)
_CELL = re.compile(r"\$?([A-Za-z]{1,3})\$?(\d+)")


def tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise Unsupported(f"cannot read formula at {text[pos:pos + 20]!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group(m.lastgroup)))
    return out


# ---------------------------------------------------------------- parser (to nested tuples)
_BINARY = {"=": 1, "<>": 1, "<": 1, ">": 1, "<=": 1, ">=": 1, "&": 2, "+": 3, "-": 3, "*": 4, "/": 4, "^": 5}


class _Parser:
    def __init__(self, text: str):
        self.toks = tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "")

    def take(self, value: str | None = None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise Unsupported(f"expected {value!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self):
        node = self.expr(0)
        if self.peek()[0] != "end":
            raise Unsupported(f"unexpected {self.peek()[1]!r}")
        return node

    def expr(self, floor: int):
        left = self.unary()
        while True:
            kind, op = self.peek()
            power = _BINARY.get(op) if kind == "op" else None
            if power is None or power <= floor:
                return left
            self.take()
            left = ("bin", op, left, self.expr(power))

    def unary(self):
        kind, op = self.peek()
        if kind == "op" and op in "+-":
            self.take()
            operand = self.postfix(self.primary())
            operand = ("neg", operand) if op == "-" else operand
            while self.peek()[1] == "^":          # Excel: -2^2 = 4, negation before the power
                self.take()
                operand = ("bin", "^", operand, self.expr(_BINARY["^"]))
            return operand
        return self.postfix(self.primary())

    def postfix(self, node):
        while self.peek() == ("op", "%"):
            self.take()
            node = ("pct", node)
        return node

    def primary(self):
        kind, text = self.take()
        if kind == "number":
            return ("lit", float(text))
        if kind == "string":
            return ("lit", text[1:-1].replace('""', '"'))
        if kind == "error":
            return ("lit", Err(text))
        if kind == "ref":
            return ("ref", text)
        if kind == "name":
            return ("lit", text.upper() == "TRUE") if text.upper() in ("TRUE", "FALSE") else ("name", text)
        if kind == "func":
            return ("call", text.upper(), self.arguments())
        if (kind, text) == ("op", "("):
            node = self.expr(0)
            self.take(")")
            return node
        if (kind, text) == ("op", "{"):
            return self.array()
        raise Unsupported(f"unexpected {text!r}")

    def arguments(self):
        args = []
        if self.peek()[1] == ")":
            self.take()
            return args
        while True:
            args.append(("missing",) if self.peek()[1] in (",", ")") else self.expr(0))
            if self.take()[1] == ")":
                return args

    def array(self):
        rows, row = [], []
        while True:
            node = self.unary()
            if node[0] not in ("lit", "neg"):
                raise Unsupported("an array constant holds constants only")
            row.append(node)
            sep = self.take()[1]
            if sep == ";":
                rows.append(row)
                row = []
            elif sep == "}":
                rows.append(row)
                return ("array", rows)
            elif sep != ",":
                raise Unsupported(f"unexpected {sep!r} in an array constant")


def parse(text: str):
    return _Parser(text[1:] if text.startswith("=") else text).parse()


# ---------------------------------------------------------------- Excel value rules
def approx(x: float) -> float:
    """x rounded to 15 significant digits (what ROUNDUP, INT, CEILING see in Excel/LibreOffice)."""
    return float(f"{x:.15g}") if math.isfinite(x) else x


def first_error(*values):
    return next((v for v in values if isinstance(v, Err)), None)


def to_number(v):
    if isinstance(v, Err):
        return v
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip()) if v.strip() else Err("#VALUE!")
        except ValueError:
            return Err("#VALUE!")
    return Err("#VALUE!")


def to_text(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.15g}"
    return str(v)


def to_bool(v):
    if isinstance(v, (Err, bool)):
        return v
    if v is None:
        return False
    if isinstance(v, (int, float)):
        return v != 0
    if isinstance(v, str) and v.upper() in ("TRUE", "FALSE"):
        return v.upper() == "TRUE"
    return Err("#VALUE!")


_RANK = {float: 0, int: 0, str: 1, bool: 2}


def compare(a, b) -> int:
    """Excel ordering: blank takes the other side's type; numbers < text < logicals."""
    if a is None:
        a = "" if isinstance(b, str) else False if isinstance(b, bool) else 0.0
    if b is None:
        b = "" if isinstance(a, str) else False if isinstance(a, bool) else 0.0
    ra, rb = _RANK[type(a)], _RANK[type(b)]
    if ra != rb:
        return -1 if ra < rb else 1
    if isinstance(a, str):
        a, b = a.lower(), b.lower()
    return (a > b) - (a < b)


_COMPARE = {"=": lambda c: c == 0, "<>": lambda c: c != 0, "<": lambda c: c < 0, ">": lambda c: c > 0,
            "<=": lambda c: c <= 0, ">=": lambda c: c >= 0}


def _power(a, b):
    if a == 0 and b <= 0:
        return Err("#NUM!") if b == 0 else Err("#DIV/0!")
    try:
        result = a ** b
    except OverflowError:
        return Err("#NUM!")
    return Err("#NUM!") if isinstance(result, complex) or not math.isfinite(result) else result


_ARITHMETIC: dict[str, Callable[[float, float], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: Err("#DIV/0!") if b == 0 else a / b, "^": _power,
}


def binary(op: str, a, b):
    if op in _COMPARE:
        return first_error(a, b) or _COMPARE[op](compare(a, b))
    if op == "&":
        return first_error(a, b) or to_text(a) + to_text(b)
    x, y = to_number(a), to_number(b)
    err = first_error(x, y)
    if err:
        return err
    result = _ARITHMETIC[op](x, y)
    return Err("#NUM!") if isinstance(result, float) and not math.isfinite(result) else result


# ---------------------------------------------------------------- functions
def _flatten(args, evaluator):
    """(value, from_range) for every argument, ranges and arrays spread out."""
    for a in args:
        if isinstance(a, Range):
            for row in evaluator.range_values(a):
                for v in row:
                    yield v, True
        elif isinstance(a, list):
            for row in a:
                for v in row:
                    yield v, True
        else:
            yield a, False


def _numbers(args, evaluator):
    """Numbers for MAX/MIN/SUM: in ranges only numbers count; a direct argument is converted."""
    out = []
    for v, in_range in _flatten(args, evaluator):
        if isinstance(v, Err):
            return v
        if in_range:
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out.append(float(v))
        elif v is not MISSING:
            n = to_number(v)
            if isinstance(n, Err):
                return n
            out.append(n)
    return out


def _aggregate(fold):
    def fn(ev, *args):
        nums = _numbers(args, ev)
        return nums if isinstance(nums, Err) else fold(nums)
    return fn


def _small(ev, data, k):
    """SMALL(range, k): the k-th smallest number of the range (text and blanks skipped, as Excel)."""
    nums = _numbers([data], ev)
    k = to_number(ev.scalar(k))
    if isinstance(nums, Err) or isinstance(k, Err):
        return nums if isinstance(nums, Err) else k
    ordered = sorted(nums)
    return ordered[int(k) - 1] if 1 <= int(k) <= len(ordered) else Err("#NUM!")


def _logical(fold):
    def fn(ev, *args):
        values = []
        for v, in_range in _flatten(args, ev):
            if isinstance(v, Err):
                return v
            if in_range and not isinstance(v, (bool, int, float)):
                continue
            b = to_bool(v)
            if isinstance(b, Err):
                return b
            values.append(b)
        return fold(values) if values else Err("#VALUE!")
    return fn


def _numeric(fn):
    """A function of plain numbers: converts scalar arguments, propagates errors."""
    def wrapped(ev, *args):
        nums = [to_number(ev.scalar(a)) for a in args if a is not MISSING]
        return first_error(*nums) or fn(*nums)
    return wrapped


def _npv(ev, rate, *args):
    """Excel's NPV: the values (numbers in ranges, in order) discounted one period each from the first."""
    r = to_number(ev.scalar(rate))
    nums = _numbers(args, ev)
    if isinstance(r, Err) or isinstance(nums, Err):
        return first_error(r, nums)
    if r == -1:
        return Err("#DIV/0!")
    return math.fsum(v / (1 + r) ** (i + 1) for i, v in enumerate(nums))


def _round(x, digits=0.0, mode="half"):
    scale = 10.0 ** int(digits)
    y = approx(abs(x) * scale)
    y = math.ceil(y) if mode == "up" else math.floor(y) if mode == "down" else math.floor(y + 0.5)
    return math.copysign(y / scale, x) if y else 0.0


def _ceiling(x, significance=1.0, mode="up"):
    if significance == 0:
        return 0.0
    if x > 0 > significance:
        return Err("#NUM!")
    q = approx(x / significance)
    return (math.ceil(q) if mode == "up" else math.floor(q)) * significance


def _index(ev, array, row=0.0, column=MISSING):
    values = ev.range_values(array) if isinstance(array, Range) else array if isinstance(array, list) else [[array]]
    row, column = to_number(ev.scalar(row)), to_number(ev.scalar(column if column is not MISSING else 0.0))
    err = first_error(row, column)
    if err:
        return err
    r, c = int(row), int(column)
    if column == 0 and len(values) == 1 and len(values[0]) > 1 and c == 0:
        r, c = 1, r                                   # INDEX(one_row, n): the n-th column
    if r == 0 and len(values) == 1:
        r = 1
    if c == 0 and len(values[0]) == 1:
        c = 1
    if not (1 <= r <= len(values) and 1 <= c <= len(values[0])):
        return Err("#REF!")
    return values[r - 1][c - 1]


def _match(ev, value, lookup, match_type=1.0):
    value = ev.scalar(value)
    if isinstance(value, Err):
        return value
    items = [v for row in (ev.range_values(lookup) if isinstance(lookup, Range) else lookup) for v in row]
    kind = int(to_number(ev.scalar(match_type)) if match_type is not MISSING else 1)
    if kind == 0:
        for i, item in enumerate(items, start=1):
            if item is not None and not isinstance(item, Err) and _same_kind(item, value) \
                    and compare(item, value) == 0:
                return float(i)
        return Err("#N/A")
    best = None
    for i, item in enumerate(items, start=1):      # sorted list: the last item not past the value
        if item is None or isinstance(item, Err) or not _same_kind(item, value):
            continue
        c = compare(item, value)
        if (kind > 0 and c <= 0) or (kind < 0 and c >= 0):
            best = i
        else:
            break
    return float(best) if best else Err("#N/A")


def _same_kind(a, b) -> bool:
    return _RANK[type(a)] == _RANK[type(b)]


def _is(test):
    return lambda ev, v: test(ev.scalar(v))


FUNCTIONS: dict[str, Callable] = {
    "MAX": _aggregate(lambda xs: max(xs, default=0.0)),
    "MIN": _aggregate(lambda xs: min(xs, default=0.0)),
    "SUM": _aggregate(lambda xs: float(math.fsum(xs))),
    "PRODUCT": _aggregate(lambda xs: math.prod(xs) if xs else 0.0),
    "AVERAGE": _aggregate(lambda xs: math.fsum(xs) / len(xs) if xs else Err("#DIV/0!")),
    "AND": _logical(all),
    "OR": _logical(any),
    "NOT": lambda ev, v: (lambda b: b if isinstance(b, Err) else not b)(to_bool(ev.scalar(v))),
    "ISNUMBER": _is(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
    "ISTEXT": _is(lambda v: isinstance(v, str)),
    "ISBLANK": _is(lambda v: v is None),
    "ISERROR": _is(lambda v: isinstance(v, Err)),
    "ISNA": _is(lambda v: v == Err("#N/A")),
    "ROUND": _numeric(lambda x, d=0.0: _round(x, d, "half")),
    "ROUNDUP": _numeric(lambda x, d=0.0: _round(x, d, "up")),
    "ROUNDDOWN": _numeric(lambda x, d=0.0: _round(x, d, "down")),
    "CEILING": _numeric(lambda x, s=1.0: _ceiling(x, s, "up")),
    "FLOOR": _numeric(lambda x, s=1.0: _ceiling(x, s, "down")),
    "INT": _numeric(lambda x: float(math.floor(approx(x)))),
    "ABS": _numeric(abs),
    "SQRT": _numeric(lambda x: Err("#NUM!") if x < 0 else math.sqrt(x)),
    "EXP": _numeric(lambda x: _power(math.e, x)),
    "LN": _numeric(lambda x: Err("#NUM!") if x <= 0 else math.log(x)),
    "LOG10": _numeric(lambda x: Err("#NUM!") if x <= 0 else math.log10(x)),
    "POWER": _numeric(_power),
    "MOD": _numeric(lambda x, d: Err("#DIV/0!") if d == 0 else x - d * math.floor(x / d)),
    "ERROR.TYPE": lambda ev, v: (lambda x: float(ERROR_TYPES[x.code]) if isinstance(x, Err) else Err("#N/A"))(
        ev.scalar(v)),
    "INDEX": _index,
    "MATCH": _match,
    "NPV": _npv,
    "SMALL": _small,
}


def _if(ev, node_args):
    if not 1 <= len(node_args) <= 3:
        raise Unsupported("IF takes 1 to 3 arguments")
    test = to_bool(ev.scalar(ev.eval(node_args[0])))
    if isinstance(test, Err):
        return test
    branch = 1 if test else 2
    if branch >= len(node_args):
        return False
    node = node_args[branch]
    return 0.0 if node == ("missing",) else ev.eval(node)


def _iferror(ev, node_args):
    value = ev.scalar(ev.eval(node_args[0]))
    return ev.eval(node_args[1]) if isinstance(value, Err) else value


def _choose(ev, node_args):
    i = to_number(ev.scalar(ev.eval(node_args[0])))
    if isinstance(i, Err):
        return i
    if not 1 <= int(i) < len(node_args):
        return Err("#VALUE!")
    return ev.eval(node_args[int(i)])


LAZY = {"IF": _if, "IFERROR": _iferror, "CHOOSE": _choose}


# ---------------------------------------------------------------- the workbook
def engine_call(name: str, args: list):
    """A Flopsheet worksheet function as the add-in computes it (errors as Excel errors)."""
    try:
        result = udfs.api.registry.call_array(name, *[None if a is MISSING else a for a in args])
    except FlopsheetError as e:
        return Err(e.code)
    if isinstance(result, list):
        return Err("#VALUE!")       # a spilled table: not in a single stored cell
    return float(result) if isinstance(result, int) and not isinstance(result, bool) else result


class Evaluator:
    """Values of the cells of one openpyxl workbook, computed on demand and remembered."""

    def __init__(self, wb, engine: Callable[[str, list], Any] = engine_call):
        self.wb = wb
        self.engine = engine
        self.addin_names = set(udfs.functions())
        self.values: dict[tuple[str, int, int], Any] = {}
        self.busy: set[tuple[str, int, int]] = set()
        self.sheet = None
        self.parsed: dict[str, Any] = {}

    # ---- cells
    def cell(self, sheet: str, row: int, column: int):
        key = (sheet, row, column)
        if key in self.values:
            return self.values[key]
        if sheet not in self.wb.sheetnames:
            return Err("#REF!")
        cell = self.wb[sheet]._cells.get((row, column))
        if cell is None or cell.data_type != "f":
            value = None if cell is None else cell.value
            if isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            self.values[key] = value
            return value
        if key in self.busy:
            raise Unsupported(f"circular reference at {sheet}!{get_column_letter(column)}{row}")
        self.busy.add(key)
        outer, self.sheet = self.sheet, sheet
        try:
            value = self.formula_value(str(cell.value))
        finally:
            self.sheet = outer
            self.busy.discard(key)
        self.values[key] = value
        return value

    def formula_value(self, text: str):
        """A cell's displayed value: a blank reference shows 0, a multi-cell result its corner."""
        node = self.parsed.get(text)
        if node is None:
            node = self.parsed[text] = parse(text)
        value = self.eval(node)
        if isinstance(value, list):
            value = value[0][0]
        value = self.scalar(value)
        return 0.0 if value is None else value

    def range_values(self, rng: Range) -> list[list]:
        return [[self.cell(rng.sheet, r, c) for c in range(rng.left, rng.right + 1)]
                for r in range(rng.top, rng.bottom + 1)]

    def scalar(self, v):
        """A one-cell range is its value; a larger one in a scalar place is #VALUE!."""
        if isinstance(v, Range):
            if v.top == v.bottom and v.left == v.right:
                return self.cell(v.sheet, v.top, v.left)
            return Err("#VALUE!")
        if isinstance(v, list):
            return v[0][0]
        return v

    # ---- references and names
    def reference(self, text: str) -> Range:
        sheet = self.sheet
        if "!" in text:
            sheet, text = text.rsplit("!", 1)
            sheet = sheet[1:-1].replace("''", "'") if sheet.startswith("'") else sheet
        corners = [_CELL.fullmatch(part).groups() for part in text.split(":")]
        rows = [int(r) for _, r in corners]
        cols = [column_index_from_string(c.upper()) for c, _ in corners]
        return Range(sheet, min(rows), min(cols), max(rows), max(cols))

    def name(self, text: str):
        scope = self.wb[self.sheet].defined_names if self.sheet in self.wb.sheetnames else {}
        defined = scope.get(text) if hasattr(scope, "get") else None
        if defined is None:
            defined = self.wb.defined_names.get(text)
        if defined is None:
            return Err("#NAME?")
        return self.eval(parse(defined.attr_text))

    # ---- expressions
    def eval(self, node):
        kind = node[0]
        if kind == "lit":
            return node[1]
        if kind == "ref":
            return self.reference(node[1])
        if kind == "name":
            return self.name(node[1])
        if kind == "neg":
            x = to_number(self.scalar(self.eval(node[1])))
            return x if isinstance(x, Err) else -x
        if kind == "pct":
            x = to_number(self.scalar(self.eval(node[1])))
            return x if isinstance(x, Err) else x / 100
        if kind == "bin":
            return binary(node[1], self.scalar(self.eval(node[2])), self.scalar(self.eval(node[3])))
        if kind == "array":
            return [[self.eval(item) for item in row] for row in node[1]]
        if kind == "missing":
            return MISSING
        if kind == "call":
            return self.call(node[1], node[2])
        raise Unsupported(f"cannot evaluate {kind}")

    def call(self, name: str, node_args: list):
        if name in LAZY:
            return LAZY[name](self, node_args)
        args = [self.eval(a) for a in node_args]
        if name in FUNCTIONS:
            return FUNCTIONS[name](self, *args)
        if name in self.addin_names:
            values = [a if a is MISSING else self._engine_arg(a) for a in args]
            return first_error(*[v for v in values if not isinstance(v, list)]) or self.engine(name, values)
        raise Unsupported(f"function {name} is not in the evaluator's subset")

    def _engine_arg(self, value):
        if isinstance(value, Range):
            if value.top == value.bottom and value.left == value.right:
                return self.scalar(value)
            return self.range_values(value)
        return value


# Cells are evaluated depth first: the serving calculation's batch search chains SEARCH_STEPS bisection steps,
# each a few cells of a few frames each, to about 900 frames, near Python's default limit of 1,000 (a test
# runner's own frames tip it over). Python 3.11+ runs Python-to-Python calls without the C stack, so a higher
# limit is safe; it is restored afterwards.
RECURSION_LIMIT = 10_000


def evaluate(wb, engine: Callable[[str, list], Any] = engine_call) -> dict[str, dict[str, Any]]:
    """{sheet title: {coordinate: value}} for every formula cell of `wb`."""
    ev = Evaluator(wb, engine)
    out: dict[str, dict[str, Any]] = {}
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))
    try:
        for ws in wb.worksheets:
            for (row, column), cell in sorted(ws._cells.items()):
                if cell.data_type == "f":
                    out.setdefault(ws.title, {})[cell.coordinate] = ev.cell(ws.title, row, column)
    finally:
        sys.setrecursionlimit(limit)
    return out
