"""One home per default: udfs/physics/defaults.py (and udfs/physics/calibration.py's fitted constants) define each
once with its basis; docs/constants.md is generated from them; and no argument, parameter or
field a default stands behind is given a literal default anywhere else in the engine, the
workbook writers or the add-ins."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from udfs.physics import calibration, defaults

ROOT = Path(__file__).resolve().parents[1]
HOMES = {ROOT / h for h in defaults.HOMES}
NAMES = {name: constant for constant, names in defaults.ARGUMENTS.items() for name in names}
# (file, name) pairs that are another quantity under the same name, each with why
OTHER_QUANTITY = {("sweep.py", "efficiency"): "a scale on the engine's speed in sensitivity runs (1 = as computed)"}
SCANNED = sorted(p for package in ("udfs", "workbook_templates", "addin") for p in (ROOT / package).rglob("*.py")
                 if p not in HOMES)


def _number(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _named(node) -> str | None:
    """The name a call declares (its first positional text, as Arg("context", ...) or
    _number(w, "headroom", ...)), if it is one a default stands behind."""
    texts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return next((t for t in texts if t in NAMES), None)


def second_definitions(path: Path) -> list[str]:
    """Literal defaults for a name in defaults.ARGUMENTS: parameter defaults, dataclass fields,
    `default=` of a declaration naming it, `x.name or <number>`, and a workbook input given the
    number its declared argument already defaults to."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            found += [f"{path.name}:{d.lineno} parameter {arg.arg} = {d.value}" for arg, d in pairs
                      if arg.arg in NAMES and _number(d)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in NAMES \
                and node.value is not None and _number(node.value):
            found.append(f"{path.name}:{node.lineno} field {node.target.id} = {node.value.value}")
        elif isinstance(node, ast.Call):
            name = _named(node)
            for kw in node.keywords:
                if kw.arg == "default" and name and _number(kw.value):
                    found.append(f"{path.name}:{node.lineno} {name} default={kw.value.value}")
            found += _input_duplicates(path, node)
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and _number(node.values[-1]):
            first = node.values[0]
            attr = first.attr if isinstance(first, ast.Attribute) else getattr(first, "id", None)
            if attr in NAMES:
                found.append(f"{path.name}:{node.lineno} {attr} or {node.values[-1].value}")
    return found


def _input_duplicates(path: Path, node: ast.Call) -> list[str]:
    """A workbook input cell `book.input(ws, row, label, name, <number>, ..., arg=X)` whose
    declared argument X is one a default stands behind: the cell's value must be X.default."""
    arg = next((kw.value for kw in node.keywords if kw.arg == "arg"), None)
    if arg is None or len(node.args) < 5 or not _number(node.args[4]) or ROOT / "udfs" in path.parents:
        return []
    module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
    try:
        declared = eval(compile(ast.Expression(arg), str(path), "eval"), vars(module))  # our own source
    except NameError:          # a local name: not resolvable here
        return []
    if getattr(declared, "name", None) in NAMES:
        return [f"{path.name}:{node.lineno} input for {declared.name} = {node.args[4].value}"]
    return []


def test_no_default_is_defined_twice():
    found = [hit for path in SCANNED for hit in second_definitions(path)
             if not any(hit.startswith(f"{file}:") and f" {name} " in hit for file, name in OTHER_QUANTITY)]
    assert not found, "defaults written outside udfs/physics/defaults.py (use the constant):\n" + "\n".join(found)


@pytest.mark.parametrize("source,hit", [
    ("def f(prompt_tokens=1024): pass", "parameter prompt_tokens"),
    ("class S:\n    headroom: float = 0.2", "field headroom"),
    ("A = Arg('context', 'number', 'x', default=4096)", "context default=4096"),
    ("x = sc.output_tokens_per_request or 256", "output_tokens_per_request or 256"),
    ("sc.h = _number(w, 'headroom', 'workload', default=0.2)", "headroom default=0.2"),
])
def test_the_scan_finds_each_kind_of_second_definition(tmp_path, source, hit):
    probe = tmp_path / "probe.py"
    probe.write_text(source, encoding="utf-8")
    assert any(hit in h for h in second_definitions(probe))
    probe.write_text(source.replace("1024", "defaults.PROMPT_TOKENS").replace("0.2", "defaults.HEADROOM")
                     .replace("4096", "defaults.CONTEXT_TOKENS").replace("256", "defaults.OUTPUT_TOKENS"),
                     encoding="utf-8")
    assert not second_definitions(probe)


def test_every_constant_has_a_basis_and_every_named_one_exists():
    for home in HOMES:
        listed = defaults.constants(home)
        assert listed, home
        for name, _, basis in listed:
            assert len(basis) > 20, f"{home.name}: {name} has no basis comment"
    known = {name for home in HOMES for name, _, _ in defaults.constants(home)}
    assert set(defaults.ARGUMENTS) <= known


def test_the_constants_page_is_current():
    assert (ROOT / "docs" / "constants.md").read_text(encoding="utf-8") == defaults.page(), \
        "docs/constants.md is stale: run `python -m udfs.physics.defaults --write`"


def test_every_optional_argument_defaults_to_its_constant():
    from udfs.api import registry
    checked = 0
    for f in registry.functions().values():
        for a in f.args:
            if a.name in NAMES and a.optional and a.default not in ("", None):
                constant = NAMES[a.name]
                value = getattr(defaults, constant, None) if hasattr(defaults, constant) else getattr(calibration, constant)
                assert a.default == value, f"{f.name}({a.name}) defaults to {a.default}, not {constant} = {value}"
                checked += 1
    assert checked >= 20
