"""Where a prefill's time goes, by the model, beside what the measurement implies (issue 20: long-prompt bursts
too fast on H100, first tokens too short).

    python3 benchmarks/prefill_breakdown.py [--measured DIR] [--min-prompt TOKENS]

For every burst row with prompts of at least --min-prompt tokens (default 1,000) and every time-to-first-token
row, one prompt's prefill as capacity.prefill_compute_s and capacity._prefill_s take it apart: the matrix products
(FLOPs, the rate of the weight format's units x the engine's matrix share), causal attention (half the square,
at the 16-bit peak x calibration.ATTENTION_FRACTION), the chunks of the engine's token budget (each re-reads the
weights and pays the fixed costs), the tensor-parallel exchange. A burst adds the modelled run
(udfs/physics/batch_run.py): its prefills and, the rest, its decode steps. What the row implies: for a burst,
the prompt FLOPs over the measured run less the modelled decode (the achieved FLOP/s the prefill would need if the
decode were right); for a lone first token, the FLOPs over the measured time. Nothing is fitted here.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from udfs.physics import arch, batch_run, capacity, serving  # noqa: E402
from udfs.physics import calibration as cal  # noqa: E402
from udfs.errors import FlopsheetError  # noqa: E402

from benchmarks import serving_accuracy as sa  # noqa: E402


@dataclass(frozen=True)
class Breakdown:
    """One prompt's prefill by the model (seconds unless named), per GPU of the copy."""
    product_flops: float      # matrix-product FLOPs of the prompt, whole copy
    attention_flops: float    # causal attention FLOPs of the prompt, whole copy
    products_s: float
    attention_s: float
    exchange_s: float         # tensor-parallel traffic and pipeline hand-offs
    chunks: int               # chunks of the engine's token budget
    prefill_s: float          # capacity._prefill_s: compute + a weight read and fixed costs per chunk
    matmul_rate: float        # FLOP/s the products run at (one GPU)
    attention_rate: float     # FLOP/s attention runs at (one GPU)

    @property
    def compute_s(self) -> float:
        return self.products_s + self.attention_s + self.exchange_s


def breakdown(case: sa.Case) -> Breakdown:
    """The model's parts of one prompt's prefill for a measured row (its engine, GPUs and format)."""
    m, g, p, n, eng = case.model, case.gpu, case.precision, case.n_gpus, case.engine
    split = capacity._split(eng, n)
    rate = capacity._flops(g, p, eng, "prefill")
    per_token = capacity._product_seconds_per_token(m, arch.matmul_params(m), p, rate,
                                                    lambda: capacity._flops(g, None, eng, "prefill"))
    products_s = per_token * case.prompt / split
    attention = capacity.attention_flops(m, case.prompt)
    attention_rate = capacity._attention_rate(g)
    compute = capacity.prefill_compute_s(m, g, p, case.prompt, 1, n, eng)
    budget = eng.token_budget(g)
    chunks = max(1, -(-int(case.prompt) // budget)) if budget else 1
    return Breakdown(2 * arch.matmul_params(m) * case.prompt, attention, products_s,
                     attention / attention_rate / split, max(0.0, compute - products_s - attention / attention_rate / split),
                     chunks, capacity._prefill_s(m, g, p, case.prompt, 1, n, eng), rate, attention_rate)


def implied_rate(case: sa.Case, parts: Breakdown) -> tuple[float, float, float]:
    """(seconds the row leaves the prefills, the model's for the same, FLOP/s per GPU the row implies). A burst: the
    measured run less the modelled decode, against the modelled prefills; a first token: the measured time against
    the model's (at the row's load where it states one), all of it taken as prefill."""
    flops = (parts.product_flops + parts.attention_flops) / case.n_gpus
    if case.burst:
        run = batch_run.run(case.model, case.gpu, case.precision, case.burst, case.prompt, case.output, case.n_gpus,
                            case.engine, case.kv, case.answer_cap)
        modelled = case.burst * parts.compute_s
        left = run.output_tokens / case.measured - (run.seconds - modelled)
        return left, modelled, case.burst * flops / left if left > 0 else float("inf")
    if case.unit == "ms":
        measured, modelled = case.measured / 1000, sa.estimate(case, case.engine) / 1000
    else:
        measured, modelled = case.prompt / case.measured, case.prompt / sa.estimate(case, case.engine)
    return measured, modelled, flops / measured


def selected(cases: list[sa.Case], min_prompt: float) -> list[sa.Case]:
    """Long-prompt bursts and the first-token rows, bursts first."""
    bursts = [c for c in cases if c.metric == "burst" and c.prompt >= min_prompt]
    return bursts + [c for c in cases if c.metric == "prefill"]


def line(case: sa.Case) -> str:
    parts = breakdown(case)
    left, modelled, rate = implied_rate(case, parts)
    peak = serving.peak_flops(case.gpu, None, "prefill")[0]
    share = parts.attention_s / parts.compute_s
    what = "burst prefills" if case.burst else "first token" + (" at its load" if case.rate or case.concurrency else "")
    return (f"{case.label[:96]}\n"
            f"    products {parts.products_s * 1e3:9.2f} ms at {parts.matmul_rate / 1e12:6.0f} TFLOPS  "
            f"attention {parts.attention_s * 1e3:8.2f} ms at {parts.attention_rate / 1e12:5.0f} "
            f"(x{cal.ATTENTION_FRACTION} of 16-bit peak; {share:.0%} of compute)  exchange "
            f"{parts.exchange_s * 1e3:6.2f} ms  chunks {parts.chunks} of {case.engine.token_budget(case.gpu) or 'all'}  "
            f"prefill {parts.prefill_s * 1e3:9.2f} ms\n"
            f"    {what}: model {modelled:8.3f} s, row leaves "
            f"{left:8.3f} s -> {rate / 1e12:6.0f} TFLOPS a GPU = {rate / peak:.2f} of the 16-bit peak")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measured", type=Path, default=sa.default_dir())
    parser.add_argument("--min-prompt", type=float, default=1000.0)
    args = parser.parse_args(argv)
    for case in selected(sa.cases_of(args.measured), args.min_prompt):
        try:
            print(line(case))
        except FlopsheetError as exc:
            print(f"{case.label[:96]}\n    no estimate: {exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
