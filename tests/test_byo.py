"""Bring your own model and GPU: MODEL_DEFINE / GPU_DEFINE specs and bare parameter counts
wherever a model or GPU is asked for, today's models and accelerators in the catalog, and
KV cache that follows each model's attention layout."""

import pytest

from udfs.physics import arch
from udfs.catalogs import catalog, spec
from udfs.api import registry
from udfs.errors import FlopsheetError

from .calls import call, error

LLAMA3_8B_SPEC = registry.call("MODEL_DEFINE", 32, 4096, 32, 8, 14336, 128256)
# the H100's figures as its datasheet and nvidia-smi give them (usable: the GiB CUDA reports, as the catalog row)
H100_SPEC = registry.call("GPU_DEFINE", 80, 3.35, 989.5, 1979, "HBM3", vendor="NVIDIA", usable_gib=79.22)


# ------------------------------------------------------------------ MODEL_DEFINE
def test_model_define_param_count_is_exact():
    assert LLAMA3_8B_SPEC == "model: 32L d4096 h32/kv8 ffn14336 v128256"
    assert call("PARAM_COUNT", LLAMA3_8B_SPEC) == 8_030_261_248
    assert call("PARAM_COUNT", LLAMA3_8B_SPEC) == call("PARAMS_FROM_ARCH", 32, 4096, 32, 8, 14336, 128256)


@pytest.mark.parametrize("fn,kw", [
    ("DECODE_TOKENS_PER_SEC", {"gpu": "H100"}), ("DECODE_TOKENS_PER_SEC", {"gpu": "A100", "batch": 16, "context": 4000}),
    ("PREFILL_TOKENS_PER_SEC", {"gpu": "H100"}), ("TIME_TO_FIRST_TOKEN_MS", {"gpu": "L40S"}),
    ("SERVING_MEMORY_GB", {"batch": 8, "context": 8192}), ("MAX_BATCH", {"gpu": "H100", "context": 4096}),
    ("TRAINING_MEMORY_GB", {}), ("QLORA_MEMORY_GB", {}), ("KV_CACHE_GB", {"context": 8192}),
])
def test_spec_gives_the_catalog_models_answers(fn, kw):
    assert call(fn, LLAMA3_8B_SPEC, **kw) == call(fn, "Llama 3 8B", **kw)


def test_model_define_moe_and_mla_matches_catalog_deepseek():
    spec = call("MODEL_DEFINE", 61, 7168, 128, 128, 18432, 129280, 128, 256, 8, 1, 2048, False, 0, "my V3",
                dense_layers=3, kv_lora_rank=512, qk_rope_dim=64, q_lora_rank=1536)
    ours, catalogued = catalog.model("DeepSeek-V3"), registry.coerce_arg(registry.get("PARAM_COUNT").args[0], spec)
    # the router's score-correction bias (256 per MoE layer) is the only part MODEL_DEFINE does not ask for
    assert call("PARAM_COUNT", spec) == ours.params - 58 * 256
    assert arch.kv_cache_bytes(catalogued, 4096) == arch.kv_cache_bytes(ours, 4096)


def test_spec_typed_by_hand_and_named():
    spec = 'model: 32L d4096 h32/kv8 ffn14336 v128256 name="Acme Chat 8B"'
    assert call("PARAM_COUNT", spec) == 8_030_261_248
    e = error("PREFILL_TOKENS_PER_SEC", spec, "gpu: 24GB 0.36TB/s GDDR6")
    assert e.code == "#N/A" and "bf16_tflops" in e.message and "GPU_DEFINE" in e.message


@pytest.mark.parametrize("args,message", [
    ((32, 4096, 32, 7, 14336, 128256), "multiple of kv_heads"),
    ((32, 4096, 32, 8, 14336, 128256, 0, 8, 9), "experts_per_token cannot exceed experts"),
    ((32, 4096, 32, 8, 0, 128256), "ffn must be >= 1"),
])
def test_model_define_rejects_impossible_shapes(args, message):
    e = error("MODEL_DEFINE", *args)
    assert message in e.message and e.code in ("#VALUE!", "#NUM!")


def test_bad_spec_text_in_a_model_argument_is_a_value_error():
    e = error("DECODE_TOKENS_PER_SEC", "model: 32L d4096", "H100")
    assert e.code == "#VALUE!" and "lacks" in e.message


# ------------------------------------------------------------------ GPU_DEFINE
@pytest.mark.parametrize("fn,kw", [
    ("DECODE_TOKENS_PER_SEC", {"model": "Llama 3 8B"}), ("DECODE_TOKENS_PER_SEC", {"model": "Llama 3 70B", "precision": "fp8"}),
    ("PREFILL_TOKENS_PER_SEC", {"model": "Llama 3 8B"}), ("MAX_BATCH", {"model": "Llama 3 8B", "context": 4096}),
    ("FITS", {"model": "Llama 3 70B"}), ("TIME_TO_FIRST_TOKEN_MS", {"model": "Llama 3 8B"}),
    ("SERVING_THROUGHPUT", {"model": "Llama 3 8B"}), ("SERVING_THROUGHPUT", {"model": "Llama 3 70B", "precision": "fp8"}),
])
def test_gpu_define_with_h100_figures_gives_h100_answers(fn, kw):
    assert call(fn, gpu=H100_SPEC, **kw) == call(fn, gpu="H100", **kw)


def test_gpu_define_vendor_sets_the_default_engine_as_for_catalog_gpus():
    plain = call("GPU_DEFINE", 80, 3.35, 989.5, 1979, "HBM3", usable_gib=79.22)
    assert "vendor=NVIDIA" in H100_SPEC and "vendor" not in plain
    for engine, gpu in (("vLLM", plain), ("TensorRT-LLM", H100_SPEC)):
        assert call("SERVING_THROUGHPUT", "Llama 3 8B", gpu) == call("SERVING_THROUGHPUT", "Llama 3 8B", "H100",
                                                                     engine=engine)


def test_gpu_define_with_link_shards_like_the_h100():
    spec = call("GPU_DEFINE", 80, 3.35, 989.5, 1979, "HBM3", 700, "", 900, vendor="NVIDIA")
    for fn in ("DECODE_TOKENS_PER_SEC", "PREFILL_TOKENS_PER_SEC"):
        assert call(fn, "Llama 3 70B", spec, n_gpus=4) == call(fn, "Llama 3 70B", "H100", n_gpus=4)
    traffic = {"requests_per_minute": 600, "prompt_tokens": 1000, "output_tokens": 300}
    assert call("GPUS_FOR_TRAFFIC", "Llama 3 70B", spec, **traffic) == call("GPUS_FOR_TRAFFIC", "Llama 3 70B", "H100",
                                                                            **traffic)


def test_gpu_define_spec_reads_back_its_figures():
    assert call("GPU_SPEC", H100_SPEC, "bandwidth_tbs") == 3.35
    assert call("GPU_SPEC", H100_SPEC, "bf16_tflops") == 989.5


def test_gpu_without_tflops_says_so():
    mac = call("GPU_DEFINE", 192, 0.8, "", "", "unified", gpu_name="Mac Studio")
    e = error("PREFILL_TOKENS_PER_SEC", "Llama 3 8B", mac)
    assert e.code == "#N/A" and "Mac Studio" in e.message and "bf16_tflops" in e.message
    for gpu in ("M3 Ultra", "Apple M2 Ultra", "M4 Max"):
        e = error("TIME_TO_FIRST_TOKEN_MS", "Llama 3 8B", gpu)
        assert "bf16_tflops" in e.message and "FLOPSHEET_CATALOG" in e.message, e.message
        assert "bf16_tflops" in error("TRAINING_GPU_HOURS", 8e9, 1e12, gpu).message


def test_decode_of_one_sequence_needs_no_tflops_but_a_batch_does():
    one = call("DECODE_TOKENS_PER_SEC", "Llama 3 8B", "M2 Ultra", "fp16")
    assert 20 < one < 60                    # measured: ~36 tokens/s in llama.cpp F16
    e = error("DECODE_TOKENS_PER_SEC", "Llama 3 8B", "M2 Ultra", batch=8)
    assert e.code == "#N/A" and "bf16_tflops" in e.message


# ------------------------------------------------------------------ a bare parameter count
@pytest.mark.parametrize("size", [8.030261248e9, "8.030261248B"])
def test_bare_count_decodes_like_the_catalog_model_of_that_size(size):
    assert call("DECODE_TOKENS_PER_SEC", size, "H100") == pytest.approx(call("DECODE_TOKENS_PER_SEC", "Llama 3 8B", "H100"))


def test_bare_count_is_accepted_where_only_size_matters():
    assert call("DECODE_TOKENS_PER_SEC", 8e9, "H100") > 0
    assert call("DECODE_TOKENS_PER_SEC", "70B", "H100", n_gpus=2) > 0
    assert call("PREFILL_TOKENS_PER_SEC", "8B", "H100") > 0
    assert call("TIME_TO_FIRST_TOKEN_MS", "8B", "H100") > 0


@pytest.mark.parametrize("fn,kw", [("MAX_BATCH", {"gpu": "H100", "context": 4096}), ("MAX_CONTEXT", {"gpu": "H100"}),
                                   ("KV_CACHE_GB", {"context": 4096}), ("TRAINING_MEMORY_GB", {}),
                                   ("QLORA_MEMORY_GB", {}), ("SERVING_MEMORY_GB", {})])
def test_bare_count_where_the_shape_matters_asks_for_it(fn, kw):
    e = error(fn, "8B", **kw)
    assert e.code == "#VALUE!" and "MODEL_DEFINE" in e.message and "catalog name" in e.message


def test_specs_work_where_a_model_or_a_count_is_asked():
    assert call("TRAINING_FLOPS", LLAMA3_8B_SPEC, 1e12) == 6 * 8_030_261_248 * 1e12


# ------------------------------------------------------------------ today's catalog
# Published parameter counts (model cards, technical reports, vendor blogs), total and active.
PUBLISHED = {
    "Qwen3-0.6B": (0.6e9, None), "Qwen3-4B": (4.0e9, None), "Qwen3-8B": (8.2e9, None), "Qwen3-14B": (14.8e9, None),
    "Qwen3-32B": (32.8e9, None), "Qwen3-30B-A3B": (30.5e9, 3.3e9), "Qwen3-235B-A22B": (235e9, 22e9),
    "gpt-oss-20b": (20.91e9, 3.61e9), "gpt-oss-120b": (116.83e9, 5.13e9),
    "Llama 4 Scout 17B-16E": (109e9, 17e9), "Llama 4 Maverick 17B-128E": (400e9, 17e9),
    "DeepSeek-V3": (671e9, 37e9), "DeepSeek-R1": (671e9, 37e9), "Gemma 3 4B": (4.3e9, None),
    "Gemma 3 12B": (12.2e9, None), "Gemma 3 27B": (27.4e9, None), "Mistral Small 3.1 24B": (24e9, None),
    "Phi-4": (14e9, None), "Qwen2.5-14B": (14.7e9, None), "Qwen2.5-32B": (32.5e9, None),
    "QwQ-32B": (32.5e9, None),   # Llama 3.2's published counts are on its model card, a reserved source
}


@pytest.mark.parametrize("name", PUBLISHED)
def test_todays_models_are_in_the_catalog_with_published_counts(name):
    model = catalog.model(name)
    total, active = PUBLISHED[name]
    assert model.published_params == pytest.approx(total, rel=1e-9)
    assert model.published_active_params == (pytest.approx(active, rel=1e-9) if active else None)
    assert model.is_moe == bool(active)
    assert model.source.startswith(("https://", "Qwen/", "openai/", "meta-llama/", "deepseek-ai/", "google/",
                                    "mistralai/", "microsoft/")), model.source


def test_exact_counts_agree_with_published_within_their_rounding_or_say_why():
    for name, (total, _) in PUBLISHED.items():
        model = catalog.model(name)
        off = abs(model.params - total) / total
        assert off < 0.06 or "vision" in model.note, (name, model.params, total)


def test_the_issue_example_works():
    assert call("DECODE_TOKENS_PER_SEC", "Qwen3 32B", "H100") > 0


@pytest.mark.parametrize("name,memory,bandwidth", [
    ("MI355X", 288, 8.0), ("H20", 96, 4.0), ("RTX PRO 6000 Workstation", 96, 1.792), ("M2 Ultra", 192, 0.8),
    ("M3 Ultra", 512, 0.819), ("M4 Max", 128, 0.546)])
def test_new_accelerators(name, memory, bandwidth):
    gpu = catalog.gpu(name)
    assert (gpu.memory_gb, gpu.bandwidth_tbs) == (memory, bandwidth)
    assert "shared" not in gpu.source and gpu.source.count("http") >= 1


# ------------------------------------------------------------------ KV cache by attention layout
def _kv(model, context):
    return arch.kv_cache_bytes(catalog.model(model), context, 1, catalog.precision_row("bf16"))


def test_gpt_oss_local_layers_hold_only_their_window():
    m = catalog.model("gpt-oss-120b")
    per_layer_token = 2 * m.kv_heads * m.head_dim * 2
    assert _kv("gpt-oss-120b", 131072) == per_layer_token * (18 * 131072 + 18 * 128)


def test_gemma3_five_local_to_one_global():
    m = catalog.model("Gemma 3 27B")
    per_layer_token = 2 * m.kv_heads * m.head_dim * 2
    assert _kv("Gemma 3 27B", 32768) == per_layer_token * (10 * 32768 + 52 * 1024)


def test_llama4_chunked_attention():
    m = catalog.model("Llama 4 Scout")
    per_layer_token = 2 * m.kv_heads * m.head_dim * 2
    assert _kv("Llama 4 Scout", 100_000) == per_layer_token * (12 * 100_000 + 36 * 8192)


def test_deepseek_mla_caches_one_latent():
    assert _kv("DeepSeek-R1", 10_000) == 61 * (512 + 64) * 2 * 10_000


def test_max_batch_and_context_follow_the_layered_kv_cache():
    # 12 global layers of 8 KV heads: 131K tokens of gpt-oss-20b fit beside its weights on an H100.
    assert call("MAX_CONTEXT", "gpt-oss-20b", "H100") == catalog.model("gpt-oss-20b").context_length
    # vLLM V0's rule is SERVING_MEMORY_GB's: weights + KV cache + 1.5 GiB within 90% of memory (vLLM V1 also keeps
    # its profile run out of the cache: capacity.profile_run_gib)
    tokens = call("MAX_CONTEXT", "Gemma 3 27B", "H100", precision="fp8", batch=16, engine="vllm v0")
    fits = call("SERVING_MEMORY_GB", "Gemma 3 27B", precision="fp8", batch=16, context=tokens)
    over = call("SERVING_MEMORY_GB", "Gemma 3 27B", precision="fp8", batch=16, context=tokens + 1)
    usable = catalog.gpu("H100").memory_gib
    assert usable < 80 and fits <= usable * 0.9 < over
    batch = call("MAX_BATCH", "Gemma 3 27B", "H100", context=32768, precision="fp8", engine="vllm v0")
    need = call("SERVING_MEMORY_GB", "Gemma 3 27B", precision="fp8", batch=batch, context=32768)
    assert need <= usable * 0.9 < call("SERVING_MEMORY_GB", "Gemma 3 27B", precision="fp8", batch=batch + 1, context=32768)


def _swap_cases(arg_type, value):
    for fn in registry.functions().values():
        for i, arg in enumerate(fn.args):
            if arg.type == arg_type and fn.examples:
                args = list(fn.examples[0][0]) + [None] * len(fn.args)
                args[i] = value
                yield pytest.param(fn, args[:len(fn.args)], id=f"{fn.name}.{arg.name}")


@pytest.mark.parametrize("fn,args", [*_swap_cases("model", "8B"), *_swap_cases("model", LLAMA3_8B_SPEC)])
def test_any_model_argument_takes_a_count_or_a_spec_without_a_traceback(fn, args):
    try:
        registry.call(fn, *args)
    except FlopsheetError as e:
        assert e.code in ("#VALUE!", "#NUM!", "#N/A") and e.message


@pytest.mark.parametrize("fn,args", [*_swap_cases("gpu", "M3 Ultra"), *_swap_cases("gpu", H100_SPEC),
                                     *_swap_cases("gpu", "gpu: 128GB 0.546TB/s unified")])
def test_any_gpu_argument_takes_a_spec_or_a_gpu_without_tflops_without_a_traceback(fn, args):
    try:
        registry.call(fn, *args)
    except FlopsheetError as e:
        assert e.code in ("#VALUE!", "#NUM!", "#N/A") and e.message


def test_gpu_define_usable_memory_sets_the_budget_and_reads_back():
    # blank: the nameplate is the budget; given: the GiB the driver reports, which must not exceed the nameplate
    nameplate = call("GPU_DEFINE", 80, 3.35, 989.5, 1979, "HBM3", vendor="NVIDIA")
    assert "usable=" not in nameplate and "usable=79.22GiB" in H100_SPEC
    assert call("MAX_BATCH", "Llama 3 8B", H100_SPEC, context=4096) < call("MAX_BATCH", "Llama 3 8B", nameplate,
                                                                          context=4096)
    assert spec.parse_gpu(H100_SPEC)["usable_gib"] == 79.22
    with pytest.raises(FlopsheetError, match="usable_gib"):
        call("GPU_DEFINE", 80, 3.35, 989.5, 1979, "HBM3", usable_gib=81)
