"""A batch run: N requests sent at once (an offline batch job, or a benchmark burst such as
`vllm bench serve --num-prompts N` at an infinite request rate), from the first prompt to the
last answer. Standard library only.

A steady state (capacity.serving_point) runs a full batch forever. A finite run does not:
- the engine admits requests up to its concurrency cap (the KV cache under its memory rule, and
  its own batch limit: capacity.kv_batch, Engine.batch_cap), the rest wait for a slot; the cache is sized
  for the answers in flight, which are length-biased (in_flight_answer);
- prompts are prefilled within the engine's token budget per iteration (Engine.token_budget:
  vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size), beside the running decodes,
  each chunk paying its compute (capacity.prefill_compute_s); an engine without a budget
  prefills every admitted prompt at once;
- each iteration decodes one token of every running answer (capacity.decode_step at that batch),
  and an answer leaves when it reaches its length, so the batch shrinks towards the end and the
  run lasts at least the longest answer's steps (the tail).
Answer lengths (answer_lengths) follow an exponential distribution truncated at the longest
answer allowed, its rate set so that the mean is the one given.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, replace

from . import capacity, defaults
from ..catalogs.catalog import Gpu, Model, Precision, as_precision
from ..catalogs.engines import Engine, engine as engine_profile
from ..errors import num_error

# Spreads the answer lengths over the admission order: request i takes the length of rank
# frac(i x (sqrt(5) - 1) / 2), a low-discrepancy order (Weyl's sequence), so that every stretch of
# admitted requests holds short and long answers alike, as a random sample does, without a random
# number (the same run gives the same answer).
_GOLDEN = (math.sqrt(5) - 1) / 2


@dataclass(frozen=True)
class BatchRun:
    seconds: float             # first prompt in to last answer out
    output_tokens: float
    batch: int                 # the most requests the engine runs at once (its concurrency cap, or N)
    longest: float             # the longest answer's tokens (its steps set the tail)
    tail_seconds: float        # time after the batch fell below half the cap for good

    @property
    def tokens_per_sec(self) -> float:
        return self.output_tokens / self.seconds


def _mean_share(s: float) -> float:
    """Mean / cap of an exponential truncated at the cap, rate s / cap (s < 0: density rising to the cap)."""
    if abs(s) < 1e-6:
        return 0.5 - s / 12
    return 1 / s - (0.0 if s > 700 else 1 / math.expm1(s))      # e^700: the second term is nil


def _rate(share: float) -> float:
    """The s with _mean_share(s) = share (0 < share < 1): bisection, the mean falls as s rises (below -700,
    e^-s overflows: answers that close to the cap are all at it, to 1 in 700)."""
    lo, hi = -700.0, 1e7
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _mean_share(mid) > share else (lo, mid)
    return (lo + hi) / 2


def answer_lengths(requests: int, mean: float, cap: float | None = None) -> list[float]:
    """Answer lengths of `requests` requests, in admission order: the quantiles at (i - 0.5) / N of an
    exponential truncated at `cap` with mean `mean` (a positive rate when the mean is below half the cap,
    the shape of answers that stop with the same chance at every token; a negative one above it, most
    answers running to the cap). No cap, or a mean at the cap: every answer `mean` long."""
    if requests < 1 or mean <= 0:
        raise num_error("requests must be >= 1 and output_tokens > 0")
    if cap is not None and cap < mean * (1 - 1e-9):
        raise num_error(f"max_output_tokens ({cap:g}) must be at least output_tokens ({mean:g})")
    if cap is None or cap <= mean:
        return [float(mean)] * requests
    s = _rate(mean / cap)
    sorted_lengths = [cap * (-math.log1p(u * math.expm1(-s)) / s if abs(s) > 1e-9 else u)
                      for u in ((i + 0.5) / requests for i in range(requests))]
    order = sorted(range(requests), key=lambda i: (i * _GOLDEN) % 1.0)
    lengths = [0.0] * requests
    for rank, i in enumerate(order):
        lengths[i] = sorted_lengths[rank]
    return lengths


def _second_share(s: float) -> float:
    """E[u^2] of the answer lengths as shares of the cap (u in [0, 1], density rising (s < 0) or falling as e^(-s u)):
    (2 - e^-s (s^2 + 2 s + 2)) / (s^2 (1 - e^-s)), written with e^s for s < 0 so that it cannot overflow; a series
    near 0 (1/3 - s / 12), where the closed form cancels."""
    if abs(s) < 1e-4:
        return 1 / 3 - s / 12
    if s > 0:
        e = math.exp(-s) if s < 700 else 0.0
        return (2 - e * (s * s + 2 * s + 2)) / (s * s * (1 - e))
    e = math.exp(s)
    return (s * s + 2 * s + 2 - 2 * e) / (s * s * (1 - e))


def in_flight_answer(mean: float, cap: float | None = None) -> float:
    """The answer length that sizes the requests running at once: E[a^2] / E[a] of the answers answer_lengths spreads
    (mean `mean`, at most `cap`). A request holds its slot for its answer's steps, so the requests in flight at a
    moment are its answers weighted by their length (the inspection paradox of renewal theory): what a running
    request holds on average is its prompt plus half of that (an engine handing out KV blocks as tokens arrive,
    kv_reservation "mean"), or plus all of it (an engine reserving each request's whole answer, "max"), not plus
    half the mean answer. Every answer the same length (no cap, or a mean at the cap): that length; an exponential
    far below its cap: twice its mean."""
    if cap is None or cap <= mean:
        return float(mean)
    s = _rate(mean / cap)
    return cap * _second_share(s) / _mean_share(s)


def concurrency(model: Model, gpu: Gpu, precision: Precision, prompt_tokens: float, output_tokens: float,
                n_gpus: int, kv: Precision | str, eng: Engine) -> int:
    """Requests the engine runs at once: as many as their KV cache fits, within its batch cap (capacity.concurrency_cap)."""
    return capacity.concurrency_cap(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, kv, eng)[0]


def run(model: Model, gpu: Gpu, precision: Precision | str, requests: int, prompt_tokens: float,
        output_tokens: float, n_gpus: int = 1, eng: Engine | str | None = None,
        kv_precision: Precision | str | None = None, max_output_tokens: float | None = None) -> BatchRun:
    """N requests of `prompt_tokens` each, answers averaging `output_tokens` (at most `max_output_tokens`:
    answer_lengths), all sent at once; iteration by iteration until the last answer ends."""
    eng = engine_profile(eng, gpu)
    precision = as_precision(precision)
    if prompt_tokens < 1:
        raise num_error("prompt_tokens must be >= 1")
    if requests < 1 or output_tokens <= 0:
        raise num_error("requests must be >= 1 and output_tokens > 0")
    kv = kv_precision or eng.kv_format(precision)
    held = in_flight_answer(output_tokens, max_output_tokens)
    cap = min(int(requests), concurrency(model, gpu, precision, prompt_tokens, held, n_gpus, kv, eng))
    simulated = min(int(requests), defaults.SIMULATED_PER_SLOT * cap)
    lengths = answer_lengths(simulated, output_tokens, max_output_tokens)
    per_token = capacity.prefill_compute_s(model, gpu, precision, prompt_tokens, 1, n_gpus, eng) / prompt_tokens
    context = prompt_tokens + held / 2                   # the mean a running sequence holds (in_flight_answer)
    steps: dict[int, float] = {}

    def step_s(batch: int) -> float:                     # one iteration's decode (and weight read) at `batch`
        if batch not in steps:
            steps[batch] = capacity.decode_step(model, gpu, precision, batch, context, n_gpus, kv, eng).total
        return steps[batch]

    run_, admitted = _simulate(lengths, prompt_tokens, cap, eng.token_budget(gpu), per_token, step_s)
    extra = int(requests) - simulated
    if not extra:
        return run_
    # The middle of a longer run, not simulated: each further request at the pace the simulated run admitted them in
    # its middle half, where the cap is full and answers end (and prompts prefill beside the decodes) as they will
    # (defaults.SIMULATED_PER_SLOT); the full batch's decode step alone would leave out the slots still prefilling.
    first, last = simulated // 4, 3 * simulated // 4
    each = (admitted[last] - admitted[first]) / (last - first)
    return replace(run_, seconds=run_.seconds + extra * each, output_tokens=run_.output_tokens + extra * output_tokens)


def _simulate(lengths: list[float], prompt: float, cap: int, budget: int | None, per_token: float,
              step_s) -> tuple[BatchRun, list[float]]:
    """The run, iteration by iteration: admit up to `cap`, prefill within the token `budget` (beside the
    decodes: each running answer takes one token of it), decode every running answer one token. The
    prefill's last position gives an answer's first token; it then needs length - 1 decode steps. Runs of
    identical iterations (nothing to admit or prefill) are taken in one jump to the next answer's end.
    With the run, the second at which each request was admitted (in request order)."""
    waiting = deque(range(len(lengths)))
    prefilling: deque[list[float]] = deque()           # [index, prompt tokens left], in admission order
    ends: list[float] = []                             # decode step count at which each running answer ends
    done_steps, seconds, tail_from = 0, 0.0, None
    admitted: list[float] = []
    running = 0
    while waiting or prefilling or ends:
        while waiting and running < cap:
            admitted.append(seconds)
            prefilling.append([waiting.popleft(), prompt])
            running += 1
        decoding = len(ends)
        if not prefilling:                             # nothing to prefill: jump to the next answer's end
            jump = max(1, math.ceil(ends[0] - done_steps - 1e-9))
            seconds += jump * step_s(decoding)
            done_steps += jump
        else:
            room = math.inf if budget is None else max(0, budget - decoding)
            chunk = 0.0
            while prefilling and chunk < room:
                take = min(prefilling[0][1], room - chunk)
                chunk += take
                prefilling[0][1] -= take
                if prefilling[0][1] <= 1e-9:
                    index = int(prefilling.popleft()[0])
                    heapq.heappush(ends, done_steps + (1 if decoding else 0) + max(0.0, lengths[index] - 1))
            seconds += step_s(max(1, decoding)) + chunk * per_token
            done_steps += 1 if decoding else 0
        while ends and ends[0] <= done_steps + 1e-9:
            heapq.heappop(ends)
            running -= 1
        if tail_from is None and not waiting and running < cap / 2:
            tail_from = seconds
    return BatchRun(seconds, sum(lengths), cap, max(lengths),
                    seconds - (tail_from if tail_from is not None else seconds)), admitted
