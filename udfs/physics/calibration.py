"""Achievable fractions of peak, and fixed overheads, behind the architecture-aware
estimates. Each is a physical quantity with a stated basis; none is fitted to one row.
The training-efficiency table (udfs/data/training_efficiency.csv) is chosen from the measured
training rows by a stated rule, so the developer tool `python benchmarks/accuracy.py` scores it
out of sample (each source's rows against a table chosen without them) beside its in-sample error
(benchmarks/measured; output in docs/accuracy-report.txt).
"""

from dataclasses import dataclass


# Decode and prefill efficiencies (achieved shares of bandwidth and tensor peak, fixed time
# per layer and per step) belong to the inference engine: udfs/data/engines.csv, one row per
# engine, each constant with its source or basis (docs/serving-model.md).

@dataclass(frozen=True)
class LinkConstants:
    """What a link class costs a collective (udfs/physics/collectives.py)."""
    base_us: float       # fixed latency of one collective of a tiny message
    step_us: float       # added per ring step (an all-reduce over n GPUs takes 2(n-1) steps)
    p2p_us: float        # one send/recv hand-off (a pipeline stage to the next)
    bus_share: float     # achieved bus bandwidth as a share of the one-way link rate
    ring_us: float | None = None   # an inference engine's ring (NCCL) all-reduce latency where it also has a
    #                                one-shot kernel (collectives.engine_all_reduce_s); None: the ring as base_us


# GPU-to-GPU collectives by link class (latency + bytes / bus bandwidth).
# nvlink: NVLink through NVSwitch, or a bridged pair. Engines all-reduce with a one-shot kernel
# (every GPU reads its peers at once), flat in the GPU count: vLLM's custom all-reduce on H100
# measured 9.5 / 9.1 / 10.1 us at 512 B for 2 / 4 / 8 GPUs without CUDA graphs, SGLang's 3.7-5.9 us
# (sgl-project/sglang PR #2904, 2025-01); vLLM PR #37756 (B300, 2026) 7 us at 16-256 KiB: 8 us.
# Bus share 0.80: nccl-tests all_reduce busbw at large sizes, 230-250 of 300 GB/s one way on
# 8 x A100 SXM (NVLink 3), 460-480 of 450-ish on 8 x H100 SXM with NVLink SHARP (alayanew.com
# "NCCL-tests in practice", 2026-05); at 1-4 MB 8 us + bytes at 0.80 of 450 GB/s falls short of the
# kernels vLLM times (vLLM PR #24532: 21-39 us at 2-4 MB on 4 GPUs), which the engines' one-shot / ring
# choice below follows. Hand-off 10 us: a prior (a copy to the next GPU and its synchronisation).
# infinity_fabric: AMD xGMI full mesh (MI300X: 7 links, 64 GB/s one way each). RCCL runs NCCL's
# ring: base 3.6 us + 0.7 us a step - NCCL's own cost model (NVIDIA/nccl src/graph/tuning.cc at
# 01afd20a: Ring/LL baseLat 3.6 us) with the step that reproduces RCCL's 25 us at 8 B over 16 MI250X
# ranks (30 steps; ROCm/rccl PR #929, 2023-10). Bus share 0.75: ~48 of 64 GB/s per xGMI link is
# usable after CRC and protocol overhead (AMD ROCm blog "Understanding RCCL Bandwidth and xGMI
# Performance on AMD Instinct MI300X", 2025-03-02); a group of n uses n-1 of the 7 links
# (collectives.link_class). Checked against vLLM's MI300X TP4 all-reduce (PR #19744, 2025-06): 7.2 us
# at 2 KB, 22.9 us at 1 MB, 63.9 us at 4 MB; the model gives 7.8, 18.7 and 51.5 us.
# pcie: PCIe (P2P or through the host), NCCL's ring: base 3.6 us (tuning.cc as above) + 2.75 us a
# step, which reproduces nccl-tests all_reduce_perf at 8 B on 8 x RTX 4090 over PCIe, 42.1 us
# (NVIDIA/nccl issue #1530, 2024; 8 x RTX 3090: 54.2 us, NVIDIA/nccl issue #1439). Bus share 0.60:
# 8 x H100 PCIe (no NVLink) reach 35-45 GB/s busbw on a 64 GB/s one-way Gen5 x16 link
# (alayanew.com, as above). Hand-off 30 us: a prior (staged through host memory without P2P).
# Inference engines on NVLink (collectives.engine_all_reduce_s) run a tensor-parallel all-reduce as the faster of
# two kernels: a one-shot kernel, in which every GPU reads each peer's whole buffer ((n-1) x size through its own
# links at the one-way rate: base_us + bytes / rate), and NCCL's ring (or the engines' two-shot kernel, which moves
# the ring's 2(n-1)/n x size), whose latency is ring_us. vLLM PR #24532 (2025-09-09; TP 4, bf16 (tokens, 8,192),
# benchmark_device_communicators.py; the part of the PR read here does not name the GPU, read as H100 as above:
# NVLink 4, 450 GB/s one way) times one-shot at 10 / 14 / 19 / 23 / 30 / 38 us for 0.5 / 1 / 1.5 / 2 / 3 / 4 MB
# (8 us + 3 x size at 450 GB/s: 11.5 / 15.0 / 18.5 / 22.0 / 29.0 / 36.0), the two-shot kernel at 17-42 us and NCCL
# at 21 / 23 / 25 / 28 / 33 / 39 us: NCCL's 21 and 23 us at 0.5 and 1 MB less their bytes at 0.80 of the link
# (2.2 and 4.4 us) give its latency, ring_us 19 us. Below about 4 MB at 4 GPUs (1 MB at 8) one-shot is the faster;
# at the flat 8 us + ring bytes the model was 0.67-0.88 of the fastest kernel from 1 MB up (a prefill of 64 tokens
# or more on an 8,192-wide model). Training's gradient all-reduce (large buckets, NCCL) keeps all_reduce_s.
# ethernet: Gaudi's on-chip RoCE ports wired GPU to GPU; network: each GPU's NIC between servers
# (NETWORK_GBS_PER_GPU). NCCL's network ring step, 2.7 us (tuning.cc NET Ring/LL hwLat); hand-off
# 10 us (nccl-tests send/recv across InfiniBand ~5-10 us, the upper end); bus share 0.80 (a prior:
# the NVLink figure; RDMA NICs run at line rate for large messages).
LINKS = {
    "nvlink": LinkConstants(base_us=8.0, step_us=0.0, p2p_us=10.0, bus_share=0.80, ring_us=19.0),
    "infinity_fabric": LinkConstants(base_us=3.6, step_us=0.7, p2p_us=10.0, bus_share=0.75),
    "pcie": LinkConstants(base_us=3.6, step_us=2.75, p2p_us=30.0, bus_share=0.60),
    "ethernet": LinkConstants(base_us=3.6, step_us=2.7, p2p_us=10.0, bus_share=0.80),
    "network": LinkConstants(base_us=3.6, step_us=2.7, p2p_us=10.0, bus_share=0.80),
}

# A step run without CUDA graphs launches each of a layer's kernels from Python: 47 us a layer more than the
# same step replayed from a captured graph. vLLM pull request #1440 ("CUDA graph for Llama", 2023-10), Llama 2
# 7B (32 layers) at batch 1, 5 prompt and 100 output tokens: 1.05 s with a graph, 1.2 s without, so 1.5 ms a
# step, 47 us a layer. Engines capture graphs only up to a batch (Engine.graph_max_batch: vLLM V1 512, V0 256,
# SGLang 160, TGI 32); a larger decode step, or a prefill chunk of more tokens, pays this per layer.
EAGER_LAYER_US = 47.0

# Prefill attention runs in flash-attention kernels on the 16-bit units (whatever the weights' format),
# at a lower share of peak than the matrix products: FlashAttention-2 reaches 50-73% of A100's peak in the
# forward pass (Dao 2023, arXiv:2307.08691) but 35% on H100, where FlashAttention-3 reaches 75% (740 of
# 989 TFLOPS BF16; Shah et al. 2024, arXiv:2407.08608). 0.5: the middle of that 0.35-0.75 range (engines
# ship either kind). It matters at long prompts, where attention grows with the square of the length.
ATTENTION_FRACTION = 0.5

# Training efficiency (model FLOPs utilisation) is no longer one constant: the steady state is a step-time
# model with one achieved matrix share per GPU generation x precision x dense/MoE, and whole runs a table of
# cells by size class, both in udfs/data/training_efficiency.csv, chosen from measured rows by a stated rule
# (udfs/physics/training_efficiency.py).

# Training step, memory-bound work between the matrix products: bytes moved per token per layer per unit of
# hidden size, forward and backward (udfs/physics/training_efficiency.py). Counted, in 16-bit elements of the
# hidden width h (the feed-forward width taken as 3h, Llama's 2.7-3.5h): forward, two norms (read h, write h:
# 4h), two residual adds (read 2h, write h: 6h), rotary on the queries and keys (~3h), the gated activation
# (read 2 x 3h, write 3h: 9h), 22h; backward, each op reads its input and the incoming gradient and writes a
# gradient (norms 6h, residuals 2h, rotary 3h, gated activation 15h), ~26h: ~48h elements, 96 bytes. Fused
# kernels (norm + residual, the gated activation) move about the same bytes in fewer launches. A count, not
# chosen from rows; it is what makes a small hidden size (and a GPU whose FLOPs outgrow its bandwidth, H100
# over A100) lose MFU.
NONMATRIX_BYTES = 96.0

# Share of a run's wall-clock time spent training: every whole-run figure is the steady-state MFU x this
# (training_efficiency._run; no whole-run figure is chosen from rows): "The Llama 3 Herd of Models"
# (arXiv:2407.21783, section 3.3.4) reports higher than 90% effective training time over a 54-day
# snapshot of the 405B run, the rest lost to interruptions, restarts from checkpoints and other overheads.
TRAINING_GOODPUT = 0.90
# A MoE model's MFU (counted on its active parameters) relative to a dense model's on the same
# hardware and software, for a whole run where the table has no MoE cell, or a MoE model whose routing is
# not known (a steady-state MoE step is the dense share with its routing by physics: training_efficiency.
# moe_seconds): DeepSeek-V2 (arXiv:2405.04434, section
# 3.4) needs 172.8K H800 GPU-hours per trillion tokens with 21B active parameters where the dense
# DeepSeek 67B needs 300.6K on the same cluster: (21 / 172.8) / (67 / 300.6) = 0.545.
MOE_TRAINING_EFFICIENCY = 0.545

# Serving memory: runtime overhead per GPU (CUDA context, activations workspace, allocator
# slack) in GiB.
SERVING_OVERHEAD_GIB = 1.5
# Training: the CUDA context a process holds on each GPU before any tensor, in GiB: 666,632,192 bytes with
# every kernel module loaded at start (CUDA_MODULE_LOADING=EAGER), 287,047,680 with lazy loading, PyTorch's
# default since 1.13 (pytorch/pytorch PR #86509, measured there); a training step loads most of the kernels
# it ships (cuBLAS, cuDNN, NCCL, attention), so the eager figure is taken. nvidia-smi counts it; PyTorch's
# memory_allocated and memory_reserved do not.
CUDA_CONTEXT_GIB = 666_632_192 / 2**30
# Training: what PyTorch's caching allocator reserves beyond the peak of allocated memory, as a share of that
# peak (freed blocks kept for reuse, blocks split and rounded, FSDP's all-gather buffers held by their
# streams): the one training-memory constant chosen from rows. Rule (benchmarks/accuracy.py,
# `allocator_reserve`): the median over the measured rows that report reserved memory (peak
# memory_reserved, or nvidia-smi less CUDA_CONTEXT_GIB) of measured / estimated allocated - 1; the report
# scores it out of sample, re-chosen without each row's fold, and a test checks this value is the rule's.
ALLOCATOR_RESERVE = 0.206

# Between servers each GPU has its own 400 Gb/s NIC (50 GB/s one way): NVIDIA's DGX H100 and DGX
# B200 datasheets list 8 x ConnectX-7 400 Gb/s (InfiniBand/Ethernet) for the compute fabric of
# 8 GPUs; the HGX reference designs are built the same way. Training's gradient all-reduce and a
# model copy spanning servers (its pipeline hand-offs) both cross it.
NETWORK_GBS_PER_GPU = 50.0

# --- training across many GPUs (udfs/physics/training.py: layout, batch, gradient synchronisation) ---
# Gradients are reduced in the 16-bit type of the parameters: Megatron-Core's DistributedDataParallelConfig
# has grad_reduce_in_fp32 = False by default (megatron/core/distributed/distributed_data_parallel_config.py),
# so a reduce-scatter moves 2 bytes a parameter (4 with FP32 reduction, which the model does not assume).
GRAD_REDUCE_BYTES = 2
# Gradients travel in buckets, each reduced as soon as the backward pass has filled it: Megatron-Core's
# default bucket is max(40,000,000, 1,000,000 x data-parallel size) parameters ("larger DP sizes need larger
# buckets to ensure collectives do not become latency-bound"; distributed_data_parallel_config.py). The last
# bucket's reduce-scatter (after the backward pass ends) and the first bucket's parameter all-gather (before
# the forward pass can start) cannot overlap compute.
DP_BUCKET_PARAMS = 40e6
# ... plus this many parameters a data-parallel rank (the same rule's 1,000,000 x DP size).
DP_BUCKET_PARAMS_PER_RANK = 1e6
# Parameters one GPU of a model-parallel group (tensor x pipeline) holds in the layouts large runs publish:
# the Megatron-LM README's H100 scaling table (2024-07) gives each GPU 1.7B to 4.9B (GPT 1.7B on TP1, 7.1B on
# TP2, 16B TP4, 32B TP8, 70B TP8 PP2, 119B TP8 PP4, 177B TP8 PP6, 314B TP8 PP8: 4.9B, 462B TP8 PP16) and Llama 3
# 405B runs TP8 PP16, 3.2B (arXiv:2407.21783, Table 4). The layout rule: the smallest group (tensor parallel
# up to a server, then pipeline stages, powers of two) that keeps a GPU at or below the most any of them
# holds, 4.9B.
MODEL_PARALLEL_PARAMS_PER_GPU = 4.9e9
# Tokens in one optimizer step of pre-training on a modest cluster: Llama 2 (Touvron et al. 2023,
# arXiv:2307.09288, section 2.2) trained its 7B to 70B models at a global batch of 4M tokens, and Llama 3
# began its 405B run at 4M (arXiv:2407.21783, section 3.4.1).
GLOBAL_BATCH_TOKENS = 4e6
# Large runs grow the batch with the cluster, down to about 1,024 tokens a GPU a step: Llama 3 405B on 16,384
# H100 at 16M tokens (16 sequences of 8,192 per data-parallel group x DP128; Table 4) and the Megatron-LM
# README's strong scaling on 4,608 H100 at 1,152 sequences of 4,096 tokens both run exactly 1,024.
MIN_TOKENS_PER_GPU = 1024
# ... up to the largest dense batch published: Llama 3's 16M tokens (2,048 sequences of 8,192; section
# 3.4.1 doubles 4M to 8M and then to 16M as training proceeds). Beyond 16,384 GPUs a GPU gets fewer tokens.
MAX_GLOBAL_BATCH_TOKENS = 16_777_216

# LoRA / QLoRA across GPUs (training.adapter_sync): only the adapters are trained, so only their gradients are
# reduced, in the adapters' dtype: FP32, 4 bytes a parameter (PEFT upcasts 16-bit adapters to FP32 by default,
# get_peft_model(autocast_adapter_dtype=True), huggingface.co/docs/peft package_reference/peft_model; the same
# basis as training_memory.ADAPTER_STATES["fp32"]).
ADAPTER_GRAD_BYTES = 4
# Under FSDP FULL_SHARD / ZeRO-3 the frozen base of a LoRA job is sharded too: each layer's weights are
# all-gathered in their storage format before its forward and again before its backward, then freed (PyTorch
# FSDP docs, ShardingStrategy.FULL_SHARD: parameters are sharded, all-gathered before the forward and again
# before the backward and resharded after each; DeepSpeed ZeRO-3 docs: stage 3 partitions the parameters and
# gathers them for the forward and backward passes); Answer.AI's fsdp_qlora gathers NF4 with its constants
# (bnb_4bit_quant_storage, training_memory.base_weight_bytes): 2 gathers a micro-batch.
FSDP_GATHERS_PER_STEP = 2

# Mixture-of-experts: the least time one expert GEMM takes however small (us). A GEMM cannot end
# before one tile has streamed its K-slice of the weights through the SM's load pipeline and written
# its result: a few HBM round trips of ~0.6-0.8 us (H100/A100 load latency, Jia et al., "Dissecting
# the NVIDIA Hopper/Ampere GPU architecture through microbenchmarking") plus its epilogue; kernels
# under CUDA graphs start ~1-2 us apart. A physical prior, not chosen from rows. Since 2026-11-24 it bounds a
# MoE layer's grouped GEMM (one kernel over all its touched experts, as the engines run them: moe.expert_seconds),
# no longer each touched expert's GEMM apart.
MOE_GEMM_FLOOR_US = 2.0
# Routing moves each token's activations to its k experts and back: the dispatch writes k copies of
# the hidden vector and the expert GEMM reads them; the down GEMM writes k outputs and the combine
# reads them (vLLM fused_moe / TensorRT-LLM MoE: permute, GEMMs, unpermute-and-reduce): 4 passes.
MOE_ROUTING_PASSES = 4
# Mixture-of-experts: the fixed time of one MoE layer of a decode step beyond its experts' bytes (us): routing
# (top-k), sorting the tokens by expert, quantising the activations, and the grouped GEMMs' ramp and tail, several
# short kernels a layer (vLLM's fused_moe: topk, moe_align_block_size, two fused_moe GEMMs, activation, moe_sum).
# CHOSEN FROM ROWS, no source times it: the value making the median log error zero over the MoE rows at a stated
# concurrency (SemiAnalysis InferenceX's DeepSeek-R1 on SGLang and TensorRT-LLM and gpt-oss-120b on vLLM and
# TensorRT-LLM, 1-128 in flight; trtllm-bench's DeepSeek-R1; 270 rows), re-chosen within folds and scored out of
# sample (benchmarks/serving_accuracy.py FITTED, "every engine"; Engine.moe_layer_us carries the harness's
# within-fold value, no engines.csv column sets it). Leaving one model out it does not transfer: chosen without
# gpt-oss-120b 75.5 us, from gpt-oss-120b alone 21.8 us (the accuracy report's "leaving one model out" line).
# The rows left for the experts by the rest of the step grow at about the engines' weight bandwidth with the
# touched bytes and carry an intercept of about this size per MoE layer (docs/accuracy.md, "MoE experts as grouped
# kernels").
MOE_LAYER_US = 27.2

# vLLM's start-up profile run ends with its sampler on min(max_num_seqs, tokens) rows with top-k and top-p on
# (vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run, 0.8-0.10: temperature 0.5, top_p 0.9, top_k
# vocabulary - 1), so PyTorch's top-k / top-p path runs (vllm/v1/sample/ops/topk_topp_sampler.py
# apply_top_k_top_p: sort, top-k mask, softmax cumulated in place, top-p mask, scatter back in place). At its peak
# each row x vocabulary entry holds the model's 16-bit logits (2 bytes, still held by the caller), the sampler's
# FP32 copy (4), the sort's values (4) and int64 indices (8), the softmax (4) and the top-k and top-p masks
# (1 + 1): 24 bytes, counted from the source, not chosen from rows (the sort's own workspace is not counted).
SAMPLER_PEAK_BYTES = 24
# With FlashInfer installed (in vLLM 0.10.2 and 0.11.0 the `vllm[flashinfer]` extra, not a default dependency: setup.py
# extras_require; or an image that builds it) the same profile run samples through FlashInfer instead
# (vllm/v1/sample/ops/topk_topp_sampler.py TopKTopPSampler: FlashInfer >= 0.2.3 and VLLM_USE_FLASHINFER_SAMPLER unset
# -> forward_cuda -> flashinfer.sampling.top_k_top_p_sampling_from_logits, read in vLLM 0.10.2 and 0.11.0), which does
# not sort: each row x vocabulary entry holds the 16-bit logits (2), the sampler's FP32 copy (4; the temperature is
# divided in place), top_k_mask_logits' masked copy (4, torch.empty_like) and the softmax (4): 14 bytes
# (flashinfer-python 0.3.0 sampling.py, filter_apply_order "top_k_first"), counted from the source.
SAMPLER_PEAK_BYTES_FLASHINFER = 14
# From vLLM 0.17.0 the native top-k / top-p is a Triton kernel that masks the FP32 logits in place
# (vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p -> topk_topp_triton.py apply_top_k_top_p_triton: no sort,
# a scratch buffer of at most one row per SM), read in the vllm 0.17.0, 0.20.0, 0.22.0 and 0.33.0 wheels from PyPI. The
# same profile run (gpu_model_runner.py _dummy_sampler_run: temperature 0.5, top_p 0.9, top_k vocabulary - 1) then
# holds, per row x vocabulary entry, the model's 16-bit logits (2), the sampler's FP32 copy (4; temperature divided in
# place, sampler.py), the softmax (4) and the exponential noise random_sample draws (4; divided into the softmax in
# place): 14 bytes, counted from the source, not chosen from rows. From 0.22.0 on CUDA FlashInfer's sampler runs first
# (VLLM_USE_FLASHINFER_SAMPLER default True; top_k_mask_logits' masked copy and the softmax beside the same two logits:
# 14 bytes too) and the native path is warmed after it; the Triton scratch buffer is not counted.
SAMPLER_PEAK_BYTES_IN_PLACE = 14
