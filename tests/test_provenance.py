"""Nothing shipped points outside the product: every catalog row cites its public original and
a date, and no file a user or contributor gets mentions the private reference folders."""

import csv
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ["udfs", "addin", "workbook_templates", "docs", "examples", "benchmarks", "scripts",
           "README.md", "CHANGELOG.md", "pyproject.toml"]
OUTSIDE = re.compile(r"\.\./shared|shared/(reference|notes|seeds)|/work/|Flopsheet reference")
DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
CATALOGS = sorted((ROOT / "udfs" / "data").glob("*.csv"))


def shipped_text_files():
    for entry in SHIPPED:
        path = ROOT / entry
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            if "__pycache__" in file.parts or file.suffix in {".png", ".xlsx", ".pdf", ".pyc"}:
                continue
            yield file


def test_the_scan_sees_the_shipped_files():
    names = {f.relative_to(ROOT).as_posix() for f in shipped_text_files()}
    assert {"README.md", "udfs/data/gpus.csv", "benchmarks/accuracy.py", "pyproject.toml"} <= names


@pytest.mark.parametrize("path", list(shipped_text_files()), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_shipped_file_points_outside_the_product(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    hits = [line.strip()[:120] for line in text.splitlines() if OUTSIDE.search(line)]
    assert not hits, hits


@pytest.mark.parametrize("path", CATALOGS, ids=lambda p: p.name)
def test_every_catalog_row_has_a_source_and_an_as_of_date(path):
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows
    for line, row in enumerate(rows, start=2):
        assert row["source"].strip(), f"{path.name}:{line} has no source"
        assert DATE.match(row["as_of"].strip()), f"{path.name}:{line} as_of {row['as_of']!r}"
