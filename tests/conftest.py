import pytest

import udfs
from udfs.catalogs import catalog


@pytest.fixture(scope="session")
def registry():
    return udfs.functions()


@pytest.fixture(scope="session")
def accuracy_report():
    """The accuracy report over the shipped measured rows (benchmarks/accuracy.run), made once a test run: several
    modules check it, and making it takes minutes (every fitted constant re-chosen within each fold)."""
    from benchmarks import accuracy
    return accuracy.run(accuracy.default_measured_dir())


@pytest.fixture
def private_catalog(tmp_path, monkeypatch):
    """A private catalog folder (FLOPSHEET_CATALOG): `use(file, text)` writes one of its CSV files and
    reloads the catalog; the packaged catalog is back after the test."""
    def use(file: str, text: str):
        (tmp_path / file).write_text(text, encoding="utf-8")
        monkeypatch.setenv("FLOPSHEET_CATALOG", str(tmp_path))
        catalog.reload()
    yield use
    monkeypatch.delenv("FLOPSHEET_CATALOG", raising=False)
    catalog.reload()
