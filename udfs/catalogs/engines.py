"""Inference-engine profiles, read from `udfs/data/engines.csv` (every row has `source`,
`as_of` and a note saying which constants are documented defaults, physical priors, or
chosen from measured rows). Names are matched loosely: "TensorRT-LLM", "trtllm" and
"trt-llm" are one engine. Rows of a private catalog's `engines.csv` (`udfs.catalogs.private_catalog`)
add engines or override the cells they fill, as for the other tables. Standard library only.

A profile holds what changes between engines for the same model and GPU:
- memory rules: the share of GPU memory the engine may use (`memory_rule` "total": weights,
  activations and KV cache share `memory_fraction` of all memory, as vLLM and SGLang do;
  "free": the KV cache gets `memory_fraction` of what is left after the weights, as
  TensorRT-LLM does), a flat reserve (for vLLM also its profile run: capacity.profile_run_gib), its
  batch cap, and whether a request's KV cache is reserved up front (`kv_reservation` "max": prompt + output) or grows (`"mean"`);
- how several GPUs are used (`multi_gpu` "tensor" parallel, or "layer": a pipeline in which
  one GPU works at a time, as llama.cpp and Accelerate's device_map do), and how a tensor-parallel group
  splits mixture-of-experts layers (`moe_parallel` "tensor": a slice of every expert on each GPU, the
  engines' default; "expert": E/n whole experts a GPU, vLLM's --enable-expert-parallel, SGLang's --ep-size;
  "expert_dp": the same with data-parallel attention, SGLang's --enable-dp-attention);
- kernel efficiency: the achieved share of memory bandwidth (HBM, GDDR, and unified memory where given) and of the tensor
  peak of each number format (one table for prefill and decode matrix products), and the fixed time per layer
  and per step that does not scale with bytes;
- CUDA graphs: the most tokens a step may hold and still replay a captured graph (`graph_max_batch`: vLLM V1
  512, V0 256, SGLang 160, TGI 32); a larger step launches every kernel from Python
  (`Engine.layer_us`, calibration.EAGER_LAYER_US).
- multi-step scheduling: decode steps run per scheduler call (`scheduler_steps`: 10 for vLLM V0 as benchmarked
  with --num-scheduler-steps 10; blank: 1), so a new request is admitted only between windows of that many
  steps (`Engine.admission_steps`, used by the prefill queue in capacity._first_token_s), and the CPU time between
  steps, given per scheduler call, is spread over the window (_per_step).
- an eager prefill's host time per MoE layer (`eager_moe_layer_us`: what a prefill pass of a mixture-of-experts
  model pays per MoE layer outside CUDA graphs; SGLang's chosen from measured rows, others blank).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from functools import cache

from . import catalog
from ..physics import calibration as cal
from .catalog import Gpu, Precision, _build, as_precision
from ..errors import FlopsheetError, na_error
from .names import NameIndex

# The engine assumed when none is given: the one a vendor's own throughput figures use on
# its GPUs (NVIDIA publishes TensorRT-LLM numbers, Intel its Gaudi software's, AMD vLLM's on ROCm),
# vLLM on every other accelerator. vLLM and TensorRT-LLM do not run on Apple silicon. Gaudi's is
# keyed by family: Intel's other GPUs (Arc, Data Center GPU Max) do not run the Gaudi software.
DEFAULT_ENGINES = {"NVIDIA": "TensorRT-LLM", "Apple": "llama.cpp"}
FAMILY_ENGINES = {"Gaudi": "Intel Gaudi software"}
FALLBACK_ENGINE = "vLLM"
DEFAULT_ENGINE_TEXT = ("TensorRT-LLM on NVIDIA GPUs, llama.cpp on Apple silicon, Intel Gaudi software (1.18) on "
                       "Gaudi, vLLM (its V1 engine, 0.8 and later) on others; 'vLLM' answers for release 0.33.0, the "
                       "newest on 2026-11-24, and 'vLLM 0.10.1' for that release (its MoE kernels: MXFP4 experts "
                       "through Marlin, padded, on Hopper)")


@dataclass(frozen=True)
class Engine:
    """An engine profile; every figure typed `float` is required (private_catalog.REQUIRED)."""
    name: str
    aliases: tuple[str, ...]
    multi_gpu: str
    moe_parallel: str             # MoE layers over a group: "tensor" (blank), "expert" (EP), "expert_dp" (EP + DP attention)
    memory_rule: str
    memory_fraction: float
    activation_reserve_gib: float
    max_batch: int | None
    large_gpu_max_batch: int | None
    max_num_tokens: int | None
    large_gpu_max_num_tokens: int | None   # the token budget on large GPUs (token_budget); blank: max_num_tokens
    kv_reservation: str
    kv_precision: str
    precisions: tuple[str, ...]
    bandwidth_fraction_hbm: float
    bandwidth_fraction_gddr: float
    bandwidth_fraction_unified: float | None   # unified memory (Apple silicon); blank: the GDDR share
    quantized_factor: float
    layer_overhead_us: float
    step_overhead_us: float
    sequence_overhead_us: float | None   # CPU time per running sequence per step the GPU waits for (blank: overlapped)
    graph_max_batch: int | None      # decode steps of more sequences run without CUDA graphs (blank: not modelled)
    scheduler_steps: int | None      # decode steps per scheduler call (vLLM V0's --num-scheduler-steps; blank: 1)
    matmul_fraction_16: float
    matmul_fraction_8: float
    matmul_fraction_4: float
    family: str                      # the engine the profile is a version of (blank: its own name)
    version: str                     # the versions it describes, in words
    version_range: str               # the same as numbers, "lo-hi" (either end open): "0.8-", "-0.7"
    fitted: tuple[str, ...]
    source: str
    as_of: str
    note: str
    # Data-parallel attention ranks prefill together (TensorRT-LLM's attention_dp_config enable_balance, MLPerf's
    # adp_balancing_enable): no rank holds the others up with its own prompts (capacity._prefill_per_step_s). Blank
    # (off) in every packaged row, as TensorRT-LLM and SGLang default; a private row or a measured row's note turns it on.
    dp_balance: bool = False
    # The release an estimate answers for (engines.csv `release`: vLLM's newest on PyPI); a named version ("vLLM 0.10.1")
    # sets it (_by_version). It picks the MoE kernel of a number format (moe_kernel; udfs/data/moe_kernels.csv).
    release: str = ""
    # Host time per MoE layer of a prefill pass run without CUDA graphs (its Python and kernel launches, the MoE
    # layer's host syncs; capacity._prefill_s): blank (0) where not measured. SGLang's is chosen from DeepSeek-R1
    # first tokens at 1-2 in flight (benchmarks/serving_accuracy.py FITTED, scored out of fold).
    eager_moe_layer_us: float | None = None

    @property
    def expert_parallel(self) -> bool:
        """MoE layers expert-parallel over the group: each GPU holds E/n whole experts ("expert": attention
        stays tensor-parallel, so the memory per GPU and the all-reduces are the same; "expert_dp": below)."""
        return self.moe_parallel in ("expert", "expert_dp")

    @property
    def dp_attention(self) -> bool:
        """Expert parallel with data-parallel attention ("expert_dp", SGLang's --enable-dp-attention): each
        GPU holds attention, dense layers and shared experts whole and serves its own sequences (their KV
        cache whole, never replicated); tokens reach their experts by two all-to-alls per MoE layer."""
        return self.moe_parallel == "expert_dp"

    @property
    def admission_steps(self) -> int:
        """Decode steps between the points where the scheduler can admit a new request: one, or the multi-step
        window (vLLM V0's --num-scheduler-steps runs that many decode steps per scheduler call)."""
        return self.scheduler_steps or 1

    def bandwidth_fraction(self, gpu: Gpu) -> float:
        """Achieved share of the GPU's memory bandwidth by memory kind (bandwidth_field)."""
        return getattr(self, self.bandwidth_field(gpu))

    def bandwidth_field(self, gpu: Gpu) -> str:
        """The profile field of the GPU's memory kind: HBM, unified memory (a system on a chip: Apple silicon;
        the GDDR share where the profile has none), or GDDR."""
        kind = (gpu.memory_type or "").upper()
        if "HBM" in kind:
            return "bandwidth_fraction_hbm"
        if "UNIFIED" in kind and self.bandwidth_fraction_unified is not None:
            return "bandwidth_fraction_unified"
        return "bandwidth_fraction_gddr"

    def matmul_fraction(self, bits: int) -> float:
        """Achieved share of the dense tensor peak of the format the products run in, for
        prefill and decode alike: 8- and 4-bit peaks are harder to approach than 16-bit."""
        return {16: self.matmul_fraction_16, 8: self.matmul_fraction_8, 4: self.matmul_fraction_4}[bits]

    def layer_us(self, tokens: float) -> float:
        """Fixed time per layer of a step of `tokens` tokens (a decode step's sequences, or a prefill chunk):
        the profile's, with a captured CUDA graph replayed; beyond the engine's capture cap the step runs without
        graphs and each layer also pays the launches the graph saved (calibration.EAGER_LAYER_US)."""
        eager = self.graph_max_batch is not None and tokens > self.graph_max_batch
        return self.layer_overhead_us + (cal.EAGER_LAYER_US if eager else 0.0)

    def covers(self, version: tuple[int, ...]) -> bool:
        """Whether `version` (numbers) falls in version_range ("0.8-": 0.8 and later; "-0.7": up to 0.7.x)."""
        return _in_range(version, self.version_range)

    def moe_kernel(self, gpu: Gpu, precision: Precision | str) -> MoeKernel | None:
        """The kernel this release runs a MoE layer's experts in `precision` with on `gpu` (moe_kernels.csv: by engine
        family, release and GPU family); None where the table reads no kernel for the engine family and format (other
        engines and formats: no padding is counted). #N/A naming the release and GPU where it reads some but none of
        this release on this GPU: its padding is not known, and 0 would be a guess."""
        family, version = self.family or self.name, _numbers(self.release)
        name = as_precision(precision).name
        rows = [k for k in moe_kernels() if k.engine == family and k.format == name]
        found = next((k for k in rows if version and gpu.family in k.gpu_families
                      and _in_range(version, k.version_range)), None)
        if rows and found is None:
            release = f"{self.name} {self.release}" if self.release else f"{self.name} (no release stated)"
            raise na_error(f"MoE kernel of {release} on {gpu.name} not read ({name} experts: "
                           "udfs/data/moe_kernels.csv lists the releases and GPUs read)")
        return found

    def profile_tokens(self, gpu: Gpu) -> int:
        """Tokens of the start-up profile run whose peak the engine keeps out of the KV cache beside the weights:
        vLLM's forward pass at max_num_batched_tokens on this GPU (token_budget; capacity.profile_run_gib); 0: none
        counted (SGLang and TensorRT-LLM size the cache by their memory shares; a vLLM profile with no token
        budget, V0, runs max_model_len tokens, which an estimate does not know)."""
        return (self.token_budget(gpu) or 0) if self.family == "vLLM" else 0

    @staticmethod
    def large_gpu(gpu: Gpu) -> bool:
        """vLLM's "large GPU" for its defaults: at least 70 GiB of the memory CUDA reports (Gpu.memory_gib) and not
        an A100 (arg_utils get_batch_defaults: a large token budget on the A100 lowered throughput, vLLM PR #17885)."""
        return gpu.memory_gib >= 70 and "A100" not in gpu.name

    def batch_cap(self, gpu: Gpu) -> int | None:
        """The engine's own limit on concurrent sequences. vLLM raises its default on large GPUs (large_gpu)."""
        return self.large_gpu_max_batch if (self.large_gpu(gpu) and self.large_gpu_max_batch) else self.max_batch

    def token_budget(self, gpu: Gpu) -> int | None:
        """Tokens the engine runs in one iteration (prefill chunks beside the running decodes: vLLM's
        max_num_batched_tokens, SGLang's chunked_prefill_size, TensorRT-LLM's max_num_tokens); None: no budget,
        a prompt is prefilled whole. `vllm serve` raises its default on large GPUs (large_gpu): 8,192, else 2,048."""
        if self.large_gpu(gpu) and self.large_gpu_max_num_tokens:
            return self.large_gpu_max_num_tokens
        return self.max_num_tokens

    def kv_format(self, precision: Precision | str) -> str:
        """KV-cache format the engine uses when none is asked for: 16-bit, or FP8 for engines
        that build 8-bit-and-below float models with an FP8 cache (TensorRT-LLM)."""
        row = as_precision(precision)
        if self.kv_precision == "fp8_if_8bit" and row.kind == "float" and row.bits_per_param <= 8:
            return "fp8"
        return "bf16"

    def vendor_precision(self, gpu: Gpu) -> str:
        """The fastest format in the engine's list that the GPU has tensor cores for: what a
        vendor picks when a benchmark does not record it (MLPerf 'vendor-chosen')."""
        for name in self.precisions:
            row = as_precision(name)
            if row.kind != "float" or gpu.has_units(row):
                return name
        return "bf16"


@dataclass(frozen=True)
class MoeKernel:
    """The kernel an engine release runs MoE experts of one number format with on a GPU family, and the widths it pads
    the expert matrices to (udfs/data/moe_kernels.csv, each row read in the engine's source: its backend selection
    and create_weights)."""
    engine: str
    version_range: str
    gpu_families: tuple[str, ...]
    format: str
    kernel: str
    hidden_multiple: int          # the hidden size is rounded up to a multiple of this
    shard_multiple: int           # each tensor-parallel shard's expert width (FFN / n) to a multiple of this
    copied_bits: float            # bits a value held twice (vLLM 0.12-0.14's Triton path: the checkpoint's block scales)
    source: str
    as_of: str
    note: str


@cache
def moe_kernels() -> tuple[MoeKernel, ...]:
    return tuple(_build(MoeKernel, r) for r, _ in catalog.rows_with_origin("moe_kernels.csv"))


def _in_range(version: tuple[int, ...], version_range: str) -> bool:
    """Whether `version` falls in "lo-hi" (either end open: "0.8-", "-0.7"; "0.10.1-0.11.0" up to 0.11.0 itself)."""
    if "-" not in version_range:
        return False
    lo, hi = (_numbers(part) for part in version_range.split("-", 1))
    return (not lo or version >= lo) and (not hi or version[:len(hi)] <= hi)


ENGINE_FIELDS = {f.name for f in fields(Engine)}

# What a private row must hold: the values each choice column may take (the shares of a peak,
# in (0, 1], are number ranges: private_catalog.LIMITS).
CHOICES = {"multi_gpu": ("tensor", "layer"), "moe_parallel": ("tensor", "expert", "expert_dp", ""),
           "memory_rule": ("total", "free"), "kv_reservation": ("max", "mean"),
           "kv_precision": ("16bit", "fp8_if_8bit")}


def row_problems(row: dict[str, str]) -> list[tuple[str, str]]:
    """(column, why) for each cell of an engine row that the model cannot use."""
    found = [(c, f"{row.get(c)!r} must be one of {', '.join(valid)}")
             for c, valid in CHOICES.items() if row.get(c, "").strip() not in valid]
    for name in (p.strip() for p in (row.get("precisions") or "").split(";") if p.strip()):
        try:
            as_precision(name)
        except FlopsheetError:
            found.append(("precisions", f"unknown number format {name!r}"))
    return found


@cache
def engines() -> tuple[Engine, ...]:
    """Packaged engines overlaid with private rows, which are checked first (file, line, column)."""
    rows = catalog.rows_with_origin("engines.csv")     # checked by catalog.validate, as `catalog check` does
    return tuple(_per_step(_build(Engine, r)) for r, _ in rows)


def _per_step(e: Engine) -> Engine:
    """A multi-step profile's CPU time between steps, which engines.csv gives per scheduler call (as the single-step
    engine's: step_overhead_us, sequence_overhead_us), spread over its window of scheduler_steps decode steps: the
    scheduler's CPU work is done once per window (vLLM RFC #6854)."""
    steps = e.scheduler_steps or 1
    if steps <= 1:
        return e
    seq = None if e.sequence_overhead_us is None else e.sequence_overhead_us / steps
    return replace(e, step_overhead_us=e.step_overhead_us / steps, sequence_overhead_us=seq)


@cache
def _index() -> NameIndex[Engine]:
    index: NameIndex[Engine] = NameIndex("engine")
    for e in engines():
        catalog._add(index, e, e.name, e.aliases)
    return index


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text.strip())[:3])


# "vLLM 0.5.3", "vllm v0.6", "vLLM 0.10.1.1", "SGLang 0.4.1.post1": a family's name, then a version number
_VERSIONED = re.compile(r"^(?P<family>.*?\D)[\s_-]*v?(?P<version>\d+(?:\.\d+){0,3})(?:[.\-]?(?:post|rc|dev)\w*)?$",
                        re.IGNORECASE)


def _by_version(text: str) -> Engine | None:
    """The profile of a family whose version_range holds the version in `text` (a family with one
    profile and no range: that profile); None if `text` names no family with a version."""
    match = _VERSIONED.match(text.strip())
    if not match:
        return None
    text_family = match.group("family").strip()
    named = [e for e in engines() if e.family and e.family.lower() == text_family.lower()]
    try:
        base = named[0] if named else _index().resolve(text_family)
    except FlopsheetError:
        return None
    family = base.family or base.name
    version = _numbers(match.group("version"))
    profiles = [e for e in engines() if (e.family or e.name) == family]
    if len(profiles) == 1 and not profiles[0].version_range:
        return profiles[0]                 # one profile describes every version of the engine
    found = next((e for e in profiles if e.covers(version)), None)
    if found is None:
        known = "; ".join(f"{e.name}: {e.version}" for e in profiles) or f"{base.name}: {base.version or 'one profile'}"
        raise na_error(f"no {family} profile describes version {match.group('version')} ({known})")
    return replace(found, release=match.group("version"))    # the release named picks its kernels (moe_kernel)


def default_engine_name(gpu: Gpu | None = None) -> str:
    family = next((e for f, e in FAMILY_ENGINES.items() if gpu and (gpu.family or gpu.name).startswith(f)), None)
    return family or DEFAULT_ENGINES.get(gpu.vendor if gpu else "", FALLBACK_ENGINE)


def engine(name: str | Engine | None = None, gpu: Gpu | None = None) -> Engine:
    """An engine profile by any of its names; blank means the default for the GPU."""
    if isinstance(name, Engine):
        return name
    text = (name or "").strip() if isinstance(name, str) or name is None else str(name)
    try:
        return _index().resolve(text or default_engine_name(gpu))
    except FlopsheetError:
        found = _by_version(text)          # "vLLM 0.5": the profile of that version
        if found is None:
            raise
        return found


def engine_names() -> list[str]:
    return [e.name for e in engines()]
