"""Evidence per estimate (udfs/physics/evidence.py): the shipped per-row out-of-sample errors are
what the accuracy tool produces now, measured regimes name their nearest row, and regimes nothing
measured get a wider band and say "no measurement"."""

from pathlib import Path

import pytest

from benchmarks import accuracy
from udfs.catalogs import catalog, resolve
from udfs.physics import evidence

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "udfs" / "data" / evidence.FILE


@pytest.fixture(scope="module")
def report():
    return accuracy.run(accuracy.default_measured_dir())


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


@pytest.mark.parametrize("metric", ["throughput", "decode", "prefill", "training"])
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


def test_moe_serving_has_no_measurement_yet():
    ev = evidence.for_option("throughput", catalog.model("Mixtral 8x7B"), catalog.gpu("H100"), "fp8", 2,
                             "TensorRT-LLM")
    assert not ev.measured and ev.regime.architecture == "MoE"


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
    for needle in ("throughput:", "engine  TensorRT-LLM", "layout  parallel", "vendor  AMD",
                   "regime  TensorRT-LLM, NVIDIA H100, dense, one GPU"):
        assert needle in text, needle
