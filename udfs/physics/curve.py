"""The serving trade-off curve: what one model copy delivers at each batch size, from one
sequence (fastest for each user) to the largest batch that fits (most tokens per GPU).

Serving configurators (NVIDIA AIConfigurator, SemiAnalysis InferenceX) present serving as this
curve: throughput per GPU against the tokens/s each user sees. Each point here is
`capacity.serving_point` at a fixed batch, so the curve's last point is SERVING_THROUGHPUT's
operating point, and its cost is the one definition of cost per 1M output tokens
(`economics.cost_per_1m_output_tokens`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalogs.catalog import Gpu, Model, Precision
from ..catalogs.engines import Engine
from . import capacity, economics


@dataclass(frozen=True)
class CurvePoint:
    batch: int
    tokens_per_sec_per_gpu: float     # output tokens/s of the copy / its GPUs
    tokens_per_sec_per_user: float    # 1000 / TPOT: what each request sees while it generates
    tpot_ms: float
    ttft_ms: float
    usd_per_1m_output: float | None   # None without a price
    operating_point: bool             # the chosen batch: SERVING_THROUGHPUT's (largest that fits and meets targets)


def batches(largest: int, chosen: int | None = None) -> list[int]:
    """1, 2, 4, ... below `largest`, then `largest` itself: evenly spread on the log scale the
    curve is read on, always ending at the operating point, with a chosen batch in its place."""
    points, b = [], 1
    while b < largest:
        points.append(b)
        b *= 2
    return sorted(set(points + [largest] + ([chosen] if chosen else [])))


def serving_curve(model: Model, gpu: Gpu, precision: Precision | str, prompt_tokens: float, output_tokens: float,
                  n_gpus: int, usd_per_gpu_hour: float | None, eng: Engine | str | None = None,
                  kv_precision: Precision | str | None = None, max_tpot_ms: float | None = None,
                  chosen: int | None = None) -> list[CurvePoint]:
    """One point per batch up to the operating point (which fits and meets `max_tpot_ms`); `chosen`
    marks another batch (a report's batch override) instead of the operating point."""
    top = capacity.serving_point(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, eng,
                                 kv_precision)
    mark = chosen or top.batch
    points = []
    for b in batches(top.batch, mark):
        p = top if b == top.batch else capacity.serving_point(model, gpu, precision, prompt_tokens, output_tokens,
                                                              n_gpus, None, eng, kv_precision, batch=b)
        cost = (economics.cost_per_1m_output_tokens(usd_per_gpu_hour, n_gpus, p.tokens_per_sec)
                if usd_per_gpu_hour is not None else None)
        points.append(CurvePoint(b, p.tokens_per_sec / n_gpus, 1000 / p.tpot_ms, p.tpot_ms, p.ttft_ms, cost,
                                 b == mark))
    return points
