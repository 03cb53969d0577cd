"""A batch run of N requests sent at once (udfs/physics/batch_run.py): answer lengths, the steady state
a long run approaches, and the tail a short one pays, checked against hand arithmetic."""

import math
import statistics

import pytest

from udfs.catalogs import catalog, engines
from udfs.errors import FlopsheetError
from udfs.physics import batch_run, capacity

L8, H100 = catalog.model("Llama 3.1 8B"), catalog.gpu("H100 SXM")
VLLM = engines.engine("vLLM")


def test_answers_far_below_their_cap_are_exponential():
    """A cap 1,000 x the mean leaves a plain exponential: the median answer is mean x ln 2, the longest of
    N (the quantile at 1 - 0.5 / N) mean x ln(2N)."""
    lengths = batch_run.answer_lengths(1000, 200, 200_000)
    assert statistics.mean(lengths) == pytest.approx(200, rel=1e-3)
    assert statistics.median(lengths) == pytest.approx(200 * math.log(2), rel=2e-3)
    assert max(lengths) == pytest.approx(200 * math.log(2000), rel=1e-3)


def test_answers_keep_their_mean_under_a_cap_and_never_pass_it():
    for mean, cap in ((194, 1833), (94, 100), (50, 100), (105, 200)):
        lengths = batch_run.answer_lengths(500, mean, cap)
        assert statistics.mean(lengths) == pytest.approx(mean, rel=1e-3)
        assert max(lengths) <= cap and min(lengths) > 0
    near_cap = batch_run.answer_lengths(500, 94, 100)        # most answers run (nearly) to the cap
    assert statistics.median(near_cap) > 94


def test_without_a_cap_every_answer_is_the_mean():
    assert batch_run.answer_lengths(7, 128) == [128.0] * 7
    assert batch_run.answer_lengths(7, 128, 128) == [128.0] * 7


def test_answer_lengths_are_spread_over_the_admission_order():
    """Every stretch of admitted requests holds short and long answers alike (as a random sample does)."""
    lengths = batch_run.answer_lengths(1000, 200, 1800)
    halves = statistics.mean(lengths[:500]), statistics.mean(lengths[500:])
    assert halves[0] == pytest.approx(halves[1], rel=0.05)


@pytest.mark.parametrize("args", [(0, 100, 200), (10, 0, 200), (10, 300, 200)])
def test_bad_lengths_are_refused(args):
    with pytest.raises(FlopsheetError) as info:
        batch_run.answer_lengths(*args)
    assert info.value.code == "#NUM!"


def test_one_request_pays_its_prefill_then_one_step_a_token():
    """N = 1: its prompt's compute with one read of the weights (the iteration at batch 1), then
    answer - 1 decode steps at batch 1 (the prefill gave the first token)."""
    run = batch_run.run(L8, H100, "bf16", 1, 512, 300, 1, VLLM)
    step = capacity.decode_step(L8, H100, "bf16", 1, 512 + 150, 1, None, VLLM).total
    prefill = capacity.prefill_compute_s(L8, H100, "bf16", 512, 1, 1, VLLM)
    assert run.seconds == pytest.approx(step + prefill + 299 * step, rel=1e-9)
    assert run.tokens_per_sec == pytest.approx(300 / run.seconds)


def test_two_uneven_answers_leave_the_longer_decoding_alone():
    """N = 2 with answers spread up to a cap: both prompts in one chunk, the shorter answer's steps at
    batch 2, the rest of the longer one's at batch 1 (the tail)."""
    short, long = sorted(batch_run.answer_lengths(2, 100, 400))
    run = batch_run.run(L8, H100, "bf16", 2, 512, 100, 1, VLLM, max_output_tokens=400)
    step = {b: capacity.decode_step(L8, H100, "bf16", b, 512 + 50, 1, None, VLLM).total for b in (1, 2)}
    prefill = capacity.prefill_compute_s(L8, H100, "bf16", 512, 1, 1, VLLM)
    hand = step[1] + 2 * prefill + (math.ceil(short - 1) * step[2]) + math.ceil(long - short) * step[1]
    assert run.seconds == pytest.approx(hand, rel=0.01)
    assert run.longest == pytest.approx(long)


def test_a_long_run_approaches_the_steady_state():
    """Many times the concurrency cap: N x answer / the steady throughput at that batch (SERVING_THROUGHPUT's point
    at batch = the cap, each sequence holding the answers in flight: in_flight_answer), within the ramp and the tail
    (under 1% at 56 x the cap)."""
    n, prompt, output = 40_000, 512, 256
    run = batch_run.run(L8, H100, "bf16", n, prompt, output, 1, VLLM, max_output_tokens=4 * output)
    held = batch_run.in_flight_answer(output, 4 * output)
    assert run.batch == min(capacity.kv_batch(L8, H100, "bf16", prompt, held, 1, "bf16", VLLM), VLLM.batch_cap(H100))
    # SERVING_THROUGHPUT's time per output token at that batch (capacity._tpot_s), the step at the context in flight
    step = capacity.decode_step(L8, H100, "bf16", run.batch, prompt + held / 2, 1, "bf16", VLLM).total
    tpot = step + run.batch * capacity.prefill_compute_s(L8, H100, "bf16", prompt, 1, 1, VLLM) / output
    assert run.seconds == pytest.approx(n * output * tpot / run.batch, rel=0.01)


def test_the_answers_in_flight_are_length_biased():
    """A request holds a slot for its answer's steps, so a snapshot of the running requests sees each answer in
    proportion to its length: E[a^2] / E[a] of the spread answer_lengths draws. Equal answers: their length; an
    exponential far below its cap: 2 x its mean; answers crowding at their cap: about the cap; and the closed form
    agrees with the lengths answer_lengths hands out (sum(a^2) / sum(a) of 20,000 of them)."""
    assert batch_run.in_flight_answer(200) == 200 and batch_run.in_flight_answer(200, 150) == 200
    assert batch_run.in_flight_answer(200, 200_000) == pytest.approx(400, rel=1e-3)
    assert 99 < batch_run.in_flight_answer(99.5, 100) <= 100
    for mean, cap in ((194, 1833), (94, 100), (50, 100), (105, 200), (100, 100.1)):
        lengths = batch_run.answer_lengths(20_000, mean, cap)
        sampled = sum(a * a for a in lengths) / sum(lengths)
        assert batch_run.in_flight_answer(mean, cap) == pytest.approx(sampled, rel=1e-3)


def test_a_burst_of_spread_answers_runs_fewer_at_once_than_the_mean_answer_fits():
    """The cache holds the answers in flight, not the mean answer: a KV-bound burst of ShareGPT-like answers (mean
    200, at most 1,800) runs the batch that fits prompt + half the length-biased answer (vLLM's blocks as tokens
    arrive), fewer than prompt + half the mean."""
    qwen32, bf16 = catalog.model("Qwen3 32B"), catalog.precision_row("bf16")
    run = batch_run.run(qwen32, H100, "bf16", 1000, 217, 200, 1, VLLM, max_output_tokens=1831)
    held = batch_run.in_flight_answer(200, 1831)
    assert held > 1.5 * 200
    assert run.batch == capacity.kv_batch(qwen32, H100, bf16, 217, held, 1, "bf16", VLLM)
    assert run.batch < capacity.kv_batch(qwen32, H100, bf16, 217, 200, 1, "bf16", VLLM) < VLLM.batch_cap(H100)


def test_a_short_run_is_slower_than_the_steady_state_by_its_tail():
    """1,000 ShareGPT-like answers (mean 200, at most 1,800) on one H100: the longest answer's steps at a
    small batch make the run's mean well below the steady throughput, and the tail is most of that."""
    run = batch_run.run(L8, H100, "bf16", 1000, 220, 200, 1, VLLM, max_output_tokens=1800)
    steady = capacity.serving_point(L8, H100, "bf16", 220, 200, 1, None, VLLM, batch=run.batch)
    assert run.tokens_per_sec < 0.7 * steady.tokens_per_sec
    assert run.longest > 1200 and run.tail_seconds > 0.3 * run.seconds


def test_a_run_that_does_not_fit_is_refused_with_the_figures():
    with pytest.raises(FlopsheetError) as info:
        batch_run.run(catalog.model("Llama 3.1 405B"), H100, "bf16", 10, 512, 128, 1, VLLM)
    assert info.value.code == "#NUM!" and "does not fit" in info.value.message


@pytest.mark.parametrize("prompt, output, longest, kv_bound", [(512, 256, 1024, True), (128, 64, 256, False)])
def test_a_job_far_larger_than_the_simulated_part_matches_the_full_simulation(monkeypatch, prompt, output, longest,
                                                                              kv_bound):
    """A run of more than SIMULATED_PER_SLOT x the cap adds its middle at the pace of the simulated middle instead
    of simulating it: within 0.1% of simulating every request (60 requests a slot), short answers included, whose
    slots spend a larger share of their time prefilling (the full batch's decode step alone was 0.26% short)."""
    bf16 = catalog.precision_row("bf16")
    held = batch_run.in_flight_answer(output, longest)
    cap = batch_run.concurrency(L8, H100, bf16, prompt, held, 1, VLLM.kv_format(bf16), VLLM)
    n = 60 * cap
    short = batch_run.run(L8, H100, "bf16", n, prompt, output, 1, VLLM, max_output_tokens=longest)
    monkeypatch.setattr(batch_run.defaults, "SIMULATED_PER_SLOT", 10**9)
    full = batch_run.run(L8, H100, "bf16", n, prompt, output, 1, VLLM, max_output_tokens=longest)
    assert short.batch == full.batch == cap and (cap < VLLM.batch_cap(H100)) == kv_bound
    assert short.seconds == pytest.approx(full.seconds, rel=1e-3)
    assert short.output_tokens == pytest.approx(full.output_tokens, rel=1e-3)


# --- the worksheet functions (udfs/api/functions/batch.py)

JOB = ("Llama 3.1 8B", "H100 SXM")


def _call(name, *args):
    from udfs.api import registry
    return registry.call(name, *args)


def test_a_huge_job_takes_its_tokens_over_the_steady_throughput():
    """10 million requests: requests x output tokens / SERVING_THROUGHPUT (the same engine's default, TensorRT-LLM
    on an H100, whose batch is its cap), within half a percent: a request's first token comes from its prefill,
    so a batch run decodes 255 steps of a 256-token answer where the steady state counts 256."""
    hours = _call("BATCH_JOB_HOURS", *JOB, 10**7, 1024, 256)
    steady = _call("SERVING_THROUGHPUT", *JOB, "bf16", 1024, 256)
    assert hours == pytest.approx(10**7 * 256 / steady / 3600, rel=5e-3)
    assert hours < 10**7 * 256 / steady / 3600


def test_a_small_job_is_mostly_its_tail():
    """1,000 requests whose answers spread up to 2,048 tokens (mean 256) take longer than with every answer 256
    long: the longest answers' last steps run at a small batch (tail_hours), most of the difference."""
    even = _call("BATCH_JOB_HOURS", *JOB, 1000, 1024, 256)
    spread = _call("BATCH_JOB_HOURS", *JOB, 1000, 1024, 256, 2048)
    tail = _call("BATCH_JOB_HOURS", *JOB, 1000, 1024, 256, 2048, "bf16", 1, 1, "", "", "tail_hours")
    assert spread > even and tail > 0.5 * (spread - even)


def test_gpu_hours_and_cost_count_every_gpu_of_every_copy():
    hours = _call("BATCH_JOB_HOURS", "Llama 3.3 70B", "H100 SXM", 40000, 1024, 256, "", "fp8", 2, 4)
    gpu_hours = _call("BATCH_JOB_HOURS", "Llama 3.3 70B", "H100 SXM", 40000, 1024, 256, "", "fp8", 2, 4, "", "",
                      "gpu_hours")
    one_copy = _call("BATCH_JOB_HOURS", "Llama 3.3 70B", "H100 SXM", 10000, 1024, 256, "", "fp8", 2)
    assert gpu_hours == pytest.approx(hours * 8) and hours == pytest.approx(one_copy)
    cost = _call("BATCH_JOB_COST", 2.5, "Llama 3.3 70B", "H100 SXM", 40000, 1024, 256, "", "fp8", 2, 4)
    assert cost == pytest.approx(2.5 * gpu_hours)


@pytest.mark.parametrize("args,code", [
    ((0, 1024, 256), "#NUM!"),                       # no requests
    ((1.5, 1024, 256), "#NUM!"),                     # not a whole number
    (("many", 1024, 256), "#VALUE!"),
    ((10, 1024, 256, 100), "#NUM!"),                 # longest answer below the mean
    ((10, 1024, 256, "", "bf16", 1, 0), "#NUM!"),    # no copies
])
def test_bad_job_input_is_a_clear_excel_error(args, code):
    with pytest.raises(FlopsheetError) as info:
        _call("BATCH_JOB_HOURS", *JOB, *args)
    assert info.value.code == code and info.value.message


def test_an_fp8_kv_cache_holds_more_requests_at_once():
    """The KV cache's format is passed through: FP8 halves each request's cache, so a KV-bound job (Llama 3.3 70B
    in FP8 on two H100s, 4,000-token prompts) runs about twice the requests at once and finishes sooner."""
    args = ("Llama 3.3 70B", "H100 SXM", 2000, 4000, 200, "", "fp8", 2, 1, "vllm")
    sixteen, eight = (batch_run.run(catalog.model(args[0]), catalog.gpu(args[1]), "fp8", 2000, 4000, 200, 2,
                                    engines.engine("vllm"), kv) for kv in ("bf16", "fp8"))
    assert eight.batch == pytest.approx(2 * sixteen.batch, rel=0.02) and eight.seconds < sixteen.seconds
    assert _call("BATCH_JOB_HOURS", *args, "fp8") == pytest.approx(eight.seconds / 3600)


def test_a_job_that_does_not_fit_says_by_how_much():
    with pytest.raises(FlopsheetError) as info:
        _call("BATCH_JOB_HOURS", "Llama 3.1 405B", "H100 SXM", 10)
    assert info.value.code == "#NUM!" and "does not fit" in info.value.message


def test_more_copies_than_requests_are_refused_not_billed():
    """10 requests on 100 copies: 90 copies would hold their GPUs for the run with nothing to do; #NUM! saying so,
    for the hours and the cost alike. 10 copies of 10 requests is allowed (one request each)."""
    for name, head in (("BATCH_JOB_HOURS", ()), ("BATCH_JOB_COST", (2.0,))):
        with pytest.raises(FlopsheetError) as info:
            _call(name, *head, *JOB, 10, 1024, 256, "", "bf16", 1, 100)
        assert info.value.code == "#NUM!" and "copies (100) exceed requests (10)" in info.value.message
    one_each = _call("BATCH_JOB_HOURS", *JOB, 10, 1024, 256, "", "bf16", 1, 10)
    assert one_each == pytest.approx(_call("BATCH_JOB_HOURS", *JOB, 1, 1024, 256))
