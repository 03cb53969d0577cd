"""Layers only look down: the engine (udfs) imports no front end and only the standard library;
the workbook writers do not import the add-ins; front ends reach the CLI through entry points."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from udfs.cli import COMMAND_GROUP
from udfs.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
FRONT_ENDS = {"addin", "workbook_templates"}
ENGINE_COMMANDS = {"udfs.cli.catalog_cli"}      # standard-library commands of the engine, plugged in the same way
# pandas only where a table is handed to a caller who wants a DataFrame (imported inside to_frame)
PANDAS_ALLOWED = {"udfs/api/table.py"}


def imported_packages(path: Path, package: str | None = None) -> set[str]:
    """Top-level packages a module imports, anywhere in it (inside functions too);
    relative imports count as its own package."""
    package = package or path.relative_to(ROOT).parts[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(package if node.level else node.module.split(".")[0])
    return names


def modules(package: str) -> list[Path]:
    found = sorted((ROOT / package).rglob("*.py"))
    assert found, package
    return found


@pytest.mark.parametrize("path", modules("udfs"), ids=lambda p: str(p.relative_to(ROOT)))
def test_engine_imports_no_front_end_and_only_the_standard_library(path):
    rel = path.relative_to(ROOT).as_posix()
    names = imported_packages(path)
    assert not names & FRONT_ENDS, f"{rel} imports a front end: {sorted(names & FRONT_ENDS)}"
    allowed = set(sys.stdlib_module_names) | {"udfs"} | ({"pandas"} if rel in PANDAS_ALLOWED else set())
    assert names <= allowed, f"{rel} imports outside the standard library: {sorted(names - allowed)}"


@pytest.mark.parametrize("path", modules("workbook_templates"), ids=lambda p: str(p.relative_to(ROOT)))
def test_workbook_writers_do_not_import_the_addins(path):
    assert "addin" not in imported_packages(path)


def test_the_check_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "probe.py"
    module.write_text("from . import catalog\ndef f():\n    from workbook_templates import report\n"
                      "    import addin.cli, json\n")
    assert imported_packages(module, "udfs") == FRONT_ENDS | {"udfs", "json"}


def test_front_ends_are_registered_entry_points():
    eps = {ep.name: ep for ep in entry_points(group=COMMAND_GROUP)}
    assert {"templates", "report", "addin"} <= set(eps)
    for ep in eps.values():
        assert (ep.value.split(".")[0] in FRONT_ENDS or ep.module in ENGINE_COMMANDS) and callable(ep.load())


def test_a_broken_front_end_does_not_break_the_engine(tmp_path, monkeypatch, capsys):
    """A real (installed-looking) distribution whose entry point cannot be imported."""
    dist = tmp_path / "broken_front_end-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-front-end\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{COMMAND_GROUP}]\nbroken = no_such_module_xyz:add\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "broken" in {ep.name for ep in entry_points(group=COMMAND_GROUP)}
    assert cli_main(["calc", "GPU_SPEC", "H100", "memory_gb"]) == 0
    assert capsys.readouterr().out.strip() == "80"
    assert cli_main(["broken"]) == 2
    err = capsys.readouterr().err
    assert "could not be loaded" in err and "no_such_module_xyz" in err
    with pytest.raises(SystemExit) as e:               # the other front ends still work
        cli_main(["templates", "--help"])
    assert e.value.code == 0


def test_calc_does_not_import_the_front_ends():
    code = ("import sys; from udfs.cli import main; rc = main(['calc', 'GPU_SPEC', 'H100', 'memory_gb']); "
            "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in ('addin', 'workbook_templates', "
            "'openpyxl', 'pandas', 'xlwings')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.splitlines()[-1] == "0 []"
