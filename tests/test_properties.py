"""Invariants that must hold for any valid input (hypothesis)."""

from hypothesis import assume, given, settings
from hypothesis import strategies as st

import udfs
from udfs.physics.lesson import OPTIMIZERS

params = st.floats(min_value=1e6, max_value=2e12)
precisions = st.sampled_from(["fp32", "fp16", "bf16", "fp8", "int8", "int4"])
fractions = st.floats(min_value=0.01, max_value=1.0)


@given(params, params, precisions, st.sampled_from(OPTIMIZERS))
def test_more_parameters_never_need_less_memory(a, b, precision, optimizer):
    small, large = sorted((a, b))
    assert udfs.call("GPU_MEMORY", small, precision, optimizer) <= udfs.call("GPU_MEMORY", large, precision, optimizer)


@given(params, precisions, st.sampled_from(OPTIMIZERS))
def test_parts_add_up_to_total(n, precision, optimizer):
    parts = [udfs.call("GPU_MEMORY", n, precision, optimizer, "", "", p)
             for p in ("weights", "gradients", "optimizer", "activations")]
    assert abs(sum(parts) - udfs.call("GPU_MEMORY", n, precision, optimizer)) <= 1e-9 * sum(parts)


@given(st.floats(0.05, 10), st.floats(0.05, 10), st.floats(0.1, 1000), st.integers(1, 256), fractions)
def test_more_bandwidth_never_gives_fewer_tokens(bw1, bw2, size, batch, eff):
    low, high = sorted((bw1, bw2))
    assert udfs.call("GPU_TOKENS_PER_SEC", low, size, batch, eff) <= udfs.call("GPU_TOKENS_PER_SEC", high, size, batch, eff)


@given(fractions, fractions, st.floats(100, 1e6), st.floats(1, 1e5))
def test_cost_falls_as_utilization_rises(u1, u2, hw, tps):
    low, high = sorted((u1, u2))
    assert udfs.call("COST_PER_1M_TOKENS", hw, high, tps) <= udfs.call("COST_PER_1M_TOKENS", hw, low, tps)


@given(st.floats(1, 1e6), st.floats(1, 200), st.floats(0, 20))
def test_gpus_needed_hold_the_memory(memory, capacity, headroom):
    assume(headroom < capacity)
    n = udfs.call("GPUS_NEEDED", memory, capacity, headroom)
    assert n * (capacity - headroom) >= memory * (1 - 1e-12)
    assert n == 1 or (n - 1) * (capacity - headroom) < memory * (1 + 1e-9)   # not one GPU too many


@settings(max_examples=50)
@given(st.integers(1, 1 << 20), st.integers(1, 64))
def test_kv_cache_linear_in_tokens_and_batch(tokens, batch):
    one = udfs.call("KV_CACHE_GB", "Llama 2 70B", tokens, 1)
    assert abs(udfs.call("KV_CACHE_GB", "Llama 2 70B", tokens, batch) - one * batch) <= 1e-9 * one * batch
