"""Achievable fractions of peak, and fixed overheads, behind the architecture-aware
estimates. Each is a physical quantity with a stated basis; none is fitted to one row.
`python -m udfs.accuracy` shows how the estimates built on them compare with
measurements (shared reference rows; the README keeps its output).
"""

# Fraction of datasheet memory bandwidth a decode step achieves (MBU), by memory kind.
# Basis: streaming-kernel measurements reach ~80-90% of HBM and GDDR peaks; decode kernels
# for 16-bit weights sit near the top of that range, quantised kernels (dequantise, then
# multiply) lower. Checked on the shared batch-1 decode rows (llama.cpp, MLC, ExLlama).
DECODE_BANDWIDTH_FRACTION = {"HBM": 0.72, "GDDR": 0.82}
QUANTIZED_DECODE_PENALTY = 0.80     # quantised formats (int4, GGUF, nf4) reach this share of it

# Fixed time per generated token that does not scale with bytes: kernel launches and
# synchronisation, per transformer layer (microseconds). ~20-25 kernels a layer at a few us.
PER_LAYER_OVERHEAD_US = 40.0
# Each extra GPU under tensor parallelism adds two all-reduces per layer (us each).
ALLREDUCE_US = {"nvlink": 8.0, "pcie": 25.0}

# Fraction of dense peak tensor FLOP/s reached by large matrix products (prefill,
# compute-bound decode): MAMF measurements give 80-87% on A100/H100 (stas00/ml-engineering);
# whole-model prefill reaches less. 8-bit and 4-bit peaks are harder to approach.
PREFILL_COMPUTE_FRACTION = {16: 0.70, 8: 0.45, 4: 0.35}
DECODE_COMPUTE_FRACTION = 0.60

# Model FLOPs utilisation of large-scale pre-training, for TRAINING_GPU_HOURS by default:
# published dense-LLM runs on A100/H100 report 38-49% (Megatron-LM 2021: 44-49%; OPT: 47%;
# Llama 3 405B: 38-41%; MosaicML H100: 42-46%); Llama 2's GPU-hours imply ~39%.
DEFAULT_MFU = 0.40

# Serving memory: what vLLM reserves by default, and runtime overhead per GPU (CUDA
# context, activations workspace, allocator slack) in GiB.
USABLE_MEMORY_FRACTION = 0.90
SERVING_OVERHEAD_GIB = 1.5
# Training: framework overhead per GPU (CUDA context, allocator fragmentation) in GiB.
TRAINING_OVERHEAD_GIB = 1.0
