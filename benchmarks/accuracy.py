"""Accuracy report: the architecture-aware estimates against measured reality.

    python benchmarks/accuracy.py [--measured DIR] [--worst N]     (or python -m benchmarks.accuracy)

A developer tool, not part of the installed package. Reads the measured rows in
`benchmarks/measured/*.csv` (each with its public source; see benchmarks/measured/README.md),
or the directory in $FLOPSHEET_MEASURED or --measured, and compares every usable row with the
engine's estimate. For each metric it prints the rows compared, the median absolute
percentage error and the worst cases; rows that cannot be compared are listed with the
reason. docs/accuracy-report.txt is its output. Standard library only.

Every metric has an in-sample column (the shipped constants) and an out-of-sample one: a
constant chosen by looking at measured rows is re-chosen, by its stated rule, without the row
being scored (leave-one-out). Inference rows are scored by benchmarks/serving_accuracy.py.

Metrics
  decode_b1       decode tokens/s of one sequence (batch 1), with the row's engine
  fixed_batch     output tokens/s of a static batch (prefill + decode), total over GPUs
  max_throughput  output tokens/s at the largest batch the engine runs (SERVING_THROUGHPUT)
  prefill         time to first token (ms) and prompt processing (tokens/s)
  training_hours  whole-run GPU-hours, TRAINING_GPU_HOURS at the table's whole-run MFU (scope run)
  mfu             steady-state training throughput: the table's steady MFU against reported MFU /
                  achieved TFLOP/s (udfs/data/training_efficiency.csv, chosen from these rows)
  fit             fits / out of memory, and stated memory bounds (right or wrong)
  memory          measured or stated memory in GB where a like-for-like estimate exists
  lora_memory     LoRA memory per GPU (LORA_MEMORY_GB) as the Hugging Face stack runs it (its loss at 16 B
                  per logit), as the row measured it (allocated, reserved, nvidia-smi or the model states after
                  the optimizer step); qlora_memory the same for QLoRA; full_memory for full training
  qlora_context   longest QLoRA training context that fits (Hugging Face + FlashAttention-2 baseline)
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:      # serving_accuracy imports this module's row matching: imported where used
    from benchmarks.serving_accuracy import Case

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))   # run as a script from a checkout

from benchmarks import folds  # noqa: E402
from udfs.catalogs import catalog, engines, resolve  # noqa: E402
from udfs.physics import arch, calibration, capacity, defaults, evidence, training, training_memory  # noqa: E402
from udfs.physics import training_efficiency as teff  # noqa: E402
from udfs.errors import FlopsheetError  # noqa: E402
from udfs.units import GIB  # noqa: E402

METRICS = {
    "decode_b1": "Batch-1 decode tokens/s, with the row's engine",
    "fixed_batch": "Fixed-batch throughput (output tokens/s, total)",
    "max_throughput": "Max-throughput output tokens/s (SERVING_THROUGHPUT)",
    "burst": "Burst of N requests sent at once: the run's mean output tokens/s (prefill queue, ramp and tail)",
    "prefill": "Time to first token / prefill",
    "training_hours": "Whole-run training GPU-hours (steady-state MFU x TRAINING_GOODPUT, scope run)",
    "mfu": "Training throughput: steady-state MFU (step-time model) vs reported, 6·N basis",
    "scaling": "Training MFU at the row's GPU count (steady-state MFU x gradient-sync scale-out)",
    "cluster_hours": "Whole-run GPU-hours on the row's GPU count (TRAINING_GPU_HOURS with n_gpus)",
    "fit": "Memory fit / out of memory (right or wrong)",
    "memory": "Memory in GB (like-for-like rows)",
    "kv_capacity": "KV cache memory per GPU an engine gives (GiB, startup logs: vLLM, SGLang)",
    "lora_memory": "LoRA memory per GPU (GiB, like-for-like rows)",
    "qlora_memory": "QLoRA memory per GPU (GiB, like-for-like rows)",
    "full_memory": "Full-training memory per GPU (GiB, like-for-like rows: peak or model states)",
    "qlora_context": "QLoRA longest context that fits (HF + FlashAttention-2 baseline)",
    "lora_time": "LoRA / QLoRA job time on several GPUs (method_flops at the steady MFU / adapter_sync)",
}
BOOLEAN_METRICS = ("fit",)

# Names in the measurement files that the catalog spells differently. "LLaMA 70B" in the
# TensorRT-LLM v0.6.1 tables is Llama 2 70B (its methodology section names Llama2-70b).
MODEL_ALIASES = {"LLaMA 70B": "Llama 2 70B"}
QLORA_FIT_TOKENS = 512            # shortest practical training sequence for fit checks
EFFICIENCY_PATH = HERE.parent / "udfs" / "data" / teff.FILE   # the training-efficiency table the rule writes


@dataclass(frozen=True)
class Config:
    """What a scored row measured, for its regime (udfs/physics/evidence.py)."""
    model: str
    params: float
    moe: bool
    gpu: catalog.Gpu | None
    precision: str = ""
    n_gpus: int = 1
    engine: str = ""
    copy_gpus: int | None = None    # GPUs in one model copy where a system result splits its GPUs into copies

    @property
    def layout_gpus(self) -> int:
        """The GPUs whose layout the row measures (one GPU or parallel): one copy's."""
        return self.copy_gpus or self.n_gpus


@dataclass
class Comparison:
    metric: str
    row: str                 # file:line and a short description
    measured: float
    estimate: float
    unit: str
    note: str = ""
    estimate_out: float | None = None   # with row-chosen constants re-chosen without this row
    config: Config | None = None        # None: the row has no regime (a right/wrong check)
    worksheet: tuple[float, float] | None = None    # (in, out of sample) with the worksheet's terms only, where
    # the harness applies more (serving_accuracy.worksheet_terms: a closed loop's first wave, a row's poll interval)

    @property
    def error(self) -> float:
        """Signed relative error of the estimate, (estimate - measured) / measured; for a
        right/wrong metric, 0 when right and 1 when wrong."""
        if self.metric in BOOLEAN_METRICS:
            return 0.0 if bool(self.estimate) == bool(self.measured) else 1.0
        return (self.estimate - self.measured) / self.measured

    @property
    def error_out(self) -> float:
        """The same, out of sample (equal to `error` when no constant was chosen from rows)."""
        if self.estimate_out is None or self.metric in BOOLEAN_METRICS:
            return self.error
        return (self.estimate_out - self.measured) / self.measured


@dataclass
class Skip:
    row: str
    reason: str


@dataclass
class Report:
    comparisons: list[Comparison]
    skipped: list[Skip]
    pools: list[tuple[str, int]] = field(default_factory=list)   # constants chosen from rows: rows each
    baselines: list[str] = field(default_factory=list)          # a replaced model, scored on the same rows

    def of(self, metric: str) -> list[Comparison]:
        return [c for c in self.comparisons if c.metric == metric]

    def median_ape(self, metric: str, out_of_sample: bool = False) -> float | None:
        rows = self.of(metric)
        if not rows:
            return None
        return statistics.median(abs(c.error_out if out_of_sample else c.error) for c in rows)

    def correct(self, metric: str) -> tuple[int, int]:
        rows = self.of(metric)
        return sum(1 for c in rows if c.error == 0), len(rows)


# ---------------------------------------------------------------------------- locating

def default_measured_dir() -> Path:
    return HERE / "measured"


def measured_dir(override: str | None = None) -> Path:
    if override:
        return Path(override)
    if os.environ.get("FLOPSHEET_MEASURED"):
        return Path(os.environ["FLOPSHEET_MEASURED"])
    return default_measured_dir()


def read_rows(directory: Path, name: str) -> list[tuple[str, dict[str, str]]]:
    path = directory / name
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return [(f"{name}:{i}", row) for i, row in enumerate(csv.DictReader(handle), start=2)]


# ---------------------------------------------------------------------------- name mapping

def find_gpu(name: str) -> catalog.Gpu | None:
    """Catalog GPU for a measured name: as written, then without a parenthesised remark
    ("H100 SXM 80GB (DGX H100)", "A100-80GB (400W)"), then without a form-factor word the
    catalog omits ("B200 SXM 180GB")."""
    text = name.strip()
    candidates = [text, re.sub(r"\s*\(.*?\)", "", text).strip()]
    candidates.append(re.sub(r"\bSXM\d?\s+", "", candidates[-1]))
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return catalog.gpu(candidate)
        except FlopsheetError:
            continue
    return None


def find_model(name: str) -> catalog.Model | None:
    name = MODEL_ALIASES.get(name.strip(), name.strip())
    try:
        return catalog.model(name)
    except FlopsheetError:
        return None


def find_precision(text: str) -> str | None:
    """Catalog precision for a measured label: "Q4_K_M (GGUF)" -> q4_k_m, "F16" -> fp16,
    "FP8" -> fp8, "int4" -> int4, "INT8 (bitsandbytes)" -> int8, "BF16/FP16" -> bf16."""
    label = re.sub(r"\s*\(.*?\)", "", text or "").strip().lower()
    label = label.split("/")[0].strip()
    if not label:
        return None
    for candidate in (label, label.replace(" ", "_")):
        try:
            return catalog.precision_row(candidate).name
        except FlopsheetError:
            continue
    return None


def number(text: str) -> float | None:
    match = re.search(r"[-+]?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?", text or "")
    if not match:
        return None
    value = float(match.group(0).replace(",", ""))
    suffix = (text or "")[match.end():match.end() + 1].upper()
    return value * {"T": 1e12, "B": 1e9, "M": 1e6, "K": 1e3}.get(suffix, 1)


def label(ref: str, row: dict[str, str], *keys: str) -> str:
    return f"{ref} " + " | ".join(str(row.get(k, "")).strip() for k in keys if str(row.get(k, "")).strip())


# ---------------------------------------------------------------------------- inference

def read_inference(directory: Path) -> list[Case | str] | None:
    """inference_measured.csv as benchmarks/serving_accuracy.py parses it (parse_all: each row a case, or why it cannot
    be scored), read once a run; None where the directory has no such file."""
    from benchmarks import serving_accuracy as serving_acc
    if not (directory / "inference_measured.csv").exists():
        return None
    return serving_acc.parse_all(directory)


def compare_inference(directory: Path, inference_read: list[Case | str] | None = None
                      ) -> tuple[list[Comparison], list[Skip]]:
    """Every inference row, scored by the serving model (benchmarks/serving_accuracy.py; `inference_read`: the file
    already read, read_inference)."""
    from benchmarks import serving_accuracy as serving_acc
    parsed = read_inference(directory) if inference_read is None else inference_read
    if parsed is None:
        return [], []
    results, fit_rows, skipped = serving_acc.evaluate(directory, parsed)
    out = [Comparison(r.case.metric, r.case.label + f" | {r.case.prompt:g}/{r.case.output:g}", r.case.measured,
                      r.estimate, r.case.unit, r.case.note, r.estimate_out, _case_config(r.case),
                      None if r.worksheet is None or r.worksheet_out is None else (r.worksheet, r.worksheet_out))
           for r in results]
    out += [Comparison("fit", case.label, ran, fits, "fits", f"{case.engine.name}'s memory rules",
                       config=_case_config(case)) for case, ran, fits in fit_rows]
    return out, [Skip(row, reason.strip()) for row, _, reason in (text.partition("\n") for text in skipped)]


def _case_config(case) -> Config:
    from benchmarks import serving_accuracy as serving_acc
    return Config(case.model.name, case.model.params, case.model.is_moe, case.gpu, case.precision, case.n_gpus,
                  case.engine.name, serving_acc.copy_gpus(case))


# ---------------------------------------------------------------------------- training

# How a source counts the FLOPs of a token behind its MFU or TFLOP/s (the `flops_counted` column), so each row's
# figure is put on the one basis the estimates use, 6·N (N: the row's parameters): a per-token count from the
# row's layers L, hidden size h, vocabulary V and sequence s. Blank: not stated, taken as 6·N.
FLOPS_COUNTED = {
    "6N": lambda n, L, h, V, s: 6 * n,
    # llm-foundry's MFU (scripts/train/benchmarking/README.md): 6·N plus attention counted unmasked, 12·L·h·s.
    "6N+attention": lambda n, L, h, V, s: 6 * n + 12 * L * h * s,
    # Megatron-Core r0.8 (megatron/training/training.py num_floating_point_operations, GPT: 4h MLP, no GQA):
    # 72·L·h² + 12·L·h·s + 6·V·h (the output head; no input embedding).
    "megatron": lambda n, L, h, V, s: 72 * L * h * h + 12 * L * h * s + 6 * V * h,
    # Narayanan et al. 2021 (arXiv:2104.04473, eq. 3) count the recomputed forward pass too:
    # 96·L·h²·(1 + s/6h + V/16Lh) a token.
    "megatron-2021": lambda n, L, h, V, s: 96 * L * h * h + 16 * L * h * s + 6 * V * h,
}


@dataclass(frozen=True)
class TrainingRow:
    """A measured training row as the efficiency table reads it: steady-state MFU (reported, or
    achieved TFLOP/s over the dense peak of its precision) and/or whole-run GPU-hours."""
    ref: str
    what: str
    source: str
    gpu: catalog.Gpu
    model: str
    params: float
    moe: bool
    precision: str
    n_gpus: int
    tokens: float | None
    hours: float | None          # whole-run GPU-hours (a model card's, or GPUs x wall-clock days)
    mfu: float | None            # steady-state MFU, 6·N basis
    note: str = ""               # the row's note (its layout and global batch, where stated)
    count_stated: bool = False   # the row gives its GPU count
    shape: teff.Shape | None = None    # the step model's reading of the run (steady rows)
    shape_note: str = ""          # what the row did not state and was taken

    def point(self) -> teff.Point:
        """The row's steady share as the rule reads it (share_from: the share that reproduces its MFU)."""
        assert self.mfu is not None and self.shape is not None
        value = teff.share_from(self.shape, self.gpu, self.precision, self.mfu)
        return teff.Point(teff.generation_of(self.gpu), teff.table_precision(self.precision), teff.ANY_SIZE,
                          "MoE" if self.moe else "dense", "steady", value, f"{self.ref} {self.model}")

    def implied_mfu(self) -> float | None:
        """The MFU whole-run GPU-hours imply: 6·N·D / (hours x dense peak of the precision)."""
        if not (self.hours and self.tokens):
            return None
        return training.training_flops(self.params, self.tokens) / (self.hours * 3600 * self.peak() * 1e12)

    def peak(self) -> float:
        return self.gpu.tensor_peak(self.precision, "the measured row", weight_only=False).tflops

    def scopes(self) -> list[str]:
        return [s for s, v in (("run", self.implied_mfu()), ("steady", self.mfu)) if v]


def _int(text: str | None) -> int | None:
    value = number(text or "")
    return int(value) if value else None


EXPERT_PARALLEL = re.compile(r"\bEP(\d+)")     # a MoE row's expert-parallel group, as its note states it


def row_shape(row: dict[str, str], model: catalog.Model | None, params: float) -> tuple[teff.Shape, str]:
    """The shape a steady row ran at: its stated layers, hidden size and sequence, else the catalog model's layout,
    else the layout a bare count borrows (resolve.lender), as the worksheet functions do; a sequence not stated is
    the default SEQ_LEN. The note says what was taken."""
    layout = model if model is not None and model.layers else resolve.model(params)
    layers, hidden = _int(row.get("layers")), _int(row.get("hidden"))
    seq = _int(row.get("seq_len"))
    notes = [] if (layers and hidden) or (model is not None and model.layers) else \
        [f"layout not stated: {layout.layout_from or layout.name}'s"]
    if not seq:
        notes.append(f"sequence not stated: {defaults.SEQ_LEN}")
    width = hidden if hidden else layout.heads * layout.head_size       # a stated hidden size: multi-head attention
    routed = model if model is not None and model.is_moe else None     # a MoE model's routing (moe_seconds)
    group = EXPERT_PARALLEL.search(row.get("note") or "") if routed else None
    if routed and not group:
        notes.append("expert parallelism not stated: a server's GPUs")
    return teff.Shape(params, layers or layout.layers, hidden or layout.hidden, width, seq or defaults.SEQ_LEN,
                      routed, int(group[1]) if group else 0, _int(row.get("gpu_count")) or 0), "; ".join(notes)


def six_n_mfu(reported: float, counted: str, row: dict[str, str], shape: teff.Shape, params: float) -> float:
    """The row's MFU on the 6·N basis: its reported figure x 6·N / the FLOPs its source counts a token."""
    count = FLOPS_COUNTED.get(counted or "6N")
    if count is None:
        raise ValueError(f"flops_counted {counted!r} is none of {sorted(FLOPS_COUNTED)}")
    return reported * 6 * params / count(params, shape.layers, shape.hidden, _int(row.get("vocab")) or 0, shape.seq_len)


def training_row(ref: str, row: dict[str, str]) -> TrainingRow | Skip:
    what = label(ref, row, "model", "tokens", "gpu_type", "gpu_count")
    gpu = find_gpu(row["gpu_type"])
    if gpu is None:
        return Skip(what, f"accelerator '{row['gpu_type']}' is not in the catalog")
    if row["model"].startswith("matmul"):
        return Skip(what, "matmul microbenchmark (achievable peak, not a model's MFU); it bounds the compute "
                          "fractions in calibration.py")
    model = find_model(row["model"])
    params = model.active if model else (number(row["params_b"]) or 0) * 1e9
    precision = (row.get("precision") or "").strip() or "bf16"
    count = number(row["gpu_count"])
    hours = number(row["gpu_hours"]) if re.fullmatch(r"[\d,.]+", row["gpu_hours"].strip()) else None
    days = number(row["wall_time"]) if "day" in row["wall_time"] else None
    if hours is None and days is not None and count and "estimat" not in row["metric"]:
        hours = count * days * 24          # GPUs held x wall-clock days (an estimated time is not a run)
    peak = gpu.tensor_tflops(precision)
    mfu = number(row["mfu_pct"]) / 100 if row["mfu_pct"].strip() else None
    if mfu is None and row["achieved_tflops_per_gpu"].strip() and peak:
        mfu = number(row["achieved_tflops_per_gpu"]) / peak
    tokens = number(row["tokens"])
    shape, shape_note = (None, "")
    if mfu and params:
        shape, shape_note = row_shape(row, model, params)
        counted = (row.get("flops_counted") or "").strip()
        mfu = six_n_mfu(mfu, counted, row, shape, params)
        shape_note = "; ".join(n for n in (shape_note, "" if counted else "FLOP count not stated: 6·N") if n)
    found = TrainingRow(ref, what, row["source"], gpu, model.name if model else row["model"], params,
                        bool(model.is_moe) if model else (row.get("architecture") or "").strip() == "MoE",
                        precision, int(count or 1), tokens, hours, mfu, row.get("note") or "", bool(count), shape,
                        shape_note)
    if not params or not found.scopes():
        return Skip(what, "no GPU-hours with a token count, wall time or MFU" +
                    (" (GPU-hours without a token count)" if hours and not tokens else ""))
    return found


def training_rows(rows) -> tuple[list[TrainingRow], list[Skip]]:
    found = [training_row(ref, row) for ref, row in rows]
    return [r for r in found if isinstance(r, TrainingRow)], [r for r in found if isinstance(r, Skip)]


def efficiency_cells(rows: list[TrainingRow], as_of: str = "") -> list[teff.Cell]:
    """The training-efficiency table by its rule (training_efficiency.cells_from) from the rows: the steady shares.
    A whole-run row chooses nothing (a whole run is the steady figure x TRAINING_GOODPUT) and only scores it; a
    MoE row whose routing the step model adds (its shape names the model) chooses no steady share: the routing is
    physics on the dense share, and the row only scores it."""
    points = [r.point() for r in rows if r.mfu and not routed(r)]
    return teff.cells_from(points, as_of)


def routed(r: TrainingRow) -> bool:
    """A MoE row the step model adds the routing of (moe_seconds): its shape carries the catalog model."""
    return r.moe and r.shape is not None and r.shape.routed_model is not None


def efficiency_out_of_fold(rows: list[TrainingRow], one_each: bool = False):
    """For a source, the table chosen without its fold: the folds are dealt by source (benchmarks/folds.py
    over the sources), so a row is never scored on a table any row of its own source helped choose; one_each:
    without that source alone (leave one source out, no deal)."""
    return folds.out_of_fold(rows, lambda r: r.source, efficiency_cells, one_each=one_each)


def compare_training(found: list[TrainingRow], one_each: bool = False) -> list[Comparison]:
    out = []
    held_out = efficiency_out_of_fold(found, one_each)
    for r in found:
        config = Config(r.model, r.params, r.moe, r.gpu, r.precision, r.n_gpus)
        shape = r.shape or teff.shape_of(resolve.model(row_model(r)))
        key = (r.gpu, shape, r.precision, r.moe)
        shipped, without = (teff.lookup(*key, "run"), teff.lookup(*key, "run", held_out(r.source)))
        if "run" in r.scopes():
            est, out_of = (training.training_gpu_hours(r.params, r.tokens or 0, r.gpu, e.mfu, r.precision)
                           for e in (shipped, without))
            note = f"MFU {r.implied_mfu():.3f} implied; table: {shipped.basis}"
            out.append(Comparison("training_hours", r.what, r.hours or 0, est, "GPU-hours", note, out_of, config))
            if r.count_stated and r.n_gpus > 1:
                out.append(cluster_hours_comparison(r, key, held_out(r.source), config))
        if r.mfu:
            steady = teff.lookup(*key, "steady")
            without_row = teff.lookup(*key, "steady", held_out(r.source)).mfu
            note = steady.basis + (f"; {r.shape_note}" if r.shape_note else "")
            out.append(Comparison("mfu", r.what, r.mfu, steady.mfu, f"6·N MFU of dense {r.precision} peak", note,
                                  without_row, config))
            if r.n_gpus > 1 and r.count_stated:
                out.append(scaling_comparison(r, steady.mfu, without_row, config))
    return out


LAYOUT = re.compile(r"\bTP(\d+)(?: CP(\d+))? PP(\d+) DP(\d+)")
BATCH = re.compile(r"global batch ([\d,]+) tokens")
BATCH_SEQUENCES = re.compile(r"\bseq (\d+), global batch (\d+) sequences")


def stated_batch(note: str) -> float | None:
    """The global batch in tokens a row's note states ("global batch N tokens", or "seq S, global batch B
    sequences")."""
    if found := BATCH.search(note):
        return float(found[1].replace(",", ""))
    if found := BATCH_SEQUENCES.search(note):
        return float(found[1]) * float(found[2])
    return None


def row_model(r: TrainingRow) -> catalog.Model:
    """The catalog model a row names (a MoE model's gradients are all its parameters), else a dense stand-in
    of its size."""
    return find_model(r.model) or catalog.size_only_model(r.params)


def scaling_comparison(r: TrainingRow, cell: float, cell_out: float, config: Config) -> Comparison:
    """The MFU at the row's GPU count as TRAINING_MFU(..., n_gpus) models it: the steady-state cell x the
    share of the step left by the exposed gradient synchronisation (training.scale_out_efficiency) on the
    row's stated layout and global batch (a context-parallel group reduces gradients as data parallel does),
    else the layout and batch rules' (a MoE row's expert parallelism is not modelled: the dense layout rule on
    all its parameters); out of sample, the cell chosen without the row's source."""
    model = row_model(r)
    layout, batch = LAYOUT.search(r.note), stated_batch(r.note)
    plan = training.Layout(int(layout[1]), int(layout[3]), int(layout[4]) * int(layout[2] or 1)) if layout else \
        training.layout(model, r.gpu, r.n_gpus)
    tokens = batch or training.global_batch_tokens(r.n_gpus)
    eff = [training.scale_out_efficiency(model, r.gpu, r.n_gpus, r.precision, m, batch_tokens=tokens, plan=plan)
           for m in (cell, cell_out)]
    note = (f"TP{plan.tp} PP{plan.pp} DP{plan.dp} {'as stated' if layout else 'by the layout rule'}, "
            f"{tokens:,.0f} tokens a step {'as stated' if batch else 'by the batch rule'}: scale-out {eff[0]:.3f}")
    return Comparison("scaling", r.what, r.mfu or 0, cell * eff[0], f"6·N MFU of dense {r.precision} peak", note,
                      cell_out * eff[1], config)


def cluster_hours_comparison(r: TrainingRow, key, without, config: Config) -> Comparison:
    """A whole run's GPU-hours on the GPUs it had, as TRAINING_GPU_HOURS(..., n_gpus) sizes them
    (training.on_cluster: the steady-state cell x TRAINING_GOODPUT, over the scale-out at that count on the
    layout and batch rules); out of sample, the steady cell chosen without the row's source."""
    model = row_model(r)
    est, scales = [], []
    for cells in (None, without):
        steady = teff.lookup(*key, "steady", cells).mfu
        scales.append(training.scale_out_efficiency(model, r.gpu, r.n_gpus, r.precision, steady))
        est.append(training.training_gpu_hours(r.params, r.tokens or 0, r.gpu, steady * calibration.TRAINING_GOODPUT,
                                               r.precision) / scales[-1])
    note = (f"{r.n_gpus:,} GPUs: steady-state MFU x TRAINING_GOODPUT {calibration.TRAINING_GOODPUT:g}, scale-out "
            f"{scales[0]:.3f}")
    return Comparison("cluster_hours", r.what, r.hours or 0, est[0], "GPU-hours", note, est[1], config)


def _size_class_figure(cells: dict[tuple, float], r: TrainingRow) -> float | None:
    """The replaced rule's figure for a row: its cell, else its generation's median over sizes; Blackwell, CDNA3 and
    Gaudi then Hopper's, Ada/Volta/Turing Ampere's; MoE without a cell dense x MOE_TRAINING_EFFICIENCY; fp8
    without one bf16 x FP8_FALLBACK."""
    gen, prec, size, moe = teff.generation_of(r.gpu), teff.table_precision(r.precision), teff.size_class(r.params), r.moe

    def figure(gen: str, prec: str, moe: bool) -> float | None:
        for g in (gen, *teff.NEAREST.get(gen, ())):
            same = [v for (cg, cp, cs, cm), v in cells.items() if (cg, cp, cm) == (g, prec, moe)]
            if same:
                return cells.get((g, prec, size, moe), statistics.median(same))
        return None
    found = figure(gen, prec, moe)
    if found is None and moe:
        dense = figure(gen, prec, False)
        found = dense * calibration.MOE_TRAINING_EFFICIENCY if dense else None
    if found is None and prec == "fp8":
        bf16 = figure(gen, "bf16", moe)
        found = bf16 * teff.FP8_FALLBACK if bf16 else None
    return found


def size_class_baseline(rows: list[TrainingRow], scored: list[Comparison]) -> list[str]:
    """The steady-state rule the step-time model replaced (each cell the median 6·N MFU of its rows, by generation
    x precision x size class x dense/MoE), scored on the same rows and source folds, alone (mfu) and times the same
    scale-out as each scaling row (scaling), so the two models compare."""
    steady = [r for r in rows if r.mfu]

    def choose(pool: list[TrainingRow]) -> dict[tuple, float]:
        groups: dict[tuple, list[float]] = {}
        for r in pool:
            key = (teff.generation_of(r.gpu), teff.table_precision(r.precision), teff.size_class(r.params), r.moe)
            groups.setdefault(key, []).append(r.mfu or 0)
        return {k: statistics.median(v) for k, v in groups.items()}
    full, held = choose(steady), folds.out_of_fold(steady, lambda r: r.source, choose)
    by_row: dict[str, dict[str, Comparison]] = {}
    for c in scored:
        by_row.setdefault(c.row, {})[c.metric] = c
    errors: dict[str, list[tuple[bool, float, float]]] = {"mfu": [], "scaling": []}
    for r in steady:
        cells = [_size_class_figure(t, r) or 0 for t in (full, held(r.source))]
        mine = by_row.get(r.what, {})
        for metric in errors:
            if metric not in mine or "mfu" not in mine:
                continue
            c, m = mine[metric], mine["mfu"]
            scale = (c.estimate / m.estimate, (c.estimate_out or c.estimate) / (m.estimate_out or m.estimate))
            errors[metric].append((r.moe, abs(cells[0] * scale[0] / (r.mfu or 1) - 1),
                                   abs(cells[1] * scale[1] / (r.mfu or 1) - 1)))
    out = []
    for metric, found in errors.items():
        if not found:
            continue
        dense = [e for moe, _, e in found if not moe]
        out.append(f"{metric} baseline: the size-class cells the step-time model replaced (median 6·N MFU by generation "
                   f"x precision x size class x dense/MoE{'' if metric == 'mfu' else ', x the same scale-out'}), on the "
                   f"same {len(found)} rows and source folds: in sample {_pct(statistics.median(e for _, e, _ in found))}, "
                   f"out of sample {_pct(statistics.median(e for _, _, e in found))} (dense "
                   f"{_pct(statistics.median(dense)) if dense else 'none'})")
    return out


def efficiency_text(found: list[TrainingRow], path: Path = EFFICIENCY_PATH) -> str:
    """udfs/data/training_efficiency.csv by the rule from the measured training rows: dated as shipped when
    nothing else changed, else today."""
    kept = teff.parse(path.read_text(encoding="utf-8"))[0].as_of if path.exists() and path.stat().st_size else None
    if kept:
        text = teff.render(efficiency_cells(found, kept))
        if path.read_text(encoding="utf-8") == text:
            return text
    return teff.render(efficiency_cells(found, datetime.date.today().isoformat()))


# ---------------------------------------------------------------------------- memory

def hf_qlora_gib(model, rank: int, seq_len: float, micro_batch: int = 1) -> float:
    """QLoRA memory on the device as the Hugging Face baseline (transformers + bitsandbytes + PEFT) runs
    it: QLORA_MEMORY_GB (checkpointed) with transformers' loss (16 B per logit, LOSS_BYTES "upcast") and
    PEFT's `prepare_model_for_kbit_training` (every non-quantised parameter in FP32: KBIT_PREPARED_BYTES)."""
    return training_memory.qlora_memory_gib(model, rank, seq_len, micro_batch, True, loss="upcast",
                                            kbit_prepared=True)["total"]


@dataclass(frozen=True)
class AdapterRow:
    """A measured LoRA / QLoRA memory row with its configuration (memory_measured.csv's columns)."""
    ref: str
    what: str
    model: catalog.Model
    row: dict[str, str]
    measured: float
    kind: str              # allocated, reserved, nvidia-smi or states (MEASURED_KINDS)
    allocated: float       # LORA_MEMORY_GB's allocated GiB for the row's configuration
    how: str

    def estimate(self, reserve: float) -> float:
        """What the row's kind of measurement sees of the allocated estimate, with `reserve` the caching
        allocator's share (training_memory.device_memory with that share)."""
        if self.kind in ("allocated", "states"):
            return self.allocated
        return self.allocated * (1 + reserve) + (calibration.CUDA_CONTEXT_GIB if self.kind == "nvidia-smi" else 0)

    def implied_reserve(self) -> float | None:
        """The allocator's share this row implies (None for an allocated or states row)."""
        if self.kind in ("allocated", "states"):
            return None
        context = calibration.CUDA_CONTEXT_GIB if self.kind == "nvidia-smi" else 0
        return (self.measured - context) / self.allocated - 1


# What a row measured: the peak of torch.cuda.max_memory_allocated, of max_memory_reserved, nvidia-smi's
# reading, or the model states (memory_allocated right after an optimizer step: weights, gradients and
# optimizer states, the activations freed).
MEASURED_KINDS = ("allocated", "reserved", "nvidia-smi", "states")
STATE_PARTS = ("weights", "gradients", "optimizer", "base_weights", "adapters")


def adapter_row(ref: str, what: str, model, row: dict[str, str]) -> AdapterRow:
    """LORA_MEMORY_GB (allocated) per GPU for the run the row describes: Hugging Face's loss (16 B per logit:
    LOSS_BYTES "upcast"), gradient checkpointing, its rank, targets, adapter state format and sharding.
    Sharded QLoRA (FSDP / ZeRO-3 with a bf16 quant storage) is not upcast by prepare_model_for_kbit_training
    (TRL skips it for sharded QLoRA; Answer.AI's train.py does not call it)."""
    seq, batch = number(row["seq_len"]), number(row["micro_batch"])
    n, rank = int(number(row["num_gpus"])), int(number(row["lora_rank"]))
    precision = "nf4" if row["method"].lower().startswith("qlora") else find_precision(row["precision"]) or "bf16"
    kind = row["measured"].strip()
    if kind not in MEASURED_KINDS:
        raise ValueError(f"{ref}: measured must be one of {MEASURED_KINDS}, not {kind!r}")
    parts = training_memory.lora_memory_gib(model, rank, precision, seq, batch, True, n, row["sharding"], "upcast",
                                            row["lora_targets"], row["adapter_dtype"])
    how = (f"LORA_MEMORY_GB r={rank} on {row['lora_targets']}, {row['adapter_dtype']} adapter states, {precision} base, "
           f"{seq:,.0f} x {batch:g}, checkpointed, {n} GPUs {row['sharding']}, HF loss; measured: {kind}")
    allocated = sum(parts.get(k, 0.0) for k in STATE_PARTS) if kind == "states" else parts["allocated"]
    return AdapterRow(ref, what, model, row, float(row["peak_gpu_mem_gb"]), kind, allocated, how)


def allocator_reserve(rows: list[AdapterRow]) -> float:
    """The rule that chooses ALLOCATOR_RESERVE: the median share the reserved and nvidia-smi rows imply."""
    implied = [r.implied_reserve() for r in rows]
    return statistics.median(v for v in implied if v is not None)


def reserve_pool(rows: list[AdapterRow]) -> list[AdapterRow]:
    return [r for r in rows if r.kind in ("reserved", "nvidia-smi")]


def compare_adapters(rows: list[AdapterRow]) -> list[Comparison]:
    """Each LoRA / QLoRA row against its estimate, in sample (the shipped ALLOCATOR_RESERVE) and out of
    sample (the share re-chosen without the row's fold), and whether the run fits its GPUs."""
    pool = reserve_pool(rows)
    out_of_fold = folds.out_of_fold(pool, lambda r: r.ref, allocator_reserve) if pool else None
    out = []
    for r in rows:
        n = int(number(r.row["num_gpus"]))
        est = r.estimate(calibration.ALLOCATOR_RESERVE)
        est_out = r.estimate(out_of_fold(r.ref)) if out_of_fold else est
        metric = "qlora_memory" if r.row["method"].lower().startswith("qlora") else "lora_memory"
        out.append(Comparison(metric, r.what, r.measured, est, "GiB", r.how, est_out,
                              config=_memory_config(r.model, r.row, n)))
        gpu = find_gpu(r.row["gpu"])
        room = number(r.row["gpu"]) if re.search(r"\d+\s*GB", r.row["gpu"]) else None
        room = training_memory.usable_gib(gpu) if gpu else room
        if room and r.kind in ("reserved", "nvidia-smi"):
            need = training_memory.needed_gib(r.allocated)
            out.append(Comparison("fit", r.what + " | fits", True, need <= room, "fits",
                                  f"{r.how}: needs {need:.1f} GiB (allocated + CUDA context) of {room:g}"))
    return out


# A full-training row's configuration (memory_measured.csv column `train_config`: "key=value; ..."), read into
# TRAINING_MEMORY_GB's arguments. Keys left out take these values; the legacy columns optimizer_states and
# master_weights still set the state format and the master copy.
TRAIN_CONFIG_KEYS = {"optimizer": "adamw", "states": "fp32", "master": "true", "in_backward": "false",
                     "recompute": "none", "flash": "true", "zero": "0", "tp": "1", "pp": "1", "offload": "none",
                     "loss": "upcast"}


def train_config(row: dict[str, str]) -> dict[str, str]:
    """The row's configuration: TRAIN_CONFIG_KEYS overridden by its columns and its `train_config` pairs."""
    config = dict(TRAIN_CONFIG_KEYS)
    config["states"] = (row.get("optimizer_states") or "").strip() or config["states"]
    config["master"] = (row.get("master_weights") or "").strip().lower() or config["master"]
    for pair in filter(None, (p.strip() for p in (row.get("train_config") or "").split(";"))):
        key, _, value = pair.partition("=")
        if key.strip() not in TRAIN_CONFIG_KEYS:
            raise ValueError(f"train_config key {key.strip()!r} is not one of {', '.join(TRAIN_CONFIG_KEYS)}")
        config[key.strip()] = value.strip().lower()
    return config


def _stated(row: dict[str, str], key: str) -> float:
    """A full-training row's number the memory depends on: never a default (a missing one is a data error)."""
    value = number(row.get(key) or "")
    if value is None:
        raise ValueError(f"memory_measured.csv row {row['model']!r} ({row['method']}) states no {key}")
    return value


def full_training_parts(model, row: dict[str, str]) -> tuple[dict[str, float], str]:
    """TRAINING_MEMORY_GB's parts per GPU for the full-training run the row describes, and how it was asked."""
    c = train_config(row)
    precision = find_precision(row["precision"]) or "bf16"
    seq, batch, n = (_stated(row, key) for key in ("seq_len", "micro_batch", "num_gpus"))
    master, in_bwd, flash = (c[k] == "true" for k in ("master", "in_backward", "flash"))
    parts = training_memory.training_memory_gib(
        model, precision, c["optimizer"], batch, seq, int(c["zero"]), n, c["recompute"], flash, c["states"],
        master, in_bwd, int(c["tp"]), int(c["pp"]), c["offload"], c["loss"])
    n = int(n)
    layout = f"ZeRO-{c['zero']} over {n} GPUs, tp {c['tp']} pp {c['pp']}" if n > 1 else "1 GPU"
    how = (f"TRAINING_MEMORY_GB {precision} weights, {c['optimizer']} with {c['states']} states, "
           f"{'an' if master else 'no'} FP32 master copy{', optimizer in backward' if in_bwd else ''}, "
           f"{batch:g} x {seq:,.0f} tokens, recompute {c['recompute']}, {c['loss']} loss, {layout}")
    return parts, how


def compare_full_training(ref: str, what: str, model, row: dict[str, str]) -> list[Comparison]:
    """A full-training row against TRAINING_MEMORY_GB for its configuration, as the kind it measured: the model
    states after the optimizer step (weights, gradients, optimizer), PyTorch's peak allocated, its peak
    reserved or nvidia-smi (allocated x (1 + ALLOCATOR_RESERVE), + the CUDA context); and the run, which ran,
    against its GPU (fits)."""
    parts, how = full_training_parts(model, row)
    kind = row["measured"].strip()
    if kind not in MEASURED_KINDS:
        raise ValueError(f"{ref}: measured must be one of {MEASURED_KINDS}, not {kind!r}")
    estimate = {"states": parts["weights"] + parts["gradients"] + parts["optimizer"],
                "allocated": parts["allocated"], "reserved": parts["reserved"], "nvidia-smi": parts["device"]}[kind]
    n = int(number(row["num_gpus"]) or 1)
    out = [Comparison("full_memory", what, float(row["peak_gpu_mem_gb"]), estimate, "GiB",
                      f"{how}; measured: {kind}", config=_memory_config(model, row, n))]
    gpu = find_gpu(row["gpu"])
    if gpu:
        room = training_memory.usable_gib(gpu)
        out.append(Comparison("fit", what + " | fits", True, parts["total"] <= room, "fits",
                              f"{how}: the whole step needs {parts['total']:.1f} GiB of {room:g}"))
    return out


def compare_full_fit(what: str, model, row: dict[str, str]) -> Comparison | Skip:
    """A full-training run stated to fit (it ran) or to run out of memory ("OOM") against its GPU:
    TRAINING_MEMORY_GB's total (allocated + the CUDA context) for its configuration."""
    gpu = find_gpu(row["gpu"])
    if gpu is None:
        return Skip(what, f"GPU '{row['gpu']}' is not in the catalog: no memory to fit in")
    parts, how = full_training_parts(model, row)
    fits = row["peak_gpu_mem_gb"].strip().upper() != "OOM"
    room = training_memory.usable_gib(gpu)
    return Comparison("fit", what, fits, parts["total"] <= room, "fits", f"{how} gives {parts['total']:.1f} GiB of {room:g}")


def adapter_rows(rows) -> list[AdapterRow]:
    found = []
    for ref, row in rows:
        model = find_model(row["model"])
        if model and row.get("lora_rank", "").strip() and "offload" not in row["method"].lower():
            what = label(ref, row, "model", "method", "precision", "gpu", "num_gpus")
            found.append(adapter_row(ref, what, model, row))
    return found


def qlora_max_context(model, memory_gib: float, rank: int = 32, micro_batch: int = 1) -> int:
    """Longest sequence whose Hugging Face QLoRA memory fits in `memory_gib` (0 if none)."""
    def need(tokens):
        return hf_qlora_gib(model, rank, tokens, micro_batch)
    if need(1) > memory_gib:
        return 0
    lo, hi = 1, 2
    while need(hi) <= memory_gib:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if need(mid) <= memory_gib else (lo, mid)
    return lo


def _memory_config(model, row: dict[str, str], n: int) -> Config | None:
    gpu = find_gpu(row["gpu"])
    return gpu and Config(model.name, model.params, model.is_moe, gpu, find_precision(row["precision"]) or "", n)


# The settings a KV-capacity row may state (a misspelt key is refused, not dropped): the engine, its memory
# share (vLLM's gpu_memory_utilization, SGLang's mem_fraction_static) and vLLM's profile-run sizes.
KV_SETTINGS = frozenset({"engine", "gmu", "mem_fraction_static", "max_num_batched_tokens", "max_num_seqs",
                         "max_model_len"})
DOES_NOT_START = "does not start"       # a log whose engine refused to start: a fit row


def kv_settings(row: dict[str, str]) -> dict[str, str]:
    """The engine settings a KV-capacity row states, `key=value; ...` in context_or_batch."""
    settings = dict(part.strip().split("=", 1) for part in row["context_or_batch"].split(";") if "=" in part)
    unknown = sorted(set(settings) - KV_SETTINGS)
    if unknown or "engine" not in settings or not {"gmu", "mem_fraction_static"} & set(settings):
        raise ValueError(f"KV-capacity row {row['model']!r}: settings {unknown or sorted(settings)} are not "
                         f"engine plus a memory share from {sorted(KV_SETTINGS)}")
    return settings


def compare_kv_capacity(what: str, model, row: dict[str, str]) -> Comparison:
    """An engine's startup log of the KV cache memory per GPU against capacity.kv_budget_gib, with the
    row's engine (a stated release picks its MoE kernel's padding: capacity.kernel_padding_gib), memory share and
    profile-run sizes; a log whose engine did not start is a fit row."""
    s = kv_settings(row)
    gpu, n, precision = find_gpu(row["gpu"]), int(number(row["num_gpus"])), find_precision(row["precision"])
    eng = replace(engines.engine(s["engine"], gpu), memory_fraction=float(s.get("gmu") or s["mem_fraction_static"]))
    if "max_num_batched_tokens" in s:         # the profile run the row's engine made (capacity.profile_run_gib)
        eng = replace(eng, max_num_tokens=int(s["max_num_batched_tokens"]), max_batch=int(s["max_num_seqs"]),
                      large_gpu_max_batch=None, large_gpu_max_num_tokens=None, huge_gpu_max_num_tokens=None)
    config = Config(model.name, model.params, model.is_moe, gpu, precision or "", n, eng.name)
    peak = row["peak_gpu_mem_gb"].strip()
    if peak.lower() == DOES_NOT_START:
        try:
            budget = capacity.kv_budget_gib(model, gpu, precision, n, eng)
        except FlopsheetError:
            budget = 0.0                      # the weights and reserve alone pass the memory share: no start
        return Comparison("fit", what + " | engine starts", False, budget > 0, "fits",
                          f"{eng.name} KV budget {budget:.2f} GiB; {row['note']}", config=config)
    if number(peak) is None:
        raise ValueError(f"KV-capacity row {row['model']!r}: {peak!r} is neither GiB nor {DOES_NOT_START!r}")
    # a numeric row the estimate refuses is an error of the tool or the catalog, not a zero budget
    return Comparison("kv_capacity", what + " | KV cache per GPU", float(peak),
                      capacity.kv_budget_gib(model, gpu, precision, n, eng), "GiB",
                      row["note"], config=config)


def compare_memory(rows) -> tuple[list[Comparison], list[Skip]]:
    out, skipped = [], []
    for ref, row in rows:
        what = label(ref, row, "model", "method", "precision", "gpu", "num_gpus")
        method, peak = row["method"].lower(), row["peak_gpu_mem_gb"].strip()
        model = find_model(row["model"])
        gpu_mem = number(row["gpu"]) if re.search(r"\d+\s*GB", row["gpu"]) else None

        if model and method.startswith("full") and peak.lower() in ("fits", "oom") and (row.get("train_config") or "").strip():
            verdict = compare_full_fit(what, model, row)
            if isinstance(verdict, Skip):
                skipped.append(verdict)
            else:
                out.append(verdict)
        elif model is None and "full fine-tuning" in method and peak.upper() == "OOM":
            # a model outside the catalog has no layers to size a step from: only the bound its
            # parameter count sets (the model states alone) can judge an out-of-memory run
            params = number(row["params_b"]) * 1e9
            states = sum(training_memory.model_state_bytes(params, "bf16", "adamw").values()) / GIB
            gpu = find_gpu(row["gpu"])
            room = training_memory.usable_gib(gpu)
            out.append(Comparison("fit", what, False, states <= room, "fits",
                                  f"model states alone (18 B/param) {states:.0f} GiB > {room:g}"))
        elif "16-bit full fine-tuning" in method and peak.startswith(">") and model:
            bound = number(peak)
            est = training_memory.training_memory_gib(model, "bf16", "adamw", 1, 512)["total"] * GIB / 1e9
            out.append(Comparison("fit", what, True, est > bound, "above bound",
                                  f"stated >{bound:g} GB; TRAINING_MEMORY_GB gives {est:.0f} GB"))
        elif method.startswith("qlora") and peak.startswith("<") and model:
            bound = number(peak)
            est = training_memory.qlora_memory_gib(model, 64, QLORA_FIT_TOKENS, 1, True)["total"]
            out.append(Comparison("fit", what, True, est < bound, "below bound",
                                  f"stated <{bound:g} GB; QLORA_MEMORY_GB (r 64, the paper's, "
                                  f"{QLORA_FIT_TOKENS} tokens) gives {est:.1f} GiB"))
        elif "unsloth" in method and model and gpu_mem:
            match = re.search(r"HF\+FA2:\s*([\w,]+)", row["context_or_batch"])
            baseline = match.group(1) if match else ""
            rank = int(number(re.search(r"r=(\d+)", method).group(1)))
            found = qlora_max_context(model, gpu_mem, rank)
            if baseline.upper() == "OOM":
                need = hf_qlora_gib(model, rank, QLORA_FIT_TOKENS)
                out.append(Comparison("fit", what + " | HF+FA2", False, need <= gpu_mem, "fits",
                                      f"HF QLoRA r={rank} needs {need:.1f} GiB at {QLORA_FIT_TOKENS} tokens "
                                      f"({hf_qlora_gib(model, rank, 1):.1f} at 1 token)"))
            elif baseline:
                out.append(Comparison("qlora_context", what + " | HF+FA2", number(baseline), found, "tokens",
                                      "HF baseline; Unsloth's own figure (offloaded checkpointing) not modelled"))
        elif model and row.get("lora_rank", "").strip() and "offload" not in method:
            continue                      # scored by compare_adapters
        elif model and (row.get("measured") or "").strip() and method.startswith("full"):
            out += compare_full_training(ref, what, model, row)
        elif method.startswith("inference kv cache") and model:
            out.append(compare_kv_capacity(what, model, row))
        elif "inference weights (vllm)" in method and model:
            precision = find_precision(row["precision"])
            n = int(number(row["num_gpus"]))
            stated = dict(part.strip().split("=", 1) for part in row["context_or_batch"].split(";") if "=" in part)
            gpu = find_gpu(row["gpu"])
            # the one count of weights per GPU every fit and KV budget reads (capacity.held: the release's MoE kernel
            # padding on the experts it loads; under data-parallel attention a MoE model's non-expert weights whole
            # on every GPU), with the release the row states, else the vLLM the engine table ships
            eng = engines.engine(stated.get("engine", "vLLM"), gpu)
            est = capacity.held(model, gpu, precision, n, eng).weights_gib
            out.append(Comparison("memory", what + " | weights per GPU", float(peak), est, "GiB",
                                  row["note"], config=_memory_config(model, row, n)))
        elif method == "inference weights" and model:
            precision = find_precision(row["precision"])
            n = int(number(row["num_gpus"]))
            est = arch.weight_bytes(model, precision) / 1e9
            out.append(Comparison("memory", what + " | total weights", float(peak), est, "GB (10^9 B)",
                                  config=_memory_config(model, row, n)))
        else:
            reason = ("model not in the catalog (" + row["model"] + ")" if model is None else
                      "no like-for-like estimate for this method")
            if "offload" in method:
                how = "DeepSpeed ZeRO-3" if "deepspeed" in method else "FSDP" if "fsdp" in method else "unstated"
                reason = (f"CPU offload ({how}): GPU memory depends on the offload policy, and LORA_MEMORY_GB "
                          "offloads nothing; " + reason)
            skipped.append(Skip(what, reason))
    return out + compare_adapters(adapter_rows(rows)), skipped


# ---------------------------------------------------------------------------- evidence per regime

# The metric of the regime (udfs/physics/evidence.py) each scored metric gives evidence on. A burst
# (N requests sent at once) gives none: its figure is a run's mean with the ramp and the tail of the
# longest answers, not the steady state SERVING_THROUGHPUT, GPUS_FOR_TRAFFIC and the picker size a
# service on, so it is scored and published (metric `burst`) but sets no band on them.
EVIDENCE_METRICS = {"decode_b1": "decode", "fixed_batch": "throughput", "max_throughput": "throughput",
                    "prefill": "prefill", "training_hours": "training", "mfu": "training", "memory": "memory",
                    "lora_memory": "training_memory", "qlora_memory": "training_memory",
                    "full_memory": "training_memory"}
EVIDENCE_PATH = HERE.parent / "udfs" / "data" / evidence.FILE
DIMENSIONS = ("engine", "vendor", "family", "architecture", "layout")


def _evidence_error(c: Comparison, error: float) -> float:
    """A row's error in its regime metric's own quantity: GPU-hours for an MFU row (hours scale as
    1 / MFU), time to first token for a prefill row measured in tokens/s."""
    if c.metric == "mfu" or (c.metric == "prefill" and c.unit != "ms"):
        return 1 / (1 + error) - 1
    return error


def evidence_rows(report: Report, as_of: str) -> list[evidence.Measured]:
    """Every scored row with a regime, its in- and out-of-sample errors: udfs/data/evidence.csv."""
    out = []
    for c in report.comparisons:
        metric, k = EVIDENCE_METRICS.get(c.metric), c.config
        if metric is None or k is None:
            continue
        ref, _, description = c.row.partition(" ")
        regime = evidence.regime_of(metric, k.gpu, k.moe, k.layout_gpus, k.engine)
        out.append(evidence.Measured(**asdict(regime), model=k.model, params_b=round(k.params / 1e9, 3),
                                     gpu=k.gpu.name, precision=k.precision, n_gpus=max(k.n_gpus, 1),
                                     error_in=_evidence_error(c, c.error), error_out=_evidence_error(c, c.error_out),
                                     row=ref, description=f"{description} ({c.metric})",
                                     source=f"benchmarks/measured/{ref.split(':')[0]}", as_of=as_of))
    return out


def shipped_as_of(path: Path = EVIDENCE_PATH) -> str | None:
    """The as_of of the shipped evidence file (every row carries the same)."""
    if not path.exists():
        return None
    rows = evidence.parse(path.read_text(encoding="utf-8"))
    return rows[0].as_of if rows else None


def evidence_text(report: Report, path: Path = EVIDENCE_PATH) -> str:
    """The evidence file for `report`: dated as shipped when nothing else changed, else today."""
    kept = shipped_as_of(path)
    if kept:
        text = evidence.render(evidence_rows(report, kept))
        if path.read_text(encoding="utf-8") == text:
            return text
    return evidence.render(evidence_rows(report, datetime.date.today().isoformat()))


def _group_line(what: str, name: str, rows: list[evidence.Measured]) -> str:
    inside = statistics.median(abs(m.error_in) for m in rows)
    outside = statistics.median(abs(m.error_out) for m in rows)
    low, high = evidence.band_of([m.error_out for m in rows])
    return (f"  {what:<13}{name:<58}{len(rows):>4}  {inside:>6.1%}  {outside:>6.1%}  {low:>+7.0%} {high:>+6.0%}")


def band_coverage(rows: list[evidence.Measured]) -> dict[bool, tuple[int, int]]:
    """Leave-one-out check of the bands: for each row, the band evidence.lookup gives its regime
    from the other rows, and whether the row's out-of-sample error falls inside. Keyed by whether
    the regime still had a measured row without it: (inside, rows)."""
    counts = {True: [0, 0], False: [0, 0]}
    for i, m in enumerate(rows):
        rest = tuple(rows[:i] + rows[i + 1:])
        if not any(r.metric == m.metric for r in rest):
            continue
        ev = evidence.lookup.__wrapped__(m.regime, m.gpu, m.params_b, m.precision, m.n_gpus, rest, m.model)
        counts[ev.measured][0] += ev.low_error - 1e-9 <= m.error_out <= ev.high_error + 1e-9
        counts[ev.measured][1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}


def format_regimes(rows: list[evidence.Measured]) -> list[str]:
    lines = ["", "== Error by regime (udfs/data/evidence.csv; docs/accuracy.md, Evidence per estimate) ==",
             "median |error| in and out of sample; P10 / P90 of the signed out-of-sample error. Metric units: decode",
             "and throughput tokens/s, prefill time to first token, training GPU-hours (MFU rows as the hours they",
             "imply), memory GB.",
             f"  {'by':<13}{'group':<58}{'rows':>4}  {'in':>6}  {'out':>6}  {'P10':>7} {'P90':>6}"]
    covered = band_coverage(rows)
    lines[-1:-1] = ["Bands, checked leave-one-out: a row's error lies inside the band its regime gets from the other "
                    "rows for", f"{covered[True][0]} of {covered[True][1]} rows whose regime keeps a measured row "
                    f"(P10..P90 aims at 8 in 10), and for {covered[False][0]} of {covered[False][1]} rows left alone "
                    "in theirs", "(the no-measurement rule)."]
    for metric in evidence.METRICS:
        of = [m for m in rows if m.metric == metric]
        if not of:
            lines.append(f"{metric}: no measured row")
            continue
        lines.append(f"{metric}:")
        lines.append(_group_line("all", "", of))
        for dimension in DIMENSIONS:
            names = sorted({getattr(m, dimension) for m in of})
            if len(names) > 1:
                lines += [_group_line(dimension, n or "-", [m for m in of if getattr(m, dimension) == n])
                          for n in names]
        regimes = sorted({m.regime for m in of}, key=lambda r: r.describe())
        lines += [_group_line("regime", r.describe().partition(": ")[2], [m for m in of if m.regime == r])
                  for r in regimes]
    return lines


# ---------------------------------------------------------------------------- report

def lora_time_row(ref: str, row: dict[str, str]) -> Comparison | Skip:
    """A LoRA / QLoRA job's seconds on several GPUs against the model: the method's FLOPs (training.method_flops,
    checkpointed) at the steady-state MFU of the GPU and model, over the row's GPUs, divided by the share left
    by the row's traffic (training.scale_out_efficiency with its method, sharding and micro-batch). No constant
    is chosen from these rows: in and out of sample are the same."""
    what = label(ref, row, "model", "method", "gpu_type", "gpu_count", "sharding", "micro_batch")
    gpu, model = find_gpu(row["gpu_type"]), find_model(row["model"])
    if gpu is None or model is None:
        return Skip(what, f"'{row['gpu_type'] if gpu is None else row['model']}' is not in the catalog")
    if row["cpu_offload"].strip().upper() == "TRUE":
        return Skip(what, "CPU offload of the weights: not modelled (the base would cross PCIe from host memory)")
    if row["link"].startswith("unstated"):
        return Skip(what, f"the GPUs' link is {row['link']}: the rate the gathers run at is unknown")
    n, micro = int(row["gpu_count"]), int(row["micro_batch"]) * int(row["seq_len"])
    tokens = int(row["samples"]) * int(row["seq_len"])
    mfu = teff.for_gpu(gpu, model, "bf16", "steady")
    peak = gpu.tensor_peak("bf16", "a LoRA job's time", weight_only=False).tflops * 1e12
    share = training.scale_out_efficiency(model, gpu, n, "bf16", method=row["method"], sharding=row["sharding"],
                                          micro_tokens=micro)
    seconds = training.method_flops(row["method"]) * model.active * tokens / (n * peak * mfu.mfu) / share
    note = f"steady MFU {mfu.mfu:.3f} ({mfu.basis}); {share:.2%} of the time computing"
    config = Config(model.name, model.active, bool(model.is_moe), gpu, "bf16", n)
    return Comparison("lora_time", what, float(row["seconds"]), seconds, "s", note, None, config)


def compare_lora_time(rows) -> tuple[list[Comparison], list[Skip]]:
    found = [lora_time_row(ref, row) for ref, row in rows]
    return [c for c in found if isinstance(c, Comparison)], [c for c in found if isinstance(c, Skip)]


def read_training(directory: Path) -> tuple[list[TrainingRow], list[Skip]]:
    """training_measured.csv as the efficiency table and the report read it (read once a run)."""
    return training_rows(read_rows(directory, "training_measured.csv"))


def run(directory: Path, training_read: tuple[list[TrainingRow], list[Skip]] | None = None) -> Report:
    """The report over every measured file (`training_read`: training_measured.csv already read, read_training;
    inference_measured.csv is read and parsed once here, read_inference, for every part that scores its rows)."""
    found, skipped_training = training_read or read_training(directory)
    inference_read = read_inference(directory)
    comparisons, skipped = compare_inference(directory, inference_read)
    comparisons += compare_training(found)
    skipped += skipped_training
    for name, compare in (("memory_measured.csv", compare_memory), ("lora_time_measured.csv", compare_lora_time)):
        more, left = compare(read_rows(directory, name))
        comparisons += more
        skipped += left
    return Report(comparisons, skipped, constant_pools(directory, found, inference_read),
                  size_class_baseline(found, comparisons) + [leave_one_source_out(found)]
                  + _serving_one_model_out(directory, inference_read))


def _serving_one_model_out(directory: Path, inference_read: list[Case | str] | None = None) -> list[str]:
    from benchmarks import serving_accuracy as serving_acc
    parsed = read_inference(directory) if inference_read is None else inference_read
    if parsed is None:
        return []
    return serving_acc.leave_one_model_out(serving_acc.cases_of(directory, parsed))


TRAINING_METRICS = ("training_hours", "mfu", "scaling", "cluster_hours")


def leave_one_source_out(found: list[TrainingRow]) -> str:
    """The training metrics out of sample with each source held out alone (no fold deal, so no seed): a reference
    beside the shipped 5-fold deal, whose figure moves when a new source re-deals the folds."""
    scored = compare_training(found, one_each=True)
    figures = [f"{m} {_pct(statistics.median(abs(c.error_out) for c in scored if c.metric == m))}"
               for m in TRAINING_METRICS if any(c.metric == m for c in scored)]
    return ("training, leaving one source out (no fold deal; the figures above use the shipped 5-fold deal): "
            + ", ".join(figures))


def constant_pools(directory: Path, found: list[TrainingRow], inference_read: list[Case | str] | None = None
                   ) -> list[tuple[str, int]]:
    """Every constant chosen by looking at rows (`found`: the training rows; `inference_read`: the inference rows
    already read, read_inference), with the rows its rule chooses from."""
    from benchmarks import serving_accuracy as serving_acc
    out = [("training-efficiency table, folds dealt by source", len({r.source for r in found}))]
    parsed = read_inference(directory) if inference_read is None else inference_read
    if parsed is not None:
        out += [(f"{fit.label} {fit.field}", rows)
                for fit, rows in serving_acc.pools(serving_acc.cases_of(directory, parsed))]
    if (directory / "memory_measured.csv").exists():
        pool = reserve_pool(adapter_rows(read_rows(directory, "memory_measured.csv")))
        out.append(("ALLOCATOR_RESERVE (training memory)", len(pool)))
    return out


# ---------------------------------------------------------------------------- error by regime, every metric

# Training at scale is broken down by cluster size (the scaling metric only): one or a few servers, a
# cluster of hundreds, thousands.
GPU_CLASSES = ("2-64", "65-1,024", ">1,024")


def gpu_class(n_gpus: int) -> str:
    return GPU_CLASSES[0] if n_gpus <= 64 else GPU_CLASSES[1] if n_gpus <= 1024 else GPU_CLASSES[2]


# The regime dimensions every metric is broken down by (issue 20 item 6), and the values always
# shown, so that a regime nothing measured is seen as such.
BREAKDOWN = (("engine", ()), ("architecture", ("dense", "MoE")), ("layout", ("one GPU", "parallel")),
             ("vendor", ()), ("GPUs", GPU_CLASSES))


def regime_tag(c: Comparison, dimension: str) -> str:
    """A compared row's value of a regime dimension ("-" where the row records none)."""
    k = c.config
    if k is None:
        return "-"
    if dimension == "engine":
        return k.engine or "-"
    if dimension == "architecture":
        return "MoE" if k.moe else "dense"
    if dimension == "layout":
        return "-" if k.n_gpus < 1 else "parallel" if k.layout_gpus > 1 else "one GPU"
    if dimension == "GPUs":
        return gpu_class(k.n_gpus) if c.metric == "scaling" else "-"
    return (k.gpu.vendor if k.gpu is not None else "") or "-"


@dataclass(frozen=True)
class Group:
    """The error of a group of compared rows: median |error| in and out of sample, P10 / P90 of
    the signed out-of-sample error; for a right/wrong metric, rows right."""
    rows: int
    inside: float
    outside: float
    low: float
    high: float
    right: int = 0
    least: float = 0.0      # the smallest and largest signed out-of-sample error
    most: float = 0.0


def group_of(rows: list[Comparison]) -> Group | None:
    if not rows:
        return None
    low, high = evidence.band_of([c.error_out for c in rows])
    errors = [c.error_out for c in rows]
    return Group(len(rows), statistics.median(abs(c.error) for c in rows),
                 statistics.median(abs(e) for e in errors), low, high,
                 sum(1 for c in rows if c.error == 0), min(errors), max(errors))


# A group of fewer rows than this shows its rows' signed errors (one, or the range), not a median: the
# median of two is their midpoint, which no row has (kv_capacity's two vLLM V1 rows: +77% and +612%).
README_MEDIAN_FROM = 3


def readme_cell(value: str, g: Group) -> str:
    """A regime's README cell: median |error| out of sample (rows), or its rows' signed errors when few."""
    if g.rows >= README_MEDIAN_FROM:
        return f"{value} {g.outside:.1%} ({g.rows})"
    if g.rows == 1:
        return f"{value} {g.least:+.1%} (1)"
    return f"{value} {g.least:+.0%} to {g.most:+.0%} ({g.rows})"


def breakdown(report: Report, metric: str) -> list[tuple[str, str, Group | None]]:
    """(dimension, value, group) for every metric: all rows, then each BREAKDOWN value."""
    rows = report.of(metric)
    out: list[tuple[str, str, Group | None]] = [("all", "", group_of(rows))]
    for dimension, always in BREAKDOWN:
        tags = {regime_tag(c, dimension) for c in rows}
        if tags <= {"-"}:
            continue            # no row of this metric records the dimension (a training row's engine)
        values = list(always) + sorted(tags - set(always) - {"-"}) + (["-"] if "-" in tags else [])
        out += [(dimension, v, group_of([c for c in rows if regime_tag(c, dimension) == v])) for v in values]
    return out


def _breakdown_line(metric: str, dimension: str, value: str, g: Group | None) -> str:
    head = f"  {metric if dimension == 'all' else '':<16}{dimension:<14}{value:<30}"
    if g is None:
        return f"{head}{0:>5}  no measured row"
    if metric in BOOLEAN_METRICS:
        return f"{head}{g.rows:>5}  {f'{g.right}/{g.rows} right':>15}"
    return f"{head}{g.rows:>5}  {g.inside:>6.1%}  {g.outside:>6.1%}  {g.low:>+7.0%} {g.high:>+6.0%}"


def format_breakdown(report: Report) -> list[str]:
    lines = ["", "== Error by regime, every metric (engine, dense or MoE, one GPU or parallel, vendor) ==",
             "in: median |error| with the shipped constants; out: out of sample (k-fold, above); P10 / P90 of the",
             "signed out-of-sample error; '-': the row records no such part; a part no row of a metric records",
             "is left out (training has no engine).",
             f"  {'metric':<16}{'by':<14}{'group':<30}{'rows':>5}  {'in':>6}  {'out':>6}  {'P10':>7} {'P90':>6}"]
    for metric in METRICS:
        lines += [_breakdown_line(metric, dimension, value, g)
                  for dimension, value, g in breakdown(report, metric)]
    return lines


# Groups docs/accuracy.md's targets table cites beyond the by-regime breakdown, printed in the report so the
# table's figures come from it (tests/test_accuracy.py compares each cited figure with these lines).
SERVING_METRICS = ("decode_b1", "fixed_batch", "max_throughput", "burst", "prefill")
STEADY_METRICS = ("decode_b1", "fixed_batch", "max_throughput", "prefill")
SERVED_BY = ("vLLM", "SGLang", "Text Generation Inference")     # issue 20's own target: 25%, every metric (met dense only)


def _family(c: Comparison) -> str:
    name = c.config.engine if c.config else ""
    return (engines.engine(name).family or name) if name else ""


def _moe(c: Comparison) -> bool:
    return bool(c.config and c.config.moe)


def _at_load(c: Comparison) -> bool:
    """A first-token row measured at a stated request rate or concurrency (serving_accuracy.parse's notes)."""
    return c.metric == "prefill" and ("request/s:" in c.note or "a closed loop" in c.note)


def _model(c: Comparison) -> str:
    return c.config.model if c.config else ""


def _deepseek_in_flight(c: Comparison) -> bool:
    """DeepSeek-R1 at a fixed number of requests in flight (trtllm-bench, InferenceX), split by the layout the row
    states (serving_accuracy._stated's note: experts tensor-parallel, or split over the GPUs with attention tensor-
    or data-parallel)."""
    return c.metric == "fixed_batch" and c.config is not None and c.config.model == "DeepSeek-R1"


CITED_GROUPS: tuple[tuple[str, Callable[[Comparison], bool]], ...] = (
    ("every inference row", lambda c: c.metric in SERVING_METRICS),     # issue 20's first target, 12%
    ("every inference row, bursts left out", lambda c: c.metric in STEADY_METRICS),
    ("bursts", lambda c: c.metric == "burst"),
    ("max_throughput, TensorRT-LLM, dense",
     lambda c: c.metric == "max_throughput" and _family(c) == "TensorRT-LLM" and not _moe(c)),
    ("fixed_batch, dense, NVIDIA",
     lambda c: c.metric == "fixed_batch" and not _moe(c) and regime_tag(c, "vendor") == "NVIDIA"),
    ("fixed_batch, dense, AMD",
     lambda c: c.metric == "fixed_batch" and not _moe(c) and regime_tag(c, "vendor") == "AMD"),
    ("served by vLLM, SGLang or TGI, dense, every metric",
     lambda c: c.metric in SERVING_METRICS and _family(c) in SERVED_BY and not _moe(c)),
    ("served by vLLM, SGLang or TGI, every metric, MoE too",
     lambda c: c.metric in SERVING_METRICS and _family(c) in SERVED_BY),
    ("served by vLLM, SGLang or TGI, dense, bursts",
     lambda c: c.metric == "burst" and _family(c) in SERVED_BY and not _moe(c)),
    ("prefill at a stated load", lambda c: _at_load(c) and not _moe(c)),
    ("MoE, DeepSeek-R1 first token in flight", lambda c: _at_load(c) and _moe(c) and _model(c) == "DeepSeek-R1"),
    ("MoE, gpt-oss-120b first token in flight", lambda c: _at_load(c) and _model(c) == "gpt-oss-120b"),
    ("MoE, every serving metric", lambda c: c.metric in SERVING_METRICS and _moe(c)),
    ("MoE, steady throughput", lambda c: c.metric in STEADY_METRICS and c.metric != "prefill" and _moe(c)),
    ("MoE, bursts", lambda c: c.metric == "burst" and _moe(c)),
    ("MoE, steady, Mixtral 8x7B", lambda c: c.metric in STEADY_METRICS and c.config is not None
     and c.config.model == "Mixtral 8x7B"),
    ("MoE, steady throughput, DeepSeek-R1", lambda c: c.metric in STEADY_METRICS and c.metric != "prefill"
     and c.config is not None and c.config.model == "DeepSeek-R1"),
    ("MoE, DeepSeek-R1 at a fixed concurrency", _deepseek_in_flight),
    ("MoE, DeepSeek-R1 in flight, experts tensor-parallel",
     lambda c: _deepseek_in_flight(c) and "experts split over the GPUs" not in c.note),
    ("MoE, DeepSeek-R1 in flight, EP, attention TP",
     lambda c: _deepseek_in_flight(c) and "attention tensor-parallel" in c.note),
    ("MoE, DeepSeek-R1 in flight, EP, attention DP",
     lambda c: _deepseek_in_flight(c) and "attention data-parallel" in c.note),
    ("MoE, gpt-oss-120b in flight", lambda c: c.metric == "fixed_batch" and _model(c) == "gpt-oss-120b"),
    ("MoE, gpt-oss-120b in flight, vLLM",
     lambda c: c.metric == "fixed_batch" and _model(c) == "gpt-oss-120b" and _family(c) == "vLLM"),
    ("MoE, gpt-oss-120b in flight, TensorRT-LLM",
     lambda c: c.metric == "fixed_batch" and _model(c) == "gpt-oss-120b" and _family(c) == "TensorRT-LLM"),
)


# Closed-loop first tokens cited again as the worksheet's own terms score them (serving_accuracy.worksheet_terms)
WORKSHEET_GROUPS = {"MoE, DeepSeek-R1 first token in flight": "MoE, DeepSeek-R1 first token, worksheet's terms",
                    "MoE, gpt-oss-120b first token in flight": "MoE, gpt-oss-120b first token, worksheet's terms"}


def cited_groups(report: Report) -> dict[str, list[Comparison]]:
    groups = {name: [c for c in report.comparisons if keep(c)] for name, keep in CITED_GROUPS}
    for name, bare in WORKSHEET_GROUPS.items():
        groups[bare] = [replace(c, estimate=c.worksheet[0], estimate_out=c.worksheet[1]) if c.worksheet else c
                        for c in groups[name]]
    return groups


def format_cited(report: Report) -> list[str]:
    """The groups the targets table cites: rows, median |error| in / out of sample, the signed out-of-sample
    range, rows estimated too fast (over the measurement); a group of 12 rows or fewer lists its errors."""
    lines = ["", "== Groups docs/accuracy.md's targets table cites ==",
             "rows, median |error| in and out of sample, smallest and largest signed out-of-sample error, rows",
             "estimated over the measurement; up to 12 rows: each row's signed out-of-sample error.",
             f"  {'group':<52}{'rows':>5}  {'in':>6}  {'out':>6}  {'least':>7} {'most':>7}  over"]
    for name, rows in cited_groups(report).items():
        g = group_of(rows)
        if g is None:
            lines.append(f"  {name:<52}{0:>5}  no measured row")
            continue
        over = sum(1 for c in rows if c.error_out > 0)
        lines.append(f"  {name:<52}{g.rows:>5}  {g.inside:>6.1%}  {g.outside:>6.1%}  {g.least:>+7.1%} "
                     f"{g.most:>+7.1%}  {over:>4}")
        if g.rows <= 12:
            lines.append("      " + ", ".join(f"{e:+.1%}" for e in sorted((c.error_out for c in rows), reverse=True)))
    return lines


def readme_table(report: Report) -> str:
    """The README's accuracy table: every metric out of sample, then by regime (tested against the report)."""
    lines = ["| what is estimated | by | rows | median error out of sample (in sample); by regime: out of sample "
             "(rows; under 3 rows, their signed errors) |",
             "|---|---|---|---|"]
    for metric, title in METRICS.items():
        parts = breakdown(report, metric)
        whole = parts[0][2]
        if whole is None:
            lines.append(f"| {title} | all | 0 | no measured row |")
            continue
        boolean = metric in BOOLEAN_METRICS
        figure = f"{whole.right}/{whole.rows} right" if boolean else f"{whole.outside:.1%} ({whole.inside:.1%})"
        lines.append(f"| {title} | all | {whole.rows} | {figure} |")
        for dimensions in README_ROWS:      # dense/MoE and one GPU/parallel share a row: the README stays short
            groups = [(v, g) for d, v, g in parts if d in dimensions and v != "-"]
            if not groups or (dimensions == ("vendor",) and len(groups) == 1):
                continue            # one vendor measured: its line would repeat the "all" line
            cells = [f"{v} none" if g is None else f"{v} {g.right}/{g.rows} right" if boolean else
                     readme_cell(v, g) for v, g in groups]
            named = " / ".join(d for d in dimensions if any(dd == d and v != "-" for dd, v, _ in parts))
            lines.append(f"| | {named} | | {' · '.join(cells)} |")
    return "\n".join(lines)


README_ROWS = (("engine",), ("architecture", "layout"), ("vendor",), ("GPUs",))


def _fmt(value: float) -> str:
    if isinstance(value, bool):
        return str(value).upper()
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def format_report(report: Report, worst: int = 5) -> str:
    lines = ["Flopsheet accuracy report: estimates against measured rows",
             "error = (estimate - measured) / measured; APE = |error|; median APE per metric.",
             "in-sample: the shipped constants. out-of-sample: every constant chosen by looking at rows",
             "re-chosen by its rule without the row's fold: k-fold cross-validation, k = "
             f"{folds.K} (seed {folds.SEED},", "folds dealt by SHA-256 of the row reference: benchmarks/folds.py); "
             f"leave-one-out for a rule choosing from fewer than {folds.LOO_BELOW} rows. The training-efficiency",
             "table's folds are dealt by source: no row is scored on a table a row of its own source helped choose.",
             ""]
    lines.append(f"{'metric':<16}{'rows':>5}  {'in-sample':>10}  {'out-of-sample':>13}  description")
    for key, title in METRICS.items():
        rows = report.of(key)
        if key in BOOLEAN_METRICS:
            good, total = report.correct(key)
            inside = outside = f"{good}/{total} right"
        else:
            inside, outside = (_pct(report.median_ape(key, oos)) for oos in (False, True))
        lines.append(f"{key:<16}{len(rows):>5}  {inside:>10}  {outside:>13}  {title}")
    lines.append("")
    lines.append(f"Constants chosen from rows: the training-efficiency table (udfs/data/{teff.FILE}: each steady "
                 f"share the median share that reproduces its rows under the step-time model, a whole run that x "
                 f"TRAINING_GOODPUT; out of sample, folds dealt by source); llama.cpp and MLC-LLM "
                 f"achieved bandwidth, the fixed time per layer of gpt-fast (lent to vLLM V0, and to SGLang: the "
                 f"figure is chosen from gpt-fast's rows, but the choice to lend it was made with SGLang's "
                 f"tensor-parallel rows in view, too fast by about that time a layer under the 10 us prior) and "
                 f"vLLM V1, the "
                 f"Intel Gaudi software's matrix share (udfs/data/engines.csv, "
                 f"column `fitted`; "
                 f"benchmarks/serving_accuracy.py lists the rule's values); the caching allocator's reserve in "
                 f"training memory (ALLOCATOR_RESERVE, udfs/physics/calibration.py: the median share the rows "
                 f"measuring reserved memory or nvidia-smi imply, {calibration.ALLOCATOR_RESERVE:.3f}); the fixed "
                 f"time of a MoE layer of a decode step (MOE_LAYER_US, udfs/physics/calibration.py, one value for every "
                 f"engine: the MoE rows at a stated concurrency, {calibration.MOE_LAYER_US:g} us). "
                 f"Every other constant comes from "
                 f"engine documentation or physics and scores the same in and out of sample.")
    lines += ["Out of sample, each scored:"] + [f"  {name}: {folds.describe(rows)}" for name, rows in report.pools]
    lines += report.baselines
    lines += format_breakdown(report)
    lines += format_cited(report)
    lines += format_regimes(evidence_rows(report, ""))
    for key, title in METRICS.items():
        rows = report.of(key)
        if not rows:
            continue
        lines += ["", f"== {title} ({key}) =="]
        if key in BOOLEAN_METRICS:
            for c in rows:
                verdict = "right" if c.error == 0 else "WRONG"
                lines.append(f"  [{verdict}] {c.row}")
                lines.append(f"          measured {c.unit}={_fmt(bool(c.measured))}, estimate "
                             f"{c.unit}={_fmt(bool(c.estimate))}; {c.note}")
            continue
        ranked = sorted(rows, key=lambda c: -abs(c.error))
        shown = ranked if len(ranked) <= worst else ranked[:worst]
        lines.append(f"  {'all rows' if shown is ranked else f'worst {len(shown)} of {len(rows)}'}:")
        for c in shown:
            out = f" (out of sample {c.error_out:+.1%})" if abs(c.error_out - c.error) > 5e-4 else ""
            lines.append(f"  {c.error:+7.1%}{out}  measured {_fmt(c.measured)} {c.unit}, estimate "
                         f"{_fmt(c.estimate)}  <- {c.row}" + (f"  [{c.note}]" if c.note else ""))
    lines += ["", f"== Skipped rows ({len(report.skipped)}), with the reason =="]
    for s in report.skipped:
        lines.append(f"  {s.row}")
        lines.append(f"      {s.reason}")
    return "\n".join(lines)


README = HERE.parent / "README.md"
ACCURACY_PAGE = HERE.parent / "docs" / "accuracy.md"
TABLE_START = "<!-- accuracy table: written by `python benchmarks/accuracy.py --write-docs` -->\n"
TABLE_END = "\n<!-- end of accuracy table -->"


def readme_block(text: str) -> str:
    """The generated accuracy table inside the README's text."""
    return text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0]


def page_block(text: str) -> str:
    """The report inside docs/accuracy.md's "Report output" section."""
    return text.split("## Report output", 1)[1].split("```\n", 1)[1].rsplit("\n```", 1)[0]


def write_docs(report: Report) -> None:
    """The README's accuracy table and docs/accuracy.md's copy of the report, from `report`."""
    readme = README.read_text(encoding="utf-8")
    README.write_text(readme.replace(TABLE_START + readme_block(readme), TABLE_START + readme_table(report)),
                      encoding="utf-8")
    page = ACCURACY_PAGE.read_text(encoding="utf-8")
    head, tail = page.split("## Report output", 1)
    tail = tail.replace(page_block(page), format_report(report), 1)
    ACCURACY_PAGE.write_text(head + "## Report output" + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/accuracy.py", description=__doc__.split("\n")[0])
    parser.add_argument("--measured", help="directory of measured CSV files (default: benchmarks/measured, "
                                           "or $FLOPSHEET_MEASURED)")
    parser.add_argument("--worst", type=int, default=5, help="worst cases shown per metric (default 5)")
    parser.add_argument("--write-evidence", action="store_true",
                        help=f"also write the out-of-sample errors per regime to udfs/data/{evidence.FILE}, and "
                             "the docs as --write-docs does (the published figures move together)")
    parser.add_argument("--write-docs", action="store_true",
                        help="also write the README's accuracy table and the report block of docs/accuracy.md")
    args = parser.parse_args(argv)
    directory = measured_dir(args.measured)
    if not directory.is_dir():
        print(f"No measured data: {directory} does not exist. Point --measured or FLOPSHEET_MEASURED at the "
              "directory of *_measured.csv files; nothing to compare.")
        return 0
    training_read = read_training(directory)
    if args.write_evidence:      # the table first: the report's in-sample column reads the shipped table
        EFFICIENCY_PATH.write_text(efficiency_text(training_read[0]), encoding="utf-8")
        teff.shipped.cache_clear()
    report = run(directory, training_read)
    if args.write_evidence:
        EVIDENCE_PATH.write_text(evidence_text(report), encoding="utf-8")
    if args.write_docs or args.write_evidence:
        write_docs(report)
    print(format_report(report, args.worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
