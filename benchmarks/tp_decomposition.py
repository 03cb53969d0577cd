"""Where a tensor-parallel decode step's time goes, beside the step the measurement implies (issue 20).

    python3 benchmarks/tp_decomposition.py [--measured DIR]

A developer tool, like benchmarks/serving_accuracy.py (whose rows it reads). For every measured row served
tensor parallel at a stated load (time to first token at a request rate or concurrency) and every tensor-parallel
batch-1 decode row, it prints the model's decode step (capacity.decode_step) split into what it is made of:

  weights   the larger of streaming the GPU's share of the dense weights and the products' compute (GEMMs split
            N/TP); moe: a MoE model's routed experts and routing on top (udfs/physics/moe.py)
  KV        the larger of reading the KV cache and attention's compute
  all-reduce 2 per layer of tokens x hidden x 2 bytes (collectives.all_reduce_s): its latency part and its bytes part
  fixed     the engine's time per step and per layer (kernel launches, CUDA-graph replay) and CPU time per sequence

beside the step implied by the measurement: a batch-1 row's 1 / tokens/s; at a load, the per-output-token time
the row's note states (TPOT: the decode step plus the prefills it waits on, against the model's mean iteration,
which counts both) and, where stated, the median inter-token latency (one step; vLLM V0 multi-step streams a
window of `scheduler_steps` tokens at once, so its ITL is divided by the window). A second table checks the
all-reduce model against published timings of the all-reduce kernels engines run (ALLREDUCE_TIMINGS).

A third table does the same for every dense max-throughput and fixed-batch row (one GPU and tensor parallel, so the
two can be compared): the step at the batch the estimate runs (a system result's best split into copies), the prefill
time a step carries, and the time a step of that batch would take for the row's measured tokens/s; then the signed
error by regime (engine, one GPU or tensor parallel, link class, vendor). The estimates are the shipped ones (in
sample); the report's out-of-sample figures differ only where a row is in a FITTED pool.
Nothing here is chosen from rows: it prints, it fits nothing.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from udfs.catalogs import catalog  # noqa: E402
from udfs.physics import capacity, collectives  # noqa: E402

from benchmarks import serving_accuracy as sa  # noqa: E402

# Published all-reduce timings of the kernels vLLM and SGLang run for tensor parallelism, bf16 tensors of
# (tokens, 8,192): vLLM pull request #24532 ("add nccl symmetric memory for all reduce", 2025-09-09), its
# benchmarks/kernels/benchmark_device_communicators.py table for TP = 4 on H100 (the PR's H100 runs;
# milliseconds per all-reduce). ca_1stage / ca_2stage: vLLM's custom all-reduce, one-shot and two-shot;
# pynccl: NCCL. Tensor size in MB as the table gives it (tokens x 8,192 x 2 bytes: 0.50 MB = 32 tokens).
ALLREDUCE_SOURCE = "vLLM PR #24532 https://github.com/vllm-project/vllm/pull/24532 (2025-09-09), TP = 4, H100"
ALLREDUCE_GPU = "H100 SXM"
ALLREDUCE_TIMINGS = {   # tokens: (ca_1stage, ca_2stage, pynccl) in microseconds
    32: (10, 17, 21),
    64: (14, 18, 23),
    96: (19, 25, 25),
    128: (23, 26, 28),
    192: (30, 35, 33),
    256: (38, 42, 39),
}
ALLREDUCE_GPUS = 4
HIDDEN = 8192


def _notes(directory: Path) -> dict[str, str]:
    return {ref: row.get("note", "") for ref, row in sa.read(directory)}


def _stated_ms(note: str, what: str) -> float | None:
    """A per-token time the row's note states ('median TPOT 25.03 ms', 'mean TPOT at this rate 14.12 ms')."""
    match = re.search(rf"{what}[a-z ]*?([\d.]+) ms", note)
    return float(match.group(1)) if match else None


def parts(case: sa.Case, batch: float) -> dict[str, float]:
    """The model's decode step for `batch` sequences of the case, in ms, by part: read from the capacity.Step the
    estimate uses (nothing worked out again here but the all-reduces' latency part)."""
    m, g, eng, n = case.model, case.gpu, case.engine, case.n_gpus
    context = case.prompt + (case.answer or case.output) / 2
    step = capacity.decode_step(m, g, case.precision, batch, context, n, case.kv, eng)
    tp = capacity.layout(g, eng, n)[0]
    latency = 0.0
    if tp > 1:      # the latency of the kernel the engine runs at this size (collectives.engine_all_reduce_lines)
        ring, one = collectives.engine_all_reduce_lines(collectives.link_class(g, tp), tp)
        size = batch * m.dim("hidden") * 2
        latency = m.dim("layers") * 2 * min((ring, *([one] if one else [])), key=lambda line: line[0] + line[1] * size)[0]
    return {"total": step.total * 1e3, "stream": step.stream * 1e3, "gemm": step.products * 1e3,
            "weights": step.weights * 1e3, "experts": (step.experts + step.routing) * 1e3,
            "kv": step.attention * 1e3, "ar": step.allreduce * 1e3, "ar_lat": latency * 1e3,
            "fixed": step.overhead * 1e3}


def _row(label: str, batch: float, p: dict[str, float], implied: str) -> str:
    return (f"{label:<58} {batch:6.1f} {p['total']:7.2f} {p['stream']:6.2f} {p['gemm']:6.2f} {p['experts']:6.2f} "
            f"{p['kv']:5.2f} "
            f"{p['ar']:5.2f} ({p['ar_lat']:4.2f}) {p['fixed']:6.2f}   {implied}")


HEADER = (f"{'row':<58} {'batch':>6} {'step':>7} {'wts':>6} {'gemm':>6} {'moe':>6} {'kv':>5} {'a-r':>5} {'(lat)':>6} "
          f"{'fixed':>6}   measured (ms)")


def _label(case: sa.Case) -> str:
    return f"{case.ref.split(':')[-1]:>4} {case.model.name[:14]} {case.n_gpus}x{case.gpu.name[:10]} {case.engine.name[:18]}"


def at_load(cases: list[sa.Case], notes: dict[str, str]) -> list[str]:
    """Rows at a stated load served tensor parallel: the step at the requests decoding the model finds."""
    lines = []
    for c in cases:
        if c.metric != "prefill" or not (c.rate or c.concurrency) or c.n_gpus < 2:
            continue
        load = capacity.load_ttft(c.model, c.gpu, c.precision, c.prompt, c.answer, c.n_gpus, c.engine, c.kv,
                                  c.rate, c.concurrency)
        note = notes.get(c.ref, "")
        tpot, itl = _stated_ms(note, "TPOT"), _stated_ms(note, "ITL")
        window = c.engine.scheduler_steps or 1
        implied = f"TPOT {tpot:g} vs iteration {load.iteration_s * 1e3:.2f}" if tpot else "no TPOT stated"
        if itl:
            implied += f"; ITL/step {itl / window:.2f}"
        at = f"{c.rate:g} req/s" if c.rate else f"{c.concurrency:g} in flight"
        lines.append(_row(f"{_label(c)} {at}", max(1.0, load.running), parts(c, max(1.0, load.running)), implied))
    return lines


def batch_one(cases: list[sa.Case]) -> list[str]:
    """Tensor-parallel batch-1 decode rows: the measured step is 1 / tokens/s."""
    lines = []
    for c in cases:
        if c.metric != "decode_b1" or c.n_gpus < 2 or c.engine.multi_gpu != "tensor":
            continue
        lines.append(_row(_label(c), 1, parts(c, 1), f"{1e3 / c.measured:.2f}"))
    return lines


def allreduce_check() -> list[str]:
    """The all-reduce model against the published timings (ALLREDUCE_TIMINGS)."""
    gpu = catalog.gpu(ALLREDUCE_GPU)
    link = collectives.link_class(gpu, ALLREDUCE_GPUS)
    lines = [f"All-reduce over {ALLREDUCE_GPUS} x {gpu.name}, bf16 (tokens, {HIDDEN}): model (as engines run it, "
             f"collectives.engine_all_reduce_s; the ring at the one-shot latency, all_reduce_s, beside it) vs "
             f"{ALLREDUCE_SOURCE}",
             f"{'tokens':>6} {'MB':>5} {'model us':>9} {'ring us':>8} {'one-shot':>9} {'two-shot':>9} {'NCCL':>6} "
             f"{'model/best':>10}"]
    for tokens, measured in ALLREDUCE_TIMINGS.items():
        size = tokens * HIDDEN * 2
        model = collectives.engine_all_reduce_s(link, ALLREDUCE_GPUS, size) * 1e6
        ring = collectives.all_reduce_s(link, ALLREDUCE_GPUS, size) * 1e6
        lines.append(f"{tokens:6d} {size / 2**20:5.2f} {model:9.1f} {ring:8.1f} {measured[0]:9d} {measured[1]:9d} "
                     f"{measured[2]:6d} {model / min(measured):10.2f}")
    return lines


@dataclass(frozen=True)
class Loaded:
    """A dense max-throughput or fixed-batch row at the batch its estimate runs."""
    case: sa.Case
    gpus: int                   # GPUs of one model copy (a system result's best split)
    batch: float
    parts: dict[str, float]     # the decode step by part, ms (parts())
    prefill_ms: float           # prefill time a step carries (steady state), or a static batch's prefill / answer
    estimate: float             # the shipped estimate, the row's unit (tokens/s, all its GPUs)

    @property
    def error(self) -> float:
        return self.estimate / self.case.measured - 1

    @property
    def measured_step_ms(self) -> float:
        """A step of `batch` sequences (its prefill share included) at the row's measured tokens/s."""
        return (self.parts["total"] + self.prefill_ms) * self.estimate / self.case.measured

    @property
    def product_rate_factor(self) -> float | None:
        """Where the products bound the step (they outlast the weight stream and are half of it or more): how much
        faster than modelled they would have to run for the row's measured tokens/s, the rest of the step as modelled
        and the prefill counted as products (its attention, reads and launches are not taken out: an approximation).
        None elsewhere."""
        p = self.parts
        if p["gemm"] < max(p["stream"], p["total"] / 2):
            return None
        rest = p["total"] - p["gemm"]
        return (p["gemm"] + self.prefill_ms) / (self.measured_step_ms - rest)

    def regime(self) -> dict[str, str]:
        g = self.case.gpu
        layout = "one GPU" if self.gpus == 1 else "tensor parallel" if self.case.engine.multi_gpu == "tensor" \
            else "layer pipeline"
        link = collectives.link_class(g, self.gpus).kind if layout == "tensor parallel" else "-"   # the all-reduces'
        return {"engine": self.case.engine.name, "layout": layout,
                "link": link, "vendor": g.vendor or "?"}


def _loaded(c: sa.Case) -> Loaded:
    m, g, p = c.model, c.gpu, catalog.as_precision(c.precision)
    if c.metric == "max_throughput":
        gpus = sa.best_split(c, c.engine)[1]
        point = capacity.serving_point(m, g, p, c.prompt, c.output, gpus, c.max_tpot_ms, c.engine, c.kv,
                                       c.max_ttft_ms)
        batch = float(point.batch)
    else:
        gpus, batch = c.n_gpus, float(c.batch)
    one = replace(c, n_gpus=gpus)
    step = parts(one, batch)
    kv = c.kv or c.engine.kv_format(p)
    if c.metric == "fixed_batch" and not c.continuous:     # a static batch: its prefill once, over the answer
        prefill = capacity.prefill_seconds(m, g, p, c.prompt, batch, gpus, c.engine) / c.output
    else:
        prefill = capacity._tpot_s(m, g, p, c.prompt, c.output, gpus, kv, c.engine, batch) - step["total"] / 1e3
    return Loaded(c, gpus, batch, step, prefill * 1e3, sa.estimate(c, c.engine))


def loaded_rows(cases: list[sa.Case]) -> list[Loaded]:
    """Every dense max-throughput and fixed-batch row (not bursts) at the batch its estimate runs."""
    return [_loaded(c) for c in cases if c.metric in ("max_throughput", "fixed_batch") and not c.burst
            and not c.model.is_moe]


def at_max(rows: list[Loaded]) -> list[str]:
    lines = [f"{'row':<58} {'copy':>4} {'link':>8} {'batch':>6} {'step':>7} {'wts':>6} {'gemm':>6} {'kv':>5} "
             f"{'a-r':>5} {'(lat)':>6} {'fixed':>6} {'prefill':>7} {'measured':>8} {'error':>7} {'rate x':>6}"]
    for r in sorted(rows, key=lambda r: (r.case.metric, r.case.engine.name, r.gpus, r.case.ref)):
        p, reg = r.parts, r.regime()
        lines.append(f"{_label(r.case):<58} {r.gpus:4d} {reg['link'][:8]:>8} {r.batch:6.0f} {p['total']:7.2f} "
                     f"{p['stream']:6.2f} {p['gemm']:6.2f} {p['kv']:5.2f} {p['ar']:5.2f} ({p['ar_lat']:4.2f}) "
                     f"{p['fixed']:6.2f} {r.prefill_ms:7.2f} {r.measured_step_ms:8.2f} {r.error:+7.1%} "
                     f"{_factor(r.product_rate_factor):>6}")
    return lines


def _factor(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def by_regime(rows: list[Loaded]) -> list[str]:
    """Median absolute and median signed error of each metric by regime (shipped estimates)."""
    lines = [f"{'metric':<15} {'dimension':<8} {'regime':<28} {'rows':>4} {'|error|':>8} {'signed':>8} "
             f"{'range':>17}"]
    for metric in ("max_throughput", "fixed_batch"):
        mine = [r for r in rows if r.case.metric == metric]
        for dimension in ("engine", "layout", "link", "vendor"):
            for value in sorted({r.regime()[dimension] for r in mine}):
                errors = [r.error for r in mine if r.regime()[dimension] == value]
                lines.append(f"{metric:<15} {dimension:<8} {value[:28]:<28} {len(errors):4d} "
                             f"{statistics.median(abs(e) for e in errors):8.1%} {statistics.median(errors):+8.1%} "
                             f"{min(errors):+8.1%}..{max(errors):+.1%}")
    return lines


def report(directory: Path) -> str:
    cases = sa.cases_of(directory)
    notes = _notes(directory)
    loaded = loaded_rows(cases)
    out = ["Tensor-parallel decode step by part (ms per step, per GPU, all GPUs at once; a-r = the all-reduces, "
           "(lat) their latency part)", "", "At a stated load (batch: the requests decoding the model finds)",
           HEADER, *at_load(cases, notes), "", "Batch 1", HEADER, *batch_one(cases), "", *allreduce_check(), "",
           "Dense max throughput and fixed batch at the batch the estimate runs (ms per step; copy = GPUs a model "
           "copy; prefill = the prefill time a step carries; measured = a step of that batch at the row's tokens/s; "
           "shipped estimates, in sample; rate x = where the products bound the step, how much faster than modelled "
           "they would have to run for the measured figure, the prefill counted as products)", *at_max(loaded), "",
           "By regime", *by_regime(loaded)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measured", type=Path, default=sa.default_dir())
    args = parser.parse_args(argv)
    sys.stdout.write(report(args.measured))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
