"""The inference plan's headline is the serving model in native formulas: written, its inputs
changed through the workbook's defined names (as a user linking to them would), recalculated
in LibreOffice, and read back, it gives the GPUs, copies, GPUs per copy, batch and
throughput of GPUS_FOR_TRAFFIC for the same inputs, across models (dense, MoE, MLA, sliding
window, bare counts), GPUs, precisions, engines, traffic levels and lengths."""

from __future__ import annotations

import shutil

import openpyxl
import pytest

import udfs
import workbook_templates as wt
from workbook_templates import serving_figures as sf
from workbook_templates.recalc import convert

from .numeric import same_number

pytestmark = [pytest.mark.libreoffice,
              pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed")]

DEFAULT = sf.DEFAULT_ENGINE
HEADLINE = {"gpus": "gpus_needed"}
PARTS = ("gpus", "copies", "gpus_per_copy", "batch", "tokens_per_sec_per_copy")
# (model, gpu, precision, requests/min, prompt, output, latency target s, engine, headroom)
CASES = [
    ("Llama 2 7B", "H100 SXM 80GB", "fp16", 1000, 500, 200, 5, DEFAULT, 0.2),        # the defaults
    ("Llama 3.3 70B", "H100 SXM 80GB", "bf16", 1000, 2048, 512, 25.6, DEFAULT, 0.2),  # tensor parallel
    ("Llama 3.1 405B", "H200 SXM 141GB", "fp8", 300, 1024, 256, 20, DEFAULT, 0.2),
    ("Mixtral 8x7B", "A100 SXM 80GB", "fp16", 2000, 1000, 300, 15, "vLLM", 0.3),      # MoE
    ("DeepSeek-V3", "H200 SXM 141GB", "fp8", 500, 2000, 500, 50, DEFAULT, 0.2),       # MoE with latent KV
    ("Qwen3 30B-A3B", "L40S 48GB", "fp8", 5000, 800, 400, 20, "SGLang", 0),           # MoE, no batch cap
    ("gpt-oss-120b", "B200 180GB", "fp4", 20000, 4000, 1000, 30, DEFAULT, 0.5),       # sliding window, FP4
    ("gpt-oss-120b", "H100 SXM 80GB", "mxfp4", 600, 1000, 500, 30, DEFAULT, 0.2),   # own format: BF16 beside MXFP4
    ("gpt-oss-120b", "B200 180GB", "mxfp4", 20000, 4000, 1000, 30, DEFAULT, 0.5),    # BF16 parts at the 16-bit rate
    ("Gemma 3 27B", "RTX 4090 24GB", "int4", 60, 8000, 200, 20, "vLLM", 0.2),        # window, weight-only int4
    ("Mistral 7B", "A10 24GB", "bf16", 100, 128, 64, 2, DEFAULT, 0),
    ("Llama 3.1 8B", "RTX 3090 24GB", "q4_k_m", 30, 500, 200, 20, "llama.cpp", 0.2),  # engine batch cap 4
    ("Llama 3.1 70B", "RTX 4090 24GB", "q4_k_m", 20, 500, 200, 60, "llama.cpp", 0.2),  # layer pipeline
    (1.2e11, "H100 SXM 80GB", "fp8", 300, 1000, 200, 40, DEFAULT, 0.2),               # bare counts
    (7e9, "L4 24GB", "int8", 200, 300, 150, 10, "TensorRT-LLM", 0.2),
    ("Qwen3 0.6B", "B200 180GB", "bf16", 100000, 128, 1500, 60, "SGLang", 0.2),       # huge KV fit
    ("Llama 3 70B", "A100 PCIe 80GB", "fp8", 1000, 128, 200, 5, "vLLM", 0.5),         # no FP8 tensor cores
    ("Llama 3.1 70B", "MI325X 256GB", "fp16", 3000, 1000, 300, 6, DEFAULT, 0.2),      # AMD: vLLM by default
    ("Qwen3 8B", "H200 SXM 141GB", "fp8", 4000, 1500, 400, None, DEFAULT, 0.2),      # no latency target
    ("Llama 3.1 8B", "H100 SXM 80GB", "fp8", 1000, 1000, 300, None, "SGLang", 0.2),  # CUDA-graph cap beats KV fit
    ("Llama 3.1 8B", "A100 SXM 80GB", "bf16", 2000, 500, 200, 20, "vLLM V0", 0.2),   # CPU time per sequence
    ("Llama 3.1 8B", "L4 24GB", "bf16", 300, 2000, 500, None, "vLLM", 0.2),          # KV fit under vLLM's profile run
    # MoE kernel padding (capacity.kernel_padding_gib) taken out of the KV budget: Marlin on the A100 (5.13 GiB on one
    # GPU: 10 GPUs, 8 without it), Triton on Hopper (nothing on one GPU, each GPU's expert width 1,440 -> 1,472 on
    # two: 40 GPUs, 38 without it), and an engine the kernel table does not read (no padding)
    ("gpt-oss-120b", "A100 SXM 80GB", "mxfp4", 600, 8000, 500, None, "vLLM", 0.2),
    ("gpt-oss-120b", "H100 SXM 80GB", "mxfp4", 3000, 16000, 500, None, "vLLM", 0.2),
    ("gpt-oss-120b", "A100 SXM 80GB", "mxfp4", 600, 1000, 500, 30, "SGLang", 0.2),
]
MARLIN, TRITON, NO_PADDING = (CASES.index(c) for c in CASES[-3:])
# no link rate in the catalog (and no tensor figure): the sheet says so instead of guessing
NO_LINK = ("Llama 3.1 8B", "Apple M4 Max 128GB", "fp16", 100, 500, 200, 5, "vLLM", 0.2)
NONE_FITS = ("Llama 3.1 405B", "RTX 4090 24GB", "bf16", 100, 500, 200, 5, DEFAULT, 0.2)
NO_PEAK = ("Llama 3.1 8B", "A10G 24GB", "bf16", 100, 500, 200, 5, DEFAULT, 0.2)
# vLLM's MoE kernel for MXFP4 on an RTX 5090 is not in the table: the engine answers #N/A, the sheet says so
NO_KERNEL = ("gpt-oss-120b", "RTX 5090 32GB", "mxfp4", 100, 500, 200, 5, "vLLM", 0.2)
INPUTS = ("model", "gpu", "precision", "requests_per_minute", "prompt_tokens", "output_tokens", "IP_Latency",
          "engine", "IP_Headroom")
READ = ("gpus_needed",)


def _cell(wb, name):
    sheet, coord = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][coord.replace("$", "")]


def _engine(case):
    model, gpu, prec, rpm, prompt, out, latency, engine, headroom = case
    tpot = latency * 1000 / out if latency else ""          # a blank latency target: no TPOT target
    return [model, gpu, rpm, prompt, out, tpot, "", prec, "", "" if engine == DEFAULT else engine, headroom]


@pytest.fixture(scope="module")
def recalculated(tmp_path_factory):
    src = tmp_path_factory.mktemp("ip")
    book = wt.module("inference_plan").build(src / "base.xlsx")
    paths = []
    for i, case in enumerate(CASES + [NO_LINK, NONE_FITS, NO_PEAK, NO_KERNEL]):
        wb = openpyxl.load_workbook(src / "base.xlsx")
        for name, value in zip(INPUTS, case):
            _cell(wb, name).value = value
        path = src / f"case{i:02d}.xlsx"
        wb.save(path)
        paths.append(path)
    out = tmp_path_factory.mktemp("ip_out")
    convert(paths, out)
    return book, [openpyxl.load_workbook(out / p.name, data_only=True) for p in paths]


def _parts(book, wb):
    """The headline rows by GPUS_FOR_TRAFFIC part, read back from the recalculated file."""
    cells = {c.args["part"].value: c.cell for c in book.checks if c.fn == "GPUS_FOR_TRAFFIC"}
    return {part: wb[cells[part].sheet][cells[part].coord].value for part in PARTS}


def _errors(wb):
    return [f"{ws.title}!{c.coordinate}={c.value}" for ws in wb.worksheets if ws.title != "With the Flopsheet add-in"
            for row in ws.iter_rows() for c in row
            if c.data_type == "e" or (isinstance(c.value, str) and c.value.startswith("#"))]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_serving_model_equals_gpus_for_traffic(recalculated, index):
    book, books = recalculated
    wb = books[index]
    got = _parts(book, wb)
    # the calculation sheet sizes the copies the traffic needs: GPUS_FOR_TRAFFIC with no spare copy
    want = {part: udfs.call("GPUS_FOR_TRAFFIC", *_engine(CASES[index]), part, "point", 0) for part in PARTS}
    assert all(same_number(got[p], want[p]) for p in PARTS), (CASES[index], got, want)
    assert _cell(wb, "gpus_needed").value == want["gpus"]
    assert not _errors(wb), _errors(wb)[:10]
    # the inputs read back through their names, as a linking workbook would see them
    for name, value in zip(INPUTS, CASES[index]):
        assert _cell(wb, name).value == value


def test_the_sample_is_varied():
    """The sample exercises what the sheet claims to express: several group sizes, batch limits and engines."""
    plans = [[udfs.call("GPUS_FOR_TRAFFIC", *_engine(c), p) for p in ("gpus_per_copy", "batch")] for c in CASES]
    assert {n for n, _ in plans} >= {1, 2, 4, 8}
    assert len({b for _, b in plans}) >= 10
    assert len({c[7] for c in CASES}) >= 5 and len({c[2] for c in CASES}) >= 6


def test_unknown_figures_are_said_not_guessed(recalculated):
    """A GPU with no link rate and no tensor figure in the catalog: groups of more than one GPU
    say the link rate is missing, one GPU per copy that the tensor figure is; the engine answers
    #N/A (it cannot compare groups it cannot estimate), the headline n/a naming the figure."""
    _, books = recalculated
    wb = books[len(CASES)]
    with pytest.raises(udfs.FlopsheetError):
        udfs.call("GPUS_FOR_TRAFFIC", *_engine(NO_LINK))
    status = next(r for r in wb["Serving calculation"].iter_rows() if r[0].value == "Status")
    assert status[1].value == "no tensor TFLOPS in the catalog"
    assert status[2].value == status[3].value == status[4].value == "no link rate in the catalog"
    assert _cell(wb, "gpus_needed").value == "n/a: no link rate"
    assert not _errors(wb), _errors(wb)[:10]


def test_nothing_fits_is_said(recalculated):
    _, books = recalculated
    wb = books[len(CASES) + 1]
    with pytest.raises(udfs.FlopsheetError):
        udfs.call("GPUS_FOR_TRAFFIC", *_engine(NONE_FITS))
    assert _cell(wb, "gpus_needed").value == "none fits"
    assert not _errors(wb), _errors(wb)[:10]


def test_no_tensor_figure_is_said(recalculated):
    """A GPU with no published tensor TFLOPS: the engine answers #VALUE!, the sheet says n/a."""
    _, books = recalculated
    wb = books[len(CASES) + 2]
    with pytest.raises(udfs.FlopsheetError):
        udfs.call("GPUS_FOR_TRAFFIC", *_engine(NO_PEAK))
    assert _cell(wb, "gpus_needed").value == "n/a: no tensor TFLOPS"
    assert not _errors(wb), _errors(wb)[:10]


def _group_row(wb, label):
    """A row of the calculation sheet's group block: its values for 1, 2, 4 and 8 GPUs per copy."""
    return next([c.value for c in r[1:5]] for r in wb["Serving calculation"].iter_rows() if r[0].value == label)


def test_kernel_padding_is_taken_out_of_the_kv_budget(recalculated):
    """The sheet pads each GPU's experts as the release's kernel does and takes it out of the KV budget: Marlin on the
    A100 rounds the hidden size to 256 and each GPU's expert width to 128; vLLM's Triton path on the H100 only the width,
    to 64 (nothing at 2,880 on one GPU); an engine the kernel table does not read pads nothing."""
    _, books = recalculated
    # gpt-oss-120b by hand: hidden size and expert width 2,880, 128 experts, 36 MoE layers, MXFP4 at 4.25 bits a value
    per_value = 4.25 * 3 * 128 * 36 / 8 / 2**30        # bits x 3 matrices x experts x layers, in GiB
    marlin = _group_row(books[MARLIN], "MoE kernel padding per GPU (GiB)")
    want = [(3072 * 2944 - 2880 * 2880) * per_value, (3072 * 1536 - 2880 * 1440) * per_value,
            (3072 * 768 - 2880 * 720) * per_value, (3072 * 384 - 2880 * 360) * per_value]
    assert all(same_number(g, w) for g, w in zip(marlin, want)), (marlin, want)
    assert abs(marlin[0] - 5.13) < 0.005
    triton = _group_row(books[TRITON], "MoE kernel padding per GPU (GiB)")
    want = [0, 2880 * (1472 - 1440) * per_value, 2880 * (768 - 720) * per_value, 2880 * (384 - 360) * per_value]
    assert all(same_number(g, w) for g, w in zip(triton, want)), (triton, want)
    assert _group_row(books[NO_PADDING], "MoE kernel padding per GPU (GiB)") == [0, 0, 0, 0]
    # the budget: what the engine uses less the weights, the padding, the reserve and the profile run
    for index in (MARLIN, TRITON):
        rows = {label: _group_row(books[index], label) for label in (
            "Memory the engine uses (GiB)", "Weights per GPU (GiB)", "MoE kernel padding per GPU (GiB)",
            "Profile run's peak (GiB)", "Left after weights, padding and reserve (GiB)")}
        reserve = _cell(books[index], "SrvReserve").value
        for j in range(4):
            used, weights, pad, profile, left = (rows[k][j] for k in rows)
            assert same_number(left, used - weights - pad - reserve - profile)


def test_unread_moe_kernel_is_said(recalculated):
    """vLLM's kernel for MXFP4 experts on an RTX 5090 is not in the table: the engine answers #N/A naming the release
    and GPU, every group says the kernel is not read, the headline n/a."""
    _, books = recalculated
    wb = books[len(CASES) + 3]
    with pytest.raises(udfs.FlopsheetError, match="MoE kernel of vLLM .* on RTX 5090 32GB not read"):
        udfs.call("GPUS_FOR_TRAFFIC", *_engine(NO_KERNEL))
    assert _group_row(wb, "Status") == ["the release's MoE kernel not read"] * 4
    assert _cell(wb, "gpus_needed").value == "n/a: MoE kernel not read"
    assert not _errors(wb), _errors(wb)[:10]


def test_lesson_figure_stays_beside_the_headline(recalculated):
    """The default plan: the serving model's 1 GPU beside the lesson's batch-1 estimate of 23."""
    book, books = recalculated
    wb = books[0]
    lesson = next(c for c in book.checks if c.label == "Lesson's GPUs")
    assert wb[lesson.cell.sheet][lesson.cell.coord].value == 23
    assert _cell(wb, "gpus_needed").value == 1
    label = wb[lesson.cell.sheet][f"A{lesson.cell.coord[1:]}"].value
    assert "lesson" in label.lower()
    assert isinstance(_cell(wb, "monthly_cost_usd").value, (int, float))


def _curve(wb):
    """The curve sheet's distinct points (batch, per user, per GPU) and its marked point."""
    ws = wb["Serving curve"]
    rows = [r for r in ws.iter_rows(min_row=5, values_only=True) if isinstance(r[0], (int, float))]
    points = list(dict.fromkeys(tuple(r[:3]) for r in rows[:-1]))
    return points, tuple(rows[-1][:3])


@pytest.mark.parametrize("index", range(len(CASES)))
def test_curve_sheet_equals_serving_curve(recalculated, index):
    """The inference plan's curve (batch 1 to the batch kept, the kept batch marked) is SERVING_CURVE
    for the kept group: the same batches, tokens/s per user and tokens/s per GPU."""
    _, books = recalculated
    wb = books[index]
    model, gpu, prec, rpm, prompt, out, latency, engine, headroom = CASES[index]
    n = udfs.call("GPUS_FOR_TRAFFIC", *_engine(CASES[index]), "gpus_per_copy", "point", 0)
    table = udfs.call("SERVING_CURVE", model, gpu, prec, prompt, out, n, "", latency * 1000 / out if latency else "",
                      "" if engine == DEFAULT else engine, "")
    want = [(r[0], r[2], r[1]) for r in table.rows]
    got, kept = _curve(wb)
    assert [p[0] for p in got] == [w[0] for w in want], (got, want)
    for g, w in zip(got, want):
        assert same_number(g[1], w[1]) and same_number(g[2], w[2]), (g, w)
    chosen = next((r[0], r[2], r[1]) for r in table.rows if r[-1])
    assert kept[0] == chosen[0] and same_number(kept[1], chosen[1]) and same_number(kept[2], chosen[2])


def test_curve_sheet_has_its_chart(tmp_path):
    wt.module("inference_plan").build(tmp_path / "ip.xlsx")
    ws = openpyxl.load_workbook(tmp_path / "ip.xlsx")["Serving curve"]
    assert len(ws._charts) == 1 and len(ws._charts[0].series) == 2
