"""Where a mixture-of-experts decode step goes, by the model, beside the step the measurement implies (issue 20:
MoE at load too fast; DeepSeek-R1 about 2x).

    python3 benchmarks/moe_breakdown.py [--measured DIR] [--model NAME]

For every steady-state MoE row (max throughput, or a fixed number of requests in flight) whose model copy runs
on several GPUs or at a stated batch, the operating point's step as capacity._decode_step and
capacity._prefill_per_step_s take it apart, per GPU: the weights' stream and the routed experts' products
(`weights`), attention over the KV cache, the all-reduces or the expert all-to-alls (`exchange`), the fixed time
and per-sequence CPU time (`fixed`), the prefills a step carries on average (`prefill`) and, with data-parallel
attention, the wait for the busiest rank's prefill (`wait`). Their sum is the modelled time per output token
(capacity._tpot_s). What the row implies: its batch a copy x copies / its output tokens/s, the step it would
have at the modelled batch (for a row at a stated concurrency, its own batch). Beside them the layout the row states
(`TPn`: a slice of every expert on each of n GPUs; `EPn`: E/n whole experts a GPU, attention tensor-parallel; `EPn-dp`:
with data-parallel attention), the tokens each touched expert multiplies, and the touched experts a GPU runs: the mean
and the busiest GPU's (moe.busiest_rank_experts), which the step waits for; `experts` is the routed experts' part of
`weights`, `implied` what the measured step leaves for them once every other modelled part is taken off. Nothing is
fitted here.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from udfs.catalogs.catalog import as_precision  # noqa: E402
from udfs.errors import FlopsheetError  # noqa: E402
from udfs.physics import capacity, moe  # noqa: E402

from benchmarks import serving_accuracy as sa  # noqa: E402


@dataclass(frozen=True)
class StepParts:
    """The model's time per output token at a row's operating point, by part (seconds, per GPU)."""
    batch: int             # sequences a model copy decodes
    ranks: int             # GPUs sharing one copy's step
    context: float         # mean tokens a sequence attends over
    weights: float
    attention: float
    exchange: float
    fixed: float
    prefill: float
    wait: float
    measured_s: float      # the step the row implies at this batch
    layout: str = ""       # TPn, EPn (attention tensor-parallel) or EPn-dp (attention data-parallel)
    per_expert: float = 0  # tokens each touched expert multiplies
    touched_mean: float = 0    # touched experts a GPU runs, on average
    touched_max: float = 0     # ... on the busiest GPU
    experts: float = 0     # the routed experts' part of `weights` (capacity.Step.experts)

    @property
    def modelled_s(self) -> float:
        return self.weights + self.attention + self.exchange + self.fixed + self.prefill + self.wait

    @property
    def experts_implied_s(self) -> float:
        """What the measured step leaves for the routed experts once every other modelled part is taken off it."""
        return self.measured_s - (self.modelled_s - self.experts)


def selected(cases: list[sa.Case], model: str = "") -> list[sa.Case]:
    """Steady-state MoE rows (max throughput, or continuous batching at a stated concurrency)."""
    return [c for c in cases if c.model.is_moe and not c.burst
            and (c.metric == "max_throughput" or (c.metric == "fixed_batch" and c.continuous))
            and (not model or c.model.name == model)]


def parts(case: sa.Case) -> StepParts:
    """The model's parts of a row's time per output token at its operating point."""
    m, g, p, eng = case.model, case.gpu, as_precision(case.precision), case.engine
    n = sa.copy_gpus(case)
    kv = case.kv or eng.kv_format(p)
    point = capacity.serving_point(m, g, p, case.prompt, case.output, n, case.max_tpot_ms, eng, case.kv,
                                   case.max_ttft_ms, batch=case.batch or None)
    context = case.prompt + case.output / 2
    step = capacity._decode_step(m, g, p, point.batch, context, n, kv, eng)
    mean = point.batch * capacity.prefill_compute_s(m, g, p, case.prompt, 1, n, eng) / case.output
    carried = capacity._prefill_per_step_s(m, g, p, case.prompt, case.output, n, eng, point.batch)
    copies = case.n_gpus // n
    split = capacity._split(eng, n)
    ep = split if eng.expert_parallel else 1
    _, experts, k = moe.routed(m)
    touched = moe.touched_experts(experts, k, point.batch)
    layout = f"EP{ep}" + ("-dp" if eng.dp_attention else "") if ep > 1 else f"TP{split}"
    return StepParts(point.batch, split, context, step.weights, step.attention, step.allreduce,
                     step.overhead, mean, carried - mean, point.batch * copies / case.measured, layout,
                     moe.tokens_per_expert(m, point.batch), touched / ep,
                     moe.busiest_rank_experts(experts, k, point.batch, ep), step.experts)


COLUMNS = ("weights", "attention", "exchange", "fixed", "prefill", "wait")


def report(cases: list[sa.Case]) -> str:
    lines = ["MoE decode step by part (ms per output token, per GPU) against the step each row implies",
             f"{'row':<28}{'GPUs':<22}{'layout':<8}{'a rank':>7}{'ctx':>7}{'tok/exp':>8}{'exp/GPU':>8}{'busiest':>8}"
             + "".join(f"{c:>10}" for c in COLUMNS)
             + f"{'model':>9}{'measured':>10}{'ratio':>7}{'experts':>9}{'implied':>9}"]
    for case in cases:
        try:
            s = parts(case)
        except FlopsheetError as exc:
            lines.append(f"{case.ref:<28}no estimate: {exc}")
            continue
        figures = "".join(f"{1e3 * getattr(s, c):>10.1f}" for c in COLUMNS)
        lines.append(f"{case.ref.split('/')[-1]:<28}{f'{case.n_gpus} x {case.gpu.name}'[:21]:<22}{s.layout:<8}"
                     f"{s.batch / s.ranks:>7.0f}{s.context:>7.0f}{s.per_expert:>8.1f}{s.touched_mean:>8.1f}"
                     f"{s.touched_max:>8.1f}{figures}{1e3 * s.modelled_s:>9.1f}"
                     f"{1e3 * s.measured_s:>10.1f}{s.measured_s / s.modelled_s:>7.2f}{1e3 * s.experts:>9.1f}"
                     f"{1e3 * s.experts_implied_s:>9.1f}  {case.model.name}, "
                     f"{case.engine.name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--measured", default=None, help="directory holding inference_measured.csv")
    parser.add_argument("--model", default="", help="only this catalog model (e.g. DeepSeek-R1)")
    args = parser.parse_args(argv)
    directory = Path(args.measured) if args.measured else sa.default_dir()
    print(report(selected(sa.cases_of(directory), args.model)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
