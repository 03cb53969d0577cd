"""Private catalogs and config import end to end: `flopsheet catalog check|list`,
`flopsheet model import`, and a model added through FLOPSHEET_CATALOG used by name in the
CLI and through the xlwings Server app (started for real on 127.0.0.1)."""

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from udfs.catalogs import catalog, hf_config

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = Path(__file__).parent / "data" / "hf_configs"
ACME = ("name,aliases,layers,hidden,heads,kv_heads,ffn,vocab,context_length,source,as_of\n"
        "Acme Chat 8B,acme-chat,32,4096,32,8,14336,128256,131072,internal fine-tune,2026-11-01\n")
PRICE = "name,price_usd,price_as_of,price_source\nH100,24500,2026-10-01,Acme purchase order 4711\n"


def flopsheet(*args, catalog_dir=None, home=None):
    env = dict(os.environ)
    env.pop("FLOPSHEET_CATALOG", None)
    if catalog_dir is not None:
        env["FLOPSHEET_CATALOG"] = str(catalog_dir)
    if home is not None:
        env.update(HOME=str(home), XDG_CONFIG_HOME=str(Path(home) / ".config"))
    return subprocess.run([sys.executable, "-m", "udfs", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def team(tmp_path):
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "models.csv").write_text(ACME)
    (folder / "gpus.csv").write_text(PRICE)
    return folder


def test_private_model_is_usable_by_name_in_the_cli(team):
    r = flopsheet("calc", "PARAM_COUNT", "Acme Chat 8B", catalog_dir=team)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "8030261248"          # params computed from the shape
    r = flopsheet("calc", "DECODE_TOKENS_PER_SEC", "acme-chat", "H100", catalog_dir=team)
    base = flopsheet("calc", "DECODE_TOKENS_PER_SEC", "Llama 3.1 8B", "H100")
    assert r.returncode == 0 and r.stdout == base.stdout
    r = flopsheet("calc", "GPU_SPEC", "H100", "price_usd", catalog_dir=team)
    assert r.stdout.strip() == "24500"


def test_without_the_variable_the_private_model_is_unknown(team):
    r = flopsheet("calc", "PARAM_COUNT", "Acme Chat 8B")
    assert r.returncode == 2 and "#N/A" in r.stderr


def test_user_folder_is_read_by_default(tmp_path):
    folder = tmp_path / ".config" / "flopsheet" / "catalog"
    folder.mkdir(parents=True)
    (folder / "models.csv").write_text(ACME)
    r = flopsheet("calc", "PARAM_COUNT", "Acme Chat 8B", home=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "8030261248", r.stderr


def test_catalog_list_shows_origins(team):
    r = flopsheet("catalog", "list", "models", catalog_dir=team)
    assert r.returncode == 0, r.stderr
    rows = {row["name"]: row for row in csv.DictReader(io.StringIO(r.stdout))}
    assert rows["Acme Chat 8B"]["origin"] == f"{team / 'models.csv'}:2"
    assert rows["Llama 3 8B"]["origin"] == "packaged"
    r = flopsheet("catalog", "list", "gpus", "--private", catalog_dir=team)
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [(x["name"], x["price_usd"]) for x in rows] == [("H100 SXM 80GB", "24500")]


def test_catalog_list_of_every_table(team):
    r = flopsheet("catalog", "list", "--private", catalog_dir=team)
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [(x["table"], x["name"]) for x in rows] == [("gpus", "H100 SXM 80GB"), ("models", "Acme Chat 8B")]


def test_catalog_check_reports_file_line_and_column(tmp_path):
    (tmp_path / "models.csv").write_text(ACME + "Broken 1B,,32,4096,thirty-two,8,14336,128256,,x,2026-11-01\n")
    (tmp_path / "cloud.csv").write_text("provider,instance,gpu,pricing,status,usd_per_hour\n"
                                        "Acme,box1,Unobtainium X,on-demand,current,3\n")
    r = flopsheet("catalog", "check", tmp_path)
    assert r.returncode == 2
    assert f"{tmp_path / 'models.csv'} line 3, column E (heads): heads must be a number, got text 'thirty-two'" in r.stderr
    assert f"{tmp_path / 'cloud.csv'} line 2" in r.stderr and "Unobtainium X" in r.stderr


def test_catalog_check_accepts_a_good_folder(team):
    r = flopsheet("catalog", "check", team)
    assert r.returncode == 0, r.stderr
    assert "OK" in r.stdout and "Acme Chat 8B" in r.stdout


def test_a_bad_private_row_stops_estimates_with_the_reason(tmp_path):
    (tmp_path / "models.csv").write_text("name,layers\nOops,many\n")
    r = flopsheet("calc", "PARAM_COUNT", "Llama 3 8B", catalog_dir=tmp_path)
    assert r.returncode == 2 and "line 2, column B (layers)" in r.stderr


def _fixture_models():
    for path in sorted(CONFIGS.glob("*.json")):
        name = hf_config.default_name(hf_config.read(path), path)
        if catalog.is_model_name(name):
            yield path, catalog.model(name)


@pytest.mark.parametrize("path,model", list(_fixture_models()), ids=lambda x: getattr(x, "name", ""))
def test_import_reproduces_catalog_counts(path, model):
    r = flopsheet("model", "import", path)
    assert r.returncode == 0, r.stderr
    row = next(csv.DictReader(io.StringIO(r.stdout)))
    assert int(row["params"]) == model.params
    assert (int(row["active_params"]) if row["active_params"] else None) == (
        int(model.active_params) if model.is_moe else None)


def test_fixtures_cover_todays_models_and_each_style():
    covered = {m.name for _, m in _fixture_models()}
    assert len(covered) == 28, sorted(covered)          # 23 of 2024-2026 + 5 older styles


def test_import_add_then_use(tmp_path):
    folder = tmp_path / "mine"
    r = flopsheet("model", "import", CONFIGS / "Qwen3-8B.json", "--name", "Our Qwen3 8B", "--add", folder)
    assert r.returncode == 0, r.stderr
    r = flopsheet("calc", "PARAM_COUNT", "Our Qwen3 8B", catalog_dir=folder)
    assert r.stdout.strip() == "8190735360", r.stderr
    again = flopsheet("model", "import", CONFIGS / "Qwen3-8B.json", "--name", "Our Qwen3 8B", "--add", folder)
    assert again.returncode == 2 and "already has" in again.stderr
    assert flopsheet("catalog", "check", folder).returncode == 0


def test_import_spec_output_is_a_model_define_spec():
    r = flopsheet("model", "import", CONFIGS / "gpt-oss-20b.json", "--spec")
    assert r.stdout.startswith("model: 24L d2880 h64/kv8 hd64 ffn2880 v201088 experts32/top4 window128 local12")
    calc = flopsheet("calc", "PARAM_COUNT", r.stdout.strip())
    assert calc.stdout.strip() == "20914757184"


def test_import_of_a_bad_file_is_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "rwkv"}')
    r = flopsheet("model", "import", tmp_path / "config.json")
    assert r.returncode == 2 and "not supported" in r.stderr and "Traceback" not in r.stderr
