"""The template workbooks, recalculated in a real spreadsheet engine (LibreOffice Calc,
headless) and checked against Flopsheet's engine.

LibreOffice is started few times: all workbooks (default and second input set) go through
one soffice call, the parity sheet through another."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys

import openpyxl
import pytest

import udfs
import workbook_templates as wt
from workbook_templates.common import ADDIN_SHEET, NEEDS_ADDIN, C, write_text
from workbook_templates.formulas import Name, render
from workbook_templates.recalc import convert

from .numeric import same_number

pytestmark = [pytest.mark.libreoffice,
              pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed")]

USER_TEXT = "=1+1 scenario"


@pytest.fixture(scope="module")
def built_workbooks(tmp_path_factory):
    """Every workbook with its defaults and with its second input set, recalculated in one run."""
    src = tmp_path_factory.mktemp("src")
    books = {}
    for name in wt.NAMES:
        mod = wt.module(name)
        books[(name, "default")] = mod.build(src / f"{name}.xlsx")
        # the second input set: written into the generated file by the test, as a user would
        alt = src / f"{name}_alt.xlsx"
        books[(name, "alt")] = mod.build(alt)
        wb = openpyxl.load_workbook(alt)
        for key, value in mod.ALT_INPUTS.items():
            cell = books[(name, "alt")].inputs[key]
            wb[cell.sheet][cell.coord].value = value
        wb.save(alt)
        if wt.preset_inputs(name, "lesson"):      # the lesson's worked example, prices included
            books[(name, "lesson")] = wt.build(name, src / f"{name}_lesson.xlsx", preset="lesson")
    files = sorted(src.glob("*.xlsx"))
    out = tmp_path_factory.mktemp("recalc")
    convert(files, out)
    return {"src": src, "out": out, "books": books}


def _reader(path):
    wb = openpyxl.load_workbook(path, data_only=True)

    def get(c: C):
        return wb[c.sheet][c.coord].value
    return wb, get


@pytest.mark.parametrize("name", wt.NAMES)
@pytest.mark.parametrize("inputs", ["default", "alt"])
def test_outputs_equal_engine(built_workbooks, name, inputs):
    book = built_workbooks["books"][(name, inputs)]
    stem = name if inputs == "default" else f"{name}_alt"
    wb, get = _reader(built_workbooks["out"] / f"{stem}.xlsx")
    # no error value anywhere, the add-in sheet included (its calls say they need the add-in)
    errors = [f"{ws.title}!{c.coordinate}={c.value}" for ws in wb.worksheets
              for row in ws.iter_rows() for c in row
              if c.data_type == "e" or (isinstance(c.value, str) and c.value.startswith("#")
                                        and c.value.rstrip("!?0/").upper() in ("#NAME", "#VALUE", "#REF", "#DIV",
                                                                                "#NUM", "#N/A", "#NULL"))]
    assert not errors, errors[:10]
    # without the add-in (LibreOffice has none) every add-in call says what is missing
    addin_cells = [row[2].value for row in wb[ADDIN_SHEET].iter_rows(min_row=5) if row[0].value]
    assert addin_cells and all(v == NEEDS_ADDIN for v in addin_cells), addin_cells[:5]
    assert book.checks
    bad = []
    for check in book.checks:
        actual = get(check.cell)
        expected = check.expected(get)
        if actual is None or not same_number(actual, expected):
            bad.append(f"{check.cell.sheet}!{check.cell.coord} {check.label}: sheet {actual!r}, engine {expected!r}")
    assert not bad, "\n".join(bad[:15])
    if inputs == "alt":
        mod = wt.module(name)
        for key, value in mod.ALT_INPUTS.items():
            assert get(book.inputs[key]) == value


@pytest.mark.parametrize("name", wt.NAMES)
def test_second_input_set_moves_outputs(built_workbooks, name):
    """Changing the inputs changes the outputs (and test_outputs_equal_engine checked them)."""
    _, get_a = _reader(built_workbooks["out"] / f"{name}.xlsx")
    _, get_b = _reader(built_workbooks["out"] / f"{name}_alt.xlsx")
    checks = [c for c in built_workbooks["books"][(name, "default")].checks if c.fn]      # engine quantities
    moved = sum(1 for c in checks if get_a(c.cell) != get_b(c.cell))
    assert moved >= len(checks) // 3, f"only {moved} of {len(checks)} outputs moved"


def test_lesson_examples_in_the_lesson_preset(built_workbooks):
    """`flopsheet templates --preset lesson` reproduces the lesson's worked examples, recalculated."""
    _, ft = _reader(built_workbooks["out"] / "finetune_cost_lesson.xlsx")
    assert ft(C("Fine-tuning", "H11")) == pytest.approx(327.70)
    assert ft(C("Fine-tuning", "I12")) == pytest.approx(16.416)
    assert ft(C("Fine-tuning", "I13")) == pytest.approx(35.0)
    _, co = _reader(built_workbooks["out"] / "cloud_vs_own_lesson.xlsx")
    assert co(C("Cloud vs own", "B18")) == pytest.approx(18396)
    assert co(C("Cloud vs own", "B19")) == pytest.approx(94187.52)
    assert co(C("Cloud vs own", "B20")) == pytest.approx(13261.44)         # TCO(12000, 3)
    for name in ("finetune_cost", "cloud_vs_own"):
        book = built_workbooks["books"][(name, "lesson")]
        wb, get = _reader(built_workbooks["out"] / f"{name}_lesson.xlsx")
        bad = [c.label for c in book.checks if not same_number(get(c.cell), c.expected(get))]
        assert not bad, bad[:5]
        assert "lesson's worked example" in " ".join(str(c.value) for row in wb["Cover"].iter_rows() for c in row)


def test_template_prices_default_to_todays_catalog(built_workbooks):
    """The default prices are the catalog's, the same functions and rates the report uses."""
    from udfs.catalogs import catalog
    from udfs.planning import picker
    from workbook_templates.catalog_sheets import cheapest
    a100 = catalog.gpu("A100 SXM 80GB")
    _, tb = _reader(built_workbooks["out"] / "training_budget.xlsx")
    tb_book = built_workbooks["books"][("training_budget", "default")]
    assert get_value(tb, tb_book, "TB_OwnedRate") == pytest.approx(picker.owned_rate(a100)[0], rel=1e-12)
    _, co = _reader(built_workbooks["out"] / "cloud_vs_own.xlsx")
    co_book = built_workbooks["books"][("cloud_vs_own", "default")]
    assert get_value(co, co_book, "CO_HardwareCost") == catalog.gpu_price(a100, "system")
    assert get_value(co, co_book, "CO_CloudRate") == cheapest(a100.name, "on-demand")
    # the data-centre view at the defaults is the report's owned rate for the GPU
    assert co(C("Cloud vs own", "E22")) == pytest.approx(picker.owned_rate(a100)[0], rel=1e-9)
    _, ft = _reader(built_workbooks["out"] / "finetune_cost.xlsx")
    ft_book = built_workbooks["books"][("finetune_cost", "default")]
    assert get_value(ft, ft_book, "Option2_Rate") == udfs.call("CLOUD_PRICE", "p5.48xlarge")


def get_value(get, book, name):
    return get(book.inputs[name])


def test_lesson_example_inference_plan(built_workbooks):
    from udfs.catalogs import catalog
    from workbook_templates.catalog_sheets import cheapest
    _, ip = _reader(built_workbooks["out"] / "inference_plan.xlsx")
    book = built_workbooks["books"][("inference_plan", "default")]
    need = next(c for c in book.checks if c.label == "Tokens/s needed")
    assert ip(need.cell) == pytest.approx(4000)
    # prices default to today's catalog for the GPU chosen; the lesson's are the preset
    h100 = catalog.gpu("H100 SXM 80GB")
    assert get_value(ip, book, "IP_CloudRate") == cheapest(h100.name, "on-demand")
    assert get_value(ip, book, "IP_HardwareCost") == catalog.gpu_price(h100, "system")
    assert get_value(ip, book, "IP_PowerW") == h100.tdp_w
    lesson = built_workbooks["books"][("inference_plan", "lesson")]
    wb, get = _reader(built_workbooks["out"] / "inference_plan_lesson.xlsx")
    assert [get_value(get, lesson, k) for k in ("IP_CloudRate", "IP_HardwareCost", "IP_PowerW")] == [3.2, 30000, 700]
    bad = [c.label for c in lesson.checks if not same_number(get(c.cell), c.expected(get))]
    assert not bad, bad[:5]
    cloud = next(c for c in lesson.checks if c.label == "Monthly cost, cloud")
    assert get(cloud.cell) == pytest.approx(8 * 3.20 * 730)        # one 8-GPU instance at the lesson's rate


@pytest.mark.parametrize("name", wt.NAMES)
def test_structure(built_workbooks, name):
    """Drop-downs with messages, defined names, protection, charts, cover and catalog sheets."""
    book = built_workbooks["books"][(name, "default")]
    wb = openpyxl.load_workbook(built_workbooks["src"] / f"{name}.xlsx")
    assert wb.sheetnames[0] == "Cover"
    for sheet in ("GPUs", "Cloud prices", "Models", "Sources", ADDIN_SHEET):
        assert sheet in wb.sheetnames
    for input_name, cell in book.inputs.items():
        assert input_name in wb.defined_names, input_name
        c = wb[cell.sheet][cell.coord]
        assert c.protection.locked is False
        assert c.fill.fgColor.rgb.endswith("FFF2CC")
    for catalog_name in ("CatGpuNames", "CatModelNames", "CatPrecisionNames", "CatGpu_bandwidth_tbs"):
        assert catalog_name in wb.defined_names
    lists = [dv for ws in wb.worksheets for dv in ws.data_validations.dataValidation if dv.type == "list"]
    assert lists and all(dv.showErrorMessage and dv.showInputMessage and dv.prompt for dv in lists)
    assert all(dv.showDropDown in (None, False) for dv in lists)      # True would hide the arrow
    for ws in wb.worksheets:
        assert ws.protection.sheet, ws.title
        assert not ws.protection.password
    main = wb[book.main_sheets[0]]
    assert main.freeze_panes
    for check in book.checks:
        assert wb[check.cell.sheet][check.cell.coord].protection.locked is not False
    assert book.charts >= 1
    assert wb.properties.creator == "Flopsheet" and wb.properties.title
    cover = "\n".join(str(c.value) for row in wb["Cover"].iter_rows() for c in row if c.value)
    assert udfs.__version__ in cover and udfs.catalogs.catalog.catalog_date() in cover
    # formulas stick to the Excel 2010 / LibreOffice 7.4 common set
    text = " ".join(str(c.value) for ws in wb.worksheets if ws.title != ADDIN_SHEET for row in ws.iter_rows()
                    for c in row if isinstance(c.value, str) and c.data_type == "f")
    for banned in ("XLOOKUP", "LET(", "FILTER(", "SORT(", "SEQUENCE(", "IFS(", "SWITCH(", "MAXIFS", "_xlfn"):
        assert banned not in text.upper()


def test_charts_survive_libreoffice(built_workbooks):
    """Charts are written into the file (LibreOffice keeps them when it saves)."""
    import zipfile
    for name in wt.NAMES:
        with zipfile.ZipFile(built_workbooks["src"] / f"{name}.xlsx") as z:
            assert any(n.startswith("xl/charts/chart") for n in z.namelist()), name
        with zipfile.ZipFile(built_workbooks["out"] / f"{name}.xlsx") as z:
            assert any(n.startswith("xl/charts/chart") for n in z.namelist()), name
    with zipfile.ZipFile(built_workbooks["src"] / "cloud_vs_own.xlsx") as z:
        xml = z.read(next(n for n in z.namelist() if n.startswith("xl/charts/chart"))).decode()
        assert 'smooth val="0"' in xml and 'smooth val="1"' not in xml


def test_user_text_stays_text(tmp_path):
    """Scenario names and custom names starting with =, +, -, @ are written as text."""
    texts = {"TB_Scenario": "=SUM(1,2)"}
    wt.build("training_budget", tmp_path / "a.xlsx", inputs=texts)
    names = {"Option1_Name": "+H100 fast", "Option2_Name": "-cheap", "Option3_Name": "@home GPU",
             "Option1_Instance": "=p4d"}
    wt.build("finetune_cost", tmp_path / "b.xlsx", inputs=names)
    out = tmp_path / "out"
    convert([tmp_path / "a.xlsx", tmp_path / "b.xlsx"], out)
    wb = openpyxl.load_workbook(out / "a.xlsx")
    cell = wb["Training"]["B5"]
    assert cell.value == "=SUM(1,2)" and cell.data_type == "s"
    wb = openpyxl.load_workbook(out / "b.xlsx", data_only=True)
    got = [wb["Fine-tuning"][c].value for c in ("A11", "A12", "A13", "B11")]
    assert got == ["+H100 fast", "-cheap", "@home GPU", "=p4d"]
    wb = openpyxl.load_workbook(out / "b.xlsx")
    assert all(wb["Fine-tuning"][c].data_type == "s" for c in ("A11", "A12", "A13", "B11"))


# ---------------------------------------------------------------- parity: registry formula vs engine
RANGES = {"power_w": (0, 1500), "pue": (1, 2), "usd_per_kwh": (0, 0.5), "opex_usd_per_year": (0, 3000),
          "hardware_cost_usd": (500, 60000), "cloud_usd_per_gpu_hour": (0.3, 15), "usd_per_gpu_hour": (0.3, 15),
          "lifetime_years": (1, 7), "years": (0.1, 7), "usd_per_hour": (0.3, 120), "hours": (0, 500),
          "owned_usd_per_gpu_hour": (0, 1), "tokens_per_sec": (1, 5000), "model_size_gb": (0.5, 800),
          "tokens_per_month": (1e6, 1e11), "self_host_usd_per_month": (10, 1e6), "api_usd_per_1m_tokens": (0.05, 60),
          "api_usd_per_1m_input_tokens": (0, 30), "api_usd_per_1m_output_tokens": (0, 90),
          "requests_per_minute": (1, 1e5), "tokens_per_request": (1, 4000), "latency_s": (0.1, 60),
          "speedup": (0.1, 10), "tokens_per_sec_needed": (1, 1e6), "tokens_per_sec_per_instance": (1, 1e4),
          "activation_multiplier": (0, 4), "batch": (1, 256)}


# Arguments a native formula may leave out: it computes the point estimate; the `estimate`
# range needs the measured evidence (udfs/physics/evidence.py), which a native formula cannot read; and
# `scope` only picks the training-efficiency table's MFU when `mfu` is blank, while a native formula takes
# its MFU from a cell (the Training budget's input); `method` changes only the traffic on n_gpus (a checkpointed
# LoRA/QLoRA job executes 6 FLOPs a parameter a token too: training.method_flops, tested in test_loracomm.py).
FORMULA_FREE = {"estimate", "scope", "all_reduce", "method"}


def _formula_free(fn, a) -> bool:
    """An argument the native formula leaves out (it is the function at that argument's default): the estimate,
    the scope, and the training functions' switch to a sized cluster (all_reduce, or an optional n_gpus the
    formula does not name: training.on_cluster, which no single-cell formula writes)."""
    return a.name in FORMULA_FREE or (a.name == "n_gpus" and a.optional and a.name not in fn.formula)


def test_every_formula_names_every_argument_but_the_estimate_and_scope():
    for fn in udfs.functions().values():
        if fn.formula:
            left_out = {a.name for a in fn.args if a.name not in fn.formula}
            assert left_out <= {a.name for a in fn.args if _formula_free(fn, a)}, (fn.name, left_out)


def _random_args(fn, rng):
    """Random valid arguments (by the declared types and ranges) for one call; the ones the
    formula leaves out (FORMULA_FREE) keep their defaults."""
    gpus = [g for g in udfs.catalogs.catalog.gpus() if g.bf16_tflops and g.bandwidth_tbs and g.memory_gb]
    values = {}
    for a in fn.args:
        if _formula_free(fn, a):
            continue
        if a.type in ("gpu", "gpu_or_bandwidth", "gpu_or_capacity"):
            values[a.name] = ("name", rng.choice(gpus).name) if a.type == "gpu" or rng.random() < 0.5 else \
                ("num", round(rng.uniform(0.3, 8) if a.type == "gpu_or_bandwidth" else rng.uniform(16, 200), 3))
        elif a.type in ("params", "model_or_params", "model_or_count"):
            values[a.name] = ("name", rng.choice(udfs.catalogs.catalog.models()).name) if rng.random() < 0.5 else \
                ("num", float(rng.randint(1, 400)) * 1e9)
        elif a.type == "precision":
            values[a.name] = ("text", rng.choice(["fp32", "fp16", "bf16", "int8", "int4"]))
        elif a.type == "choice":
            values[a.name] = ("text", rng.choice(a.choices))
        elif a.type == "bool":
            values[a.name] = ("bool", rng.random() < 0.5)
        elif a.type in ("integer",):
            values[a.name] = ("num", rng.randint(1, 64))
        elif a.type in ("number", "count"):
            lo = a.min if a.min is not None else 0.0
            hi = a.max if a.max is not None else lo + 1000
            if a.name in ("cost_of_capital",):
                v = rng.choice([0.0, round(rng.uniform(0.01, 0.2), 4)])
            elif a.name in ("headroom_gb",):
                v = round(rng.uniform(0, 10), 2)
            elif a.name in ("memory_gb",):
                v = round(rng.uniform(1, 2000), 2)
            elif a.name in ("residual_value_usd",):
                v = round(rng.uniform(0, 1000), 2)
            elif a.name in RANGES:
                v = round(rng.uniform(*RANGES[a.name]), 4)
                if a.min_open and v <= (a.min or 0):
                    v = RANGES[a.name][1] / 2
            elif a.name == "tokens":
                v = float(rng.randint(1, 20)) * 1e11
            else:
                v = round(rng.uniform(lo, hi), 4)
                if a.min_open and v == lo:
                    v = lo + 0.5 * (hi - lo)
            values[a.name] = ("num", v)
        else:
            return None
    return values


def test_parity_registry_formulas(tmp_path):
    """Random valid inputs through the engine and through the registry's native formula,
    recalculated in LibreOffice (one workbook, one soffice call), agree to 1e-9."""
    from workbook_templates.common import Book
    rng = random.Random(20261121)
    fns = [f for f in udfs.functions().values() if f.formula]
    assert len(fns) >= 20
    book = Book("parity", "Parity", "parity", ["-"], ["-"])
    ws = book.wb.create_sheet("Parity")
    book.main_sheets.append("Parity")
    cases = []
    r = 1
    for fn in fns:
        made = 0
        for _ in range(200):
            if made == 12:
                break
            args = _random_args(fn, rng)
            if args is None:
                break
            plain = {k: v for k, (kind, v) in args.items()}
            try:
                expected = udfs.call(fn.name, **plain)
            except udfs.FlopsheetError:
                continue
            refs = {}
            for i, (k, (kind, v)) in enumerate(args.items()):
                cell = ws.cell(row=r, column=3 + i)
                if kind in ("name", "text"):
                    write_text(cell, v)
                else:
                    cell.value = v
                is_gpu = fn.args[[a.name for a in fn.args].index(k)].type == "gpu"
                refs[k] = Name(cell.coordinate) if kind == "name" and is_gpu else cell.coordinate
            ws.cell(row=r, column=1, value=fn.name)
            ws.cell(row=r, column=2, value="=" + render(fn, **refs))
            cases.append((r, fn.name, plain, expected))
            r += 1
            made += 1
        assert made >= 5, fn.name
    path = tmp_path / "parity.xlsx"
    book.finish(path)
    out = convert([path], tmp_path / "out")[0]
    wb = openpyxl.load_workbook(out, data_only=True)
    bad = []
    for row, name, plain, expected in cases:
        got = wb["Parity"].cell(row=row, column=2).value
        if got is None or isinstance(got, str) or not same_number(got, expected):
            bad.append(f"{name}{plain}: LibreOffice {got!r}, engine {expected!r}")
    assert not bad, "\n".join(bad[:15])


def test_cli_templates(tmp_path):
    out = tmp_path / "wb"
    run = subprocess.run([sys.executable, "-m", "udfs", "templates", "--out", str(out)], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in out.glob("*.xlsx")) == sorted(wt.module(n).FILENAME for n in wt.NAMES)
    assert f"[{len(wt.NAMES)}/{len(wt.NAMES)}]" in run.stdout
    assert not list(out.glob(".*tmp"))
    again = subprocess.run([sys.executable, "-m", "udfs", "templates", "--out", str(out), "--only", "cloud_vs_own"],
                           capture_output=True, text=True)
    assert again.returncode == 2 and "--force" in again.stderr
    forced = subprocess.run([sys.executable, "-m", "udfs", "templates", "--out", str(out), "--only", "cloud_vs_own",
                             "--force"], capture_output=True, text=True)
    assert forced.returncode == 0 and "[1/1]" in forced.stdout
