"""A model or a GPU described in a cell: MODEL_DEFINE and GPU_DEFINE return a short spec
text that every `model` and `gpu` argument accepts (a private fine-tune, an unreleased
model, a new accelerator or a negotiated price, without editing the catalog)."""

from ...catalogs import spec
from ...catalogs.catalog import NVLINK_CLASS_GBS
from ..registry import Arg, worksheet


def _count(name: str, help: str, unit: str, default=None) -> Arg:
    extra = {"default": default} if default is not None else {}
    return Arg(name, "integer", help, unit, min=1, **extra)


def _optional(name: str, help: str, unit: str = "") -> Arg:
    return Arg(name, "integer", help + " (blank or 0: none)", unit, default=0, min=0)


MODEL_ARGS = [
    _count("layers", "Transformer blocks", "layers"), _count("hidden", "Hidden size d_model", "elements"),
    _count("heads", "Attention (query) heads", "heads"), _count("kv_heads", "Key/value heads (GQA; = heads for MHA)", "heads"),
    _count("ffn", "MLP inner width of dense layers", "elements"), _count("vocab", "Vocabulary size", "tokens"),
    _optional("head_dim", "Width of one attention head when it is not hidden/heads (Qwen3, Gemma 3, gpt-oss)", "elements"),
    _optional("experts", "Routed experts per MoE layer", "experts"),
    _optional("experts_per_token", "Routed experts each token uses (top-k)", "experts"),
    _optional("shared_experts", "Experts every token uses besides the routed ones (DeepSeek, Llama 4)", "experts"),
    _optional("moe_ffn", "MLP width of one expert (default: ffn)", "elements"),
    Arg("tied", "bool", "Input and output embeddings shared", default=False),
    _optional("sliding_window", "Sliding-window (or chunk) length of local-attention layers", "tokens"),
    Arg("model_name", "name", "Name shown in results and messages", default=""),
    _optional("local_layers", "Layers using the window; the rest attend to the whole context (default: all)", "layers"),
    Arg("chunked", "bool", "Local layers attend within fixed chunks (Llama 4) instead of a sliding window",
        default=False),
    _optional("dense_layers", "Layers with a dense MLP instead of experts (DeepSeek: the first 3)", "layers"),
    _optional("kv_lora_rank", "Multi-head latent attention: width of the cached latent (DeepSeek: 512)", "elements"),
    _optional("qk_rope_dim", "Multi-head latent attention: width of the cached RoPE key (DeepSeek: 64)", "elements"),
    _optional("q_lora_rank", "Multi-head latent attention: query bottleneck width (DeepSeek: 1536)", "elements"),
    _optional("context_length", "Longest context the model supports", "tokens"),
    Arg("attn_bias", "bool", "Bias on the query/key/value projections (Qwen2.5)", default=False),
    Arg("qk_norm", "bool", "RMSNorm on queries and keys (Qwen3, Gemma 3)", default=False),
]


@worksheet("MODEL_DEFINE", "A model's shape as a spec text (e.g. \"model: 32L d4096 h32/kv8 ffn14336 v128256\") "
           "that every model argument accepts; its parameters are counted exactly as PARAMS_FROM_ARCH does.",
           "spec text", "Architecture", MODEL_ARGS, returns="text",
           examples=[((32, 4096, 32, 8, 14336, 128256), "model: 32L d4096 h32/kv8 ffn14336 v128256"),
                     ((48, 2048, 32, 4, 6144, 151936, 128, 128, 8, 0, 768, False, 0, "Qwen3 30B-A3B"),
                      'model: 48L d2048 h32/kv4 hd128 ffn768 v151936 experts128/top8 name="Qwen3 30B-A3B"')], kind="text")
def model_define(layers, hidden, heads, kv_heads, ffn, vocab, head_dim, experts, experts_per_token, shared_experts,
                 moe_ffn, tied, sliding_window, model_name, local_layers, chunked, dense_layers, kv_lora_rank, qk_rope_dim,
                 q_lora_rank, context_length, attn_bias, qk_norm):
    fields = {"layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads, "spec_ffn": ffn,
              "vocab": vocab, "head_dim": head_dim, "n_experts": experts,
              "experts_per_token": experts_per_token, "shared_experts": shared_experts,
              "moe_ffn": moe_ffn, "dense_layers": dense_layers, "sliding_window": sliding_window,
              "local_layers": local_layers, "kv_lora_rank": kv_lora_rank, "qk_rope_dim": qk_rope_dim,
              "q_lora_rank": q_lora_rank, "context_length": context_length, "tied_embeddings": tied,
              "attn_bias": attn_bias, "local_attention": "chunked" if chunked and sliding_window else None,
              "extras": ("qk_norm",) if qk_norm else ()}
    fields = {k: v for k, v in fields.items() if v not in (0, None)}
    row = spec.model_row(fields, model_name)
    return spec.format_model(row, model_name)


@worksheet("GPU_DEFINE", "An accelerator's figures as a spec text (e.g. \"gpu: 80GB 3.35TB/s bf16=989.5 HBM3\") "
           "that every gpu argument accepts. Leave a TFLOPS figure blank when the vendor publishes none: estimates "
           "that need it then answer #N/A naming it.", "spec text", "Catalog",
           [Arg("memory_gb", "number", "Memory per GPU as the vendor states it", "GB", min=0, min_open=True),
            Arg("bandwidth_tbs", "number", "Memory bandwidth", "TB/s", min=0, min_open=True),
            Arg("bf16_tflops", "number", "Dense BF16/FP16 tensor throughput (blank: not known)", "TFLOPS",
                default="", min=0, min_open=True),
            Arg("fp8_tflops", "number", "Dense FP8 tensor throughput (0: no FP8 units, FP8 weights then run on the "
                "16-bit units; blank: not known)", "TFLOPS", default="", min=0),
            Arg("memory_type", "text", "HBM..., GDDR..., LPDDR... or unified (sets the achievable share of bandwidth)",
                default="HBM"),
            Arg("tdp_w", "number", "Rated board power (TDP)", "W", default="", min=0, min_open=True),
            Arg("price_usd", "number", "Purchase price per GPU", "$", default="", min=0, min_open=True),
            Arg("interconnect_gbs", "number", f"GPU-to-GPU link bandwidth (NVLink-class at {NVLINK_CLASS_GBS} or more)", "GB/s",
                default="", min=0, min_open=True),
            Arg("gpu_name", "name", "Name shown in results and messages", default=""),
            Arg("fp4_tflops", "number", "Dense FP4 tensor throughput (0: no FP4 units, FP4 weights then run on the "
                "16-bit units; blank: not known)", "TFLOPS", default="", min=0),
            Arg("vendor", "name", "Maker (NVIDIA, AMD, Apple, ...): sets the default inference engine, TensorRT-LLM "
                "on NVIDIA, llama.cpp on Apple, Intel Gaudi software on a Gaudi and vLLM on others, as for catalog "
                "GPUs", default=""),
            Arg("usable_gib", "number", "Memory the driver reports as the device's total (nvidia-smi memory.total, "
                "in GiB; below the nameplate on most GPUs); blank: the nameplate is the budget", "GiB", default="",
                min=0, min_open=True)],
           returns="text",
           examples=[((80, 3.35, 989.5, 1979, "HBM3"), "gpu: 80GB 3.35TB/s bf16=989.5 fp8=1979 HBM3"),
                     ((192, 0.8, "", "", "unified", "", "", "", "Mac Studio M2 Ultra"),
                      'gpu: 192GB 0.8TB/s unified name="Mac Studio M2 Ultra"')], kind="text")
def gpu_define(memory_gb, bandwidth_tbs, bf16_tflops, fp8_tflops, memory_type, tdp_w, price_usd, interconnect_gbs,
               gpu_name, fp4_tflops, vendor, usable_gib):
    fields = {"memory_gb": memory_gb, "bandwidth_tbs": bandwidth_tbs, "bf16_tflops": bf16_tflops,
              "fp8_tflops": fp8_tflops, "fp4_tflops": fp4_tflops, "tdp_w": tdp_w,
              "price_usd": price_usd, "interconnect_gbs": interconnect_gbs, "vendor": vendor,
              "usable_gib": usable_gib}
    text = spec.format_gpu({k: v for k, v in fields.items() if v not in ("", None)} | {"memory_type": memory_type},
                           gpu_name)
    spec.parse_gpu(text)                     # the memory type and figures must read back
    return text
