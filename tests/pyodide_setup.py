"""Set up real Pyodide under node for the xlwings Lite tests: the pinned `pyodide` npm
package (tests/pyodide/package-lock.json) and the pure wheels of tests/pyodide/wheels.txt,
into an ignored cache folder (default .pyodide/, or $FLOPSHEET_PYODIDE_DIR so that CI can
keep it between runs). Nothing is downloaded when the cache already matches the pins.

    python -m tests.pyodide_setup        (scripts/test runs this; the tests call ensure())
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "pyodide"
ROOT = HERE.parent.parent
# Pyodide 0.29 runs CPython 3.13: the wheels are chosen for that interpreter, not ours.
PYODIDE_PYTHON = "3.13"


class SetupError(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("FLOPSHEET_PYODIDE_DIR") or ROOT / ".pyodide")


def pinned_pyodide() -> str:
    return json.loads((HERE / "package.json").read_text())["dependencies"]["pyodide"]


def pinned_wheels() -> list[str]:
    lines = (HERE / "wheels.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def pyodide_dir() -> Path:
    return cache_dir() / "node_modules" / "pyodide"


def _wheel_file(folder: Path, requirement: str) -> Path | None:
    name, version = requirement.split("==")
    prefix = f"{name.replace('-', '_')}-{version}-"
    return next((p for p in folder.glob("*.whl") if p.name.lower().startswith(prefix.lower())), None)


def wheel_files() -> list[Path]:
    folder = cache_dir() / "wheels"
    found = [_wheel_file(folder, r) for r in pinned_wheels()]
    if None in found:
        raise SetupError(f"wheels missing in {folder}: run python -m tests.pyodide_setup")
    return found


def _run(command: list[str], cwd: Path) -> None:
    r = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SetupError(f"{' '.join(command)} failed in {cwd}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


def _installed_version() -> str | None:
    meta = pyodide_dir() / "package.json"
    return json.loads(meta.read_text()).get("version") if meta.exists() else None


def _install_pyodide(log) -> None:
    if _installed_version() == pinned_pyodide():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SetupError("npm is not installed (node is): install npm to run the Pyodide tests")
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(HERE / name, folder / name)
    log(f"installing pyodide {pinned_pyodide()} from the npm registry into {folder}")
    _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], folder)


def _download_wheels(log) -> None:
    folder = cache_dir() / "wheels"
    missing = [r for r in pinned_wheels() if _wheel_file(folder, r) is None] if folder.exists() else pinned_wheels()
    if not missing:
        return
    log(f"downloading pure wheels from PyPI into {folder}: {', '.join(missing)}")
    _run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
          "--only-binary=:all:", "--python-version", PYODIDE_PYTHON, "--implementation", "py", "--abi", "none",
          "--platform", "any", "-d", str(folder), *missing], ROOT)


def ensure(log=lambda text: print(text, file=sys.stderr)) -> Path:
    """Install what is missing; return the pyodide package folder. Raises SetupError."""
    if shutil.which("node") is None:
        raise SetupError("node is not installed")
    _install_pyodide(log)
    _download_wheels(log)
    return pyodide_dir()


if __name__ == "__main__":
    if shutil.which("node") is None:
        print("node is not installed: the Pyodide (xlwings Lite) tests will be skipped", file=sys.stderr)
        sys.exit(0)
    try:
        print(f"Pyodide ready: {ensure()}", file=sys.stderr)
    except SetupError as e:
        print(f"Pyodide set-up failed: {e}", file=sys.stderr)
        sys.exit(1)
