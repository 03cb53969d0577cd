"""Achievable fractions of peak, and fixed overheads, behind the architecture-aware
estimates. Each is a physical quantity with a stated basis; none is fitted to one row.
The developer tool `python benchmarks/accuracy.py` shows how the estimates built on them
compare with published measurements (benchmarks/measured; output in docs/accuracy-report.txt).
"""

# Fraction of datasheet memory bandwidth a decode step achieves (MBU), by memory kind.
# Basis: streaming kernels reach ~90-95% of GDDR6/6X peaks and ~85-90% of HBM peaks (A100
# ~1.7-1.8 of 2.0 TB/s); HBM's larger bandwidth x latency product needs more bytes in flight
# than one batch-1 matrix-vector kernel keeps, so decode sits a little lower there. The GDDR
# figure is separated from the fixed per-layer cost below by pairs of runs on one GPU that
# differ only in bytes per weight (llama.cpp F16 vs Q4_K_M on an RTX 4090 and on an RTX A6000:
# the extra 10.5 GB cost 0.9-0.98 of peak bandwidth per byte).
DECODE_BANDWIDTH_FRACTION = {"HBM": 0.80, "GDDR": 0.90}
# Quantised formats (int4, GGUF, nf4) dequantise on the CUDA cores before the multiply: the
# extra instructions per byte cost ~10% of the achievable rate (the same-GPU pairs above put
# Q4_K_M within 0-10% of F16 per byte).
QUANTIZED_DECODE_PENALTY = 0.90

# Fixed time per generated token that does not scale with bytes: kernel launches and
# synchronisation, per transformer layer (microseconds). A llama-style layer runs ~20-25
# kernels (norms, q/k/v/o, rope, KV copy, attention, gate/up/down, activation, residuals)
# at ~3-4 us each when not captured in a CUDA graph; the same-GPU pairs above give
# ~100 us/layer for llama.cpp, fused engines with CUDA graphs (TensorRT-LLM, MLC) less.
PER_LAYER_OVERHEAD_US = 80.0
# Each extra GPU under tensor parallelism adds two all-reduces per layer (us each).
ALLREDUCE_US = {"nvlink": 8.0, "pcie": 25.0}
# ...and moves the activations: NCCL ring all-reduce reaches ~80% of the one-way link rate
# in nccl-tests "bus bandwidth" on NVLink A100/H100 systems.
ALLREDUCE_BANDWIDTH_FRACTION = 0.80

# Fraction of dense peak tensor FLOP/s reached by large matrix products (prefill,
# compute-bound decode): MAMF measurements give 80-87% on A100/H100 (stas00/ml-engineering);
# whole-model prefill reaches less. 8-bit and 4-bit tensor-core peaks are harder to approach;
# weight-only formats (int4, nf4, GGUF) multiply in 16-bit and use the 16-bit share.
PREFILL_COMPUTE_FRACTION = {16: 0.70, 8: 0.45, 4: 0.35}
DECODE_COMPUTE_FRACTION = 0.60

# Model FLOPs utilisation of large-scale pre-training, for TRAINING_GPU_HOURS by default:
# published dense-LLM runs on A100/H100 report 38-49% (Megatron-LM 2021: 44-49%; OPT: 47%;
# Llama 3 405B: 38-41%; MosaicML H100: 42-46%); Llama 2's GPU-hours imply ~39%.
# Steady-state MFU (median ~45% in the measured rows) times ~90% goodput (checkpointing,
# restarts after failures, evaluation; Llama 3 paper: >90% effective training time) gives
# ~40% for whole-run GPU-hours, which is what this default feeds.
DEFAULT_MFU = 0.40

# Serving memory: what vLLM reserves by default, and runtime overhead per GPU (CUDA
# context, activations workspace, allocator slack) in GiB.
USABLE_MEMORY_FRACTION = 0.90
SERVING_OVERHEAD_GIB = 1.5
# Training: framework overhead per GPU (CUDA context, allocator fragmentation) in GiB.
TRAINING_OVERHEAD_GIB = 1.0
