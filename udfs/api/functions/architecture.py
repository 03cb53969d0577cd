"""Architecture-aware functions: parameter counts, serving memory and fit, decode and
prefill speed, training memory (ZeRO, tensor/pipeline parallel, offload) and LoRA/QLoRA memory."""

import math
from dataclasses import replace

from ...physics import arch, capacity, moe, serving, training_memory
from ...catalogs.engines import DEFAULT_ENGINE_TEXT, Engine
from ...catalogs.resolve import engine as engine_profile
from ..registry import Arg, worksheet
from ...catalogs.resolve import require_own_layout
from ...errors import value_error
from .common import (BATCH, CONTEXT, ENGINE, GPU, KV_PRECISION, MODEL, N_GPUS, OUTPUT, PRECISION, PROMPT, SEQ_LEN,
                     USABLE, positive, required)

@worksheet("PARAM_COUNT", "Parameter count of a catalog model: total, or active per token for mixture-of-experts "
           "as OpenAI and DeepSeek count it (the routed top-k and shared experts, attention, dense layers and the "
           "output head; the input embedding is a lookup, not counted).",
           "parameters", "Architecture",
           [MODEL, Arg("part", "choice", "total or active (a dense model's active is its total)",
                       choices=("total", "active"), default="total")],
           examples=[(("Llama 2 7B",), 6_738_415_616), (("Llama 2 70B",), 68_976_648_192),
                     (("Llama 2 13B",), 13_015_864_320), (("gpt-oss-120b", "active"), 5_132_849_472)], kind="count")
def param_count(model, part):
    return moe.active_params(model) if part == "active" else model.total_params


EXPERT_PARTS = ("experts", "tokens_per_expert", "params_read")


@worksheet("EXPERTS_READ", "Mixture-of-experts: the routed experts per MoE layer a decode step of `batch` sequences "
           "reads, E x (1 - (1 - k/E)^batch) with routing uniform over the experts (k at batch 1, nearly all E at "
           "a batch of hundreds); tokens_per_expert: the tokens each of them multiplies (batch x k / that); "
           "params_read: parameters read per step (attention, dense layers, shared experts, the output head and "
           "the experts read). A dense model reads no expert and all its matrices.", "experts, tokens or parameters",
           "Architecture",
           [MODEL, BATCH, Arg("part", "choice", "What to return", choices=EXPERT_PARTS, default="experts")],
           examples=[(("Mixtral 8x7B", 1), 2), (("gpt-oss-120b", 1, "params_read"), 5_132_849_472)], kind="count")
def experts_read(model, batch, part):
    require_own_layout(model)
    _, experts, k = moe.routed(model)
    if part == "params_read":
        return serving.streamed_params(model, batch)
    if part == "tokens_per_expert":
        return moe.tokens_per_expert(model, batch)
    return moe.touched_experts(experts, k, batch)


@worksheet("PARAMS_FROM_ARCH", "Parameters of a decoder-only transformer from its shape: attention h·(q+2kv+o), "
           "MLP 3·h·ffn (gated) or 2·h·ffn, RMSNorm weights, embeddings (x2 when untied).", "parameters", "Architecture",
           [positive("layers", "Transformer blocks", "layers"), positive("hidden", "Hidden size d_model", "elements"),
            positive("heads", "Attention heads", "heads"), positive("kv_heads", "Key/value heads (GQA)", "heads"),
            positive("ffn", "MLP inner size", "elements"), positive("vocab", "Vocabulary size", "tokens"),
            Arg("tied", "bool", "Input and output embeddings shared", default=False),
            Arg("gated_mlp", "bool", "Gated (SwiGLU) MLP with three matrices", default=True)],
           examples=[((32, 4096, 32, 32, 11008, 32000), 6_738_415_616),
                     ((80, 8192, 64, 8, 28672, 32000), 68_976_648_192)], kind="count")
def params_from_arch(layers, hidden, heads, kv_heads, ffn, vocab, tied, gated_mlp):
    return arch.params_from_arch(int(layers), int(hidden), int(heads), int(kv_heads), int(ffn), int(vocab),
                                 tied, gated_mlp)["total"]


SERVING_PARTS = ("total", "weights", "kv_cache", "overhead")


@worksheet("SERVING_MEMORY_GB", "GPU memory to serve a model, per GPU: weights + KV cache (split over n GPUs under "
           "tensor parallelism) + 1.5 GB runtime overhead.", "GB of GPU memory (GiB) per GPU", "Serving",
           [MODEL, PRECISION, BATCH, CONTEXT, KV_PRECISION, N_GPUS,
            Arg("part", "choice", "Which part to return", choices=SERVING_PARTS, default="total")],
           examples=[(("Llama 2 7B", "fp16", 1, 4096), 16.051), (("Llama 2 70B", "fp16", 32, 4096, "fp16", 4), 43.620)],
           kind="memory")
def serving_memory_gb(model, precision, batch, context, kv_precision, n_gpus, part):
    require_own_layout(model)
    return serving.serving_memory_gib(model, precision, batch, context, kv_precision, n_gpus)[part]


FIT_RULES = ("under the engine's memory rules, the same check every speed, capacity and cost function makes first "
             "(blank engine: " + DEFAULT_ENGINE_TEXT + ")")


def _engine(gpu, engine, usable_fraction) -> Engine:
    """The engine whose memory rules decide the fit, at the share of memory asked for."""
    eng = engine_profile(engine, gpu)
    return replace(eng, memory_fraction=usable_fraction) if usable_fraction else eng


@worksheet("FITS", "TRUE when the weights, the engine's reserve and the KV cache of the batch fit the GPUs' memory "
           + FIT_RULES + ".", "TRUE/FALSE", "Serving", [MODEL, GPU, PRECISION, BATCH, CONTEXT, N_GPUS, USABLE,
                                                       ENGINE], returns="bool",
           examples=[(("Llama 3 70B", "RTX 4090", "q4_k_m", 1, 1024), False), (("Llama 3 70B", "H100", "int4", 1, 4096), True),
                     (("Llama 2 70B", "H100", "fp16"), False)], kind="flag")
def fits(model, gpu, precision, batch, context, n_gpus, usable_fraction, engine):
    require_own_layout(model)
    try:
        capacity.check_fit(model, gpu, precision, context, batch, n_gpus, serving.KV_PRECISION,
                           _engine(gpu, engine, usable_fraction))
    except capacity.NoFit:
        return False
    return True


def _kv_room(model, gpu, precision, n_gpus, eng) -> float:
    """GiB per GPU the engine leaves the KV cache (0 when the weights do not fit)."""
    try:
        return capacity.kv_budget_gib(model, gpu, precision, n_gpus, eng)
    except capacity.NoFit:
        return 0.0


@worksheet("MAX_BATCH", "Sequences of a given context length whose KV cache fits beside the weights " + FIT_RULES
           + " (0 if the model does not fit).", "sequences", "Serving",
           [MODEL, GPU, required(CONTEXT, "Tokens per sequence"), PRECISION, N_GPUS, USABLE, ENGINE],
           examples=[(("Llama 2 7B", "A100", 4096, "fp16"), 29), (("Llama 2 7B", "A100", 4096, "fp16", 1, "", "vllm"), 29)],
           kind="count")
def max_batch(model, gpu, context, precision, n_gpus, usable_fraction, engine):
    require_own_layout(model)
    eng = _engine(gpu, engine, usable_fraction)
    per_sequence = capacity.kv_per_sequence_gib(model, context, n_gpus, serving.KV_PRECISION, eng)
    return math.floor(_kv_room(model, gpu, precision, n_gpus, eng) / per_sequence)


@worksheet("MAX_CONTEXT", "Tokens per sequence that fit for a batch " + FIT_RULES + " (capped at the model's context "
           "length).", "tokens", "Serving", [MODEL, GPU, PRECISION, BATCH, N_GPUS, USABLE, ENGINE],
           examples=[(("Llama 2 7B", "RTX 4090", "fp16"), 4096), (("Llama 2 7B", "RTX 4090", "fp16", 8, 1, "", "vllm"), 1930)],
           kind="count")
def max_context(model, gpu, precision, batch, n_gpus, usable_fraction, engine):
    require_own_layout(model)
    eng = _engine(gpu, engine, usable_fraction)
    return serving.max_context(model, _kv_room(model, gpu, precision, n_gpus, eng), batch,
                               capacity.kv_share(model, n_gpus, eng))


@worksheet("DECODE_TOKENS_PER_SEC", "Generated tokens per second summed over the batch. A decode step, per GPU of the "
           "tensor-parallel group, is the sum of its operations, each on its own roofline: the weight matrices "
           "(bytes / bandwidth or FLOPs / peak, whichever is longer), the KV cache of every sequence, two all-reduces "
           "per layer and the engine's fixed time per layer and step, at the engine's achieved shares of peak "
           "(see SERVING_THROUGHPUT for the rate under continuous batching).", "tokens/s (total)", "Serving",
           [MODEL, GPU, PRECISION, BATCH, CONTEXT, N_GPUS, ENGINE],
           examples=[(("Llama 2 7B", "H100", "fp16", 1, 1024), 182.11),
                     (("Llama 3 8B", "RTX 4090", "q4_k_m", 1, 512, 1, "llama.cpp"), 122.95)], kind="rate")
def decode_tokens_per_sec(model, gpu, precision, batch, context, n_gpus, engine):
    return batch / capacity.decode_step(model, gpu, precision, batch, context, n_gpus, None, engine or None).total


@worksheet("PREFILL_TOKENS_PER_SEC", "Prompt tokens processed per second: 2 x parameters plus causal-attention FLOPs "
           "per token at the engine's achieved share of dense peak, plus one read of the weights and the engine's "
           "fixed time per chunk of its token budget.", "tokens/s", "Serving",
           [MODEL, GPU, PRECISION, PROMPT, BATCH, N_GPUS, ENGINE],
           examples=[(("LLaMA 7B", "A100", "fp16", 2048), 14672)], kind="rate")
def prefill_tokens_per_sec(model, gpu, precision, prompt_tokens, batch, n_gpus, engine):
    return prompt_tokens * batch / capacity.prefill_seconds(model, gpu, precision, prompt_tokens, batch, n_gpus,
                                                            engine or None)


@worksheet("TIME_TO_FIRST_TOKEN_MS", "Time to the first output token. With requests_per_minute blank: requests "
           "arriving with nothing else running, the prefill of their prompts (a batch of requests arriving together), "
           "whose last position gives the first token: each chunk's products, attention, one read of the weights "
           "and the engine's fixed time. With requests_per_minute (one request at a time, arriving at random): the "
           "mean at that steady load on one copy, where a request waits for the engine iteration in progress, "
           "which may carry other prompts, and its own iteration decodes the requests in flight (Little's law: "
           "rate x output_tokens x the iteration) and prefills the prompts that arrived with it; #NUM! when the "
           "prefills alone need more than the GPUs' time.", "ms", "Serving",
           [MODEL, GPU, PRECISION, PROMPT, BATCH, N_GPUS, ENGINE,
            positive("requests_per_minute", "Requests per minute reaching this copy (blank: none, a lone request)",
                     "requests/min", default=""), OUTPUT],
           examples=[(("LLaMA 7B", "A100", "fp16", 2048), 139.59), (("LLaMA 7B", "A100", "fp16", 128), 16.39)], kind="time")
def time_to_first_token_ms(model, gpu, precision, prompt_tokens, batch, n_gpus, engine, requests_per_minute,
                           output_tokens):
    if not requests_per_minute:
        return capacity.time_to_first_token_s(model, gpu, precision, prompt_tokens, batch, n_gpus, engine or None) * 1000
    if batch != 1:
        raise value_error("requests_per_minute is a rate of single requests: leave batch at 1")
    return capacity.load_ttft(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, engine or None,
                              rate=requests_per_minute / 60, load=f"{requests_per_minute:g} requests/min").ttft_s * 1000


# total: what must fit (tensors at the peak + the CUDA context); allocated / reserved / device: what PyTorch's
# max_memory_allocated, max_memory_reserved and nvidia-smi show (training_memory.device_memory).
MEASURED_PARTS = ("allocated", "reserved", "device")
TRAIN_PARTS = ("total", "weights", "gradients", "optimizer", "activations", "overhead", "cpu") + MEASURED_PARTS
LOSS = Arg("loss", "choice", "How the loss holds the logits: standard (16-bit + FP32 copy, 6 B each), upcast "
           "(transformers' loss: 16 B), chunked (16-bit, one chunk upcast at a time: 2 B), fused (head and loss a "
           "chunk at a time: none kept)",
           choices=tuple(training_memory.LOSS_BYTES), default="standard")
PARALLEL_HELP = "GPUs {} splits the model over (Megatron-style); n_gpus counts every GPU, data parallel = n_gpus / (tp x pp)"


@worksheet("TRAINING_MEMORY_GB", "Per-GPU memory for full training: weights, gradients and optimizer states (18 "
           "B/param by default: 16-bit weights, FP32 gradients, FP32 master and Adam moments; 8-bit, paged or 16-bit "
           "states, no master copy, optimizer-in-backward as chosen) split by tensor and pipeline parallelism and "
           "sharded by ZeRO stage over the data-parallel GPUs, optionally offloaded to CPU; activations from the "
           "architecture (Korthikanti et al.) with flash attention and recompute; logits; the CUDA context (part "
           "allocated / reserved / device: what PyTorch and nvidia-smi report).",
           "GB of GPU memory (GiB) per GPU", "Training",
           [MODEL, PRECISION,
            Arg("optimizer", "choice", "Optimizer: adamw/adam (2 states), sgd (momentum), adafactor (factored), none",
                choices=tuple(training_memory.OPTIMIZER_STATES), default="adamw"),
            Arg("micro_batch", "number", "Sequences per GPU per step", "sequences", default=1, min=1),
            SEQ_LEN,
            Arg("zero_stage", "integer", "DeepSpeed ZeRO stage over the data-parallel GPUs (0 = none; FSDP "
                "SHARD_GRAD_OP = 2, FULL_SHARD = 3; with pipeline stages 2 and 3 hold the stage's weights and "
                "gradients (FP32; 16-bit without a master copy) whole, as FSDP2 under PyTorch's pipelining does)",
                "stage", default=0, min=0, max=3),
            replace(N_GPUS, help="GPUs of the job in all: tensor x pipeline x data parallel"),
            Arg("recompute", "choice", "Activation recomputation: none, selective (attention scores; nothing more "
                "with flash attention), full (layer inputs kept), offload (full, inputs in CPU memory)",
                choices=training_memory.RECOMPUTE, default="none"),
            Arg("flash_attention", "bool", "Flash attention (no stored attention scores)", default=True),
            Arg("part", "choice", "Which part to return (total: what must fit; cpu: GiB per GPU kept in CPU memory "
                "by offload or paged states, not in total; allocated, reserved, device: PyTorch's peak allocated and "
                "reserved, nvidia-smi's reading)", choices=TRAIN_PARTS, default="total"),
            Arg("optimizer_states", "choice", "Optimizer state format: fp32, bf16, 8bit (bitsandbytes), "
                "4bit (torchao / lpmm), paged_8bit / paged_fp32 (unified memory, evicted to CPU RAM)",
                choices=tuple(training_memory.STATE_FORMATS), default="fp32"),
            Arg("master_weights", "bool", "An FP32 master copy of 16-bit weights (FALSE: pure 16-bit training, "
                "16-bit gradients)", default=True),
            Arg("optimizer_in_backward", "bool", "Optimizer step fused into the backward pass: one gradient held "
                "at a time", default=False),
            Arg("tensor_parallel", "integer", PARALLEL_HELP.format("tensor parallelism"), "GPUs", default=1, min=1),
            Arg("pipeline_parallel", "integer", PARALLEL_HELP.format("pipeline parallelism"), "GPUs", default=1,
                min=1),
            Arg("offload", "choice", "CPU offload: none, optimizer (gradients, master and states: ZeRO-Offload), "
                "all (weights too: ZeRO-3 offload_param / FSDP CPUOffload)", choices=training_memory.OFFLOAD,
                default="none"), LOSS],
           examples=[(("Llama 2 7B",), 121.730), (("Llama 2 7B", "bf16", "adamw", 1, 2048, 3, 8), 23.281),
                     (("Llama 3.1 8B", "bf16", "adamw", 2, 512, 0, 1, "full", True, "total", "paged_8bit", False,
                       True), 17.681),
                     (("Llama 2 70B", "bf16", "adamw", 1, 4096, 1, 64, "selective", True, "total", "fp32", True,
                       False, 8, 2), 48.010)], kind="memory")
def training_memory_gb(model, precision, optimizer, micro_batch, seq_len, zero_stage, n_gpus, recompute,
                       flash_attention, part, optimizer_states, master_weights, optimizer_in_backward, tensor_parallel,
                       pipeline_parallel, offload, loss):
    require_own_layout(model)
    return training_memory.training_memory_gib(
        model, precision, optimizer, micro_batch, seq_len, zero_stage, n_gpus, recompute, flash_attention,
        optimizer_states, master_weights, optimizer_in_backward, tensor_parallel, pipeline_parallel, offload,
        loss)[part]


QLORA_PARTS = ("total", "base_weights", "adapters", "activations", "overhead") + MEASURED_PARTS
RANK = Arg("rank", "integer", "LoRA rank r", "rank", default=16, min=1)
LORA_GPUS = replace(N_GPUS, help="Data-parallel GPUs training together, each with its own micro-batch")
SHARDING = Arg("sharding", "choice", "Over several GPUs: ddp (each holds the whole base and adapters) or fsdp "
               "(FSDP / ZeRO-3: shared out, one layer gathered at a time)", choices=training_memory.LORA_SHARDING,
               default="ddp")
CHECKPOINTING = Arg("checkpointing", "bool", "Gradient checkpointing", default=True)
MICRO_BATCH = Arg("micro_batch", "number", "Sequences per step (per GPU)", "sequences", default=1, min=1)
TARGETS = Arg("targets", "text", "Adapted matrices: all (q, k, v, o, gate, up, down: PEFT's all-linear) or a "
              "comma-separated list of them (q,v)", default="all")
ADAPTER_STATES = Arg("adapter_states", "choice", "Adapter weight, gradient and Adam states: fp32 (16 B/param, PEFT's "
                     "default upcast) or bf16 (8 B/param, adapters in a BF16 model's dtype)",
                     choices=tuple(training_memory.ADAPTER_STATES), default="fp32")


@worksheet("QLORA_MEMORY_GB", "QLoRA fine-tuning memory per GPU: NF4 base on linear layers (4.127 bits), 16-bit "
           "embeddings and head, LoRA adapters with FP32 Adam states, activations (checkpointed or not) and logits; "
           "over several GPUs replicated (DDP) or sharded (FSDP).",
           "GB of GPU memory (GiB)", "Training",
           [MODEL, RANK, SEQ_LEN, MICRO_BATCH, CHECKPOINTING,
            Arg("part", "choice", "Which part to return", choices=QLORA_PARTS, default="total"), LORA_GPUS, SHARDING,
            LOSS, TARGETS, ADAPTER_STATES],
           examples=[(("Llama 2 7B",), 6.010), (("Llama 2 70B", 8, 2048, 2, True, "total", 2, "fsdp"), 26.044)],
           kind="memory")
def qlora_memory_gb(model, rank, seq_len, micro_batch, checkpointing, part, n_gpus, sharding, loss, targets,
                    adapter_states):
    require_own_layout(model)
    return training_memory.qlora_memory_gib(model, rank, seq_len, micro_batch, checkpointing,
                                            n_gpus=n_gpus, sharding=sharding, loss=loss, targets=targets,
                                            adapter_states=adapter_states)[part]


@worksheet("LORA_MEMORY_GB", "LoRA fine-tuning memory per GPU: the frozen base in its format (bf16: LoRA; nf4: "
           "QLoRA, the same as QLORA_MEMORY_GB; int8), LoRA adapters r x (d_in + d_out) on every linear layer with "
           "FP32 Adam states (16 B/param), activations (checkpointed or not) and logits; over several GPUs "
           "replicated (DDP) or sharded (FSDP).", "GB of GPU memory (GiB)", "Training",
           [MODEL, RANK, PRECISION, SEQ_LEN, MICRO_BATCH, CHECKPOINTING, LORA_GPUS, SHARDING,
            Arg("part", "choice", "Which part to return", choices=QLORA_PARTS, default="total"), LOSS, TARGETS,
            ADAPTER_STATES],
           examples=[(("Llama 2 7B",), 14.877), (("Llama 2 70B", 8, "bf16", 2048, 8, True, 8, "fsdp"), 45.909)],
           kind="memory")
def lora_memory_gb(model, rank, precision, seq_len, micro_batch, checkpointing, n_gpus, sharding, part, loss, targets,
                   adapter_states):
    require_own_layout(model)
    return training_memory.lora_memory_gib(model, rank, precision, seq_len, micro_batch, checkpointing, n_gpus,
                                           sharding, loss, targets, adapter_states)[part]
