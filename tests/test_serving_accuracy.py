"""The serving estimates meet the issue's targets out of sample on the measured rows, and the
constants chosen from rows are the ones the stated rule picks."""

import functools
import re
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import serving_accuracy as acc
from udfs.catalogs import catalog, engines
from udfs.physics import batch_run, capacity

DIRECTORY = acc.default_dir()
pytestmark = pytest.mark.skipif(not (DIRECTORY / "inference_measured.csv").exists(),
                                reason="no measured inference rows")
# issue 20: batch-1 decode <= 12% (ours 10%), time to first token <= 15%
TARGETS = {"decode_b1": 0.10, "fixed_batch": 0.15, "max_throughput": 0.15, "prefill": 0.15}


@pytest.fixture(scope="module")
def evaluated():
    return acc.evaluate(DIRECTORY)


# Regimes the new evidence (issue 20) shows far off, left out of a target and reported instead
# (docs/accuracy.md, "Known misses"), by vendor. None today: AMD MI300X's fixed-batch vLLM rows (AMD's
# latency table, Oracle's V0 rows) meet the target since the V0 profile pays its CPU time per running
# sequence (sequence_overhead_us, chosen out of fold); Intel Gaudi 3's since Gaudi has its own engine profile.
KNOWN_MISSES: dict[str, tuple[str, ...]] = {}
# Regimes whose range and median docs/accuracy.md states (known misses, and misses since fixed, whose paragraph
# says how far they now sit): AMD's fixed-batch rows.
STATED = {**KNOWN_MISSES, "fixed_batch": ("AMD",)}
# Mixture-of-experts rows have issue 20's own target for them, 25%, met (test below); they stay out of the
# dense targets above, which several MoE regimes would still miss (docs/accuracy.md).
MOE_TARGET = 0.25
# Rows served by vLLM, SGLang or TGI have issue 20's own target (25%, every metric, dense), met. Bursts of
# hundreds of requests sent at once by a serving client (vllm bench serve, sglang.bench_serving) are their own
# metric, `burst`: a run's mean, ramp and tail included, which the steady-state estimate does not model; they
# are a known miss (docs/accuracy.md, "Known misses") and set no evidence band.
SERVED_BY = ("vLLM", "SGLang", "Text Generation Inference")
SERVED_TARGET = 0.25


def _served(result) -> bool:
    return (result.case.engine.family or result.case.engine.name) in SERVED_BY


def _known_miss(result, metric: str) -> bool:
    """A row left out of its metric's target: a known miss by vendor, or a MoE row other than a first token (MoE first
    tokens meet the first-token target since vLLM's MoE prefill share, 2026-11-24, and are held to it)."""
    return result.case.gpu.vendor in KNOWN_MISSES.get(metric, ()) or (result.case.model.is_moe and metric != "prefill")


@pytest.mark.parametrize("metric,target", TARGETS.items())
def test_out_of_sample_median_error_meets_target(evaluated, metric, target):
    results, _, _ = evaluated
    vendors = KNOWN_MISSES.get(metric, ())
    rows, _, outside, _ = acc.summary([r for r in results if not _known_miss(r, metric)], metric)
    assert rows >= 5
    assert outside <= target, f"{metric}: {outside:.1%} out of sample"
    for vendor in vendors:  # a miss left out of the target is still a miss: drop it from KNOWN_MISSES once fixed
        _, _, off, _ = acc.summary([r for r in results if r.case.gpu.vendor == vendor and not r.case.model.is_moe],
                                   metric)
        assert off > target, f"{metric} on {vendor} now meets its target: stop leaving it out"


def test_dense_rows_served_by_vllm_sglang_tgi_meet_issue_20s_target_over_every_metric(evaluated):
    """Issue 20's target for rows served by vLLM, SGLang or TGI: 25% out of sample, over every metric."""
    results, _, _ = evaluated
    served = [r for r in results if _served(r) and not r.case.model.is_moe]
    assert len(served) >= 30 and {"burst", "max_throughput", "fixed_batch", "decode_b1"} <= {r.case.metric
                                                                                          for r in served}
    assert statistics.median(abs(r.out_of_sample) for r in served) <= SERVED_TARGET


def test_bursts_are_a_known_miss_until_they_meet_the_max_throughput_target(evaluated):
    """Bursts sent by a serving client are scored apart from the steady state (metric `burst`) and stay a
    known miss (docs/accuracy.md): the test fails once the dense ones meet the max-throughput target."""
    results, _, _ = evaluated
    rows = [r for r in results if not r.case.model.is_moe and r.case.metric == "burst"]
    assert len(rows) >= 20 and all(r.case.burst for r in rows)
    assert statistics.median(abs(r.out_of_sample) for r in rows) > TARGETS["max_throughput"], \
        "dense bursts now meet the max-throughput target: model them as max throughput again"


def test_moe_rows_meet_issue_20s_moe_target(evaluated):
    """Issue 20's target for mixture-of-experts rows: 25% out of sample over every serving metric (first tokens
    and bursts included), met since a MoE layer's experts run as grouped kernels (docs/accuracy.md)."""
    results, _, _ = evaluated
    moe = [r for r in results if r.case.model.is_moe]
    assert len(moe) >= 500 and {"burst", "fixed_batch", "prefill", "max_throughput"} <= {r.case.metric for r in moe}
    assert statistics.median(abs(r.out_of_sample) for r in moe) <= MOE_TARGET
    # without the first tokens, whose 150 gpt-oss-120b rows hold vLLM's MoE prefill share's pool: the step still meets it
    assert statistics.median(abs(r.out_of_sample) for r in moe if r.case.metric != "prefill") <= MOE_TARGET


def test_every_row_with_a_catalogued_gpu_and_model_has_an_estimate(evaluated):
    _, _, skipped = evaluated
    gap = re.compile(r"needs (\w+) of (.+?), which the catalog does not have")
    unsourced = "the mean prompt length of its data set is not recorded"     # a data gap, said so
    assert all("not in the catalog" in reason or gap.search(reason) or unsourced in reason
               for reason in skipped), skipped
    # only MLPerf's Mixtral set lacks its prompt length: every other named set is scored
    assert all("Mixtral" in reason for reason in skipped if unsourced in reason)
    # a GPU whose vendor publishes no 16-bit tensor figure is said so, never guessed (issues 13, 19)
    for reason in skipped:
        if gap.search(reason):
            figure, gpu = gap.search(reason).groups()
            assert getattr(catalog.gpu(gpu), figure) is None


def test_max_throughput_rows_are_scored_not_skipped(evaluated):
    results, _, _ = evaluated
    assert sum(r.case.metric == "max_throughput" for r in results) >= 10


def test_shipped_constants_are_what_the_rule_chooses_from_all_rows():
    cases = acc.cases_of(DIRECTORY)
    for fit in acc.FITTED:
        for field in fit.fields:         # a tied field ships the same chosen value
            shipped = fit.shipped(field)
            assert shipped == pytest.approx(acc.choose(fit, cases), abs=0.006, rel=0.002), (fit.label, field)
            if not fit.engine:           # one value for every engine: calibration's, no profile overrides it
                assert all(getattr(e, field) is None for e in engines.engines())
                continue
            assert field in engines.engine(fit.engine).fitted
            for other in fit.lent:          # an engine lent the value ships it too, and says whose it is
                assert getattr(engines.engine(other), field) == shipped and fit.engine in engines.engine(other).note


def test_leave_one_out_really_leaves_the_row_out(evaluated):
    """A fitted row's out-of-sample error differs from its in-sample error (the constant was
    re-chosen without it); a row no fitted constant depends on scores the same."""
    results, _, _ = evaluated
    fitted = [r for r in results if any(f.selects(r.case) for f in acc.FITTED)]
    others = [r for r in results if not any(f.selects(r.case) for f in acc.FITTED)]
    assert fitted and others
    assert sum(abs(r.in_sample - r.out_of_sample) > 1e-6 for r in fitted) >= len(fitted) // 2
    assert all(r.in_sample == pytest.approx(r.out_of_sample) for r in others)


def test_row_kinds_a_held_out_set_may_hold(tmp_path):
    """Per-sequence TPOT in ms, per-user tokens/s, a fixed concurrency, TTFT in seconds and an
    engine with no profile are all scored; an unreadable value is listed with the reason."""
    header = "model,params_b,precision,gpu,num_gpus,engine,batch_size,input_len,output_len,metric,value,unit,source,note"
    base = "Llama 3.1 8B,8,BF16,H100 SXM 80GB,1,{engine},{batch},1000,200,{metric},{value},{unit},x,"
    rows = [dict(engine="vLLM", batch="1", metric="mean TPOT", value="6.8", unit="ms"),
            dict(engine="vLLM", batch="concurrency 32", metric="output throughput", value="2500", unit="tokens/s"),
            dict(engine="SGLang", batch="16", metric="decode speed", value="90", unit="tokens/s per user"),
            dict(engine="Triton FasterTransformer", batch="1", metric="TTFT", value="0.05", unit="s"),
            dict(engine="vLLM", batch="1", metric="decode", value="n/a", unit="tokens/s")]
    (tmp_path / "inference_measured.csv").write_text("\n".join([header] + [base.format(**r) for r in rows]) + "\n")
    results, _, skipped = acc.evaluate(tmp_path)
    by_metric = {r.case.metric: r for r in results}
    assert len(results) == 4 and len(skipped) == 1 and "not a measurement" in skipped[0]
    assert by_metric["decode_b1"].case.measured == pytest.approx(1000 / 6.8)
    assert abs(by_metric["decode_b1"].in_sample) < 0.25                  # a TPOT, not a throughput
    assert by_metric["prefill"].case.measured == pytest.approx(50) and by_metric["prefill"].case.unit == "ms"
    fixed = sorted((r.case for r in results if r.case.metric == "fixed_batch"), key=lambda c: c.batch)
    assert [c.batch for c in fixed] == [16, 32] and fixed[0].measured == pytest.approx(1440) and fixed[1].continuous
    assert "no profile" in by_metric["prefill"].case.note


def test_the_docs_state_each_known_miss_as_the_report_finds_it(evaluated):
    """docs/accuracy.md "Known misses" gives each stated regime's range and median out of sample, so the
    prose cannot drift from the rows (a model change that moves them must say so)."""
    results, _, _ = evaluated
    page = (Path(__file__).resolve().parents[1] / "docs" / "accuracy.md").read_text(encoding="utf-8")
    page = " ".join(page.split())
    assert STATED
    for metric, vendor in ((m, v) for m, vendors in STATED.items() for v in vendors):
        errors = sorted(r.out_of_sample for r in results if r.case.metric == metric and r.case.gpu.vendor == vendor
                        and not r.case.model.is_moe)
        median = statistics.median(abs(e) for e in errors)
        assert f"by {errors[0]:.0%} to {errors[-1]:.0%} (median {median:.0%};" in page, (metric, vendor)



def test_the_docs_state_the_mlperf_v51_rows_as_the_report_finds_them(evaluated):
    """docs/accuracy.md's MLPerf v5.1 Llama 2 70B paragraph: NVIDIA's systems all estimated too slow by the range
    it gives, AMD's within the range it gives (the v5.1 MoE rows have a paragraph of their own)."""
    results, _, _ = evaluated
    page = " ".join((Path(__file__).resolve().parents[1] / "docs" / "accuracy.md").read_text(encoding="utf-8").split())
    rows = [r for r in results if "inference_results_v5.1" in _source(r) and not r.case.model.is_moe]
    nvidia = sorted(-r.out_of_sample for r in rows if r.case.gpu.vendor == "NVIDIA")
    amd = sorted(r.out_of_sample for r in rows if r.case.gpu.vendor == "AMD")
    assert nvidia and amd and nvidia[0] > 0
    assert f"estimated {nvidia[0] * 100:.0f}-{nvidia[-1]:.0%} too slow" in page
    assert f"within {amd[0]:+.0%} to {amd[-1]:+.0%}" in page


def test_tensor_parallel_batch_1_decode_rows_on_2_to_8_gpus(evaluated):
    """Tensor-parallel decode of one stream, measured on 2 to 8 GPUs (gpt-fast on A100s over NVLink; vLLM's V1
    engine on H200, B200 and MI300X): each estimate, out of sample, within 30% of the row; each pays the two
    all-reduces a layer over the GPU link (collectives.all_reduce_s) and the engine's fixed time per layer."""
    results, _, _ = evaluated
    rows = [r for r in results if r.case.metric == "decode_b1" and r.case.n_gpus > 1
            and r.case.engine.multi_gpu == "tensor" and r.case.engine.name in ("vLLM", "gpt-fast")]
    assert {r.case.n_gpus for r in rows} >= {2, 4, 8} and {r.case.gpu.vendor for r in rows} == {"NVIDIA", "AMD"}
    for r in rows:
        assert abs(r.out_of_sample) <= 0.30, r.case.label
        step = capacity.decode_step(r.case.model, r.case.gpu, r.case.precision, 1, r.case.prompt + r.case.output / 2,
                                    r.case.n_gpus, None, r.case.engine)
        assert step.allreduce > 0


def test_the_fixed_time_per_layer_does_not_shrink_with_the_gpus(evaluated):
    """gpt-fast's Llama 2 7B on 1, 2, 4 and 8 A100s: the weights' time falls as 1/n, the fixed time per layer
    and step does not, which is why tensor-parallel rows were too fast with a 10 us prior (docs/accuracy.md);
    on 8 GPUs the fixed time and the all-reduces are most of a step, and the estimate still follows the rows."""
    results, _, _ = evaluated
    rows = sorted((r for r in results if r.case.engine.name == "gpt-fast" and r.case.model.name == "Llama 2 7B"
                   and r.case.precision == "bf16"), key=lambda r: r.case.n_gpus)
    assert [r.case.n_gpus for r in rows] == [1, 2, 4, 8]
    steps = [capacity.decode_step(r.case.model, r.case.gpu, "bf16", 1, r.case.prompt + r.case.output / 2,
                                  r.case.n_gpus, None, r.case.engine) for r in rows]
    assert all(s.overhead == pytest.approx(steps[0].overhead) for s in steps)
    assert steps[3].weights == pytest.approx(steps[0].weights / 8, rel=0.01)
    assert steps[3].overhead + steps[3].allreduce > steps[3].weights
    assert all(abs(r.out_of_sample) <= 0.15 for r in rows), [f"{r.out_of_sample:+.0%}" for r in rows]


def test_every_apple_row_is_scored_without_a_tensor_figure(evaluated):
    """Apple publishes no TFLOPS: batch-1 decode is memory-bound, so every Apple row (llama.cpp discussion
    #4167's tg128 table, XiongjieDai's M2 Ultra rows) is still estimated, none skipped for the missing figure."""
    results, _, skipped = evaluated
    apple = [r for r in results if r.case.gpu.vendor == "Apple"]
    assert len(apple) >= 11 and all(r.case.metric == "decode_b1" for r in apple)
    assert not any("Apple" in s for s in skipped)


def test_gaudi_rows_run_on_the_profile_of_the_stack_they_measured(evaluated):
    """Intel's table names no engine: its rows are scored with the default for Gaudi 3, the Intel Gaudi
    software profile, whose matrix share is re-chosen out of fold; in and out of sample, the rows are no
    longer systematically too fast (the median signed error within the fixed-batch target) and their
    median absolute error meets it."""
    results, _, _ = evaluated
    gaudi = [r for r in results if r.case.gpu.vendor == "Intel"]
    assert len(gaudi) >= 20
    assert {r.case.engine.name for r in gaudi} == {engines.engine("", gaudi[0].case.gpu).name} \
        == {"Intel Gaudi software"}
    fit = next(f for f in acc.FITTED if f.engine == "Intel Gaudi software")
    assert all(fit.selects(r.case) for r in gaudi)
    for errors in ([r.in_sample for r in gaudi], [r.out_of_sample for r in gaudi]):
        assert abs(statistics.median(errors)) <= TARGETS["fixed_batch"]
        assert statistics.median(abs(e) for e in errors) <= TARGETS["fixed_batch"]
    assert any(r.in_sample != pytest.approx(r.out_of_sample, abs=1e-6) for r in gaudi)   # re-chosen per fold


def _burst_case(evaluated, model: str, prompts: int):
    results, _, _ = evaluated
    return next(r.case for r in results if r.case.model.name == model and r.case.burst == prompts
                and r.case.engine.name == "vLLM")


def test_a_burst_is_scored_as_the_whole_run(evaluated):
    """A burst of N requests sent at once (a `vllm bench serve --num-prompts N` run) is scored as the run from
    the first prompt to the last answer (udfs/physics/batch_run.py), with the answers capped as the row's client
    caps them: never faster than the steady state at the batch it runs, and slower by its tail."""
    case = _burst_case(evaluated, "gpt-oss-20b", 1000)            # 1,000 ShareGPT prompts on one H100
    assert case.answer_cap == pytest.approx(acc.SHAREGPT_MAX_TOTAL_TOKENS - case.prompt)
    run = batch_run.run(case.model, case.gpu, case.precision, case.burst, case.prompt, case.output, case.n_gpus,
                        case.engine, case.kv, case.answer_cap)
    assert acc.burst_throughput(case, case.engine) == pytest.approx(run.tokens_per_sec)
    steady = capacity.serving_point(case.model, case.gpu, case.precision, case.prompt, case.output, case.n_gpus,
                                    None, case.engine, batch=run.batch)
    assert run.tokens_per_sec < steady.tokens_per_sec and run.tail_seconds > 0
    random_case = _burst_case(evaluated, "DeepSeek-R1", 500)      # --random-output-len 200: answers at most 200
    assert random_case.answer_cap == 200


def test_a_burst_row_is_marked_as_one(evaluated):
    results, _, _ = evaluated
    bursts = [r for r in results if r.case.burst]
    assert len([r for r in bursts if r.case.model.is_moe]) >= 10
    assert all(r.case.metric == "burst" and "run to the last answer" in r.case.note for r in bursts)
    assert all(r.case.answer_cap for r in bursts)          # every burst row says how long its answers may run
    assert not [r for r in results if r.case.metric == "burst" and not r.case.burst]


def test_a_burst_gains_with_its_requests_towards_the_steady_state(evaluated):
    """More requests sent at once share the tail of the longest answers: the run's mean rises with N, and
    stays below the steady state at the largest batch (which a run of ever more requests approaches)."""
    case = _burst_case(evaluated, "gpt-oss-20b", 1000)
    speeds = [acc.burst_throughput(replace(case, burst=n), case.engine) for n in (1, 8, 64, 512, 4000, 40000)]
    assert all(b > a for a, b in zip(speeds, speeds[1:]))
    largest = capacity.serving_point(case.model, case.gpu, case.precision, case.prompt, case.output, case.n_gpus,
                                     None, case.engine)
    assert speeds[-1] < largest.tokens_per_sec * 1.01


def test_no_constant_is_chosen_from_a_burst(evaluated):
    """A burst's run (its ramp, its tail, the client's admission) is no steady state a fitted rule describes: no rule
    chooses from a burst (V0's time a sequence from its steady rows only, docs/accuracy.md), so every burst scores
    every constant out of sample, with the value the package ships."""
    results, _, _ = evaluated
    bursts = [r for r in results if r.case.burst]
    assert len(bursts) >= 70 and any(r.case.engine.name == "vLLM V0" for r in bursts)
    assert not [r.case.ref for r in bursts if any(f.selects(r.case) for f in acc.FITTED)]
    assert all(r.in_sample == pytest.approx(r.out_of_sample, abs=1e-12) for r in bursts)


# vLLM ran its V0 engine on ROCm unless VLLM_USE_V1=1 was set until PR #19440 (merged 2025-06-10: ROCm joined the
# platforms using V1 by default; vllm/engine/arg_utils.py _is_v1_supported_oracle fell back to V0 on any platform but
# CUDA and TPU before it).
ROCM_V1_DEFAULT_FROM = "2025-06-10"


def test_a_vllm_row_on_rocm_before_v1_became_its_default_is_scored_as_v0(evaluated):
    results, _, _ = evaluated
    dated = [(r, re.search(r"as_of (\d{4}-\d{2}-\d{2})", _source(r))) for r in results
             if r.case.gpu.vendor == "AMD" and (r.case.engine.family or r.case.engine.name) == "vLLM"]
    early = [r for r, when in dated if when and when.group(1) < ROCM_V1_DEFAULT_FROM]
    assert len(early) >= 5
    assert not [r.case.ref for r in early if not r.case.engine.name.startswith("vLLM V0")]


@functools.lru_cache(maxsize=1)
def _measured_rows() -> dict[str, dict[str, str]]:
    """The measured rows by the reference the tool gives them (its own reader: no line arithmetic)."""
    return dict(acc.read(DIRECTORY))


def _source(result) -> str:
    """The measured row's source cell."""
    return _measured_rows()[result.case.ref]["source"]


def test_the_docs_state_the_mlperf_v51_moe_rows_as_the_report_finds_them(evaluated):
    """docs/accuracy.md's MLPerf v5.1 MoE paragraph gives each model's out-of-sample range as the report finds it:
    Mixtral 8x7B (AMD's vLLM V0 and the TensorRT-LLM H200 and RTX PRO 6000 systems) and DeepSeek-R1 (TensorRT-LLM
    with experts split over the GPUs and attention data-parallel, as the submission ran it)."""
    results, _, _ = evaluated
    page = " ".join((Path(__file__).resolve().parents[1] / "docs" / "accuracy.md").read_text(encoding="utf-8").split())
    for name in ("Mixtral 8x7B", "DeepSeek-R1"):
        errors = sorted(r.out_of_sample for r in results if r.case.model.name == name
                        and r.case.metric == "max_throughput" and "inference_results_v5.1" in _source(r))
        assert len(errors) >= 6, name
        assert f"{name} v5.1 rows: {errors[0]:+.0%} to {errors[-1]:+.0%}" in page, name


def test_the_mlperf_mixtral_rows_meet_the_moe_target_and_lie_in_their_band(evaluated):
    """MLPerf Inference v4.1 Mixtral 8x7B (TensorRT-LLM, 8 x H100 and 8 x H200, the data set's sourced mean
    prompt of 427 tokens): a steady max-throughput MoE estimate within 25% out of sample, and inside the band
    ESTIMATE_EVIDENCE gives its regime."""
    from udfs.physics import evidence
    results, _, _ = evaluated
    rows = [r for r in results if r.case.model.name == "Mixtral 8x7B" and r.case.metric == "max_throughput"
            and "inference_results_v4.1" in _source(r)]
    assert len(rows) == 4 and all(r.case.prompt == 427 for r in rows)
    for r in rows:
        assert abs(r.out_of_sample) <= MOE_TARGET, r.case.label
        ev = evidence.for_option("throughput", r.case.model, r.case.gpu, r.case.precision,
                                 acc.copy_gpus(r.case), r.case.engine.name)
        low, high = ev.value_range(r.estimate_out)
        assert ev.measured and low <= r.case.measured <= high, (r.case.label, ev.text())


def test_a_time_to_first_token_row_at_a_stated_load_finds_requests_in_flight(evaluated):
    """A first-token row measured at a request rate (vLLM PR #20759: 1, 5 and 10 requests/s) is scored with
    capacity.load_ttft at that rate: the requests an arrival finds decoding by Little's law (rate x answer x
    the mean iteration) and the prompts ahead of it. Its estimate is longer than the same request's alone and
    grows with the rate; the estimate is what load_ttft answers (one answer for the worksheet and the tool)."""
    results, _, _ = evaluated
    rows = sorted((r for r in results if r.case.metric == "prefill" and r.case.rate), key=lambda r: r.case.rate)
    assert len(rows) >= 3
    loads = [capacity.load_ttft(r.case.model, r.case.gpu, r.case.precision, r.case.prompt, r.case.answer,
                                r.case.n_gpus, r.case.engine, r.case.kv, rate=r.case.rate) for r in rows]
    deployments: dict[tuple, list] = {}
    for r, ld in zip(rows, loads):
        c = r.case
        assert r.estimate == pytest.approx(ld.ttft_s * 1000)
        alone = capacity.time_to_first_token_s(c.model, c.gpu, c.precision, c.prompt, 1, c.n_gpus, c.engine) * 1000
        assert r.estimate > alone
        deployments.setdefault((c.model.name, c.gpu.name, c.n_gpus, c.engine.name, c.prompt), []).append((r, ld))
    assert len(deployments) >= 2
    for same in deployments.values():      # rows sorted by rate: more load, more in flight, a longer first token
        assert [ld.running for _, ld in same] == sorted(ld.running for _, ld in same)
        assert [r.estimate for r, _ in same] == sorted(r.estimate for r, _ in same)


def test_each_memory_kind_has_its_own_share_for_llama_cpp():
    """llama.cpp's achieved share of bandwidth is chosen per memory kind (HBM, GDDR, Apple's unified memory:
    the Metal kernels reach less of it than the CUDA kernels of GDDR); an engine with no unified-memory share
    uses its GDDR share there."""
    llama, mlc = engines.engine("llama.cpp"), engines.engine("MLC-LLM")
    apple, rtx, h100 = catalog.gpu("Apple M2 Ultra 192GB"), catalog.gpu("RTX 4090"), catalog.gpu("H100 SXM")
    shares = [llama.bandwidth_fraction(g) for g in (apple, rtx, h100)]
    assert shares == [llama.bandwidth_fraction_unified, llama.bandwidth_fraction_gddr, llama.bandwidth_fraction_hbm]
    assert len(set(shares)) == 3 and shares[0] < shares[1]
    assert mlc.bandwidth_fraction_unified is None and mlc.bandwidth_fraction(apple) == mlc.bandwidth_fraction_gddr


def test_a_row_is_scored_with_the_engine_settings_its_note_states(evaluated):
    """A row whose note states its launch configuration is scored with it: "engine batch cap N" (max_num_seqs, a
    copy's max batch size) caps the batch, "engine memory fraction F" (SGLang's --mem-fraction-static, TensorRT-LLM's
    free_gpu_memory_fraction) sets the profile's memory share, "attention data-parallel" runs the MoE layers
    expert-parallel with each GPU attending to its own sequences, "expert parallel, attention tensor-parallel" splits
    the experts over the GPUs with attention split by heads; a row stating none keeps its engine profile."""
    results, _, _ = evaluated
    capped = [r for r in results if "engine batch cap" in _note(r)]
    shared = [r for r in results if "engine memory fraction" in _note(r)]
    split = [r for r in results if "attention data-parallel" in _note(r)]
    ep = [r for r in results if "expert parallel, attention tensor-parallel" in _note(r)]
    assert capped and shared and split and ep
    for r in capped:
        stated = int(re.search(r"engine batch cap ([\d,]+)", _note(r)).group(1).replace(",", ""))
        assert r.case.engine.batch_cap(r.case.gpu) == stated, r.case.label
    for r in shared:
        stated = float(re.search(r"engine memory fraction ([\d.]+)", _note(r)).group(1))
        assert r.case.engine.memory_fraction == stated, r.case.label
    assert all(r.case.engine.moe_parallel == "expert_dp" and r.case.model.is_moe for r in split)
    assert all(r.case.engine.moe_parallel == "expert" and r.case.model.is_moe for r in ep)
    said = ("engine batch cap", "engine memory fraction", "attention data-parallel", "expert parallel, attention")
    plain = [r for r in results if not any(s in _note(r) for s in said) and r.case.engine.name == "TensorRT-LLM"]
    profile = engines.engine("TensorRT-LLM")
    assert plain and all(r.case.engine.moe_parallel == profile.moe_parallel and
                         r.case.engine.memory_fraction == profile.memory_fraction for r in plain)


def test_a_system_row_is_scored_on_the_copies_its_configuration_states(evaluated):
    """An MLPerf system whose note quotes its configuration's `tensor_parallelism N` (NVIDIA's and HPE's configs) is
    scored as copies of N GPUs, not as the best split of its GPUs (which for DeepSeek-R1 is copies of 4, a layout
    NVIDIA did not run); a system that states none keeps the best split."""
    results, _, _ = evaluated
    stated = [r for r in results if r.case.system and re.search(r"tensor_parallelism \d+", _note(r))]
    assert stated
    for r in stated:
        n = int(re.search(r"tensor_parallelism (\d+)", _note(r)).group(1))
        assert r.case.copy == n and acc.copy_gpus(r.case) == n, r.case.label
    assert any(acc.best_split(replace(r.case, copy=0), r.case.engine)[1] != r.case.copy for r in stated)
    assert all(r.case.copy == 0 for r in results if r.case.system and r not in stated)


def _note(result) -> str:
    """The measured row's note cell."""
    return _measured_rows()[result.case.ref]["note"]


def _ttft_row(metric: str) -> dict[str, str]:
    """A synthetic first-token row (the shape of vLLM PR #20759's rows, on one GPU so its prefill can be worked by
    hand) with the given metric text."""
    return {"model": "Llama 3.1 8B", "params_b": "8", "precision": "BF16", "gpu": "H100 SXM 80GB", "num_gpus": "1",
            "engine": "vLLM V1", "batch_size": "", "input_len": "550", "output_len": "150", "metric": metric,
            "value": "50", "unit": "ms", "source": "synthetic", "note": ""}


# A 550-token prompt of Llama 3.1 8B in BF16 on one H100 SXM with vLLM, by hand from the catalog rows: the products
# over 7,504,924,672 parameters (the untied input embedding is a lookup), 2 FLOPs each, at 989.5 dense BF16 TFLOPS x
# vLLM's matmul share 0.70 (11.919 ms); attention 32 heads x (QK + PV 256) x 550 x (32 layers x 550) / (989.5e12 x
# calibration.ATTENTION_FRACTION 0.5) (0.160 ms). A chunk of at most vLLM's 8,192 tokens (on an H100) reads the
# 8,030,261,248 BF16 weights once over 3.35 TB/s x vLLM's HBM share 0.80 (5.993 ms) and pays 300 us a step + 32
# layers x (48.8 us + calibration.EAGER_LAYER_US 47 us: 550 tokens are past vLLM's 512-sequence graph cap) (3.366 ms).
PROMPT_550_S = 2 * 7_504_924_672 * 550 / (989.5e12 * 0.70) + 32 * 256 * 550 * (32 * 550) / (989.5e12 * 0.5)
CHUNK_S = 8_030_261_248 * 2 / (3.35e12 * 0.80) + (300 + 32 * (48.8 + 47)) * 1e-6


@pytest.mark.parametrize("wording", ["at concurrency", "at max-concurrency"])
def test_a_time_to_first_token_row_at_a_stated_concurrency_is_scored_as_a_closed_loop(wording):
    """A first-token row measured with N requests kept in flight ("at concurrency N", "at max-concurrency N") is
    parsed as a closed loop of N, no request rate, and estimated by capacity.load_ttft with that concurrency: one
    client finds nothing running, so its first token is the lone prefill worked by hand (21.437 ms); more clients
    wait longer, growing with N."""
    lone = (PROMPT_550_S + CHUNK_S) * 1000
    assert lone == pytest.approx(21.437, rel=1e-4)
    estimates = []
    for n in (1, 4, 32):
        case = acc.parse("synthetic.csv:2", _ttft_row(f"mean TTFT {wording} {n} (first-token latency)"))
        assert isinstance(case, acc.Case), case
        assert (case.metric, case.concurrency, case.rate, case.prompt, case.answer) == ("prefill", n, None, 550, 150)
        assert f"{n} in flight, a closed loop" in case.note
        estimates.append(acc.estimate(case, case.engine))
        # routing: N is passed as the closed loop's concurrency (the arithmetic is checked by the figure at N = 1)
        load = capacity.load_ttft(case.model, case.gpu, case.precision, 550, 150, 1, case.engine, case.kv, None, n)
        assert estimates[-1] == pytest.approx(load.ttft_s * 1000)
    assert estimates[0] == pytest.approx(lone)        # a rate of 1 a second would find requests decoding: longer
    assert lone < estimates[1] < estimates[2]


def test_a_closed_loop_rows_run_and_recv_interval_are_read_from_its_note():
    """A first-token row at a stated concurrency whose note gives the client's --num-prompts and the server's
    --scheduler-recv-interval is scored as that run: its first `concurrency` requests sent at once (requests) and
    new requests taken every k decode steps (admission_steps), both passed to capacity.load_ttft; a note without
    them leaves both unset. The first wave is worked by hand: 16 prompts of 550 tokens are 8,800 tokens, two chunks
    of vLLM's 8,192-token budget, so the wave's mean is 3/4 of 16 prompts' compute and two chunks' read and fixed
    time (158.98 ms), weighed 16 in the run's 160 requests."""
    row = _ttft_row("mean TTFT at concurrency 16 (closed loop)")
    bare = acc.parse("synthetic.csv:2", row)
    stated = acc.parse("synthetic.csv:2", {**row, "note": "SGLang --scheduler-recv-interval 30; --num-prompts 160"})
    assert isinstance(bare, acc.Case) and isinstance(stated, acc.Case)
    assert (bare.requests, bare.admission_steps) == (None, None)
    assert (stated.requests, stated.admission_steps) == (160, 30)
    wave = (16 * PROMPT_550_S + 2 * CHUNK_S) * 3 / 4
    assert wave * 1000 == pytest.approx(158.98, rel=1e-4)
    steady = capacity.load_ttft(stated.model, stated.gpu, stated.precision, 550, 150, 1, stated.engine, stated.kv,
                                None, 16, admission_steps=30)      # the closed loop's bisection: not by hand
    assert acc.estimate(stated, stated.engine) == pytest.approx((16 * wave + 144 * steady.ttft_s) / 160 * 1000)
    assert acc.estimate(stated, stated.engine) > acc.estimate(bare, bare.engine)


def _in_flight_row(batch: str, metric: str, unit: str, value: str) -> dict[str, str]:
    """A synthetic closed-loop row (the shape of the SemiAnalysis InferenceX rows) with the given metric and unit."""
    return {"model": "DeepSeek-R1", "params_b": "671", "precision": "FP8", "gpu": "B200 180GB", "num_gpus": "8",
            "engine": "SGLang 0.5.12", "batch_size": batch, "input_len": "921.5", "output_len": "921.5",
            "metric": metric, "value": value, "unit": unit, "source": "synthetic",
            "note": "expert parallel, attention tensor-parallel: experts split 8 ways; engine memory fraction 0.85"}


def test_a_throughput_row_at_one_request_in_flight_is_a_closed_loop_not_batch_one_decode():
    """Output tokens/s of a closed loop of one request (each request's prefill in its rate) is scored as continuous
    batching at batch 1, per GPU x GPUs, with the layout and memory share the note states; a TPOT at one in flight
    (a decode speed) stays batch-1 decode."""
    case = acc.parse("synthetic:1", _in_flight_row("1", "output tokens/s at concurrency 1", "tokens/s per GPU", "20"))
    assert (case.metric, case.batch, case.continuous, case.measured) == ("fixed_batch", 1, True, 160)
    assert (case.engine.moe_parallel, case.engine.memory_fraction) == ("expert", 0.85)
    point = capacity.serving_point(case.model, case.gpu, case.precision, case.prompt, case.output, 8, None,
                                   case.engine, case.kv, batch=1)
    assert acc.estimate(case, case.engine) == point.tokens_per_sec
    tpot = acc.parse("synthetic:2", _in_flight_row("1", "mean TPOT at max-concurrency 1", "ms/token", "5"))
    assert (tpot.metric, tpot.measured) == ("decode_b1", 200)


def test_a_dense_throughput_row_at_one_request_in_flight_by_hand():
    """The same closed loop of one request on a dense model on one GPU, worked by hand from the catalog rows:
    Llama 3.1 8B in BF16 on one H100 SXM with SGLang, 1,024-token prompts and answers. Each token costs one decode
    step at the mean context (1,024 + 512 tokens) plus its share of the request's prefill compute."""
    row = {**_in_flight_row("1", "output tokens/s at concurrency 1", "tokens/s per GPU", "100"),
           "model": "Llama 3.1 8B", "params_b": "8", "precision": "BF16", "gpu": "H100 SXM 80GB", "num_gpus": "1",
           "input_len": "1024", "output_len": "1024", "note": ""}
    case = acc.parse("synthetic:1", row)
    assert (case.metric, case.batch, case.continuous, case.measured) == ("fixed_batch", 1, True, 100)
    bandwidth = 3.35e12 * 0.80                      # HBM3 at SGLang's HBM share
    # the step: 7,504,924,672 streamed BF16 weights (the input embedding is a lookup) 5.601 ms; the KV cache, 1,536
    # tokens x 32 layers x 2 x 8 KV heads x 128 x 2 B, 0.075 ms; 300 us + 32 layers x 46 us fixed (within the graph
    # cap): 7.448 ms
    step = 7_504_924_672 * 2 / bandwidth + 1536 * 32 * 2 * 8 * 128 * 2 / bandwidth + (300 + 32 * 46) * 1e-6
    # the prefill's compute over the answer's 1,024 tokens: products 2 x 7,504,924,672 x 1,024 at 989.5 TFLOPS x 0.70,
    # attention 32 heads x 256 x 1,024 x (32 x 1,024) at 989.5 TFLOPS x ATTENTION_FRACTION 0.5: 0.022 ms a token
    prefill = (2 * 7_504_924_672 * 1024 / (989.5e12 * 0.70) + 32 * 256 * 1024 * 32 * 1024 / (989.5e12 * 0.5)) / 1024
    assert 1 / (step + prefill) == pytest.approx(133.87, rel=1e-4)
    assert acc.estimate(case, case.engine) == pytest.approx(1 / (step + prefill))
