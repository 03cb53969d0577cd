"""Render a registry function's native formula (`Function.formula`, with `{arg}` placeholders)
for given cell references. The formula text lives next to the worksheet function in
`udfs/api/functions/*.py`; this module only substitutes references, so the templates hold no
second copy of the math.

Placeholders:
- `{arg}`: the argument's cell reference (parenthesised), or its literal default. For an
  argument that takes a GPU name or a number (`gpu_or_bandwidth`, `gpu_or_capacity`), a
  parameter count or a model name (`params`, `model_or_params`), the reference becomes a
  catalog lookup: `INDEX(CatGpu_bandwidth_tbs,MATCH(B3,CatGpuNames,0))` when the caller marks
  the cell as a name (`Name("B3")`), or `IF(ISNUMBER(B3),B3,INDEX(...))` for a plain cell.
- `{arg.column}`: a catalog column of the GPU, model or precision the argument names.
- `{gpu.tensor_tflops(precision)}`: the GPU's dense tensor peak in that number format
  (a two-way lookup in the GPU catalog's tensor block).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import udfs
from udfs.catalogs import catalog
from udfs.api.registry import Arg, Function

PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*)(?:\(([A-Za-z_]\w*)\))?)?\}")

# catalog lookups: which named ranges hold what (catalog_sheets.py defines these names)
GPU_NAMES, MODEL_NAMES, PRECISION_NAMES = "CatGpuNames", "CatModelNames", "CatPrecisionNames"
GPU_TENSOR, TENSOR_PRECISIONS = "CatGpuTensor", "CatTensorPrecisions"
IMPLIED_COLUMN = {"gpu_or_bandwidth": "bandwidth_tbs", "gpu_or_capacity": "memory_gib", "params": "params",
                  "model_or_params": "active_params", "model_or_count": "params"}      # by argument type


def gpu_range(column: str) -> str:
    return f"CatGpu_{column}"


def model_range(column: str) -> str:
    return f"CatModel_{column}"


def precision_range(column: str) -> str:
    return f"CatPrecision_{column}"


@dataclass(frozen=True)
class Name:
    """A cell that holds a catalog name (GPU or model): look it up, no number fallback."""
    ref: str


@dataclass(frozen=True)
class Num:
    """A cell known to hold a number (no catalog-name lookup)."""
    ref: str


@dataclass(frozen=True)
class Lit:
    """A constant written into the formula."""
    value: object


def literal(value) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) and not float(value).is_integer() else str(int(value))
    text = str(value).replace('"', '""')
    return f'"{text}"'


def _table_of(arg: Arg) -> str:
    if arg.type in ("gpu", "gpu_or_bandwidth", "gpu_or_capacity"):
        return "gpu"
    if arg.type in ("model", "params", "model_or_params", "model_or_count"):
        return "model"
    if arg.type == "precision":
        return "precision"
    raise ValueError(f"argument {arg.name} ({arg.type}) names no catalog row")


def _lookup(table: str, column: str, ref: str) -> str:
    rng, names = {"gpu": (gpu_range(column), GPU_NAMES), "model": (model_range(column), MODEL_NAMES),
                  "precision": (precision_range(column), PRECISION_NAMES)}[table]
    return f"INDEX({rng},MATCH({ref},{names},0))"


def _default_literal(arg: Arg):
    """The default of an omitted argument as a formula constant (catalog names resolved)."""
    value = arg.default
    if arg.type == "gpu":
        value = catalog.gpu(value).name
    elif arg.type == "precision":
        value = catalog.precision_row(value).name
    return Lit(value)


def render(function: str | Function, **refs) -> str:
    """The native formula of `function` (without the leading '='), each `{arg}` replaced
    by the reference given for it (a cell reference string, `Name(ref)`, `Lit(value)`),
    omitted arguments by their defaults."""
    fn = udfs.get(function) if isinstance(function, str) else function
    if not fn.formula:
        raise ValueError(f"{fn.name} has no native formula in the registry")
    args = {a.name: a for a in fn.args}
    unknown = set(refs) - set(args)
    if unknown:
        raise ValueError(f"{fn.name} has no argument(s) {', '.join(sorted(unknown))}")

    def ref_of(name: str):
        if name not in args:
            raise ValueError(f"{fn.name}'s formula names unknown argument {name}")
        given = refs.get(name)
        if given is None:
            if not args[name].optional:
                raise ValueError(f"{fn.name}: argument {name} is required")
            given = _default_literal(args[name])
        return given

    def text_of(given) -> str:
        if isinstance(given, Lit):
            return literal(given.value)
        if isinstance(given, (Name, Num)):
            return given.ref
        return f"({given})" if not re.fullmatch(r"[\w!$'. ]+", given) else given

    def substitute(m: re.Match) -> str:
        name, column, inner = m.group(1), m.group(2), m.group(3)
        arg = args.get(name)
        given = ref_of(name)
        if column == "tensor_tflops":            # two-way lookup: GPU row x precision column
            p = text_of(ref_of(inner))
            return (f"INDEX({GPU_TENSOR},MATCH({text_of(given)},{GPU_NAMES},0),"
                    f"MATCH({p},{TENSOR_PRECISIONS},0))")
        if column is None and arg.type in IMPLIED_COLUMN:
            column = IMPLIED_COLUMN[arg.type]
            if isinstance(given, Num) or (isinstance(given, Lit) and not isinstance(given.value, str)):
                return text_of(given)
            look = _lookup(_table_of(arg), column, text_of(given))
            if isinstance(given, (Name, Lit)):
                return look
            ref = text_of(given)
            return f"IF(ISNUMBER({ref}),{ref},{look})"
        if column is not None:
            return _lookup(_table_of(arg), column, text_of(given))
        return text_of(given)

    return PLACEHOLDER.sub(substitute, fn.formula)


def classic_call(function: str | Function, **refs) -> str:
    """The same quantity through the add-in: `GPU_MEMORY(B3,...)` (no leading '=')."""
    fn = udfs.get(function) if isinstance(function, str) else function
    last = max((i for i, a in enumerate(fn.args) if refs.get(a.name) is not None), default=-1)
    parts = []
    for a in fn.args[:last + 1]:
        given = refs.get(a.name)
        if given is None:
            parts.append(literal(a.default) if a.default not in (None, "") else "")
        elif isinstance(given, Lit):
            parts.append(literal(given.value))
        elif isinstance(given, (Name, Num)):
            parts.append(given.ref)
        else:
            parts.append(given)
    return f"{fn.name}({','.join(parts)})"
