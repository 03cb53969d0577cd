"""Queueing of requests for the serving slots of a fleet: an M/G/c approximation.

Each model copy runs `batch` requests at once, so a fleet of `copies` copies is a queue with
c = copies x batch servers (slots); a request holds its slot for its whole generation,
S = output tokens x TPOT, so a slot serves mu = 1 / S requests a second and the offered load
is a = lambda x S (the fleet's utilization is a / c, the same share as demand / capacity).

The probability that a request waits is Erlang C, C(c, a) (Erlang 1917; e.g. Kleinrock,
"Queueing Systems" vol. 1, 1975, sec. 3.5). In M/M/c the wait beyond that is exponential with
rate c mu - lambda, so the p-th percentile wait is ln(C / (1 - p)) / (c mu - lambda) (0 when
C <= 1 - p). For general arrivals and service times the Allen-Cunneen approximation (Allen,
"Probability, Statistics, and Queueing Theory", 2nd ed. 1990, sec. 6.2) scales the M/M/c wait
by (ca^2 + cs^2) / 2, the squared coefficients of variation of inter-arrival and service times;
the percentile is scaled the same way (an approximation, stated in docs/serving-model.md).
Standard library only.
"""

from __future__ import annotations

import math

from ..errors import num_error

# Poisson arrivals (many independent users): inter-arrival times exponential, ca^2 = 1.
ARRIVAL_CV2 = 1.0
# Service-time variability: chat answers vary in length about as much as an exponential
# distribution (cs^2 = 1, which makes Allen-Cunneen exactly M/M/c); the capacity model's
# identical requests would be cs^2 = 0, which halves the wait - 1 is the cautious choice.
SERVICE_CV2 = 1.0


def erlang_c(servers: int, load: float) -> float:
    """Probability an arrival waits in M/M/c with `servers` servers and offered load `load`
    (Erlangs, lambda / mu); 1 when the queue is unstable (load >= servers). Erlang B from the
    Poisson terms near c (summed down from c, where they matter), then C = cB / (c - a(1 - B))."""
    if servers < 1:
        raise num_error("a queue needs at least one server")
    if load <= 0:
        return 0.0
    if load >= servers:
        return 1.0
    if servers > HALFIN_WHITT_SERVERS:
        return _halfin_whitt(servers, load)
    ratio, total = 1.0, 1.0          # terms a^k / k! relative to k = c, summed from c down
    for k in range(servers, 0, -1):
        ratio *= k / load
        total += ratio
        if total > 1e280:            # the terms below c dwarf P(c): no wait to speak of
            return 0.0
        if k < load and ratio < 1e-17 * total:
            break
    blocking = 1 / total
    return servers * blocking / (servers - load * (1 - blocking))


# Above this many servers the sum below would take as many steps as servers; the Halfin-Whitt
# limit (Halfin and Whitt, "Heavy-traffic limits for queues with many exponential servers",
# Operations Research 29(3), 1981) is then exact to well under a percent, in constant time.
HALFIN_WHITT_SERVERS = 100_000


def _halfin_whitt(servers: int, load: float) -> float:
    """Erlang C for many servers: with beta = (c - a) / sqrt(a), C = 1 / (1 + beta Phi(beta) / phi(beta))."""
    beta = (servers - load) / math.sqrt(load)
    if beta > 37:                     # phi(beta) underflows: the chance of waiting is nil
        return 0.0
    phi = math.exp(-beta * beta / 2) / math.sqrt(2 * math.pi)
    big_phi = 0.5 * (1 + math.erf(beta / math.sqrt(2)))
    return 1 / (1 + beta * big_phi / phi)


def wait_percentile_s(arrivals_per_s: float, servers: int, service_s: float, percentile: float,
                      arrival_cv2: float = ARRIVAL_CV2, service_cv2: float = SERVICE_CV2) -> float:
    """Seconds a request waits for a slot at `percentile` (0.95: p95); inf when arrivals reach
    the slots' capacity."""
    if not 0 < percentile < 1:
        raise num_error(f"percentile must be between 0 and 100% (exclusive), got {percentile:g}")
    if arrivals_per_s <= 0:
        return 0.0
    spare_rate = servers / service_s - arrivals_per_s
    if spare_rate <= 0:
        return math.inf
    waits = erlang_c(servers, arrivals_per_s * service_s)
    if waits <= 1 - percentile:
        return 0.0
    return (arrival_cv2 + service_cv2) / 2 * math.log(waits / (1 - percentile)) / spare_rate


# ---------------------------------------------------------------------------- the prefill queue

def iteration_wait_s(arrivals_per_s: float, step_s: float, prompt_s: float) -> tuple[float, float]:
    """(mean wait of an arriving prompt for the iteration in progress, mean iteration length) of a continuous-
    batching engine that puts every prompt waiting at an iteration's start into that iteration (vLLM, SGLang
    and TensorRT-LLM schedule waiting prefills at the next iteration, beside the running decode).

    Iterations run back to back while sequences decode: iteration n is the decode step `step_s` plus `prompt_s`
    for each of the N_n prompts that arrived during iteration n - 1, so with Poisson arrivals at rate lambda,
    N_n is Poisson with mean lambda L_(n-1) and L_n = s + x N_n. Its stationary moments:
        E[L]   = s / (1 - lambda x)
        E[L^2] = (s^2 + (2 s + x) lambda x E[L]) / (1 - (lambda x)^2)
    A Poisson arrival sees time averages (PASTA) and lands in an iteration picked in proportion to its length,
    so it waits the residual E[L^2] / (2 E[L]) (renewal theory's residual life: Kleinrock, "Queueing Systems"
    vol. 1, 1975, sec. 5.2; Cox, "Renewal Theory", 1962). With no arrivals it is half a step, the running
    step's wait alone. inf when the prompts alone fill the GPU's time (lambda x >= 1)."""
    if arrivals_per_s <= 0:
        return step_s / 2, step_s
    load = arrivals_per_s * prompt_s
    if load >= 1:
        return math.inf, math.inf
    mean = step_s / (1 - load)
    second = (step_s ** 2 + (2 * step_s + prompt_s) * load * mean) / (1 - load ** 2)
    return second / (2 * mean), mean


def prefill_wait_s(arrivals_per_s: float, prefill_s: float) -> float:
    """Mean wait of a prompt for the prompts ahead of it when nothing else runs: an M/D/1 queue of prefills
    (the Pollaczek-Khinchine mean wait, rho s / (2 (1 - rho)), rho = lambda s; Kleinrock vol. 1 sec. 5.5);
    inf when the prefills fill the GPU's time."""
    load = arrivals_per_s * prefill_s
    if load <= 0:
        return 0.0
    return load * prefill_s / (2 * (1 - load)) if load < 1 else math.inf
