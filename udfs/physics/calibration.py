"""Achievable fractions of peak, and fixed overheads, behind the architecture-aware
estimates. Each is a physical quantity with a stated basis; none is fitted to one row.
DEFAULT_MFU is chosen from the measured MFU rows by a stated rule, so the developer tool
`python benchmarks/accuracy.py` scores it leave-one-out beside its in-sample error
(benchmarks/measured; output in docs/accuracy-report.txt).
"""

# Decode and prefill efficiencies (achieved shares of bandwidth and tensor peak, fixed time
# per layer and per step) belong to the inference engine: udfs/data/engines.csv, one row per
# engine, each constant with its source or basis (docs/serving-model.md).

# Each extra GPU under tensor parallelism adds two all-reduces per layer (us each).
ALLREDUCE_US = {"nvlink": 8.0, "pcie": 25.0}
# ...and moves the activations: NCCL ring all-reduce reaches ~80% of the one-way link rate
# in nccl-tests "bus bandwidth" on NVLink A100/H100 systems.
ALLREDUCE_BANDWIDTH_FRACTION = 0.80

# Model FLOPs utilisation of large-scale pre-training, for TRAINING_GPU_HOURS by default:
# published dense-LLM runs on A100/H100 report 38-49% (Megatron-LM 2021: 44-49%; OPT: 47%;
# Llama 3 405B: 38-41%; MosaicML H100: 42-46%); Llama 2's GPU-hours imply ~39%.
# Steady-state MFU (median ~45% in the measured rows) times ~90% goodput (checkpointing,
# restarts after failures, evaluation; Llama 3 paper: >90% effective training time) gives
# ~40% for whole-run GPU-hours, which is what this default feeds.
DEFAULT_MFU = 0.40

# Serving memory: the share of GPU memory vLLM uses by default (gpu_memory_utilization 0.9).
USABLE_MEMORY_FRACTION = 0.90
# Serving memory: runtime overhead per GPU (CUDA context, activations workspace, allocator
# slack) in GiB.
SERVING_OVERHEAD_GIB = 1.5
# Training: framework overhead per GPU (CUDA context, allocator fragmentation) in GiB.
TRAINING_OVERHEAD_GIB = 1.0

# Between servers each GPU has its own 400 Gb/s NIC (50 GB/s one way): NVIDIA's DGX H100 and DGX
# B200 datasheets list 8 x ConnectX-7 400 Gb/s (InfiniBand/Ethernet) for the compute fabric of
# 8 GPUs; the HGX reference designs are built the same way. Training's gradient all-reduce and a
# model copy spanning servers (its pipeline hand-offs) both cross it.
NETWORK_GBS_PER_GPU = 50.0

# One hand-off between servers (us), over each GPU's NIC (NETWORK_GBS_PER_GPU): NCCL send/recv
# of a small message across InfiniBand measures ~5-10 us in nccl-tests (the wire and switch add ~1 us); the upper end is taken.
NETWORK_HOP_US = 10.0
