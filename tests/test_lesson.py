"""The lesson's values (listed in shared/notes/seed-errata.md), reproduced exactly, through
the registry as a spreadsheet user calls them, and against a transcription of the lesson's
own code."""

import math

import pytest

import udfs
from udfs.physics import lesson



@pytest.mark.parametrize("params,part,expected", [
    (7e9, "weights", 13.0), (7e9, "gradients", 26.1), (7e9, "optimizer", 78.2),
    (7e9, "activations", 26.1), (7e9, "total", 143.4), (13e9, "total", 266.4), (70e9, "total", 1434.2)])
def test_training_memory(params, part, expected):
    assert round(udfs.call("GPU_MEMORY", params, "bf16", "adamw", "", "", part), 1) == expected


@pytest.mark.parametrize("params,expected", [(7e9, 2), (13e9, 4), (70e9, 20)])
def test_gpus_needed_from_memory(params, expected):
    total = udfs.call("GPU_MEMORY", params)
    assert udfs.call("GPUS_NEEDED", total) == expected


@pytest.mark.parametrize("args,expected", [
    ((7e9, "fp16", "none"), 15.6), ((7e9, "int4", "qlora"), 10.8),
    ((13e9, "int4", "qlora"), 20.1), ((70e9, "int4", "qlora"), 108.2)])
def test_inference_and_qlora_memory(args, expected):
    assert round(udfs.call("GPU_MEMORY", *args), 1) == expected


def test_qlora_exact_bytes():
    # weights 3.5e9 B + grads 0.28e9 + optimizer 70e6*12 = 0.84e9 + activations 7e9 = 11.62e9 B
    assert udfs.call("GPU_MEMORY", 7e9, "int4", "qlora") == pytest.approx(11.62e9 / 2**30, rel=1e-12)


def test_throughput_and_latency():
    assert udfs.call("GPU_TOKENS_PER_SEC", "H100", 14) == pytest.approx(167.5)
    assert round(udfs.call("TOKEN_LATENCY_MS", 3.35, 14), 2) == 5.97
    assert round(udfs.call("GPU_TOKENS_PER_SEC", 2.0, 26), 1) == 53.8
    # The lesson's prose "239 tok/s at 70%" is really 100% efficiency:
    assert round(udfs.call("GPU_TOKENS_PER_SEC", 3.35, 14, 1, 1.0)) == 239


@pytest.mark.parametrize("hw,tps,tdp,expected", [
    (700, 65, 350, 0.4190), (1600, 70, 450, 0.6513), (8000, 114, 400, 1.2267), (30000, 239, 700, 2.0349)])
def test_cost_per_1m_tokens(hw, tps, tdp, expected):
    value = udfs.call("COST_PER_1M_TOKENS", hw, 0.70, tps, 3, 0.12, tdp)
    assert round(value, 4) == expected
    parts = [udfs.call("COST_PER_1M_TOKENS", hw, 0.70, tps, 3, 0.12, tdp, 1, p) for p in ("hardware", "power")]
    assert sum(parts) == pytest.approx(value)


def test_annual_capacity_matches_lesson_rounding():
    # lesson: round(effective * seconds_per_year / 1e9, 1)
    assert round(udfs.call("ANNUAL_TOKENS", 65, 0.7) / 1e9, 1) == 1.4
    assert round(udfs.call("ANNUAL_TOKENS", 239, 0.7) / 1e9, 1) == 5.3


@pytest.mark.parametrize("rate,speedup,hours,effective,job", [
    (32.77, 1, 10, 32.77, 327.70), (41.04, 2.5, 4, 16.42, 164.16), (17.50, 0.5, 20, 35.00, 350.00)])
def test_second_seed(rate, speedup, hours, effective, job):
    assert round(udfs.call("EFFECTIVE_HOURLY_COST", rate, speedup), 2) == effective
    assert round(udfs.call("JOB_COST", rate, hours), 2) == job


def test_capacity_planning_q4():
    needed = udfs.call("TOKENS_PER_SEC_NEEDED", 1000, 200)
    assert needed == pytest.approx(4000)
    assert round(udfs.call("TOKENS_PER_SEC_NEEDED", 1000, 200, 0)) == 3333
    assert udfs.call("INSTANCES_NEEDED", needed, 400) == 10
    assert udfs.call("TOKENS_PER_SEC_PER_REQUEST", 200, 5) == 40


def test_roofline_q5():
    assert udfs.call("RIDGE_POINT", 312, "bf16", 2.0) == 156
    assert udfs.call("ARITHMETIC_INTENSITY", 1) == pytest.approx(1.0)


def test_breakeven_q6():
    hours = udfs.call("GPU_HOURS", 3, 0.70)
    assert hours == pytest.approx(18396)
    assert round(hours * 5.12) == 94188 or round(hours * 5.12) == 94187  # 94,187.52
    assert udfs.call("BREAKEVEN_HOURS", 12000, 5.12) < hours


def test_kv_cache_70b():
    model = udfs.catalogs.catalog.model("Llama 2 70B")
    assert udfs.physics.arch.kv_bytes_per_token(model, "fp16") == 327_680
    assert round(udfs.call("KV_CACHE_GB", "Llama 2 70B", 4096, 32, "fp16", "GB"), 1) == 42.9
    assert round(udfs.call("KV_CACHE_GB", "Llama 2 70B", 8192, 32, "fp16", "GB"), 1) == 85.9


# --- a transcription of the lesson's own code, for a randomised equality check -------------
BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "int4": 0.5, "fp8": 1}


def lesson_code_memory(n, precision, optimizer, act=2.0, frac=0.01):
    b = n * BYTES[precision]
    g = 0.0 if optimizer == "none" else (n * frac * 4 if optimizer == "qlora" else n * 4)
    o = {"none": 0.0, "sgd": n * 4, "adam": n * 12, "adamw": n * 12, "qlora": int(n * frac) * 4 * 3}[optimizer]
    a = b * 0.2 if optimizer == "none" else b * act
    return (b + g + o + a) / (1024 ** 3)


@pytest.mark.parametrize("precision", sorted(BYTES))
@pytest.mark.parametrize("optimizer", lesson.OPTIMIZERS)
@pytest.mark.parametrize("n", [1.3e9, 7e9, 13e9, 70e9, 175e9])
def test_memory_equals_lesson_code(n, precision, optimizer):
    assert udfs.call("GPU_MEMORY", n, precision, optimizer) == lesson_code_memory(n, precision, optimizer)


def test_lesson_cost_code_equality():
    # The lesson's cost_per_1m_tokens with its own rounding, for the H100 row.
    s = 365 * 24 * 3600
    hw, pw = 30000 / (3 * s), 700 / (1000 * 3600) * 0.12
    assert round((hw + pw) / (239 * 0.7) * 1e6, 4) == round(udfs.call("COST_PER_1M_TOKENS", 30000, 0.7, 239, 3, 0.12, 700), 4)
    assert math.isclose(udfs.call("ANNUAL_TOKENS", 239, 0.7), 239 * 0.7 * s)
