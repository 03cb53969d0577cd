"""The checkers CI runs with the tests: `ruff check` over the repository and `mypy udfs` (the
engine is typed; a figure that may be unknown stays `float | None` until Gpu.need reads it).
Both come with the `test` extra (pyproject.toml), at pinned versions."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(module: str, *args: str) -> subprocess.CompletedProcess:
    if shutil.which(module) is None and subprocess.run([sys.executable, "-m", module, "--version"],
                                                       capture_output=True, check=False).returncode:
        pytest.fail(f"{module} is not installed: pip install -e '.[test]'")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=600)


def test_ruff_check_is_clean():
    done = _run("ruff", "check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_udfs_is_clean():
    done = _run("mypy", "udfs")
    assert done.returncode == 0, done.stdout + done.stderr
