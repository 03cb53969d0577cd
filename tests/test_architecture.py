"""Hand-checked cases and property tests for the architecture-aware functions."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import udfs
from udfs.physics import arch, capacity, serving, training, training_memory
from udfs.catalogs import catalog
from udfs.errors import MissingFigure


# ------------------------------------------------------------------ parameter counts

def test_params_from_arch_llama2_7b_exact():
    # attention 4·4096² = 67,108,864; MLP 3·4096·11008 = 135,266,304; norms 2·4096 = 8,192
    # per layer 202,383,360 x 32 = 6,476,267,520; + final norm 4,096 + embeddings 2·32000·4096 = 262,144,000
    assert 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 4096 + 2 * 32000 * 4096 == 6_738_415_616
    assert udfs.call("PARAMS_FROM_ARCH", 32, 4096, 32, 32, 11008, 32000) == 6_738_415_616


def test_params_from_arch_llama2_70b_exact():
    # GQA: attention 2·8192² + 2·8192·8·128 = 150,994,944; MLP 3·8192·28672 = 704,643,072; norms 16,384
    per_layer = 2 * 8192**2 + 2 * 8192 * 8 * 128 + 3 * 8192 * 28672 + 2 * 8192
    assert 80 * per_layer + 8192 + 2 * 32000 * 8192 == 68_976_648_192
    assert udfs.call("PARAMS_FROM_ARCH", 80, 8192, 64, 8, 28672, 32000) == 68_976_648_192


def test_moe_total_and_active():
    assert udfs.call("PARAM_COUNT", "Mixtral 8x7B") == 46_702_792_704
    # active leaves the input embedding (a lookup, 32,000 x 4,096) out of the catalog's 12,879,925,248
    assert udfs.call("PARAM_COUNT", "Mixtral 8x7B", "active") == 12_879_925_248 - 32_000 * 4_096
    # counted from the config (MLA, 3 dense + 58 MoE layers, shared expert); DeepSeek publishes 671B / 37B
    assert udfs.call("PARAM_COUNT", "DeepSeek-V3") == 671_026_419_200
    assert udfs.call("PARAM_COUNT", "DeepSeek-V3", "active") == 37_552_297_472 - 129_280 * 7_168
    # Mixtral from its shape: 32 MoE layers of 8 SwiGLU experts + router
    mix = arch.params_from_arch(32, 4096, 32, 8, 14336, 32000, n_experts=8, moe_layers=32)
    assert mix["total"] == 46_702_792_704


# ------------------------------------------------------------------ KV cache

def test_kv_gqa_llama2_70b():
    # 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 B/token
    assert arch.kv_bytes_per_token(catalog.model("Llama 2 70B")) == 327_680
    assert udfs.call("KV_CACHE_GB", "Llama 2 70B", 4096, 32, "fp16", "GB") == pytest.approx(42.95, abs=0.005)


def test_kv_sliding_window_mistral_caps_at_4096():
    m = catalog.model("Mistral 7B")
    per_token = 2 * 32 * 8 * 128 * 2          # 131,072 B
    assert arch.kv_bytes_per_token(m) == per_token
    assert arch.kv_cache_bytes(m, 32768) == per_token * 4096
    assert arch.kv_cache_bytes(m, 4096) == arch.kv_cache_bytes(m, 100_000)
    assert arch.kv_cache_bytes(m, 1000) == per_token * 1000


def test_kv_mla_deepseek_v3():
    # one compressed latent (512) + decoupled RoPE key (64) per layer, 61 layers, 2 bytes
    assert arch.kv_bytes_per_token(catalog.model("DeepSeek-V3")) == 61 * (512 + 64) * 2


def test_kv_moe_mixtral_is_attention_only():
    # experts do not change the KV cache: 2 x 32 x 8 x 128 x 2
    assert arch.kv_bytes_per_token(catalog.model("Mixtral 8x7B")) == 131_072


# ------------------------------------------------------------------ properties

MODELS = st.sampled_from(["Llama 2 7B", "Llama 3 8B", "Llama 2 70B", "Mistral 7B", "Mixtral 8x7B", "Qwen2.5 7B"])
GPUS = st.sampled_from(["H100", "A100", "RTX 4090", "L40S", "MI300X", "A10"])
PRECISIONS = st.sampled_from(["fp16", "fp8", "int4", "q4_k_m", "int8"])


@settings(max_examples=80, deadline=None)
@given(MODELS, GPUS, PRECISIONS, st.integers(1, 256), st.integers(1, 64), st.integers(0, 16000))
def test_more_batch_more_total_never_more_per_sequence(model, gpu, precision, batch, extra, context):
    m, g = catalog.model(model), catalog.gpu(gpu)
    try:
        g.tensor_peak(precision, "a decode step")
    except MissingFigure:                   # e.g. int8 on an A10: #N/A naming int8_tops (tests/test_missing.py)
        return
    try:                                    # the larger batch fits, so the smaller one does
        large = (batch + extra) / capacity.decode_step(m, g, precision, batch + extra, context).total
    except capacity.NoFit:
        return
    small = batch / capacity.decode_step(m, g, precision, batch, context).total
    assert large > small
    assert large / (batch + extra) <= small / batch * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(MODELS, PRECISIONS, st.integers(1, 64), st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 8))
def test_more_context_more_serving_memory(model, precision, batch, context, extra, n_gpus):
    m = catalog.model(model)
    a = serving.serving_memory_gib(m, precision, batch, context, "fp16", n_gpus)["total"]
    b = serving.serving_memory_gib(m, precision, batch, context + extra, "fp16", n_gpus)["total"]
    assert b >= a
    if not m.sliding_window or context + extra <= m.sliding_window:
        assert b > a


@settings(max_examples=60, deadline=None)
@given(MODELS, GPUS, PRECISIONS, st.integers(128, 32768), st.integers(1, 4))
def test_fits_consistent_with_max_batch(model, gpu, precision, context, n_gpus):
    best = udfs.call("MAX_BATCH", model, gpu, context, precision, n_gpus)
    if best >= 1:
        assert udfs.call("FITS", model, gpu, precision, best, context, n_gpus) is True
    assert udfs.call("FITS", model, gpu, precision, best + 1, context, n_gpus) is False


@settings(max_examples=60, deadline=None)
@given(MODELS, st.integers(1, 8), st.sampled_from([512, 2048, 4096]), st.integers(1, 512),
       st.sampled_from(["none", "selective", "full"]))
def test_higher_zero_stage_never_more_memory(model, micro_batch, seq, n_gpus, recompute):
    m = catalog.model(model)
    totals = [training_memory.training_memory_gib(m, "bf16", "adamw", micro_batch, seq, z, n_gpus, recompute)["total"]
              for z in range(4)]
    assert all(b <= a + 1e-9 for a, b in zip(totals, totals[1:])), totals


@settings(max_examples=60, deadline=None)
@given(MODELS, st.integers(1, 511), st.integers(1, 512))
def test_more_gpus_under_zero3_never_more_memory(model, n, extra):
    m = catalog.model(model)
    a = training_memory.training_memory_gib(m, zero_stage=3, n_gpus=n)["total"]
    b = training_memory.training_memory_gib(m, zero_stage=3, n_gpus=n + extra)["total"]
    assert b <= a + 1e-9


@settings(max_examples=60, deadline=None)
@given(st.floats(1e8, 1e12), st.floats(1e9, 2e13), GPUS.filter(lambda g: g != "A10"),
       st.floats(0.05, 1.0), st.floats(1.01, 5.0))
def test_training_hours_inversely_proportional_to_mfu(params, tokens, gpu, mfu, factor):
    g = catalog.gpu(gpu)
    hours = training.training_gpu_hours(params, tokens, g, mfu)
    faster = training.training_gpu_hours(params, tokens, g, min(1.0, mfu * factor))
    assert math.isclose(hours * mfu, faster * min(1.0, mfu * factor), rel_tol=1e-12)


def test_quantized_checkpoint_reads_its_16_bit_parts_at_16_bits():
    # gpt-oss's config keeps every part but the routed experts unconverted (BF16), so a step that touches no
    # expert reads all it reads at 2 bytes a weight, and its experts at MXFP4's 4.25 bits
    model = catalog.model("gpt-oss-120b")
    assert serving.streamed_bytes(model, "mxfp4", 0) == pytest.approx(serving.streamed_params(model, 0) * 2)
    experts = model.expert_params * model.n_experts
    assert arch.weight_bytes(model, "mxfp4") == pytest.approx(experts * 4.25 / 8
                                                                 + (model.total_params - experts) * 2)
    # a model with no quantization_config: the precision asked, for every weight
    llama = catalog.model("Llama 2 7B")
    assert serving.streamed_bytes(llama, "int4", 8) == serving.streamed_params(llama, 8) * 0.5
    assert arch.weight_bytes(llama, "int4") == llama.total_params * 0.5


def test_kept_16_bit_parts_run_at_the_16_bit_rate():
    # gpt-oss-120b served in its own MXFP4 on a B200: its BF16 attention, router and head (arch.kept_streamed)
    # are products on the 16-bit units, the experts on the FP4 units (capacity._flops: each format's achieved
    # rate); attention (flash, 16-bit) is added alike.
    from udfs.catalogs.engines import engine
    model, gpu = catalog.model("gpt-oss-120b"), catalog.gpu("B200 180GB")
    eng = engine(None, gpu)
    kept = arch.kept_streamed(model, "mxfp4")
    assert kept > 1e9
    fp4, bf16 = capacity._flops(gpu, "mxfp4", eng), capacity._flops(gpu, None, eng)
    assert fp4 > bf16                                  # B200 has FP4 units faster than its 16-bit ones
    tokens = 4096
    products = 2 * tokens * ((model.active - model.input_embedding_params - kept) / fp4 + kept / bf16)
    attention = capacity.attention_flops(model, tokens) / capacity._attention_rate(gpu)
    assert capacity.prefill_compute_s(model, gpu, "mxfp4", tokens, 1, 1, eng) == pytest.approx(products + attention)


def test_model_size_of_a_catalog_model_is_its_weights_as_served():
    """MODEL_SIZE_GB of a catalog model answers from arch.weight_bytes (one answer): gpt-oss-120b in its own MXFP4
    counts its 2.13B unconverted parameters (attention, router, embeddings, head) at 2 bytes, 4.25 bits for the
    rest: 65.19 GB, not the 62.07 GB of every parameter at 4.25 bits; in bf16 every parameter at 2 bytes; a bare
    count stays count x bytes."""
    model = catalog.model("gpt-oss-120b")
    size = udfs.call("MODEL_SIZE_GB", "gpt-oss-120b", "mxfp4")
    assert size == pytest.approx((model.total_params - model.kept_params) * 4.25 / 8 / 1e9
                                 + model.kept_params * 2 / 1e9)
    assert 65.1 < size < 65.3
    assert udfs.call("MODEL_SIZE_GB", "gpt-oss-120b", "bf16") == pytest.approx(model.total_params * 2 / 1e9)
    assert udfs.call("MODEL_SIZE_GB", 7e9, "fp16") == pytest.approx(14.0)
