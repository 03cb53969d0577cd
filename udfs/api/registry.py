"""The one registry of worksheet functions.

Each worksheet function is declared once, with `@worksheet(...)`: its Excel name, help,
result unit, category and typed arguments (default, unit, allowed range, help). The CLI,
the xlwings add-ins (classic, Lite, Server), the workbook templates and the reports are
all generated from `REGISTRY`; there is no second list of functions anywhere.

`call(name, *args)` coerces raw cell values by the declared types, applies defaults to
blanks, checks ranges, and runs the engine. Each argument is parsed once, here, into what
the engine works on: a catalog row (GPU, model, precision), a number, or for the
`..._or_...` types a row or a number. `call_array` is the array form: any range
argument (a 2-D list) gives a same-shaped result, with an Excel error string in a cell
whose inputs are bad.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Callable, Sequence

from .. import numbers
from ..catalogs import catalog, engines
from . import coerce, guard, kinds
from ..errors import FlopsheetError, num_error, quote, value_error

REQUIRED = object()

# The closed set of argument types: each has one coercer below (checked at import), and a
# declaration naming any other type fails when its module is imported.
ARG_TYPES = ("number", "integer", "count", "params", "text", "name", "bool", "choice", "gpu", "model", "precision", "engine",
             "model_or_params", "model_or_count", "gpu_or_tflops", "gpu_or_bandwidth", "gpu_or_capacity", "list")


@dataclass(frozen=True)
class Arg:
    name: str
    type: str                      # one of ARG_TYPES
    help: str
    unit: str = ""
    default: Any = REQUIRED
    choices: tuple[str, ...] = ()
    min: float | None = None       # lowest allowed value
    min_open: bool = False         # True: the minimum itself is not allowed (> rather than >=)
    max: float | None = None
    max_open: bool = False

    def __post_init__(self):
        if self.type not in ARG_TYPES:
            raise ValueError(f"argument {self.name}: unknown type {self.type!r}; one of {', '.join(ARG_TYPES)}")

    @property
    def optional(self) -> bool:
        return self.default is not REQUIRED

    @property
    def allowed(self) -> numbers.Range:
        """The argument's range in the one range check (numbers.Range)."""
        return numbers.Range(self.min, self.max, self.min_open, self.max_open, whole=self.type == "integer")

    def range_text(self) -> str:
        return numbers.Range(self.min, self.max, self.min_open, self.max_open).text()

    def describe(self) -> str:
        """One line of help: what, unit, allowed values, default."""
        text = self.help
        if self.unit:
            text += f" [{self.unit}]"
        if self.choices:
            text += f" One of: {', '.join(self.choices)}."
        elif self.range_text():
            text += f" Must be {self.range_text()}."
        if self.optional and self.default is not None and self.default != "":
            text += f" Default {self.default}."
        return text


@dataclass(frozen=True)
class Function:
    name: str
    impl: Callable[..., Any]
    help: str
    unit: str
    category: str
    args: tuple[Arg, ...]
    returns: str = "number"        # number, text, bool, table
    examples: tuple[tuple[tuple, Any], ...] = field(default=())
    formula: str = ""              # native-formula form for the workbook templates ({arg} placeholders)
    kind: str = "text"             # the result's kind, one of kinds.KINDS: what the output guard checks

    @property
    def vectorizable(self) -> bool:
        return self.returns != "table"

    def signature(self) -> str:
        shown = [a.name if not a.optional else f"[{a.name}]" for a in self.args]
        return f"{self.name}({', '.join(shown)})"

    def to_dict(self) -> dict:
        return {
            "name": self.name, "help": self.help, "unit": self.unit, "category": self.category,
            "returns": self.returns, "kind": self.kind, "signature": self.signature(),
            "args": [{"name": a.name, "type": a.type, "help": a.help, "unit": a.unit,
                      "optional": a.optional, "default": None if not a.optional else a.default,
                      "choices": list(a.choices), "range": a.range_text(),
                      "description": a.describe()} for a in self.args],
            "examples": [{"args": list(args), "result": result} for args, result in self.examples],
        }


REGISTRY: dict[str, Function] = {}


def worksheet(name: str, help: str, unit: str, category: str, args: list[Arg],
              returns: str = "number", examples: Sequence[tuple[tuple, Any]] = (), formula: str = "", *, kind: str):
    """Declare a worksheet function; the decorated engine call receives coerced values. `kind`
    (money, memory, rate, count, time, fraction, ...: kinds.KINDS) is what the output guard checks."""
    def register(impl):
        if name in REGISTRY:
            raise ValueError(f"worksheet function {name} declared twice")
        REGISTRY[name] = Function(name, impl, help, unit, category, tuple(args), returns,
                                  tuple(examples), formula, kinds.declared(kind, name))
        return impl
    return register


def functions() -> dict[str, Function]:
    """Every registered function (importing the declaration modules on first use)."""
    from . import functions as _declarations  # noqa: F401  (registers on import)
    return REGISTRY


def get(name: str) -> Function:
    fns = functions()
    fn = fns.get(name.strip().upper())
    if fn is None:
        import difflib
        close = difflib.get_close_matches(name.upper()[:100], list(fns), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise FlopsheetError(f"unknown function {quote(name)}{hint}", "#NAME?")
    return fn


# ---------------------------------------------------------------- coercion by type
def _in_range(arg: Arg, x):
    return numbers.check(arg.name, x, arg.allowed)


def _gpu_or_figure(arg: Arg, value, attribute: str | None):
    """A GPU name or a bare figure: the figure as a number (range-checked), or for a name
    the catalog GPU's `attribute` (the Gpu row itself when `attribute` is None)."""
    if isinstance(value, str) and not coerce.is_number_text(value):
        gpu = coerce.to_gpu(arg.name, value)
        if attribute is None:
            return gpu
        return _in_range(arg, gpu.need(attribute, arg.name))
    return _in_range(arg, coerce.to_number(arg.name, value))


def _model_or_params(arg: Arg, value):
    """A model (catalog name, MODEL_DEFINE spec) or a parameter count (float, "70B" accepted)."""
    if isinstance(value, str) and not coerce.is_count(value):
        return coerce.to_model(arg.name, value, counts=False)
    return _in_range(arg, coerce.to_count(arg.name, value))


_COERCERS: dict[str, Callable[[Arg, Any], Any]] = {
    "number": lambda a, v: _in_range(a, coerce.to_number(a.name, v)),
    "integer": lambda a, v: _integer(a, v),
    "count": lambda a, v: _in_range(a, coerce.to_count(a.name, v)),
    "params": lambda a, v: _in_range(a, coerce.to_params(a.name, v)),
    "text": lambda a, v: coerce.to_text(a.name, v),
    "name": lambda a, v: coerce.to_name(a.name, v),
    "bool": lambda a, v: coerce.to_bool(a.name, v),
    "choice": lambda a, v: coerce.to_choice(a.name, v, a.choices),
    "gpu": lambda a, v: coerce.to_gpu(a.name, v),
    "model": lambda a, v: coerce.to_model(a.name, v),
    "precision": lambda a, v: catalog.precision_row(coerce.to_text(a.name, v)),
    "engine": lambda a, v: engines.engine(coerce.to_text(a.name, v)),
    "model_or_params": _model_or_params,
    "model_or_count": _model_or_params,        # the same values; a formula reads a name's total parameters
    "gpu_or_tflops": lambda a, v: _gpu_or_figure(a, v, None),
    "gpu_or_bandwidth": lambda a, v: _gpu_or_figure(a, v, "bandwidth_tbs"),
    "gpu_or_capacity": lambda a, v: _gpu_or_figure(a, v, "memory_gib"),   # usable GiB
    "list": lambda a, v: v,
}
if set(_COERCERS) != set(ARG_TYPES):
    raise RuntimeError("every argument type needs exactly one coercer")


def _integer(arg: Arg, value) -> int:
    return int(numbers.check(arg.name, value, arg.allowed))


def _cells(value):
    """Every cell of a range (nested lists) or the one value."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _cells(item)
    else:
        yield value


def coerce_arg(arg: Arg, value):
    for cell in _cells(value) if arg.type == "list" else (value,):   # an error value passed in is passed on
        coerce.check_error_value(arg.name, cell)
    if coerce.is_blank(value) or (arg.type == "list" and not value):
        if not arg.optional:
            raise value_error(f"{arg.name} is required: {arg.help}")
        value = arg.default
        if coerce.is_blank(value):
            return value
    return _COERCERS[arg.type](arg, value)


def call(name: str | Function, *args, **kwargs):
    """Evaluate one worksheet function on scalar arguments (positional, then by name)."""
    fn = get(name) if isinstance(name, str) else name
    if len(args) > len(fn.args):
        raise value_error(f"{fn.name} takes at most {len(fn.args)} arguments, got {len(args)}")
    values = {}
    for i, arg in enumerate(fn.args):
        raw = args[i] if i < len(args) else kwargs.pop(arg.name, None)
        values[arg.name] = coerce_arg(arg, raw)
    if kwargs:
        raise value_error(f"{fn.name} has no argument {', '.join(kwargs)}")
    try:
        result = fn.impl(**values)
    except (ZeroDivisionError, OverflowError):
        raise num_error(f"{fn.name}: the inputs are too large or too small to compute with") from None
    # every front end gets results through here: no inf/NaN, no negative money, memory, rate, ...
    return guard.check_result(fn.name, fn.kind, result, values.get("field"))


# ---------------------------------------------------------------- array form
# The most cells one array call may produce: a 1000x1000 result. Bigger ranges are refused
# before any work (a 1x2000 row by a 2000x1 column asked for 4 million cells: 30 s of work and a
# 37 MB answer); a front end may set its own (flopsheet serve --max-cells).
MAX_RESULT_CELLS = 1_000_000


def _shape(arg: Arg, value) -> tuple[int, int] | None:
    """(rows, columns) of a range argument, None for one value; a ragged range (rows of
    different lengths, a row that is a single value, an empty row) is a #VALUE! naming it."""
    if not (isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple))):
        return None
    cols = len(value[0])
    bad = next((row for row in value if not isinstance(row, (list, tuple)) or len(row) != cols or not row), None)
    if bad is not None or cols == 0:
        got = f"a row of {len(bad)} cells" if isinstance(bad, (list, tuple)) else "a row that is not a list"
        raise value_error(f"{arg.name} is not a rectangular range: its first row has {cols} cells, {got}")
    return len(value), cols


def _cell(value, shape, r, c):
    rows, cols = shape
    if rows == 1 and cols == 1:
        return value[0][0]
    if rows == 1:
        return value[0][c]
    if cols == 1:
        return value[r][0]
    return value[r][c]


def call_array(name: str | Function, *args, max_cells: int | None = None, budget_s: float | None = None):
    """Array form: 2-D list arguments broadcast like Excel (same shape, a row, a column or
    one cell); the result has the broadcast shape, with an error string where a cell fails.
    At most `max_cells` result cells (default MAX_RESULT_CELLS), refused before any work; with
    `budget_s`, a call still computing after that many seconds stops with a #VALUE!."""
    fn = get(name) if isinstance(name, str) else name
    shapes = [(i, shape) for i, a in enumerate(args)
              if i < len(fn.args) and fn.args[i].type != "list" and (shape := _shape(fn.args[i], a)) is not None]
    if not shapes or not fn.vectorizable:
        return call(fn, *args)
    rows = max(s[0] for _, s in shapes)
    cols = max(s[1] for _, s in shapes)
    for i, (r, c) in shapes:
        if r not in (1, rows) or c not in (1, cols):
            raise value_error(f"{fn.args[i].name} is {r}x{c}, which does not fit a {rows}x{cols} result")
    limit = MAX_RESULT_CELLS if max_cells is None else max_cells
    if rows * cols > limit:
        raise value_error(f"{fn.name}: the ranges make a {rows:,}x{cols:,} result ({rows * cols:,} cells), over the "
                          f"limit of {limit:,} cells per call; use smaller ranges")
    deadline = None if budget_s is None else time.monotonic() + budget_s
    arrays = dict(shapes)
    out = []
    for r in range(rows):
        if deadline is not None and time.monotonic() > deadline:
            raise value_error(f"{fn.name}: stopped after the time limit of {budget_s:g} s per call "
                              f"({r * cols:,} of {rows * cols:,} cells done); use smaller ranges")
        row = []
        for c in range(cols):
            cell_args = [(_cell(a, arrays[i], r, c) if i in arrays else a) for i, a in enumerate(args)]
            try:
                row.append(call(fn, *cell_args))
            except FlopsheetError as e:
                row.append(e.code)
        out.append(row)
    return out
