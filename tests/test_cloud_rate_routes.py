"""One home for "the cloud rate for N GPUs of this kind" (catalog.cheapest_cloud_price through picker.option_row):
SERVING_CURVE's default rate, COST_PER_1M_OUTPUT_TOKENS at that rate, the picker's rows, the report's Assumptions
sheet and the plan ([plan] / Plan sheet) all price the instance that holds the GPUs that must share a link. Until
2026-11-24 SERVING_CURVE, the Assumptions sheet and the plan priced the cheapest row of any size (B300: $7.40 a
GPU-hour in a one-GPU instance against $17.80 in the 8-GPU one an 8-GPU copy needs). Expected rates are picked
from cloud.csv by hand here."""

from pathlib import Path

import pytest

from udfs.api import registry
from udfs.catalogs import catalog
from udfs.planning import report_model, scenario

ROOT = Path(__file__).resolve().parents[1]


def _by_hand(gpu: str, at_least: int) -> catalog.CloudPrice:
    rows = [p for p in catalog.cloud_prices() if p.gpu == gpu and p.status == "current" and p.pricing == "on-demand"
            and (p.usd_per_gpu_hour or 0) > 0 and (p.gpu_count or 1) >= at_least]
    return min(rows, key=lambda p: p.usd_per_gpu_hour)


def test_serving_curve_prices_the_instance_that_holds_the_copy():
    b300 = catalog.gpu("B300").name
    one, eight = _by_hand(b300, 1), _by_hand(b300, 8)
    assert one.gpu_count == 1 and one.usd_per_gpu_hour < eight.usd_per_gpu_hour     # else this proves nothing
    args = ("Llama 3.1 70B", "B300", "fp8", 1000, 200)
    for n, row in ((1, one), (8, eight)):
        curve = registry.call("SERVING_CURVE", *args, n)
        head = curve.header
        last = dict(zip(head, curve.rows[-1]))
        by_hand = row.usd_per_gpu_hour * 1e6 / (last["Tokens_per_sec_per_GPU"] * 3600)
        assert last["USD_per_1M_output_tokens"] == pytest.approx(by_hand, rel=1e-9)
        cost = registry.call("COST_PER_1M_OUTPUT_TOKENS", row.usd_per_gpu_hour, *args, n, "", "", "", last["Batch"])
        assert cost == pytest.approx(last["USD_per_1M_output_tokens"], rel=1e-9)


def test_the_report_its_assumptions_and_its_plan_price_the_same_instance():
    res = report_model.analyse(scenario.load(ROOT / "examples" / "serve-70b.toml"), sensitivity=False)
    plan = res.plan
    assert plan is not None and plan.need.gpus_per_copy > 1
    gpu = plan.gpu
    cheapest, held = _by_hand(gpu, 1), _by_hand(gpu, plan.need.gpus_per_copy)
    assert cheapest.gpu_count == 1 and cheapest.usd_per_gpu_hour < held.usd_per_gpu_hour   # else this proves nothing
    assert plan.prices.rent_usd_per_gpu_hour == held.usd_per_gpu_hour
    assert plan.prices.instance_gpus == held.gpu_count
    listed = dict(report_model.cloud_rows(res))
    rented = next(r for r in res.rows if r.gpu == gpu and r.basis == "cloud" and r.auto_count)
    assert listed[gpu] is not None and listed[gpu].usd_per_gpu_hour == rented.rate == held.usd_per_gpu_hour
    for name, row in listed.items():                      # every GPU's listed row is the one its rows are priced at
        r = next((r for r in res.rows if r.gpu == name and r.basis == "cloud" and r.auto_count and r.rate), None)
        if r is not None and row is not None:
            assert row.usd_per_gpu_hour == r.rate, name
