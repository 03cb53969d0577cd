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
- the share of its modelled speed a mixture-of-experts model's prefill pass reaches (`moe_prefill_share`: the whole
  pass, experts, exchange and fixed costs together; vLLM's chosen from measured rows, others blank: 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from functools import cache

from . import catalog
from ..physics import calibration as cal
from .catalog import Gpu, Precision, _build, as_precision
from ..errors import FlopsheetError, na_error, value_error
from .names import NameIndex, key

# The engine assumed when none is given: the one a vendor's own throughput figures use on
# its GPUs (NVIDIA publishes TensorRT-LLM numbers, Intel its Gaudi software's, AMD vLLM's on ROCm),
# vLLM on every other accelerator. vLLM and TensorRT-LLM do not run on Apple silicon. Gaudi's is
# keyed by family: Intel's other GPUs (Arc, Data Center GPU Max) do not run the Gaudi software.
DEFAULT_ENGINES = {"NVIDIA": "TensorRT-LLM", "Apple": "llama.cpp"}
FAMILY_ENGINES = {"Gaudi": "Intel Gaudi software"}
FALLBACK_ENGINE = "vLLM"
DEFAULT_ENGINE_TEXT = ("TensorRT-LLM on NVIDIA GPUs, llama.cpp on Apple silicon, Intel Gaudi software (1.18) on "
                       "Gaudi, vLLM (its V1 engine) on others; 'vLLM' answers for release 0.33.0, the newest published "
                       "(PyPI, 2026-11-24), with its defaults (0.92 of memory; 16,384-token budget on GPUs of 160 GiB "
                       "or more; CUDA graphs to 1,024 sequences on B200/B300), and a named release ('vLLM 0.19.1', "
                       "'vLLM 0.10.2') for that release's defaults and MoE kernels")


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
    # The newest release the engine had published when the row was read (engines.csv `newest_release`, on the family's
    # current profile): a worksheet's 'vLLM 99.1' newer than it is refused (_check_published). Blank: not stated.
    newest_release: str = ""
    # vLLM's sampler runs FlashInfer's top-k / top-p (FlashInfer installed: capacity.profile_run_gib counts its
    # start-up sampler at cal.SAMPLER_PEAK_BYTES_FLASHINFER). Blank (off) in every packaged row, as a PyPI install of
    # the releases read (0.10.2, 0.11.0) carries no FlashInfer; only a measured row's note turns it on
    # (benchmarks/serving_accuracy._stated): engines.csv has no column for it, so no worksheet or private row can.
    flashinfer_sampler: bool = False
    # Host time per MoE layer of a prefill pass run without CUDA graphs (its Python and kernel launches, the MoE
    # layer's host syncs; capacity._prefill_s): blank (0) where not measured. SGLang's is chosen from DeepSeek-R1
    # first tokens at 1-2 in flight (benchmarks/serving_accuracy.py FITTED, scored out of fold).
    eager_moe_layer_us: float | None = None
    # Share of its modelled speed a MoE model's prefill pass reaches (capacity._prefill_s: the pass's time / this), in
    # (0, 1]; blank (1) where not measured. vLLM's is chosen from gpt-oss-120b first tokens (benchmarks/serving_accuracy.py
    # FITTED, scored out of fold): its lone prompts take 1.7-3.3x the modelled pass on H100, H200 and B200 (docs/accuracy.md).
    moe_prefill_share: float | None = None
    # Fixed time a MoE layer of a decode step costs beyond its experts' bytes (us; capacity.moe_layer_us): blank (None)
    # takes calibration.MOE_LAYER_US, one value for every engine; the accuracy harness sets it to re-choose it in folds.
    moe_layer_us: float | None = None
    # vLLM's largest tier (0.28.0 on; arg_utils get_batch_defaults): GPUs of at least this many GiB get
    # huge_gpu_max_num_tokens under `vllm serve` (token_budget). Blank: no such tier.
    huge_gpu_min_gib: float | None = None
    huge_gpu_max_num_tokens: int | None = None
    # GPU families (Gpu.family) whose CUDA graphs go up to family_graph_max_batch sequences instead of graph_max_batch
    # (vLLM 0.28.0 on: 1,024 on compute capability 10.x, _set_cudagraph_sizes; graph_cap). Blank: graph_max_batch on all.
    graph_cap_families: tuple[str, ...] = ()
    family_graph_max_batch: int | None = None
    # vLLM's start-up sampler sorts the vocabulary (PyTorch's top-k / top-p: 0.8-0.16; capacity.profile_run_gib counts
    # cal.SAMPLER_PEAK_BYTES); blank: it works in place (the Triton top-k / top-p of 0.17.0 on, FlashInfer's sampler
    # after it from 0.22.0 on CUDA: cal.SAMPLER_PEAK_BYTES_IN_PLACE). Only vLLM profiles run a start-up sampler.
    sampler_sorts: bool = False

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

    @property
    def memory_rule_text(self) -> str:
        """The share of GPU memory the engine lets weights, reserve and KV cache use, in words (capacity.usable_gib)."""
        whose = "of all memory" if self.memory_rule == "total" else "of what the weights and its reserve leave"
        return f"{self.memory_fraction:g} {whose}"

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

    def layer_us(self, tokens: float, gpu: Gpu) -> float:
        """Fixed time per layer of a step of `tokens` tokens (a decode step's sequences, or a prefill chunk):
        the profile's, with a captured CUDA graph replayed; beyond the engine's capture cap on `gpu` (graph_cap) the
        step runs without graphs and each layer also pays the launches the graph saved (calibration.EAGER_LAYER_US)."""
        cap = self.graph_cap(gpu)
        eager = cap is not None and tokens > cap
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
        a prompt is prefilled whole. `vllm serve` raises its default on large GPUs (large_gpu): 8,192, else 2,048;
        from 0.28.0 16,384 on GPUs of 160 GiB or more (huge_gpu_min_gib)."""
        if self.huge_gpu_min_gib and self.huge_gpu_max_num_tokens and gpu.memory_gib >= self.huge_gpu_min_gib:
            return self.huge_gpu_max_num_tokens
        if self.large_gpu(gpu) and self.large_gpu_max_num_tokens:
            return self.large_gpu_max_num_tokens
        return self.max_num_tokens

    def graph_cap(self, gpu: Gpu) -> int | None:
        """The most sequences a decode step may hold and still replay a captured CUDA graph on `gpu`: the profile's
        graph_max_batch, or family_graph_max_batch on the GPU families it names (vLLM 0.28.0 on: 1,024 on B200,
        GB200, B300, GB300); None: not modelled."""
        if self.family_graph_max_batch and gpu.family in self.graph_cap_families:
            return self.family_graph_max_batch
        return self.graph_max_batch

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


@dataclass(frozen=True)
class ReleaseDefaults:
    """The defaults an older release range of a profile ran with where they differ from the profile's own release
    (udfs/data/engine_releases.csv, each row read in the release's wheel): the memory share, batch and token caps and
    their GPU tiers, the CUDA-graph cap, whether the start-up sampler sorts. `not_held`: why these releases have no
    profile (an estimate is #N/A)."""
    engine: str
    version_range: str
    memory_fraction: float | None
    max_batch: int | None
    large_gpu_max_batch: int | None
    max_num_tokens: int | None
    large_gpu_max_num_tokens: int | None
    huge_gpu_min_gib: float | None
    huge_gpu_max_num_tokens: int | None
    graph_max_batch: int | None
    graph_cap_families: tuple[str, ...]
    family_graph_max_batch: int | None
    sampler_sorts: bool
    not_held: str
    source: str
    as_of: str
    note: str


# The profile fields a release row sets: every one, blank included (a blank tier is no tier at that release).
RELEASE_FIELDS = ("memory_fraction", "max_batch", "large_gpu_max_batch", "max_num_tokens", "large_gpu_max_num_tokens",
                  "huge_gpu_min_gib", "huge_gpu_max_num_tokens", "graph_max_batch", "graph_cap_families",
                  "family_graph_max_batch", "sampler_sorts")


@cache
def release_defaults() -> tuple[ReleaseDefaults, ...]:
    return tuple(_build(ReleaseDefaults, r) for r, _ in catalog.rows_with_origin("engine_releases.csv"))


def _at_release(e: Engine, release: str) -> Engine:
    """The profile as `release` ran it: with that release's defaults where engine_releases.csv holds a row for the
    profile covering it (else the profile's own, which its `release` states); #N/A naming why where the row says the
    release is not held."""
    version = _numbers(release)
    row = next((r for r in release_defaults() if r.engine == e.name and _in_range(version, r.version_range)), None)
    if row is None:
        return replace(e, release=release)
    if row.not_held:
        raise na_error(f"{e.name} {release}: {row.not_held} (udfs/data/engine_releases.csv)")
    return replace(e, release=release, **{f: getattr(row, f) for f in RELEASE_FIELDS})


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
    span = (row.get("version_range") or "").strip()
    span_problem = range_problem(span) if span else None
    found += [("version_range", span_problem)] if span_problem else []
    for column in ("release", "newest_release"):
        text = (row.get(column) or "").strip()
        why = release_problem(text, "" if span_problem or column == "newest_release" else span) if text else None
        found += [(column, why)] if why else []
    newest, release = (row.get(c, "").strip() for c in ("newest_release", "release"))
    if newest and release and not any(c == "release" for c, _ in found) and (release_key(release) or ()) > (
            release_key(newest) or ()):
        found.append(("release", f"{release!r} is newer than newest_release {newest!r}"))
    return found


@cache
def engines() -> tuple[Engine, ...]:
    """Packaged engines overlaid with private rows, which are checked first (file, line, column)."""
    rows = catalog.rows_with_origin("engines.csv")     # checked by catalog.validate, as `catalog check` does
    return tuple(_per_step(_pinned(_build(Engine, r))) for r, _ in rows)


def _pinned(e: Engine) -> Engine:
    """A profile whose row states an older release (a private row's `name,release`: 'vLLM,0.10.1') runs with that
    release's defaults (engine_releases.csv), as naming it does; the packaged row's own release has none there."""
    return _at_release(e, e.release) if e.release else e


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
    return tuple(int(p) for p in re.findall(r"\d+", text.strip(), re.ASCII)[:3])


# A release as engines.csv and a worksheet write it: up to four numbers, then a pre- or post-release tag ("0.10.1.1",
# "0.5.3rc0", "0.4.0.post1", "1.4.0rc1"); the tags order as PEP 440 orders them (dev < a < b < rc < final < post).
_RELEASE = re.compile(r"^v?(?P<numbers>\d+(?:\.\d+){0,3})(?:[.\-]?(?P<tag>post|rc|dev|a|b)(?P<n>\d*))?$",
                      re.IGNORECASE | re.ASCII)       # ASCII digits only: a full-width '０.１０.１' is no release
_STAGE = {"dev": 0, "a": 1, "b": 2, "rc": 3, "": 4, "post": 5}

# "vLLM 0.5.3", "vllm v0.6", "vLLM 0.10.1.1", "SGLang 0.4.1.post1": an engine's name, then a release
_VERSIONED = re.compile(r"^(?P<family>.*?\D)[\s_-]*(?P<release>v?\d+(?:\.\d+){0,3}(?:[.\-]?(?:post|rc|dev|a|b)\d*)?)$",
                        re.IGNORECASE | re.ASCII)


def release_key(text: str) -> tuple[int, ...] | None:
    """A release's sort key (numbers padded to four, then the tag's stage and number); None if `text` is no release."""
    match = _RELEASE.match(text.strip())
    if not match:
        return None
    numbers = [int(p) for p in match.group("numbers").split(".")]
    return (*numbers, *[0] * (4 - len(numbers)), _STAGE[(match.group("tag") or "").lower()], int(match.group("n") or 0))


def release_problem(release: str, version_range: str) -> str | None:
    """Why a stated release (engines.csv `release`, `newest_release`) does not read: not a full release number
    (a series such as '0.10' spans releases whose kernels differ), or outside the row's own version_range."""
    parsed = release_key(release)
    if parsed is None or len(_RELEASE.match(release.strip()).group("numbers").split(".")) < 3:  # type: ignore[union-attr]
        return f"{release!r} is not a release number (three or four numbers, e.g. 0.10.1 or 1.4.0rc1)"
    if version_range and not _in_range(_numbers(release), version_range):
        return f"{release!r} is outside the row's version_range {version_range!r}"
    return None


def range_problem(version_range: str) -> str | None:
    """Why a version_range does not read: it must be "lo-hi" of release numbers, either end open ("0.8-", "-0.7")."""
    lo, _, hi = version_range.partition("-")
    if "-" not in version_range or not (lo or hi) or any(p and release_key(p) is None for p in (lo, hi)):
        return f"{version_range!r} is not a range of releases ('lo-hi', either end open: '0.8-', '-0.7', '1.18-1.18')"
    return None


def _family(e: Engine) -> str:
    return e.family or e.name


def _profiles(family: str) -> list[Engine]:
    return [e for e in engines() if _family(e) == family]


def newest_release(family: str) -> str:
    """The newest release the family had published when its row was read (engines.csv `newest_release`); '' if
    no row states one."""
    stated = [e.newest_release for e in _profiles(family) if e.newest_release]
    return max(stated, key=lambda r: release_key(r) or ()) if stated else ""


def _span(e: Engine) -> str:
    """The releases a profile describes, in words for a message: its range, an open end closed at the newest release."""
    lo, _, hi = e.version_range.partition("-")
    newest = newest_release(_family(e))
    if lo and lo == hi:
        return lo
    if not lo:
        return f"up to {hi or newest or 'any'}"
    return f"{lo} to {hi or newest or 'any newer'}"


def _by_version(text: str) -> Engine | None:
    """The profile an engine named with a release runs (`text` is "<name> <release>"), with that release set
    (it picks the MoE kernels: moe_kernel); None if `text` starts with no engine's name. A family's own name
    ("vLLM 0.5") picks the profile whose version_range holds the release; a profile's name ("vLLM V0 0.6.3")
    keeps that profile and the release must be in its range. #VALUE! for a release outside the named
    profile's range, newer than the newest published release, or given to an engine that states no releases."""
    match = _VERSIONED.match(text.strip())
    named = _named(match.group("family").strip()) if match else None
    if match is None or named is None:
        _refuse_words(text)
        return None
    release, typed = match.group("release").lstrip("vV"), match.group("family").strip(" _-")
    base, by_family = named
    family = _family(base)
    if re.search(r"\s-+$", text.strip()[:match.start("release")]):     # 'vLLM -1': a sign, not a separator
        raise value_error(f"{text.strip()!r}: '-{release}' is not a release of {typed} (a release has no sign)")
    if by_family:
        found = _profile_of_release(family, release, typed)
    elif not base.version_range:
        raise value_error(f"{base.name!r} names no releases ({base.version or 'one configuration'}): name it without "
                          f"a release, or name the family with one ('{family} {release}')")
    elif not base.covers(_numbers(release)):
        raise value_error(f"{text.strip()!r}: the {base.name} profile ({base.version}) describes releases "
                          f"{_span(base)}; name the family for another release ('{family} {release}')")
    else:
        found = base
    _check_published(found, release)
    why = release_problem(release, "")          # one rule with a catalog's `release` cell: a series is no release
    if why:
        raise value_error(f"{text.strip()!r}: {why}; {found.name} describes {_span(found)}, each release of a series "
                          f"may differ (its defaults, its MoE kernels)")
    return _at_release(found, release)


def _named(text: str) -> tuple[Engine, bool] | None:
    """(the profile `text` names, whether it names the whole family) for the part of an engine name before its
    release; None if it names no engine. A family's own name, or a name of a family's only profile, is the family."""
    for e in engines():
        if key(_family(e)) == key(text):
            return e, True
    try:
        base = _index().resolve(text)
    except FlopsheetError:
        return None
    return base, len(_profiles(_family(base))) == 1


def _profile_of_release(family: str, release: str, typed: str = "") -> Engine:
    """The family's profile for a release: the one whose range holds it (of overlapping ones, the newest: a new
    engine generation becomes the default); a family with one unranged profile: that one, if it states releases.
    `typed`: the name as written before the release (an alias, 'ollama'), which a refusal names."""
    profiles = _profiles(family)
    ranged = [e for e in profiles if e.version_range]
    if not ranged:
        if not newest_release(family):
            what = profiles[0].version or "one profile for every version"
            runs = f"{typed} runs {family}'s profile, which" if typed and key(typed) != key(family) else \
                f"{family}'s profile"
            raise value_error(f"{typed or family} {release}: {runs} states no releases ({what}); name it without "
                              f"a release ('{typed or family}')")
        return profiles[0]
    version = _numbers(release)
    covering = [e for e in ranged if e.covers(version)]
    if covering:
        return max(covering, key=lambda e: release_key(e.version_range.partition("-")[0] or "0") or ())
    known = "; ".join(f"{e.name}: {e.version}, releases {_span(e)}" for e in ranged)
    newest = newest_release(family)
    bounds = [tuple(_numbers(p) for p in e.version_range.split("-", 1)) for e in ranged]
    if newest and (release_key(release) or ()) > (release_key(newest) or ()):
        raise value_error(f"{family} {release} is newer than {family}'s newest release {newest} ({known})")
    above = not newest and all(hi and version[:len(hi)] > hi for _, hi in bounds)
    if above or all(lo and version < lo for lo, _ in bounds):
        raise value_error(f"{family} {release} is outside the releases {family}'s profiles describe ({known})")
    raise na_error(f"no {family} profile describes version {release}, a published release ({known})")


def _check_published(e: Engine, release: str) -> None:
    """#VALUE! for a release newer than the family's newest published one (engines.csv `newest_release`)."""
    family, newest = _family(e), newest_release(_family(e))
    if newest and (release_key(release) or ()) > (release_key(newest) or ()):
        raise value_error(f"{family} {release} is newer than {family}'s newest release {newest} "
                          f"({e.name} describes {_span(e)})")


def _refuse_words(text: str) -> None:
    """#VALUE! for an engine's name followed by words that are not a release ('vLLM latest', 'llama.cpp b4000'):
    the engine is known, what follows it is not a release it can answer for."""
    lowered = text.strip().lower()
    names = sorted(((n, e) for e in engines() for n in (e.name, *e.aliases) if n), key=lambda p: -len(p[0]))
    for name, e in names:
        rest = lowered[len(name):]
        if lowered.startswith(name.lower()) and rest[:1] in (" ", "_", "-") and rest.strip(" _-"):
            states = newest_release(_family(e)) or any(p.version_range for p in _profiles(_family(e)))
            what = (f"a release number ({e.name} describes {_span(e)})" if states else
                    f"no release: {_family(e)}'s profile states none")
            raise value_error(f"{text.strip()!r}: {text.strip()[len(name):].strip(' _-')!r} is not a release of "
                              f"{_family(e)}; name {what}")


def default_engine_name(gpu: Gpu | None = None) -> str:
    family = next((e for f, e in FAMILY_ENGINES.items() if gpu and (gpu.family or gpu.name).startswith(f)), None)
    return family or DEFAULT_ENGINES.get(gpu.vendor if gpu else "", FALLBACK_ENGINE)


def engine(name: str | Engine | None = None, gpu: Gpu | None = None) -> Engine:
    """An engine profile by any of its names; blank means the default for the GPU."""
    if isinstance(name, Engine):
        return name
    text = (name or "").strip() if isinstance(name, str) or name is None else str(name)
    if any(c.isdigit() and not c.isascii() for c in text):     # the name index drops them: 'vLLM １' would be 'vLLM'
        raise value_error(f"{text!r}: a release is written in ASCII digits (0-9)")
    try:
        return _index().resolve(text or default_engine_name(gpu))
    except FlopsheetError:
        found = _by_version(text)          # "vLLM 0.5": the profile of that version
        if found is None:
            raise
        return found


def engine_names() -> list[str]:
    return [e.name for e in engines()]
