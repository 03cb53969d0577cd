"""Unit constants. Flopsheet's conventions (docs/cost-model.md states them too):

- GPU memory is in GB as GPU vendors and the lesson count it: 2**30 bytes (GiB).
  An "80 GB" H100 holds 80 GiB, so requirements and capacities compare directly.
- Model files and bytes streamed per token are in decimal GB (10**9 bytes), as the
  lesson's throughput code computes them; bandwidth is in TB/s (10**12 bytes/s).
"""

GIB = 1024 ** 3           # bytes in one GB of GPU memory (GiB)
GB = 1e9                  # bytes in one decimal GB (model files, data moved)
TB = 1e12                 # bytes in one TB (bandwidth in TB/s)
TERA = 1e12               # FLOP/s in one TFLOPS
HOURS_PER_YEAR = 365 * 24         # 8,760: the lesson's year
SECONDS_PER_YEAR = HOURS_PER_YEAR * 3600
MEMORY_UNITS = {"gib": GIB, "gb": GB}   # optional `unit` argument of memory functions
