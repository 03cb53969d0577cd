"""Private catalogs (FLOPSHEET_CATALOG and the per-user folder): merging, overriding,
and bad rows reported with file, line and column."""

import pytest

from udfs.catalogs import private_catalog as pc

COLUMNS = {"name": "str", "aliases": "tuple[str, ...]", "memory_gb": "float | None", "bandwidth_tbs": "float | None",
           "price_usd": "float | None", "as_of": "str", "launch_year": "int | None"}
PACKAGED = [{"name": "H100 SXM 80GB", "aliases": "H100;H100 SXM", "memory_gb": "80", "bandwidth_tbs": "3.35",
             "price_usd": "30000", "as_of": "2026-11-09", "launch_year": "2022"}]


def _folder(tmp_path, text, table="gpus.csv"):
    (tmp_path / table).write_text(text)
    return tmp_path


def test_new_row_is_added_with_its_origin(tmp_path):
    folder = _folder(tmp_path, "name,memory_gb,bandwidth_tbs\nAcme X1,64,2.5\n")
    rows, problems = pc.merge("gpus.csv", PACKAGED, COLUMNS, [folder])
    assert problems == []
    assert [(r["name"], o) for r, o in rows] == [("H100 SXM 80GB", "packaged"), ("Acme X1", f"{folder}/gpus.csv:2")]
    assert rows[1][0]["price_usd"] == ""          # columns not given are blank


def test_override_by_alias_changes_only_given_cells(tmp_path):
    folder = _folder(tmp_path, "name,price_usd\nH100,25000\n")
    rows, problems = pc.merge("gpus.csv", PACKAGED, COLUMNS, [folder])
    assert problems == [] and len(rows) == 1
    row, origin = rows[0]
    assert (row["name"], row["price_usd"], row["memory_gb"]) == ("H100 SXM 80GB", "25000", "80")
    assert origin.endswith("gpus.csv:2")


def test_later_folder_wins(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    _folder(a, "name,price_usd\nH100,25000\n")
    _folder(b, "name,price_usd\nH100 SXM 80GB,22000\n")
    rows, _ = pc.merge("gpus.csv", PACKAGED, COLUMNS, [a, b])
    assert rows[0][0]["price_usd"] == "22000" and rows[0][1].startswith(str(b))


@pytest.mark.parametrize("text,where,message", [
    ("name,memory_gb,bandwidth_tbs\nX,lots,1\n", "line 2, column B (memory_gb)",
     "memory_gb must be a number, got text 'lots'"),
    ("name,memory_gb,bandwidth_tbs\nX,8,1\nY,-8,1\n", "line 3, column B (memory_gb)", "must be > 0"),
    ("name,memory_gb,bandwidth_tbs,launch_year\nX,8,1,2024.5\n", "line 2, column D (launch_year)", "whole number"),
    ("name,memory_gb,bandwidth_tbs,as_of\nX,8,1,last week\n", "line 2, column D (as_of)", "must be a date"),
    ("name,memroy_gb\nX,8\n", "line 1, column B ('memroy_gb')", "unknown column"),
    ("memory_gb\n8\n", "line 1", "missing column 'name'"),
    ("name,memory_gb\nX,8\n", "line 2, column bandwidth_tbs", "is required for a new row"),
    ("name,memory_gb,bandwidth_tbs\n,8,1\n", "line 2, column A (name)", "is required"),
    ("name,memory_gb,bandwidth_tbs\nX,8,1,extra\n", "line 2, column D", "4 cells but the header has 3"),
])
def test_bad_rows_name_file_line_and_column(tmp_path, text, where, message):
    folder = _folder(tmp_path, text)
    _, problems = pc.merge("gpus.csv", PACKAGED, COLUMNS, [folder])
    shown = [str(p) for p in problems]
    assert any(f"{folder}/gpus.csv {where}" in s and message in s for s in shown), shown


def test_excel_saved_csv_with_bom_and_blank_lines(tmp_path):
    (tmp_path / "gpus.csv").write_bytes("\ufeffname,memory_gb,bandwidth_tbs\r\nAcme X1,64,2.5\r\n,,\r\n".encode())
    rows, problems = pc.merge("gpus.csv", PACKAGED, COLUMNS, [tmp_path])
    assert problems == [] and rows[-1][0]["name"] == "Acme X1"


def test_folders_from_environment_and_user_dir(tmp_path, monkeypatch):
    user = tmp_path / "config"
    (user / "flopsheet" / "catalog").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(pc.ENV, str(tmp_path / "team"))
    found = pc.folders()
    assert found[-1] == tmp_path / "team"
    if pc.sys.platform.startswith("linux"):
        assert found[0] == user / "flopsheet" / "catalog"


def test_cloud_rows_are_identified_by_provider_instance_region_pricing_status_date(tmp_path):
    columns = {c: "str" for c in ("provider", "instance", "gpu", "region", "pricing", "status", "price_date")}
    columns.update(usd_per_hour="float | None")
    packaged = [{"provider": "AWS", "instance": "p5.48xlarge", "gpu": "H100 SXM 80GB", "region": "us-east-1",
                 "pricing": "on-demand", "status": "current", "usd_per_hour": "55.04", "price_date": "2026-07"}]
    packaged.append(dict(packaged[0], status="historical", usd_per_hour="98.32", price_date="2025-05"))
    packaged.append(dict(packaged[1], usd_per_hour="90"))          # same identity twice: both kept
    folder = _folder(tmp_path, "provider,instance,gpu,region,pricing,status,price_date,usd_per_hour\n"
                               "aws,p5.48xlarge,,us-east-1,on-demand,current,2026-07,40\n"
                               "AWS,p5.48xlarge,H100,us-east-1,on-demand,current,2026-10,38\n", "cloud.csv")
    rows, problems = pc.merge("cloud.csv", packaged, columns, [folder])
    assert problems == []
    assert [r["usd_per_hour"] for r, _ in rows] == ["40", "98.32", "90", "38"]


def test_cell_text_writes_like_the_catalog():
    assert [pc.cell_text(v) for v in (None, True, 8.0, 3.35, ("a", "b"), 7)] == ["", "TRUE", "8", "3.35", "a;b", "7"]


def test_a_private_memory_figure_drops_the_packaged_usable_memory(tmp_path, monkeypatch):
    """A private row that restates a catalog GPU's memory without its usable memory is budgeted on the memory it
    gives (the packaged usable_gib belonged to the packaged figure)."""
    from udfs.catalogs import catalog
    folder = tmp_path / "cat"
    folder.mkdir()
    (folder / "gpus.csv").write_text("name,memory_gb\nH100 SXM 80GB,64\n", encoding="utf-8")
    monkeypatch.setenv("FLOPSHEET_CATALOG", str(folder))
    catalog.reload()
    try:
        gpu = catalog.gpu("H100")
        assert (gpu.memory_gb, gpu.usable_gib, gpu.memory_gib) == (64, None, 64)
    finally:
        monkeypatch.delenv("FLOPSHEET_CATALOG")
        catalog.reload()
    assert catalog.gpu("H100").memory_gib == catalog.gpu("H100").usable_gib < 80
