"""Missing is explicit (issue 19 item 4, issue 21 item 3): a catalog figure that is not known
answers #N/A naming the figure, the GPU and how to supply it, never a default in its place;
a number format the GPU has no units for runs weight-only on its 16-bit units (never slower
than 16-bit) or is refused; the picker marks an option it cannot estimate "not comparable"."""

import math
from pathlib import Path

import pytest

from udfs.api import registry
from udfs.catalogs import catalog
from udfs.errors import FlopsheetError, MissingFigure
from udfs.physics import capacity
from udfs.planning import picker
from udfs.planning.reasons import Status

from .calls import call, error

H100 = dict(memory_gb=80, bandwidth_tbs=3.35, bf16_tflops=989.5, fp8_tflops=1979, memory_type="HBM3", tdp_w=700,
            interconnect_gbs=900, vendor="NVIDIA")
ROOT = Path(__file__).resolve().parents[1]
TRAFFIC = dict(requests_per_minute=600, prompt_tokens=1000, output_tokens=300)


def define(**changes) -> str:
    """An H100 described in a cell, with some figures changed or left blank ("")."""
    return call("GPU_DEFINE", **{**H100, **changes})


def assert_names(e: FlopsheetError, figure: str, gpu: str) -> None:
    assert e.code == "#N/A", e
    assert figure in e.message and gpu in e.message, e.message
    assert "GPU_DEFINE" in e.message, e.message          # how to supply it


@pytest.fixture
def private(private_catalog):
    """A private catalog folder holding one gpus.csv (conftest.private_catalog)."""
    return lambda text: private_catalog("gpus.csv", text)


# ------------------------------------------------------------------ the GPU link (was: blank = 64 GB/s PCIe)
def test_blank_link_is_na_where_gpus_are_split_not_pcie():
    gpu = define(interconnect_gbs="", gpu_name="No Link")
    e = error("GPUS_FOR_TRAFFIC", "Llama 3.1 70B", gpu, **TRAFFIC)
    assert_names(e, "interconnect_gbs", "No Link")
    assert "n_gpus" in e.message                          # the search says how to size one GPU per copy
    assert_names(error("GPUS_FOR_TRAFFIC", "Llama 3.1 70B", gpu, **TRAFFIC, n_gpus=2), "interconnect_gbs", "No Link")
    # one GPU per copy needs no link: the same answer as the catalog H100's
    one = dict(**TRAFFIC, n_gpus=1)
    assert call("GPUS_FOR_TRAFFIC", "Llama 3.1 8B", gpu, **one) == call("GPUS_FOR_TRAFFIC", "Llama 3.1 8B", "H100", **one)


def test_link_given_gives_the_catalog_answer():
    assert call("GPUS_FOR_TRAFFIC", "Llama 3.1 70B", define(), **TRAFFIC) == \
        call("GPUS_FOR_TRAFFIC", "Llama 3.1 70B", "H100", **TRAFFIC)


def test_private_gpu_without_link_is_na_naming_the_private_catalog(private):
    private("name,memory_gb,bandwidth_tbs,bf16_tflops,memory_type,tdp_w\nAcme X1,96,4.0,1000,HBM3,700\n")
    e = error("GPUS_FOR_TRAFFIC", "Llama 3.1 70B", "Acme X1", **TRAFFIC)
    assert_names(e, "interconnect_gbs", "Acme X1")
    assert "FLOPSHEET_CATALOG" in e.message


# ------------------------------------------------------------------ tensor rates (was: blank FP8 = 16-bit rate)
def test_blank_fp8_is_na_not_the_16_bit_rate():
    gpu = define(fp8_tflops="", gpu_name="No FP8 Figure")
    for name, args in (("SERVING_THROUGHPUT", ("Llama 3.1 8B", gpu, "fp8")),
                       ("PREFILL_TOKENS_PER_SEC", ("Llama 3.1 8B", gpu, "fp8")),
                       ("TRAINING_GPU_HOURS", (8e9, 1e12, gpu, 0.4, "fp8"))):
        assert_names(error(name, *args), "fp8_tflops", "No FP8 Figure")
    # the 16-bit figure it has still answers 16-bit questions
    assert call("SERVING_THROUGHPUT", "Llama 3.1 8B", gpu, "bf16") == \
        call("SERVING_THROUGHPUT", "Llama 3.1 8B", define(), "bf16")


def test_blank_16_bit_rate_is_na_for_prefill_and_batches():
    gpu = define(bf16_tflops="", fp8_tflops="", gpu_name="Bare")
    assert_names(error("PREFILL_TOKENS_PER_SEC", "Llama 3.1 8B", gpu), "bf16_tflops", "Bare")
    assert_names(error("DECODE_TOKENS_PER_SEC", "Llama 3.1 8B", gpu, batch=8), "bf16_tflops", "Bare")
    assert call("DECODE_TOKENS_PER_SEC", "Llama 3.1 8B", gpu) > 0      # batch 1 is memory-bound on any GPU


def test_no_units_runs_weight_only_never_slower_than_16_bit():
    """FP8 on an A100 and FP4 on an H100 (0 in the catalog: no units for the format) run on the
    16-bit units with weights read at their own size (issue 21: they came out slower)."""
    for gpu, low in (("A100", "fp8"), ("H100", "fp4"), (define(fp8_tflops=0), "fp8")):
        g = registry.call("GPU_SPEC", gpu, "bf16_tflops")
        assert g > 0
        for name, args in (("SERVING_THROUGHPUT", ("Llama 3.1 8B", gpu)),
                           ("PREFILL_TOKENS_PER_SEC", ("Llama 3.1 8B", gpu)),
                           ("DECODE_TOKENS_PER_SEC", ("Llama 3.1 8B", gpu))):
            assert call(name, *args, low) >= call(name, *args, "bf16"), (name, gpu, low)
        assert call("GPUS_FOR_TRAFFIC", "Llama 3.1 70B", gpu, **TRAFFIC, precision=low) <= \
            call("GPUS_FOR_TRAFFIC", "Llama 3.1 70B", gpu, **TRAFFIC, precision="bf16")
    a100 = catalog.gpu("A100")
    assert a100.fp8_tflops == 0 and a100.has_units("fp8") is False and a100.weight_only("fp8")
    assert a100.tensor_peak("fp8", "a test").tflops == a100.bf16_tflops
    # training cannot run weight-only: refused, saying why
    e = error("TRAINING_GPU_HOURS", 8e9, 1e12, "A100", 0.4, "fp8")
    assert e.code == "#VALUE!" and "no fp8 tensor units" in e.message


def test_a_16_bit_format_the_gpu_lacks_is_refused():
    """T4 and V100 have no BF16 units (0 in the catalog): bf16 is refused, fp16 works. (A 3B model: Llama 2 7B
    in fp16 does not fit in the 14.75 GiB CUDA reports on a T4 beside an engine's reserve.)"""
    model = "Llama 3.2 3B"
    for gpu in ("T4", "V100"):
        e = error("SERVING_THROUGHPUT", model, gpu, "bf16")
        assert e.code == "#VALUE!" and "no bf16 tensor units" in e.message and "fp16" in e.message
        assert call("SERVING_THROUGHPUT", model, gpu, "fp16") > 0
        # weight-only formats run on the 16-bit units it has (FP16), never refused for its missing BF16
        for low in ("int4", "nf4", "fp8"):
            assert call("SERVING_THROUGHPUT", model, gpu, low) >= call("SERVING_THROUGHPUT", model, gpu, "fp16")


def test_sixteen_bit_rates_are_one_rate_where_both_are_known():
    """The rule that lets one 16-bit figure stand for the other (NVIDIA and AMD) holds on every
    such catalog GPU; not on Gaudi 3, where the rule does not apply."""
    assert catalog.gpu("Gaudi 3").fp16_tflops < catalog.gpu("Gaudi 3").bf16_tflops
    both = [g for g in catalog.gpus() if g.bf16_tflops and g.fp16_tflops and g.vendor in catalog.SIXTEEN_BIT_VENDORS]
    assert len(both) > 20
    assert all(g.bf16_tflops == pytest.approx(g.fp16_tflops, rel=0.01) for g in both), \
        [(g.name, g.bf16_tflops, g.fp16_tflops) for g in both if g.bf16_tflops != g.fp16_tflops]


def test_precisions_without_a_figure_are_na_and_known_ones_unchanged():
    """Every catalog GPU and format: a rate, a refusal for a format it lacks, or #N/A naming the figure."""
    for g in catalog.gpus():
        for p in catalog.precisions():
            try:
                peak = g.tensor_peak(p, "a test")
            except MissingFigure as gap:
                assert gap.figure in catalog.GPU_FIELDS and getattr(g, gap.figure) is None
                continue
            except FlopsheetError as refused:
                assert "no " in refused.message and g.has_units(p) is False
                continue
            assert peak.tflops > 0 and peak.bits in (16, 8, 4)
            if g.has_units(p) and not g.weight_only(p):
                assert peak.tflops == g.tensor_tflops(p)      # a known figure is used as it is


# ------------------------------------------------------------------ power and systems (was: tdp_w or 0, system_gpus or 1)
def test_owned_rate_needs_the_power_figure(private):
    private("name,memory_gb,bandwidth_tbs,bf16_tflops,memory_type,interconnect_gbs,system_price_usd,system_gpus,tier\n"
            "Acme X2,96,4.0,1000,HBM3,900,40000,8,datacenter\n")
    gpu = catalog.gpu("Acme X2")
    with pytest.raises(MissingFigure) as e:
        picker.owned_rate(gpu)
    assert e.value.figure == "tdp_w" and "Acme X2" in e.value.message


def test_picker_marks_an_option_missing_a_figure_not_comparable(private):
    private("name,memory_gb,bandwidth_tbs,bf16_tflops,memory_type,tdp_w,system_price_usd,system_gpus,tier\n"
            "Acme X3,96,4.0,1000,HBM3,700,40000,8,datacenter\n")
    options = picker.rank("serve", catalog.model("Llama 3.1 70B"), "bf16", tokens_or_traffic=2000)
    acme = next(o for o in options if o.gpu == "Acme X3")
    assert acme.status is Status.NO_SPEC and not acme.ok
    assert acme.reason.figures["figure"] == "interconnect_gbs"
    assert acme.reason.text().startswith("not comparable:") and "interconnect_gbs" in acme.reason.text()
    ok = [i for i, o in enumerate(options) if o.ok]
    assert ok and max(ok) < options.index(acme)           # ranked after every comparable option
    rows = call("GPU_RANK", "serve", "Llama 3.1 70B", tokens_or_traffic=2000)
    assert any("Acme X3" in map(str, row) and any("not comparable" in str(c) for c in row) for row in rows.rows)


def test_whole_systems_need_the_system_size(private):
    private("name,memory_gb,bandwidth_tbs,bf16_tflops,memory_type,tdp_w,interconnect_gbs,system_price_usd,tier\n"
            "Acme X4,96,4.0,1000,HBM3,700,900,40000,datacenter\n")
    options = picker.rank("serve", catalog.model("Llama 3.1 8B"), "bf16", tokens_or_traffic=5000,
                          price_basis="owned")
    acme = next(o for o in options if o.gpu == "Acme X4")
    assert acme.status is Status.NO_SPEC and acme.reason.figures["figure"] == "system_gpus"


# ------------------------------------------------------------------ GPU_SPEC: a figure or a clear #N/A
def test_gpu_spec_answers_a_figure_or_na_for_every_field():
    for g in catalog.gpus():
        for field in sorted(catalog.GPU_FIELDS - {"aliases"}):
            try:
                value = call("GPU_SPEC", g.name, field)
            except FlopsheetError as e:
                assert e.code == "#N/A" and field in e.message and g.name in e.message, e
                assert getattr(g, field) in (None, "")
                continue
            assert value not in (None, "")
            if isinstance(value, float):
                assert math.isfinite(value)


def test_gpu_spec_of_a_blank_link_is_na(private):
    private("name,memory_gb,bandwidth_tbs,interconnect\nAcme X5,96,4.0,\n")
    e = error("GPU_SPEC", "Acme X5", "interconnect_gbs")
    assert e.code == "#N/A" and "interconnect_gbs" in e.message and "FLOPSHEET_CATALOG" in e.message
    assert call("GPU_SPEC", "Acme X5", "memory_gb") == 96


def test_no_units_reads_back_from_a_spec():
    spec = define(fp8_tflops=0)
    assert "fp8=0" in spec
    assert call("GPU_SPEC", spec, "fp8_tflops") == 0


def test_capacity_search_is_explicit_about_the_missing_link():
    gpu = catalog.gpu_from_row({**H100, "interconnect_gbs": None, "name": "Linkless", "source": "GPU_DEFINE"})
    with pytest.raises(MissingFigure) as e:
        capacity.plan_for_demand(catalog.model("Llama 3.1 70B"), gpu, 3000, 1000, 300)
    assert e.value.figure == "interconnect_gbs" and e.value.subject == "Linkless"


def test_report_lists_a_gpu_missing_a_figure_as_not_comparable(private):
    """A private GPU with a purchase price but no power figure: the scenario report still runs,
    the owned option is not comparable (tdp_w), and the recommendation is another GPU."""
    from udfs.planning import report_model, scenario
    private("name,memory_gb,bandwidth_tbs,bf16_tflops,fp16_tflops,memory_type,interconnect_gbs,system_price_usd,"
            "system_gpus,tier\nAcme X6,96,4.0,1000,1000,HBM3,900,1000,8,datacenter\n")
    text = (ROOT / "examples" / "serve-8b.toml").read_text(encoding="utf-8")
    sc = scenario.parse(text.replace('gpus = "all"', 'gpus = ["Acme X6", "H100", "L40S"]'))
    res = report_model.analyse(sc, sensitivity=False)
    acme = [r for r in res.rows if r.gpu == "Acme X6" and r.basis == "owned"]
    assert acme and all(not r.ok and r.reason.figures.get("figure") == "tdp_w" for r in acme)
    assert "not comparable" in acme[0].reason.text()
    assert res.best is not None and res.best.gpu != "Acme X6"


def test_private_catalog_says_no_units_with_0(private):
    private("name,memory_gb,bandwidth_tbs,bf16_tflops,fp8_tflops,memory_type,interconnect_gbs\n"
            "Acme X7,48,1.0,300,0,GDDR6,64\n")
    gpu = catalog.gpu("Acme X7")
    assert gpu.has_units("fp8") is False and gpu.weight_only("fp8")
    assert call("PREFILL_TOKENS_PER_SEC", "Llama 3.1 8B", "Acme X7", "fp8") >= \
        call("PREFILL_TOKENS_PER_SEC", "Llama 3.1 8B", "Acme X7", "bf16")


def test_model_define_experts_without_top_k_is_refused_not_top_1():
    e = error("MODEL_DEFINE", 32, 4096, 32, 8, 14336, 128256, 0, 8)
    assert e.code == "#VALUE!" and "experts_per_token" in e.message
    assert "experts8/top2" in call("MODEL_DEFINE", 32, 4096, 32, 8, 14336, 128256, 0, 8, 2)


@pytest.fixture
def private_models(tmp_path, monkeypatch):
    def use(text: str):
        (tmp_path / "models.csv").write_text(text, encoding="utf-8")
        monkeypatch.setenv("FLOPSHEET_CATALOG", str(tmp_path))
        catalog.reload()
    yield use
    monkeypatch.delenv("FLOPSHEET_CATALOG", raising=False)
    catalog.reload()


def test_training_memory_needs_the_vocabulary_not_zero_logits(private_models):
    """A private model given its parameter count and layers but no vocabulary: training memory is
    #N/A naming vocab (it counted 0 logits), and the catalog's Llama 2 7B is unchanged by the rule."""
    private_models("name,params,layers,hidden,heads,kv_heads,ffn\nAcme LM,7e9,32,4096,32,32,11008\n")
    e = error("TRAINING_MEMORY_GB", "Acme LM")
    assert e.code == "#N/A" and "vocab" in e.message and "Acme LM" in e.message
    assert call("TRAINING_MEMORY_GB", "Llama 2 7B") > 0


def test_speedup_needs_the_figure_it_compares():
    gpu = define(bf16_tflops="", fp8_tflops="", gpu_name="No Tensor Figure")
    assert_names(error("SPEEDUP", gpu), "bf16_tflops", "No Tensor Figure")
    assert call("SPEEDUP", gpu, "A100", "inference") == pytest.approx(3.35 / catalog.gpu("A100").bandwidth_tbs)
