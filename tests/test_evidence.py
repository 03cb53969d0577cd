"""Evidence per estimate (udfs/physics/evidence.py): the shipped per-row out-of-sample errors are
what the accuracy tool produces now, measured regimes name their nearest row, and regimes nothing
measured get a wider band and say "no measurement"."""

from pathlib import Path

import pytest

import udfs
from benchmarks import accuracy
from udfs.errors import FlopsheetError
from udfs.catalogs import catalog, resolve
from udfs.physics import capacity, evidence
from udfs.planning import picker
from udfs.planning.reasons import Status

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "udfs" / "data" / evidence.FILE


@pytest.fixture(scope="module")
def report(accuracy_report):
    return accuracy_report


def width(ev: evidence.Evidence) -> float:
    return ev.high_error - ev.low_error


def test_the_shipped_evidence_is_what_the_accuracy_tool_produces_now(report):
    assert SHIPPED.read_text(encoding="utf-8") == accuracy.evidence_text(report), (
        "udfs/data/evidence.csv is stale: run python benchmarks/accuracy.py --write-evidence")


def test_every_scored_row_with_a_regime_is_shipped(report):
    rows = evidence.measured()
    expected = [c for c in report.comparisons if c.metric in accuracy.EVIDENCE_METRICS and c.config]
    assert len(rows) == len(expected) > 40
    assert {m.metric for m in rows} == set(evidence.METRICS)
    assert all(m.source.startswith("benchmarks/measured/") and m.as_of for m in rows)


def test_a_measured_regime_names_its_nearest_row():
    ev = evidence.for_option("throughput", catalog.model("Llama 3.1 8B"), catalog.gpu("H100 SXM"), "fp8", 1,
                             "TensorRT-LLM")
    assert ev.measured and ev.rows >= 1
    assert "Llama 3.1 8B" in ev.nearest.description and ev.nearest.gpu == "H100 SXM 80GB"
    assert "measured row" in ev.text() and "no measurement" not in ev.text()
    assert ev.low_error <= 0 <= ev.high_error


def test_gaudi_3_throughput_is_measured_by_intels_table():
    """Intel's Gaudi 3 throughput table (benchmarks/measured) puts Gaudi 3 serving with its default engine
    (the Intel Gaudi software profile, the stack the table ran) in a measured regime, whose band holds its
    own rows; vLLM on Gaudi 3 has no row."""
    ev = evidence.for_option("throughput", catalog.model("Llama 3.1 8B"), catalog.gpu("Gaudi 3"), "fp8", 1)
    assert ev.regime.engine == "Intel Gaudi software"
    assert not evidence.for_option("throughput", catalog.model("Llama 3.1 8B"), catalog.gpu("Gaudi 3"), "fp8", 1,
                                   "vLLM").measured
    own = [m for m in evidence.measured() if m.regime == ev.regime]
    assert ev.measured and ev.rows == len(own) >= 5
    assert "Intel" in ev.text() and "no measurement" not in ev.text()
    assert ev.low_error <= evidence.band_of([m.error_out for m in own])[0]
    assert ev.high_error >= evidence.band_of([m.error_out for m in own])[1]


@pytest.mark.parametrize("metric", ["decode", "prefill", "training"])
def test_gaudi_3_has_no_measurement_and_a_wider_band(metric):
    model = catalog.model("Llama 3.1 8B")
    gaudi = evidence.for_option(metric, model, catalog.gpu("Gaudi 3"), "bf16", 1, "vLLM")
    assert not gaudi.measured and gaudi.rows == 0
    assert "no measurement" in gaudi.text()
    for measured in evidence.measured():
        if measured.metric == metric:
            own = evidence.lookup(measured.regime)
            assert width(gaudi) >= width(own), (measured.regime, own.low_error, own.high_error)


def test_a_gpu_defined_in_a_cell_is_never_measured():
    defined = resolve.gpu("gpu: 80GB 3.35TB/s bf16=989.5 fp8=1979 HBM3 vendor=NVIDIA")
    ev = evidence.for_option("throughput", catalog.model("Llama 3.1 8B"), defined, "fp8", 1, "TensorRT-LLM")
    assert not ev.measured and "no measurement" in ev.text()
    h100 = evidence.for_option("throughput", catalog.model("Llama 3.1 8B"), catalog.gpu("H100"), "fp8", 1,
                               "TensorRT-LLM")
    assert width(ev) > width(h100)


def test_moe_serving_on_amd_has_no_measurement_yet():
    # MoE serving is measured on NVIDIA (vLLM, SGLang, TensorRT-LLM: MLPerf v4.1 Mixtral, scored as one-GPU copies)
    assert evidence.for_option("throughput", catalog.model("Mixtral 8x7B"), catalog.gpu("H100"), "fp8", 1,
                               "TensorRT-LLM").measured
    ev = evidence.for_option("throughput", catalog.model("Mixtral 8x7B"), catalog.gpu("MI300X"), "fp8", 1, "vLLM")
    assert not ev.measured and ev.regime.architecture == "MoE"


def test_a_moe_model_its_regime_never_measured_is_unmeasured_there():
    """A MoE step's fixed time a layer (MOE_LAYER_US) is chosen from other models' rows and does not carry to a new
    model (leaving one model out 28.7%, against 12.5% by row folds): Qwen3 235B-A22B on one H200 with vLLM, whose
    regime measures only gpt-oss-120b, gets the widened band of a regime nothing measured and says which models were
    measured; gpt-oss-120b in the same regime keeps its measured band, and a dense model ignores the rule."""
    h200 = catalog.gpu("H200 SXM")
    gpt_oss = evidence.for_option("throughput", catalog.model("gpt-oss-120b"), h200, "mxfp4", 1, "vLLM")
    qwen = evidence.for_option("throughput", catalog.model("Qwen3 235B-A22B"), h200, "fp8", 1, "vLLM")
    assert gpt_oss.measured and gpt_oss.regime == qwen.regime
    assert {m.model for m in evidence.measured() if m.regime == qwen.regime} == {"gpt-oss-120b"}
    assert not qwen.measured and qwen.other_models == ("gpt-oss-120b",) and qwen.label == "unverified"
    assert "no measurement of this MoE model" in qwen.text() and "its rows measure gpt-oss-120b" in qwen.text()
    assert qwen.low_error < gpt_oss.low_error and qwen.high_error > gpt_oss.high_error
    # the rule needs a MoE regime: a dense estimate and an estimate with no model named read the regime's rows
    regime = qwen.regime
    assert evidence.lookup(regime).measured and evidence.lookup(regime, model="gpt-oss-120b").measured
    dense = evidence.for_option("throughput", catalog.model("Llama 3.1 8B"), catalog.gpu("H100"), "fp8", 1,
                                "TensorRT-LLM")
    assert dense.measured and dense.other_models == ()


@pytest.mark.parametrize("inverse", [False, True])
def test_ranges_hold_the_point(inverse):
    ev = evidence.for_option("throughput", catalog.model("Llama 3.3 70B"), catalog.gpu("MI300X"), "fp8", 1, "vLLM")
    low, high = ev.value_range(100.0, inverse)
    assert low <= 100.0 <= high and low > 0
    assert ev.pick(100.0, "low", inverse) == low and ev.pick(100.0, "point", inverse) == 100.0


def test_widening_is_in_log_space():
    assert evidence.widen(0.0, 3) == 0.0
    assert evidence.widen(-0.5, 3) == pytest.approx(-0.875)     # never below -100%
    assert evidence.widen(0.2, 3) == pytest.approx(0.728)


def test_the_report_breaks_the_error_down_by_regime(report):
    text = accuracy.format_report(report)
    assert "== Error by regime" in text
    lines = [" ".join(line.split()) for line in text.splitlines()]
    for needle in ("throughput:", "engine TensorRT-LLM", "layout parallel", "vendor AMD", "architecture MoE",
                   "regime TensorRT-LLM, NVIDIA H100, dense, one GPU"):
        assert any(line.startswith(needle) for line in lines), needle


# ---------------------------------------------------------------------------- the worksheet

SAMPLE_MODELS = ("Llama 3.1 8B", "Llama 3.3 70B", "Mixtral 8x7B", "Qwen2.5 32B")
SAMPLE_GPUS = ("H100 SXM", "A100 SXM 80GB", "L40S", "RTX 4090", "MI300X", "Gaudi 3", "B200", "H200")


def _three(name, *args):
    """point, low and high of a function whose last argument is `estimate` (None if refused)."""
    try:
        return tuple(udfs.call(name, *args, e) for e in ("point", "low", "high"))
    except FlopsheetError:
        return None


@pytest.mark.parametrize("gpu", SAMPLE_GPUS)
def test_low_point_high_are_ordered_across_the_catalog(gpu):
    checked = 0
    for model in SAMPLE_MODELS:
        for name, args in (("SERVING_THROUGHPUT", (model, gpu, "fp8", 1024, 256, "", "", "", "")),
                           ("GPUS_FOR_TRAFFIC", (model, gpu, 600, 1024, 256, "", "", "bf16", "", "", 0.2, "gpus")),
                           ("COST_PER_1M_OUTPUT_TOKENS", (2.5, model, gpu, "fp8", 1024, 256, "", "", "", "", "")),
                           ("TRAINING_GPU_HOURS", (model, 1e12, gpu, 0.4, "bf16"))):
            found = _three(name, *args)
            if found is None:
                continue
            point, low, high = found
            assert low <= point <= high, (name, model, gpu, found)
            assert low < high or name == "GPUS_FOR_TRAFFIC", (name, model, gpu, found)   # whole GPUs may tie
            checked += 1
    assert checked >= 4


def test_the_pessimistic_end_of_a_throughput_is_more_gpus_and_more_cost():
    ev = evidence.for_option("throughput", catalog.model("Llama 3.1 70B"), catalog.gpu("H100"), "fp8", 1)
    tps = _three("SERVING_THROUGHPUT", "Llama 3.1 70B", "H100", "fp8", 1000, 200, 1, "", "", "")
    cost = _three("COST_PER_1M_OUTPUT_TOKENS", 3.2, "Llama 3.1 70B", "H100", "fp8", 1000, 200, 1, "", "", "", "")
    assert tps[1] == pytest.approx(tps[0] / (1 + ev.high_error))          # low throughput: the P90 error
    assert cost[2] == pytest.approx(cost[0] * tps[0] / tps[1])            # high cost: at that low throughput
    gpus = _three("GPUS_FOR_TRAFFIC", "Llama 3.3 70B", "MI355X", 1000, 2048, 512, 50, "", "bf16", "", "", 0.2,
                  "gpus")
    assert gpus[1] <= gpus[0] < gpus[2]     # the optimistic end may round to the same whole GPUs (band P10 -3%)


def test_unmeasured_ranges_are_wider_than_measured_ones():
    def spread(gpu, engine):
        point, low, high = _three("SERVING_THROUGHPUT", "Llama 3.1 8B", gpu, "fp8", 2048, 2048, 1, "", engine, "")
        return (high - low) / point
    # an engine nothing measured (TGI) against a measured one, on the same GPU; the band of a measured regime
    # holds what its rows measured (on H100 with TensorRT-LLM, two trtllm-serve bursts far below the steady
    # state), so a regime of another vendor (MI355X with vLLM, AMD's tight rows widened) is no yardstick for it
    assert spread("H100", "tgi") > spread("H100", "trtllm")
    defined = udfs.call("GPU_DEFINE", 80, 3.35, 989.5, 1979, "HBM3", "", "", "", "", "", "NVIDIA")
    assert spread(defined, "trtllm") > spread("H100", "trtllm")


def test_estimate_evidence_text():
    measured = udfs.call("ESTIMATE_EVIDENCE", "Llama 3.1 8B", "H100", "fp8", "TensorRT-LLM")
    assert "measured row" in measured and "nearest measured: Llama 3.1 8B" in measured and "H100 SXM" in measured
    assert "no measurement" in udfs.call("ESTIMATE_EVIDENCE", "Llama 3.1 8B", "MI355X")
    assert "no measurement" in udfs.call("ESTIMATE_EVIDENCE", "Llama 2 7B", "Gaudi 3", "bf16", "", "training")
    assert "training: NVIDIA A100" in udfs.call("ESTIMATE_EVIDENCE", "Llama 2 7B", "A100", "bf16", "", "training")
    assert udfs.call("ESTIMATE_EVIDENCE", "Llama 3.1 8B", "H100", "fp8", "", "serving", 1) == measured


def test_the_bands_hold_most_rows_left_out_of_them():
    """Leave-one-out: a row's error against the band its regime gets from the other rows. A
    P10..P90 band aims at 8 rows in 10; below 7 the bands are too narrow to publish."""
    covered = accuracy.band_coverage(list(evidence.measured()))
    for measured, (inside, rows) in covered.items():
        assert rows >= 10 and inside / rows >= 0.7, (measured, inside, rows)


def test_the_figures_the_docs_quote_are_current():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    three = [udfs.call("SERVING_THROUGHPUT", "Llama 3.1 8B", "H100", "fp8", 2048, 2048, 1, "", "", "", e)
             for e in ("low", "point", "high")]
    assert " / ".join(f"{v:,.0f}" for v in three) + " tokens/s" in readme
    h100 = evidence.for_option("throughput", catalog.model("Llama 3.1 8B"), catalog.gpu("H100"), "fp8", 1)
    gaudi = evidence.for_option("throughput", catalog.model("Llama 3.1 8B"), catalog.gpu("Gaudi 3"), "fp8", 1)
    mi355x = evidence.for_option("throughput", catalog.model("Llama 3.1 8B"), catalog.gpu("MI355X"), "fp8", 1)
    for ev in (h100, gaudi, mi355x):
        assert f"{ev.low_error:+.0%} to {ev.high_error:+.0%}" in readme.replace("\n", " "), ev.text()
    page = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8").replace("\n", " ")
    covered = accuracy.band_coverage(list(evidence.measured()))
    assert f"{covered[True][0]} of {covered[True][1]} fall inside" in page
    assert f"for the {covered[False][1]} rows left alone" in page and f"rule, {covered[False][0]} (" in page


def test_a_dense_band_holds_no_moe_row():
    """Below the metric level dense and MoE rows stay apart: a dense model's band is read from dense rows
    only (the MoE misses, docs/accuracy.md, would widen it), and a MoE model's from MoE rows."""
    # Mixtral on one H100: MLPerf's steady-state rows, scored as one-GPU copies (bursts set no band)
    for model, architecture, n in (("Llama 3.1 8B", "dense", 1), ("Mixtral 8x7B", "MoE", 1)):
        regime = evidence.regime_of("throughput", catalog.gpu("H100"), catalog.model(model).is_moe, n, "TensorRT-LLM")
        for _, level in evidence.LEVELS[:-1]:
            rows = evidence._at(level, regime, evidence.measured())
            assert rows and {m.regime.architecture for m in rows} == {architecture}, (model, level)


def test_a_system_of_one_gpu_copies_backs_one_gpu_not_tensor_parallel():
    """An MLPerf system result is scored as the best split of its GPUs into model copies
    (benchmarks/serving_accuracy.best_split); its regime's layout is the copy's. Llama 2 70B in FP4 on HPE's
    8 x RTX PRO 6000 (96 GB): the weights, 70e9 x 4 bits = 35 GB, fit one card, and eight one-GPU copies are
    the split scored, so the row backs one-GPU copies and nothing backs a copy of two cards (tensor parallel over
    PCIe, issue 20's worst layout)."""
    from benchmarks import serving_accuracy as acc
    assert 70e9 * 4 / 8 / 1e9 < udfs.call("GPU_SPEC", "RTX PRO 6000 Blackwell Server", "memory_gb")
    case = next(c for c in acc.cases_of(acc.default_dir()) if c.system and c.model.name == "Llama 2 70B"
                and c.gpu.name.startswith("RTX PRO 6000") and c.n_gpus == 8)
    one = capacity.serving_point(case.model, case.gpu, case.precision, case.prompt, case.output, 1, case.max_tpot_ms,
                                 case.engine, case.kv, case.max_ttft_ms).tokens_per_sec
    assert acc.best_split(case, case.engine) == (pytest.approx(8 * one), 1)
    shipped = next(m for m in evidence.measured() if m.row == case.ref)
    assert shipped.layout == "one GPU" and shipped.n_gpus == 8
    two_cards = evidence.for_option("throughput", None, catalog.gpu("RTX PRO 6000 Blackwell Server"), "bf16", 2,
                                    "TensorRT-LLM")
    assert not two_cards.measured and "no measurement" in two_cards.text()
    # so the picker does not call 13B in copies of two such cards (the $2M brief's serving) measured
    ranked = {o.gpu: o for o in picker.rank("serve", 13e9, "bf16", tokens_or_traffic=6250, prompt_tokens=1000,
                                            output_tokens=300, max_latency_s=10, price_basis="owned")}
    rtx = ranked["RTX PRO 6000 Blackwell Server 96GB"]
    assert rtx.gpus_per_copy == 2 and rtx.status is Status.UNVERIFIED


def _row(precision: str, error: float) -> evidence.Measured:
    return evidence.Measured("throughput", "vLLM", "NVIDIA", "H100", "dense", "one GPU", "M", 8.0, "H100 SXM 80GB",
                             precision, 1, error, error, f"x:{precision}{error}", f"M | {precision}", "s", "2026-11-24")


def test_the_evidence_says_which_formats_measured_its_regime():
    """Two fp8 rows and one fp16 row in one regime: a bf16 estimate is backed by the fp16 row (same width and
    tensor rate), an fp4 one by none of them, and its label and text say what was measured instead."""
    rows = (_row("fp8", 0.1), _row("fp8", -0.1), _row("fp16", 0.05))
    regime = rows[0].regime
    fp4 = evidence.lookup.__wrapped__(regime, "H100 SXM 80GB", 8.0, "fp4", 1, rows)
    assert (fp4.rows, fp4.at_precision, fp4.formats) == (3, 0, ("fp8", "fp16"))
    assert fp4.measured and not fp4.same_format and fp4.label == "measured in fp8/fp16, not fp4"
    assert (fp4.format_phrase, picker.format_note(fp4)) == ("in fp8/fp16, not fp4", ", in fp8/fp16, not fp4")
    assert ", measured in fp8/fp16, none in fp4 (the format asked);" in fp4.text()
    bf16 = evidence.lookup.__wrapped__(regime, "H100 SXM 80GB", 8.0, "bf16", 1, rows)
    assert (bf16.at_precision, bf16.label) == (1, "measured")
    assert ", 1 of them in fp16 (counted for bf16: same width and rate), the rest in fp8;" in bf16.text()
    fp8 = evidence.lookup.__wrapped__(regime, "H100 SXM 80GB", 8.0, "fp8", 1, rows)
    assert (fp8.at_precision, fp8.label) == (2, "measured") and (fp8.low_error, fp8.high_error) == \
        (fp4.low_error, fp4.high_error)       # the band is the regime's over all its formats
    none = evidence.lookup.__wrapped__(evidence.Regime("throughput", "vLLM", "AMD", "MI300X", "dense", "one GPU"),
                                       "MI300X", 8.0, "fp8", 1, rows)
    assert none.label == "unverified" and not none.same_format and none.format_phrase == ""
    assert picker.format_note(bf16) == picker.format_note(none) == ""
