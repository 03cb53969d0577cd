"""benchmarks/prefill_breakdown.py takes a prefill apart as the model computes it: its parts add up to
capacity.prefill_compute_s, and what a row implies is its own arithmetic."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import prefill_breakdown as pb
from benchmarks import serving_accuracy as sa
from udfs.physics import capacity

DIRECTORY = sa.default_dir()
pytestmark = pytest.mark.skipif(not (DIRECTORY / "inference_measured.csv").exists(), reason="no measured rows")


@pytest.fixture(scope="module")
def rows():
    return pb.selected(sa.cases_of(DIRECTORY), 1000)


def test_it_selects_the_long_prompt_bursts_and_the_first_token_rows(rows):
    kinds = {(c.metric, c.burst > 0) for c in rows}
    assert kinds == {("burst", True), ("prefill", False)}
    assert all(c.prompt >= 1000 for c in rows if c.burst)


def test_the_parts_add_up_to_the_models_prefill(rows):
    for case in rows[:6] + [c for c in rows if c.n_gpus > 1][:2]:
        parts = pb.breakdown(case)
        whole = capacity.prefill_compute_s(case.model, case.gpu, case.precision, case.prompt, 1, case.n_gpus,
                                           case.engine)
        assert parts.products_s + parts.attention_s + parts.exchange_s == pytest.approx(whole, rel=1e-9)
        assert parts.products_s > 0 and parts.attention_s > 0 and parts.prefill_s >= whole


def test_a_lone_first_tokens_implied_rate_is_its_flops_over_the_measured_time(rows):
    case = next(c for c in rows if c.metric == "prefill" and c.unit == "ms" and not c.rate and not c.concurrency)
    parts = pb.breakdown(case)
    measured, modelled, rate = pb.implied_rate(case, parts)
    assert measured == case.measured / 1000
    assert modelled == pytest.approx(parts.prefill_s, rel=1e-9)      # a lone request: its prefill, no decode step
    assert rate * measured * case.n_gpus == pytest.approx(parts.product_flops + parts.attention_flops, rel=1e-9)
