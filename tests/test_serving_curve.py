"""SERVING_CURVE: the trade-off curve ends at SERVING_THROUGHPUT's operating point, and each of its
figures is the one the single-figure functions give for the same deployment."""

from __future__ import annotations

import math

import pytest

import udfs
from udfs.catalogs import catalog
from udfs.errors import FlopsheetError

CASES = [("Llama 3.1 8B", "H100 SXM", "fp8", 2048, 2048, 1), ("Llama 3.3 70B", "H100 SXM", "fp8", 1000, 200, 2),
         ("Mixtral 8x7B", "A100 SXM 80GB", "bf16", 1024, 256, 2), ("Qwen3 30B-A3B", "H200 SXM", "bf16", 512, 512, 1)]


def curve(*args):
    table = udfs.call("SERVING_CURVE", *args)
    return [dict(zip(table.header, row)) for row in table.rows]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]} on {c[5]} x {c[1]}")
def test_the_last_point_is_the_operating_point(case):
    model, gpu, precision, prompt, output, n = case
    rows = curve(model, gpu, precision, prompt, output, n, 3.2)
    last = rows[-1]
    assert last["Operating_point"] and not any(r["Operating_point"] for r in rows[:-1])
    serving = (model, gpu, precision, prompt, output, n)
    assert last["Batch"] == udfs.call("SERVING_BATCH", *serving)
    assert last["Tokens_per_sec_per_GPU"] * n == pytest.approx(udfs.call("SERVING_THROUGHPUT", *serving), rel=1e-12)
    assert last["TPOT_ms"] == pytest.approx(udfs.call("SERVING_LATENCY_MS", *serving), rel=1e-12)
    assert last["TTFT_ms"] == pytest.approx(udfs.call("SERVING_LATENCY_MS", *serving, "", "", "", "ttft"), rel=1e-12)
    assert last["USD_per_1M_output_tokens"] == pytest.approx(
        udfs.call("COST_PER_1M_OUTPUT_TOKENS", 3.2, model, gpu, precision, prompt, output, n), rel=1e-12)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]} on {c[5]} x {c[1]}")
def test_larger_batches_trade_user_speed_for_gpu_throughput(case):
    rows = curve(*case, 2.0)
    assert [r["Batch"] for r in rows][:3] == [1, 2, 4]
    for a, b in zip(rows, rows[1:]):
        assert b["Batch"] > a["Batch"]
        assert b["Tokens_per_sec_per_GPU"] >= a["Tokens_per_sec_per_GPU"]
        assert b["Tokens_per_sec_per_user"] <= a["Tokens_per_sec_per_user"]
        assert b["USD_per_1M_output_tokens"] <= a["USD_per_1M_output_tokens"]
    for r in rows:
        assert r["Tokens_per_sec_per_user"] == pytest.approx(1000 / r["TPOT_ms"])


def test_a_point_at_a_fixed_batch_is_the_cost_function_at_that_batch():
    rows = curve("Llama 3.1 8B", "H100 SXM", "fp8", 2048, 2048, 1, 2.5)
    row = next(r for r in rows if r["Batch"] == 16)
    cost = udfs.call("COST_PER_1M_OUTPUT_TOKENS", 2.5, "Llama 3.1 8B", "H100 SXM", "fp8", 2048, 2048, 1, "", "", "", 16)
    assert row["USD_per_1M_output_tokens"] == pytest.approx(cost, rel=1e-12)


def test_blank_price_is_the_catalogs_cheapest_on_demand_rate():
    rate = catalog.cheapest_cloud_price("H100 SXM 80GB").usd_per_gpu_hour
    given = curve("Llama 3.1 8B", "H100", "fp8", 1024, 256, 1, rate)
    blank = curve("Llama 3.1 8B", "H100", "fp8", 1024, 256, 1)
    assert [r["USD_per_1M_output_tokens"] for r in blank] == [r["USD_per_1M_output_tokens"] for r in given]


def test_no_price_anywhere_leaves_the_cost_column_empty():
    unpriced = next(g for g in catalog.gpus() if catalog.cheapest_cloud_price(g.name) is None
                    and g.tier == "datacenter" and (g.memory_gb or 0) >= 80 and g.bf16_tflops)
    rows = udfs.call("SERVING_CURVE", "Llama 3.1 8B", unpriced.name, "bf16").to_list()
    assert all(row[5] == "" for row in rows[1:]) and all(isinstance(row[1], float) for row in rows[1:])


def test_a_latency_target_ends_the_curve_at_the_target():
    rows = curve("Llama 3.1 8B", "H100 SXM", "fp8", 2048, 2048, 1, 3.2, 10)
    assert rows[-1]["TPOT_ms"] <= 10 and rows[-1]["Batch"] == udfs.call(
        "SERVING_BATCH", "Llama 3.1 8B", "H100 SXM", "fp8", 2048, 2048, 1, 10)
    assert all(math.isfinite(r["TTFT_ms"]) for r in rows)


def test_a_model_that_does_not_fit_is_an_error_not_a_curve():
    with pytest.raises(FlopsheetError) as e:
        udfs.call("SERVING_CURVE", "Llama 3.1 405B", "RTX 4090", "bf16")
    assert e.value.code == "#NUM!"
