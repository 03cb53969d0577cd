"""`flopsheet catalog check` and the catalog loader share one validator and one number rule
(issue 19 item 2, issue 23 item 7): a private file that checks OK loads, and one the loader
refuses is refused by the check with the same message, never a traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from udfs import numbers
from udfs.catalogs import catalog
from udfs.catalogs import private_catalog as pc

ROOT = Path(__file__).resolve().parent.parent
GPU_HEADER = "name,memory_gb,bandwidth_tbs,bf16_tflops,source,as_of\n"


def flopsheet(*args, catalog_dir=None, home):
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(Path(home) / ".config"))
    env.pop("FLOPSHEET_CATALOG", None)
    if catalog_dir is not None:
        env["FLOPSHEET_CATALOG"] = str(catalog_dir)
    return subprocess.run([sys.executable, "-m", "udfs", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def _team(tmp_path, text, table="gpus.csv"):
    folder = tmp_path / "team"
    folder.mkdir(exist_ok=True)
    (folder / table).write_text(text, encoding="utf-8")
    return folder


def _check_and_load(tmp_path, folder, *calc):
    """(catalog check, a calc that reads the catalog), both run for real."""
    check = flopsheet("catalog", "check", folder, home=tmp_path)
    load = flopsheet("calc", *calc, catalog_dir=folder, home=tmp_path)
    for run in (check, load):
        assert "Traceback" not in run.stderr, run.stderr
    return check, load


def _same_refusal(check, load, *words):
    """Both refuse (exit 2) and the loader's message repeats a problem the check printed."""
    assert check.returncode == 2 and load.returncode == 2, (check.stderr, load.stderr)
    problems = [line.removeprefix("error: ") for line in check.stderr.splitlines() if line.startswith("error: ")]
    assert problems and any(p in load.stderr for p in problems), (problems, load.stderr)
    for word in words:
        assert word in check.stderr and word in load.stderr, (word, check.stderr, load.stderr)


# ---------------------------------------------------------------- one number rule
def test_thousands_separator_reads_as_1024_in_check_and_loader(tmp_path):
    folder = _team(tmp_path, GPU_HEADER + 'Big GPU,"1,024",3.0,"1,000",team,2026-01-01\n')
    check, load = _check_and_load(tmp_path, folder, "GPU_SPEC", "Big GPU", "memory_gb")
    assert check.returncode == 0, check.stderr
    assert load.returncode == 0 and float(load.stdout) == 1024, load.stderr


@pytest.mark.parametrize("cell, words", [
    ("lots", ["memory_gb must be a number", "'lots'"]),
    ("12,00", ["memory_gb must be a number", "'12,00'"]),        # a decimal comma is refused, never misread
    ("0", ["memory_gb must be > 0", "got 0"]),
    ("1e308", ["memory_gb must be > 0 and <= 100000", "got 1e+308"]),
    ("nan", ["memory_gb must be a number"]),
    ("-80", ["memory_gb must be > 0"]),
])
def test_a_bad_figure_is_refused_by_check_and_loader_alike(tmp_path, cell, words):
    folder = _team(tmp_path, GPU_HEADER + f'Big GPU,"{cell}",3.0,500,team,2026-01-01\n')
    check, load = _check_and_load(tmp_path, folder, "GPU_SPEC", "H100", "memory_gb")
    _same_refusal(check, load, "gpus.csv line 2, column B (memory_gb)", *words)


@pytest.mark.parametrize("text", ["1,024", "$27,500", "70%", "1.5k", "8B", "7e9", "(5)", "12,00", "1,5", "€5",
                                  "7B parameters", "nan", "inf", "1e999", "", "  "])
def test_cells_arguments_scenarios_and_catalogs_read_numbers_alike(text):
    """The one parser: a worksheet argument, a scenario field and a catalog cell read the same
    text as the same number, or all refuse it."""
    from udfs.api import registry
    from udfs.planning import scenario
    arg = registry.Arg("x", "number", "test")
    try:
        cell = registry.coerce_arg(arg, text) if text.strip() else None
    except Exception as e:  # noqa: BLE001 - the kind of refusal is compared below
        cell = type(e).__name__
    try:
        toml = scenario._number({"x": text}, "x", "t") if text.strip() else None
    except scenario.ScenarioError:
        toml = "FlopsheetError"
    refused = pc.check_cell("test.csv", "x", text, "float | None")     # a column with no range of its own: >= 0
    in_catalog = numbers.try_parse(text) if text.strip() and refused is None else None
    assert toml == cell
    if isinstance(cell, float) and cell >= 0:
        assert in_catalog == cell
    else:
        assert in_catalog is None and (refused is not None or not text.strip())


# ---------------------------------------------------------------- rows that used to load and then fail
def test_a_row_with_too_few_cells_is_refused_by_both(tmp_path):
    folder = _team(tmp_path, GPU_HEADER + "Short GPU,80,3.0\n")
    check, load = _check_and_load(tmp_path, folder, "GPU_SPEC", "Short GPU", "memory_gb")
    _same_refusal(check, load, "gpus.csv line 2", "3 cells but the header has 6 columns")


def test_duplicate_rows_are_reported_not_silently_kept(tmp_path):
    folder = _team(tmp_path, "name,price_usd\nH100,24000\nH100 SXM 80GB,26000\n")
    check, load = _check_and_load(tmp_path, folder, "GPU_SPEC", "H100", "price_usd")
    _same_refusal(check, load, "gpus.csv line 3", "names the same row as line 2")


def test_more_kv_heads_than_heads_is_refused_by_both(tmp_path):
    folder = _team(tmp_path, "name,layers,hidden,heads,kv_heads,ffn,vocab,source,as_of\n"
                             "Odd 1B,16,2048,8,16,8192,32000,team,2026-01-01\n", "models.csv")
    check, load = _check_and_load(tmp_path, folder, "PARAM_COUNT", "Odd 1B")
    _same_refusal(check, load, "kv_heads (16) must not exceed heads (8)")


def test_a_missing_catalog_folder_is_said_not_ignored(tmp_path):
    missing = tmp_path / "no-such-folder"
    load = flopsheet("calc", "GPU_SPEC", "H100", "memory_gb", catalog_dir=missing, home=tmp_path)
    assert load.returncode == 2 and "Traceback" not in load.stderr
    assert f"{missing}: is not a folder" in load.stderr and "FLOPSHEET_CATALOG" in load.stderr
    check = flopsheet("catalog", "check", missing, home=tmp_path)
    assert check.returncode == 2 and "is not a folder" in check.stderr


def test_a_linked_file_does_not_echo_its_target(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root-password-hunter2:x:0:0\nsecond line\n")
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "gpus.csv").symlink_to(secret)
    check, load = _check_and_load(tmp_path, folder, "GPU_SPEC", "H100", "memory_gb")
    _same_refusal(check, load, "is not a header of gpus.csv")
    for run in (check, load):
        assert "hunter2" not in run.stderr + run.stdout and "second line" not in run.stderr


def test_a_non_utf8_file_is_a_clear_problem(tmp_path):
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "gpus.csv").write_bytes(b"name,price_usd\nH100,\xff\xfe24000\n")
    check, load = _check_and_load(tmp_path, folder, "GPU_SPEC", "H100", "price_usd")
    _same_refusal(check, load, "not UTF-8")


# ---------------------------------------------------------------- the packaged catalog meets the same rules
@pytest.mark.parametrize("table", catalog.TABLE_FILES)
def test_packaged_rows_meet_the_private_rules(table):
    columns = catalog.columns(table)
    numeric = [c for c, kind in columns.items() if "float" in kind or "int" in kind]
    assert set(numeric) == set(pc.LIMITS[table]), "every numeric column has one declared range"
    for row in catalog._packaged(table):
        bad = [(c, why) for c, kind in columns.items() if (why := pc.check_cell(table, c, row[c], kind))]
        bad += pc.row_problems(table, row)
        assert not bad, (row.get("name"), bad)


@pytest.mark.parametrize("table", catalog.TABLE_FILES + ("precisions.csv",))
def test_packaged_rows_have_as_many_cells_as_the_header(table):
    # an unquoted comma in a note splits it: the loader would read the row shifted or cut short
    import csv
    rows = list(csv.reader(Path(catalog.__file__).parents[1].joinpath("data", table).open(encoding="utf-8")))
    assert [r[0] for r in rows[1:] if r and len(r) != len(rows[0])] == []


def test_spec_texts_are_held_to_the_catalog_ranges():
    """GPU_DEFINE / MODEL_DEFINE texts meet the ranges a private catalog row meets (one range check)."""
    import udfs
    from udfs.errors import FlopsheetError
    refused = pc.check_cell("gpus.csv", "bandwidth_tbs", "1e308", "float | None")
    for call in (("GPU_TOKENS_PER_SEC", "gpu: 80GB 1e308TB/s", 14), ("GPU_DEFINE", 80, 1e308)):
        with pytest.raises(FlopsheetError) as e:
            udfs.call(*call)
        assert e.value.code == "#NUM!" and e.value.message == f"GPU spec: {refused}"
    assert udfs.call("PARAM_COUNT", "model: 32L d4096 h32/kv8 ffn14336 v128256") == 8030261248


@pytest.mark.parametrize("cells, column, words", [
    ("mxfp5,attention", "quant_format", "unknown precision 'mxfp5'"),
    ("mxfp4,attention;experts", "quant_keep", "'experts' is not a part"),
    (",attention", "quant_keep", "quant_format is blank"),
])
def test_a_bad_checkpoint_format_is_refused_at_load_naming_the_cell(tmp_path, cells, column, words):
    # used to load, then every estimate of the model (even at bf16) failed with "unknown precision"
    folder = _team(tmp_path, "name,layers,hidden,heads,kv_heads,ffn,vocab,source,as_of,quant_format,quant_keep\n"
                             f"Odd 1B,16,2048,8,8,8192,32000,team,2026-01-01,{cells}\n", "models.csv")
    check, load = _check_and_load(tmp_path, folder, "MODEL_SIZE_GB", "Odd 1B", "bf16")
    _same_refusal(check, load, f"models.csv line 2, column {column}", words)
