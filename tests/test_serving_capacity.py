"""Serving capacity (udfs/physics/capacity.py) and engine profiles (udfs/catalogs/engines.py)."""

import csv
import math
import subprocess
import sys
from importlib import resources

import pytest

import udfs
from udfs.physics import calibration as cal
from udfs.physics import capacity, queueing
from udfs.catalogs import catalog, engines
from udfs.errors import FlopsheetError

L8, L70 = catalog.model("Llama 3.1 8B"), catalog.model("Llama 3.3 70B")
H100, H200, A100 = catalog.gpu("H100 SXM"), catalog.gpu("H200"), catalog.gpu("A100 SXM 80GB")


@pytest.mark.parametrize("text,name", [
    ("TensorRT-LLM", "TensorRT-LLM"), ("trtllm", "TensorRT-LLM"), ("trt-llm", "TensorRT-LLM"),
    ("llama.cpp", "llama.cpp"), ("llamacpp", "llama.cpp"), ("hf", "Hugging Face transformers"),
    ("transformers", "Hugging Face transformers"), ("exllama", "ExLlamaV2"), ("VLLM", "vLLM"),
    ("sglang", "SGLang"), ("mlc-llm", "MLC-LLM")])
def test_engine_names_match_loosely(text, name):
    assert engines.engine(text).name == name


def test_default_engine_depends_on_the_gpu_vendor():
    assert engines.engine("", H100).name == "TensorRT-LLM"
    assert engines.engine(None, catalog.gpu("MI300X")).name == "vLLM"
    assert engines.engine(None, catalog.gpu("M2 Ultra")).name == "llama.cpp"     # vLLM does not run on Apple silicon


def test_unknown_engine_is_a_clear_error():
    with pytest.raises(FlopsheetError) as info:
        engines.engine("tensorflow-serving")
    assert info.value.code == "#N/A" and "engine" in info.value.message


def test_every_engine_row_is_sourced_and_complete():
    text = resources.files("udfs").joinpath("data", "engines.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    assert {r["name"] for r in rows} >= {"llama.cpp", "vLLM", "SGLang", "TensorRT-LLM", "MLC-LLM", "ExLlamaV2",
                                          "Hugging Face transformers"}
    for row in rows:
        assert None not in row, row["name"]
        assert row["source"] and row["as_of"] and row["note"], row["name"]
        for name in filter(None, row["fitted"].split(";")):
            assert name in engines.ENGINE_FIELDS
    for e in engines.engines():
        assert 0 < e.bandwidth_fraction_hbm <= 1 and 0 < e.bandwidth_fraction_gddr <= 1
        assert e.multi_gpu in ("tensor", "layer") and e.memory_rule in ("total", "free")


def test_trtllm_bench_row_within_target():
    """trtllm-bench max throughput, Llama 3.1 8B FP8 on one H100 SXM, 2048/2048: 9,305 tok/s."""
    point = capacity.serving_point(L8, H100, "fp8", 2048, 2048)
    assert point.engine == "TensorRT-LLM"
    assert abs(point.tokens_per_sec / 9305 - 1) <= 0.15
    assert point.limited_by == "KV cache" and 150 < point.batch < 400


def test_batch_1_decode_is_close_to_the_bandwidth_bound():
    """One sequence: with fused kernels in one CUDA graph (TensorRT-LLM) the step time is a little above
    weights / bandwidth; vLLM's V1 engine adds its fixed time per layer (attention launched outside its
    piecewise graphs) and per step, and nothing else."""
    step = capacity.decode_step(L8, H100, "fp16", 1, 1024, 1, None, "trtllm")
    floor = L8.params * 2 / (H100.bandwidth_tbs * 1e12)
    assert floor < step.total < 1.6 * floor
    # by hand: Llama 3.1 8B's 7,504,924,672 streamed FP16 weights (the input embedding is a lookup) and 1,024 tokens
    # of FP16 KV cache (32 layers x 2 x 8 KV heads x 128 x 2 B a token) over the H100 SXM's 3.35 TB/s at the HBM
    # share 0.80 of both engines: 5.601 + 0.050 ms; fixed time TensorRT-LLM 200 us + 32 layers x 5 us (6.011 ms),
    # vLLM 300 us + 32 x 48.8 us (a batch of 1 within its CUDA graphs) (7.512 ms)
    streamed = (7_504_924_672 * 2 + 1024 * 32 * 2 * 8 * 128 * 2) / (3.35e12 * 0.80)
    assert step.total == pytest.approx(streamed + (200 + 32 * 5) * 1e-6)
    assert step.total == pytest.approx(0.0060108, rel=1e-4)
    v1 = capacity.decode_step(L8, H100, "fp16", 1, 1024, 1, None, engines.engine("vllm"))
    assert v1.total == pytest.approx(streamed + (300 + 32 * 48.8) * 1e-6)
    assert v1.total - step.total == pytest.approx(1.5016e-3, rel=1e-4)


def test_large_batch_matmuls_become_compute_bound():
    small = capacity.decode_step(L8, H100, "fp16", 8, 256, eng="vllm")
    large = capacity.decode_step(L8, H100, "fp16", 1024, 256, eng="vllm")     # 32 GiB of KV cache: it fits
    assert large.weights > 3 * small.weights      # the weight matrices now cost FLOPs, not bytes
    assert large.attention > 100 * small.attention   # every sequence's KV is read


def test_tensor_parallel_splits_the_step_and_adds_all_reduces():
    one = capacity.decode_step(L70, H100, "fp8", 16, 2048, 1, eng="trtllm")    # 64 x 2,048 tokens do not fit on one
    two = capacity.decode_step(L70, H100, "fp8", 16, 2048, 2, eng="trtllm")
    assert two.allreduce > 0 == one.allreduce
    assert two.total < one.total


def test_layer_split_engines_do_not_speed_up_with_more_gpus():
    """llama.cpp's default multi-GPU mode is a pipeline: batch-1 speed stays ~ one GPU's."""
    gpu = catalog.gpu("RTX 4090")
    one = capacity.decode_step(catalog.model("Llama 3 8B"), gpu, "fp16", 1, 512, 1, eng="llama.cpp").total
    two = capacity.decode_step(catalog.model("Llama 3 8B"), gpu, "fp16", 1, 512, 2, eng="llama.cpp").total
    assert one <= two < 1.1 * one


@pytest.mark.parametrize("eng", ["trtllm", "vllm", "sglang"])
@pytest.mark.parametrize("model,gpu,precision", [
    ("Llama 3.1 8B", "H100", "fp8"), ("Llama 3.3 70B", "H200", "fp8"), ("Mixtral 8x7B", "A100 SXM 80GB", "fp16"),
    ("Qwen2.5 7B", "L40S", "fp16")])
def test_more_gpus_or_looser_tpot_never_lower_throughput(eng, model, gpu, precision):
    m, g = catalog.model(model), catalog.gpu(gpu)
    n = 2 if m.params > 40e9 else 1

    def rising(points):
        """Throughputs where the configuration works (too few GPUs or too tight a target fail)."""
        found = []
        for gpus, target in points:
            try:
                found.append(capacity.serving_point(m, g, precision, 1024, 256, gpus, target, eng).tokens_per_sec)
            except FlopsheetError:
                continue
        return found and all(b >= a * 0.999 for a, b in zip(found, found[1:]))

    assert rising([(gpus, None) for gpus in (1, 2, 4, 8)])
    assert rising([(n, target) for target in (25, 40, 60, 100, 200, None)])


def test_tpot_target_limits_the_batch_and_is_met():
    free = capacity.serving_point(L8, H100, "fp8", 1024, 512)
    capped = capacity.serving_point(L8, H100, "fp8", 1024, 512, 1, free.tpot_ms / 2)
    assert capped.batch < free.batch and capped.limited_by == "TPOT target"
    assert capped.tpot_ms <= free.tpot_ms / 2


def test_latency_no_batch_can_meet_is_num_error_with_reason():
    with pytest.raises(FlopsheetError) as info:
        capacity.serving_point(L70, A100, "fp16", 1024, 256, 4, 1.0)
    assert info.value.code == "#NUM!" and "no batch meets TPOT 1 ms" in info.value.message


def test_model_that_does_not_fit_is_num_error_with_reason():
    with pytest.raises(FlopsheetError) as info:
        capacity.serving_point(L70, catalog.gpu("RTX 4090"), "fp16", 1024, 256)
    assert info.value.code == "#NUM!" and "does not fit" in info.value.message
    with pytest.raises(FlopsheetError) as info:        # weights fit, one sequence's KV does not
        capacity.serving_point(L70, H200, "fp16", 200_000, 200_000)
    assert info.value.code == "#NUM!" and "KV cache" in info.value.message


def test_fp8_kv_cache_doubles_the_sequences_that_fit():
    fp16 = capacity.serving_point(L8, H100, "fp8", 2048, 2048, kv_precision="fp16")
    fp8 = capacity.serving_point(L8, H100, "fp8", 2048, 2048, kv_precision="fp8")
    assert 1.9 < fp8.batch / fp16.batch < 2.1


def test_gpus_for_traffic_sizes_copies_from_throughput():
    plan = capacity.gpus_for_traffic(L8, H100, 600, 1024, 256, max_tpot_ms=50, precision="fp8")
    demand = 600 / 60 * 256 * 1.2                  # 20% burst headroom by default
    assert plan.demand_tokens_per_sec == pytest.approx(demand)
    serving = plan.copies - plan.spare_copies       # N+1: one spare copy by default
    assert plan.spare_copies == 1 and plan.wait_ms == 0     # at 35% load no request waits at the p95
    assert serving * plan.point.tokens_per_sec >= demand > (serving - 1) * plan.point.tokens_per_sec
    assert plan.point.tpot_ms <= 50 and plan.gpus == plan.copies * plan.n_gpus


def test_gpus_for_traffic_grows_with_traffic_and_picks_a_group_that_fits():
    small = capacity.gpus_for_traffic(L70, H100, 10, 2048, 512, precision="fp16")
    large = capacity.gpus_for_traffic(L70, H100, 5000, 2048, 512, precision="fp16")
    assert small.n_gpus >= 2                       # 70B in 16-bit needs two 80 GB GPUs at least
    assert large.gpus > small.gpus


def test_gpus_for_traffic_bad_inputs():
    for kwargs in (dict(requests_per_minute=0), dict(requests_per_minute=10, headroom=-0.1)):
        args = dict(model=L8, gpu=H100, prompt_tokens=512, output_tokens=128) | kwargs
        with pytest.raises(FlopsheetError) as info:
            capacity.gpus_for_traffic(**args)
        assert info.value.code == "#NUM!"
    with pytest.raises(FlopsheetError) as info:
        capacity.gpus_for_traffic(L8, H100, 100, 512, 128, max_ttft_ms=0.01)
    assert "TTFT" in info.value.message


# --- as a user runs it ---------------------------------------------------------------------
def flopsheet(*args):
    return subprocess.run([sys.executable, "-m", "udfs", *args], capture_output=True, text=True)


def test_calc_serving_throughput_matches_the_trtllm_bench_row():
    out = flopsheet("calc", "SERVING_THROUGHPUT", "Llama 3.1 8B", "H100 SXM", "fp8", "2048", "2048")
    assert out.returncode == 0, out.stdout + out.stderr
    assert abs(float(out.stdout) / 9305 - 1) <= 0.15


@pytest.mark.parametrize("args,reason", [
    (("SERVING_THROUGHPUT", "Llama 3.1 8B", "H100", "fp8", "1024", "256", "1", "0.5"), "no batch meets TPOT 0.5 ms"),
    (("SERVING_THROUGHPUT", "Llama 3.3 70B", "RTX 4090"), "does not fit"),
    (("SERVING_BATCH", "Llama 3.3 70B", "H200", "bf16", "200000", "200000"), "KV cache (1 x 400,000 tokens)), 140.2 GiB usable"),
    (("SERVING_LATENCY_MS", "Llama 3.1 8B", "H100", "fp8", "1024", "256", "1", "", "tensorflow"), "unknown engine"),
    (("GPUS_FOR_TRAFFIC", "Llama 3.1 405B", "RTX 4090", "100", "1024", "256", "", "", "fp32"), "does not fit"),
    (("GPUS_FOR_TRAFFIC", "Llama 3.1 8B", "H100", "100", "1024", "256", "0.5"), "no batch meets TPOT"),
])
def test_bad_inputs_are_excel_errors_with_the_reason(args, reason):
    out = flopsheet("calc", *args)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert text.startswith(("#NUM!", "#N/A")) and reason in text and "Traceback" not in text


def test_engine_argument_on_decode_prefill_and_ttft_changes_the_estimate():
    for name, args in (("DECODE_TOKENS_PER_SEC", ("Llama 3 8B", "RTX 4090", "fp16", 1, 512, 1)),
                       ("PREFILL_TOKENS_PER_SEC", ("Llama 3 8B", "RTX 4090", "fp16", 1024, 1, 1)),
                       ("TIME_TO_FIRST_TOKEN_MS", ("Llama 3 8B", "RTX 4090", "fp16", 1024, 1, 1))):
        default = udfs.call(name, *args)
        assert default == udfs.call(name, *args, "TensorRT-LLM")          # the default on NVIDIA GPUs
        assert udfs.call(name, *args, "hf") != default
        assert udfs.call(name, *args, "llamacpp") == udfs.call(name, *args, "llama.cpp")


def test_gpus_for_traffic_parts():
    args = ("Llama 3.3 70B", "H100", 1000, 2048, 512, 50, "", "bf16", "", "", 0.2)
    gpus, copies, per_copy = (udfs.call("GPUS_FOR_TRAFFIC", *args, part) for part in ("gpus", "copies",
                                                                                       "gpus_per_copy"))
    assert gpus == copies * per_copy and per_copy >= 2
    tps = udfs.call("GPUS_FOR_TRAFFIC", *args, "tokens_per_sec_per_copy")
    serving = copies - udfs.call("GPUS_FOR_TRAFFIC", *args, "spare_copies")
    assert serving * tps >= 1000 / 60 * 512 * 1.2 > (serving - 1) * tps


# --- serving as operated: spare copies, queueing, copies over servers ----------------------
def test_erlang_c_by_hand():
    """M/M/2 at a = 1 Erlang: C = (a^2/2! x 2/(2-1)) / (1 + a + a^2/2! x 2/(2-1)) = 1/3; M/M/1: C = utilization."""
    assert queueing.erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert queueing.erlang_c(1, 0.7) == pytest.approx(0.7)
    assert queueing.erlang_c(4, 5.0) == 1.0 and queueing.erlang_c(10_000, 10.0) == 0.0


def test_wait_percentile_is_the_mm1_tail():
    """M/M/1, lambda 0.8, mu 1: P(W > t) = 0.8 exp(-0.2 t), so the p95 wait is ln(0.8 / 0.05) / 0.2."""
    assert queueing.wait_percentile_s(0.8, 1, 1.0, 0.95) == pytest.approx(math.log(16) / 0.2)
    assert queueing.wait_percentile_s(0.8, 1, 1.0, 0.95, 1.0, 0.0) == pytest.approx(math.log(16) / 0.4)  # Allen-Cunneen
    assert queueing.wait_percentile_s(0.01, 1, 1.0, 0.95) == 0.0        # 1% wait at all: the p95 waits nothing
    assert queueing.wait_percentile_s(1.0, 1, 1.0, 0.95) == math.inf


def test_spare_copies_whole_or_a_share():
    assert capacity.spare_copies(10) == 1 and capacity.spare_copies(10, 2) == 2
    assert capacity.spare_copies(10, 0.25) == 3 and capacity.spare_copies(10, 0) == 0
    with pytest.raises(FlopsheetError):
        capacity.spare_copies(10, 1.5)


def test_queueing_adds_copies_until_the_p95_latency_holds():
    """The 50,000-daily-user load (serve-8b.toml): a TPOT target alone leaves one copy near full load with a
    p95 wait of seconds; the whole-request p95 target adds a copy, and the spare comes on top."""
    rpm = 50_000 * 10 / 1440 * 3
    tpot_only = capacity.gpus_for_traffic(L8, H100, rpm, 1000, 300, max_tpot_ms=1000 / 30)
    assert tpot_only.utilization > 0.95 and tpot_only.wait_ms > 1000
    plan = capacity.gpus_for_traffic(L8, H100, rpm, 1000, 300, max_latency_s=10)
    assert plan.spare_copies == 1 and plan.copies - 1 > tpot_only.copies - 1
    assert plan.latency_ms <= 10_000 and plan.ttft_ms == plan.wait_ms + plan.point.ttft_ms
    assert plan.latency_ms == pytest.approx(plan.ttft_ms + 299 * plan.point.tpot_ms)


def test_deepseek_v3_fp8_on_h100_is_a_copy_of_16_gpus_over_two_servers():
    v3 = catalog.model("DeepSeek-V3")
    plan = capacity.gpus_for_traffic(v3, H100, 100, 1024, 256, precision="fp8")
    assert plan.n_gpus == 16 and capacity.layout(H100, engines.engine(None, H100), 16) == (8, 2)
    with pytest.raises(capacity.NoFit):                 # one server of 8 does not hold it
        capacity.serving_point(v3, H100, "fp8", 1024, 256, 8)


def test_a_pipeline_over_servers_reads_weights_at_one_server_s_speed():
    """Two stages of 8: each token still streams all the weights through 8 GPUs' bandwidth, plus the
    hand-offs over the network; at batch 1 that is slower than one server of 8 (where it fits)."""
    one = capacity.decode_step(L70, H100, "fp8", 1, 2048, 8)
    two = capacity.decode_step(L70, H100, "fp8", 1, 2048, 16)
    assert two.weights == pytest.approx(one.weights)
    assert two.allreduce > one.allreduce and two.total > one.total


def test_erlang_c_for_a_huge_fleet_is_the_halfin_whitt_limit_in_constant_time():
    """A traffic of 1e300 requests must not sum 1e300 Poisson terms (it hung a call): above
    HALFIN_WHITT_SERVERS slots the limit is used, and it agrees with the exact sum where both apply."""
    from udfs.physics import queueing
    c, a = queueing.HALFIN_WHITT_SERVERS, queueing.HALFIN_WHITT_SERVERS * 0.995
    exact = queueing.erlang_c(c, a)
    assert abs(queueing._halfin_whitt(c, a) - exact) < 0.01 * exact
    assert 0 <= queueing.erlang_c(10**300, 10**300 * (1 - 1e-3)) <= 1
    assert queueing.erlang_c(10**12, 5e11) == 0.0


def test_time_to_first_token_grows_faster_than_the_prompt():
    """Attention grows with the square of the prompt and runs on the 16-bit units at flash attention's
    share (calibration.ATTENTION_FRACTION), so 16k tokens take more than twice 8k; the difference over
    twice is the attention's extra, at that rate."""
    model = catalog.model("Llama 3.1 8B")
    eng = engines.engine("trtllm")
    short, long = (capacity.prefill_compute_s(model, H100, "fp8", n, 1, 1, eng) for n in (8192, 16384))
    assert long > 2 * short
    # by hand: Llama 3.1 8B, 32 heads x (QK 128 + PV 128) x T queries x 32 layers x T positions = 262,144 T^2 FLOPs
    # (half the square, 2 FLOPs a product); the H100 SXM's 989.5 dense BF16 TFLOPS x ATTENTION_FRACTION 0.5; the
    # products are linear in T, so 16k less twice 8k is attention's alone:
    # 262,144 x (16,384^2 - 2 x 8,192^2) / 494.75e12 = 71.12 ms
    extra = 32 * 256 * 32 * (16384 ** 2 - 2 * 8192 ** 2) / (989.5e12 * 0.5)
    assert extra == pytest.approx(0.071115, rel=1e-4)
    assert long - 2 * short == pytest.approx(extra)
    ttft = [capacity.time_to_first_token_s(model, H100, "fp8", n, 1, 1, eng) for n in (4096, 8192, 16384)]
    assert ttft[2] / ttft[1] > ttft[1] / ttft[0] > 1.9


def test_a_request_arriving_at_load_first_waits_for_the_running_step():
    """A lone request's first token comes out of its prefill (no decode step of its own); one that arrives
    while others decode waits out the step in progress, half a step on average, and the iteration that
    prefills it also carries their decode: their step less what the prefill already pays (one read of the
    weights, the fixed time)."""
    model, eng = catalog.model("Llama 3.1 8B"), engines.engine("trtllm")
    # by hand from the catalog rows: Llama 3.1 8B in FP8 on one H100 SXM with TensorRT-LLM (HBM share 0.80 of 3.35 TB/s:
    # 2.68 TB/s; 200 us a step + 32 layers x 5 us, no graph cap; FP8 products at 1,979 TFLOPS x 0.45)
    bandwidth, fixed = 3.35e12 * 0.80, (200 + 32 * 5) * 1e-6
    read = 8_030_261_248 / bandwidth                                  # a prefill reads every weight once: 2.996 ms
    prefill = (2 * 7_504_924_672 * 2048 / (1979e12 * 0.45)            # products (the input embedding a lookup)
               + 32 * 256 * 2048 * (32 * 2048) / (989.5e12 * 0.5)    # causal attention at ATTENTION_FRACTION 0.5
               + read + fixed)                                        # 40.097 ms
    alone = capacity.time_to_first_token_s(model, H100, "fp8", 2048, 1, 1, eng)
    assert alone == pytest.approx(prefill) and prefill == pytest.approx(0.040097, rel=1e-4)
    # the step of 64 sequences at 2,048 tokens: the 7,504,924,672 weights a decode streams (2.800 ms), the FP8 KV
    # cache, 64 x 2,048 x 32 layers x 2 x 8 KV heads x 128 x 1 B (3.205 ms: more than its attention FLOPs take),
    # and the fixed time (0.36 ms): 6.366 ms
    step = 7_504_924_672 / bandwidth + 64 * 2048 * 32 * 2 * 8 * 128 / bandwidth + fixed
    assert capacity.decode_step(model, H100, "fp8", 64, 2048, 1, None, eng).total == pytest.approx(step)
    busy = capacity.time_to_first_token_s(model, H100, "fp8", 2048, 1, 1, eng, running=64)
    # half a step's wait, the prefill, and the step it carries less the read and fixed time it shares: 46.289 ms
    assert busy == pytest.approx(prefill + step / 2 + step - read - fixed)
    assert busy == pytest.approx(0.046289, rel=1e-4)
    assert alone + step / 2 < busy < alone + 1.5 * step


def test_at_the_operating_point_a_request_also_queues_behind_other_prompts():
    """At its operating point a copy's `batch` requests end, and new ones arrive, batch / (output x TPOT) a
    second (Little's law): the iteration an arrival lands in may carry other prompts (each adding its prefill's
    compute, what TPOT charges), and the prompts arriving in it join the arrival's own iteration. With the
    iteration model's moments written out: E[L] = s / (1 - lambda x) is the TPOT itself, and the wait is the
    residual E[L^2] / (2 E[L]); more than the bare half step the lone-arrival view gave."""
    model, eng = catalog.model("Llama 3.1 8B"), engines.engine("trtllm")
    # by hand, Llama 3.1 8B in FP8 on one H100 SXM with TensorRT-LLM (3.35 TB/s x HBM share 0.80; FP8 products at
    # 1,979 TFLOPS x 0.45; attention at 989.5 x ATTENTION_FRACTION 0.5; 200 us a step + 32 layers x 5 us)
    bandwidth, fixed = 3.35e12 * 0.80, (200 + 32 * 5) * 1e-6
    read = 8_030_261_248 / bandwidth                                   # a prefill's one read of the weights
    x = 2 * 7_504_924_672 * 2048 / (1979e12 * 0.45) + 32 * 256 * 2048 * (32 * 2048) / (989.5e12 * 0.5)   # 36.741 ms
    alone = x + read + fixed                                           # the lone prefill, 40.097 ms
    # the step of 32 at 2,048 + 128 tokens: streamed weights 2.800 ms, FP8 KV 32 x 2,176 x 65,536 B 1.703 ms, fixed
    s = 7_504_924_672 / bandwidth + 32 * 2176 * 32 * 2 * 8 * 128 / bandwidth + fixed                      # 4.863 ms
    assert (x, s) == (pytest.approx(0.036741, rel=1e-4), pytest.approx(0.0048631, rel=1e-4))
    assert capacity.time_to_first_token_s(model, H100, "fp8", 2048, 1, 1, eng) == pytest.approx(alone)
    point = capacity.serving_point(model, H100, "fp8", 2048, 256, 1, eng=eng, batch=32)
    rate = 32 / (256 * point.tpot_ms / 1000)
    mean = s / (1 - rate * x)
    assert mean * 1000 == pytest.approx(point.tpot_ms)          # the mean iteration is the TPOT the point charges
    second = (s * s + (2 * s + x) * rate * x * mean) / (1 - (rate * x) ** 2)
    wait = second / (2 * mean)
    assert point.ttft_ms == pytest.approx((wait + alone + s - read - fixed + 2 * rate * wait * x) * 1000)
    assert point.ttft_ms > (alone + 1.5 * s - read - fixed) * 1000 * 1.2     # the queue is not small here


def test_the_iteration_wait_matches_a_simulated_engine():
    """queueing.iteration_wait_s against a direct simulation of the scheduler it describes: Poisson arrivals,
    iterations back to back, each the decode step plus every prompt waiting at its start; each prompt's first
    token comes at the end of its iteration. The simulated mean time to first token is the formula's wait +
    step + prompt + the prompts that arrived in the same iteration."""
    import random
    rng = random.Random(20)
    for rate, s, x in ((10.0, 0.011, 0.0165), (40.0, 0.02, 0.015), (2.0, 0.03, 0.2)):
        t, pending, total, count = 0.0, [], 0.0, 0
        arrival = rng.expovariate(rate)
        for _ in range(60_000):
            length = s + x * len(pending)
            end = t + length
            total += sum(end - a for a in pending)
            count += len(pending)
            pending = []
            while arrival < end:
                pending.append(arrival)
                arrival += rng.expovariate(rate)
            t = end
        wait, mean = queueing.iteration_wait_s(rate, s, x)
        assert total / count == pytest.approx(wait + s + x + 2 * rate * wait * x, rel=0.02), (rate, s, x)
        assert mean == pytest.approx(t / 60_000, rel=0.02)
    assert queueing.iteration_wait_s(0, 0.01, 0.02) == (0.005, 0.01)       # no arrivals: half a step
    assert queueing.iteration_wait_s(60, 0.01, 0.02)[0] == math.inf        # the prompts fill the GPU's time


def test_first_token_at_a_load_grows_with_the_rate_and_one_client_finds_nothing_running():
    """load_ttft: under Poisson arrivals the mean time to first token grows with the rate (more prompts ahead,
    more sequences decoding); the sequences in flight are Little's law's rate x answer x iteration; a closed
    loop of one client finds nothing running (its first token is a lone prefill), and a closed loop's rate is
    concurrency / (TTFT + answer x iteration); a rate whose prefills fill the GPU is #NUM!."""
    eng = engines.engine("vllm")
    lone = capacity.time_to_first_token_s(L8, H100, "bf16", 2048, 1, 1, eng)
    loads = [capacity.load_ttft(L8, H100, "bf16", 2048, 256, 1, eng, rate=r) for r in (0.5, 2, 4, 8)]
    assert [ld.ttft_s for ld in loads] == sorted(ld.ttft_s for ld in loads) and loads[0].ttft_s > lone
    for ld in loads:
        step = capacity.decode_step(L8, H100, "bf16", max(1.0, ld.running), 2048 + 128, 1, None, eng).total
        x = capacity.prefill_compute_s(L8, H100, "bf16", 2048, 1, 1, eng)
        assert ld.iteration_s == pytest.approx(step / (1 - ld.rate * x), rel=1e-3)
        assert ld.running == pytest.approx(ld.rate * 256 * ld.iteration_s, rel=1e-3)
    one = capacity.load_ttft(L8, H100, "bf16", 2048, 256, 1, eng, concurrency=1)
    assert one.ttft_s == pytest.approx(lone) and one.running == 0
    closed = capacity.load_ttft(L8, H100, "bf16", 2048, 256, 1, eng, concurrency=32)
    assert closed.rate == pytest.approx(32 / (closed.ttft_s + 256 * closed.iteration_s), rel=1e-3)
    assert closed.ttft_s > lone
    with pytest.raises(FlopsheetError) as info:
        capacity.load_ttft(L8, H100, "bf16", 2048, 256, 1, eng, rate=1e4)
    assert info.value.code == "#NUM!" and "prefills" in info.value.message
    with pytest.raises(FlopsheetError) as info:      # the decode cannot keep up: the requests in flight outgrow memory
        capacity.load_ttft(L8, H100, "bf16", 2048, 256, 1, eng, rate=16)
    assert info.value.code == "#NUM!" and "no steady state" in info.value.message


def test_a_closed_loop_polled_every_few_steps_waits_out_the_window_in_progress():
    """An engine that polls for new requests once every k decode steps (SGLang's --scheduler-recv-interval) admits
    an arrival only when the window of k steps in progress ends: load_ttft(..., admission_steps=k) takes the
    iteration wait over k steps, so a closed loop's first token grows with k by at least (k - 1) / 2 iterations, and
    a lone client (nothing decoding) is not affected."""
    eng = engines.engine("sglang")
    one, ten = (capacity.load_ttft(L8, H100, "bf16", 1024, 256, 1, eng, concurrency=16, admission_steps=k)
                for k in (1, 10))
    assert ten.ttft_s > one.ttft_s
    # half the 9 extra steps, more as the longer wait lets more prompts join the request's own iteration
    assert 4.5 * one.iteration_s <= ten.ttft_s - one.ttft_s <= 9 * one.iteration_s
    lone = [capacity.load_ttft(L8, H100, "bf16", 1024, 256, 1, eng, concurrency=1, admission_steps=k).ttft_s
            for k in (1, 10)]
    assert lone[0] == lone[1]


def test_a_benchmark_runs_first_wave_queues_for_the_prefill_and_weighs_in_its_mean():
    """A closed-loop benchmark sends its first `concurrency` requests at once (InferenceX's benchmark_serving.py):
    their prompts queue for the prefill in chunks of the token budget, so the wave's mean first token is the whole
    wave's prefill x (n + 1) / 2n over n chunks: one client's is its lone prefill, a wave inside one chunk waits for
    all of it, and a wave of many chunks between half and all of it. load_ttft(..., requests=R) weighs it c in R.
    Worked by hand from the catalog rows (Llama 3.1 8B in BF16 on one H100 SXM with the SGLang profile)."""
    eng = engines.engine("sglang")
    p = catalog.as_precision("bf16")
    # Inputs: H100 SXM 80GB 989.5 dense BF16 TFLOPS, 3.35 TB/s HBM3; SGLang: matmul share 0.70, HBM share 0.80,
    # 300 us a step, 46 us a layer (+ calibration.EAGER_LAYER_US 47 us past its 160-token graph cap), 8,192-token
    # chunks; calibration.ATTENTION_FRACTION 0.5; Llama 3.1 8B: 8,030,261,248 parameters, 525,336,576 of them the
    # untied input embedding (a lookup), 32 layers, 32 heads of 128 (QK + PV width 256).
    per_token = 2 * 7_504_924_672 / (989.5e12 * 0.70)                # products: 21.67 us a prompt token
    attention = 32 * 256 * 1024 * (32 * 1024) / (989.5e12 * 0.5)    # 1,024-token prompt: 0.556 ms
    prompt = per_token * 1024 + attention                             # 22.746 ms of compute a prompt
    chunk = 8_030_261_248 * 2 / (3.35e12 * 0.80) + (300 + 32 * (46 + 47)) * 1e-6   # read 5.993 + fixed 3.276 ms
    lone = prompt + chunk                                             # 32.015 ms
    assert capacity.time_to_first_token_s(L8, H100, "bf16", 1024, 1, 1, eng) == pytest.approx(lone)
    assert lone == pytest.approx(0.032015, rel=1e-4)
    assert capacity.first_wave_s(L8, H100, p, 1024, 1, 1, eng) == pytest.approx(lone)
    # 4 x 1,024 = 4,096 tokens: one chunk, every prompt waits for all of it: 4 x 22.746 + 9.269 = 100.25 ms
    assert capacity.first_wave_s(L8, H100, p, 1024, 4, 1, eng) == pytest.approx(4 * prompt + chunk)
    # 64 x 1,024 = 65,536 tokens: 8 chunks, each a read and the fixed time; mean (8 + 1) / 16 of 1,529.9 ms
    many = 64 * prompt + 8 * chunk
    assert capacity.first_wave_s(L8, H100, p, 1024, 64, 1, eng) == pytest.approx(many * 9 / 16)    # 860.56 ms
    # 16 x 1,024 = 16,384 tokens: 2 chunks, mean 3/4 of 382.47 ms = 286.85 ms, weighed 16 in 160 requests
    wave = (16 * prompt + 2 * chunk) * 3 / 4
    assert capacity.first_wave_s(L8, H100, p, 1024, 16, 1, eng) == pytest.approx(wave)
    steady = capacity.load_ttft(L8, H100, "bf16", 1024, 256, 1, eng, concurrency=16)
    run = capacity.load_ttft(L8, H100, "bf16", 1024, 256, 1, eng, concurrency=16, requests=160)
    assert run.ttft_s == pytest.approx((16 * wave + 144 * steady.ttft_s) / 160)
    assert (run.rate, run.running) == (steady.rate, steady.running)


def test_an_eager_moe_prefill_pays_the_engines_host_time_per_moe_layer_once_a_pass():
    """A prefill pass of more tokens than the engine's CUDA graphs hold runs eagerly, and each MoE layer costs the
    engine's eager_moe_layer_us of host time on top of the GPU time (capacity._eager_moe_s): a MoE model's lone
    prefill is longer by MoE layers x that time than with it at 0, once per chunk; a dense model pays nothing; a
    pass within the graph cap pays nothing."""
    from dataclasses import replace
    sglang = engines.engine("sglang")
    off = replace(sglang, eager_moe_layer_us=0.0)
    ds, b200 = catalog.model("DeepSeek-R1"), catalog.gpu("B200")
    assert sglang.eager_moe_layer_us and sglang.eager_moe_layer_us > 0
    moe_layers = ds.moe_layers
    assert moe_layers and moe_layers < ds.layers          # DeepSeek's first layers are dense
    for prompt, chunks in ((1024, 1), (20000, 3)):        # the profile's 8,192-token budget
        gap = capacity.prefill_seconds(ds, b200, "fp8", prompt, 1, 8, sglang) \
            - capacity.prefill_seconds(ds, b200, "fp8", prompt, 1, 8, off)
        assert gap == pytest.approx(chunks * moe_layers * sglang.eager_moe_layer_us * 1e-6)
    assert capacity.prefill_seconds(L8, H100, "bf16", 1024, 1, 1, sglang) == \
        capacity.prefill_seconds(L8, H100, "bf16", 1024, 1, 1, off)
    assert capacity.prefill_seconds(ds, b200, "fp8", 100, 1, 8, sglang) == \
        capacity.prefill_seconds(ds, b200, "fp8", 100, 1, 8, off)      # 100 tokens: within the graph cap (160)


def test_a_moe_prefill_pass_runs_at_the_engines_share_of_its_modelled_speed():
    """vLLM's moe_prefill_share (chosen from gpt-oss-120b first tokens) divides a MoE model's whole prefill pass: a
    lone prompt's prefill and first token, and a first wave, take 1 / share of the pass at share 1, on 1 GPU as on 8;
    a dense model's pass does not move, nor a steady state's prefill share of a step (prefill_compute_s); an engine
    without one (SGLang) runs the modelled pass."""
    from dataclasses import replace
    vllm = engines.engine("vllm")
    assert vllm.moe_prefill_share and 0 < vllm.moe_prefill_share < 1
    half, whole = replace(vllm, moe_prefill_share=0.5), replace(vllm, moe_prefill_share=None)
    oss, p = catalog.model("gpt-oss-120b"), catalog.as_precision("mxfp4")
    for n in (1, 8):
        for prompt in (1024, 20000):                           # one chunk of the 8,192-token budget, and three
            assert capacity.prefill_seconds(oss, H100, "mxfp4", prompt, 1, n, half) == \
                pytest.approx(2 * capacity.prefill_seconds(oss, H100, "mxfp4", prompt, 1, n, whole))
        assert capacity.time_to_first_token_s(oss, H100, "mxfp4", 1024, 1, n, half) == \
            pytest.approx(2 * capacity.time_to_first_token_s(oss, H100, "mxfp4", 1024, 1, n, whole))
        assert capacity.first_wave_s(oss, H100, p, 1024, 16, n, half) == \
            pytest.approx(2 * capacity.first_wave_s(oss, H100, p, 1024, 16, n, whole))
        assert capacity.prefill_compute_s(oss, H100, "mxfp4", 1024, 1, n, half) == \
            capacity.prefill_compute_s(oss, H100, "mxfp4", 1024, 1, n, whole)
    assert capacity.prefill_seconds(L8, H100, "bf16", 1024, 1, 1, half) == \
        capacity.prefill_seconds(L8, H100, "bf16", 1024, 1, 1, whole)
    assert not engines.engine("sglang").moe_prefill_share


def test_a_short_prefill_pays_its_products_and_the_weights_read_added():
    """A 128-token prompt puts the products near the ridge point: the prefill pays the products' compute
    and one read of the weights added (neither roof is reached), plus the fixed time; a 16k-token one is
    bound by its compute, the read adding a few per cent."""
    model, eng = catalog.model("Llama 3.1 8B"), engines.engine("trtllm")
    # by hand from the catalog rows: Llama 3.1 8B's 8,030,261,248 parameters in BF16 over the H100 SXM's 3.35 TB/s at
    # TensorRT-LLM's HBM share 0.80: 5.993 ms; the products over 7,504,924,672 parameters (the input embedding is a
    # lookup) at 989.5 TFLOPS x its matmul share 0.70, 2 FLOPs each, 128 tokens: 2.774 ms; attention 32 heads x 256 x
    # 128 x (32 layers x 128) / (989.5e12 x ATTENTION_FRACTION 0.5): 0.009 ms; fixed 200 us a step + 32 layers x 5 us
    read = 8_030_261_248 * 2 / (3.35e12 * 0.80)
    compute = 2 * 7_504_924_672 * 128 / (989.5e12 * 0.70) + 32 * 256 * 128 * 32 * 128 / (989.5e12 * 0.5)
    fixed = (200 + 32 * 5) * 1e-6
    short = capacity.prefill_seconds(model, H100, "bf16", 128, 1, 1, eng)
    assert compute + read + fixed == pytest.approx(0.0091352, rel=1e-4)
    assert short == pytest.approx(compute + read + fixed)
    assert short > max(compute, read) + fixed
    long = capacity.prefill_seconds(model, H100, "bf16", 8192, 1, 1, eng)
    assert long < 1.05 * (capacity.prefill_compute_s(model, H100, "bf16", 8192, 1, 1, eng) + fixed)


def test_a_step_beyond_the_cuda_graph_cap_pays_the_eager_launches():
    """A decode step of more sequences than the engine captures graphs for (SGLang 160) runs eagerly: each
    layer pays calibration.EAGER_LAYER_US on top of the profile's fixed time; at or below the cap it does not."""
    sglang = engines.engine("SGLang")
    cap = sglang.graph_max_batch
    assert cap and engines.engine("TensorRT-LLM").graph_max_batch is None
    at, past = (capacity.decode_step(L8, H100, "fp8", b, 1024, 1, eng=sglang).overhead for b in (cap, cap + 1))
    assert past - at == pytest.approx(L8.layers * cal.EAGER_LAYER_US * 1e-6)
    below = capacity.decode_step(L8, H100, "fp8", cap - 1, 1024, 1, eng=sglang).overhead
    assert below == pytest.approx(at)


def test_the_batch_search_keeps_the_best_batch_across_the_cuda_graph_cap():
    """Throughput dips just past the graph cap, so the largest batch is not always the best: the operating point
    delivers at least as much as every batch that fits, and says when the cap is what limits it."""
    for model, gpu, prec, eng in (("Llama 3.1 8B", "H100", "fp8", "SGLang"), ("Qwen2.5 7B", "L40S", "fp16", "TGI"),
                                  ("Llama 3.1 8B", "A100 SXM 80GB", "bf16", "SGLang")):
        m, g = catalog.model(model), catalog.gpu(gpu)
        point = capacity.serving_point(m, g, prec, 1024, 256, 1, None, eng)
        fits = capacity.kv_batch(m, g, prec, 1024, 256, 1, engines.engine(eng).kv_format(prec), engines.engine(eng))
        tried = set(range(1, fits + 1, max(1, fits // 200))) | {fits, min(fits, engines.engine(eng).graph_max_batch)}
        best = max(capacity.serving_point(m, g, prec, 1024, 256, 1, None, eng, batch=b).tokens_per_sec for b in tried)
        assert point.tokens_per_sec >= best * (1 - 1e-9), (model, eng, point)
        if point.limited_by == "CUDA-graph cap":
            assert point.batch == engines.engine(eng).graph_max_batch < fits


def test_a_multi_step_engine_admits_a_request_only_between_windows():
    """vLLM V0 with --num-scheduler-steps 10 (the profile 'vLLM V0 multi-step', scheduler_steps 10) runs ten
    decode steps per scheduler call, so an arrival waits for the window of steps in progress: the iteration
    wait over ten steps. The same profile with one step per call waits the single step's residual; every
    other engine admits between steps (scheduler_steps blank)."""
    from dataclasses import replace
    multi = engines.engine("vLLM V0 multi-step")
    assert multi.scheduler_steps == 10 and multi.admission_steps == 10
    assert all(engines.engine(e).admission_steps == 1 for e in ("vllm", "sglang", "trtllm", "vLLM V0"))
    single = replace(multi, scheduler_steps=None)
    at = [capacity.load_ttft(L8, A100, "bf16", 512, 256, 1, e, rate=4) for e in (multi, single)]
    step = capacity.decode_step(L8, A100, "bf16", at[0].running, 512 + 128, 1, None, multi).total
    x = capacity.prefill_compute_s(L8, A100, "bf16", 512, 1, 1, multi)
    assert at[0].running == pytest.approx(at[1].running)       # the decode itself is the same
    waits = [queueing.iteration_wait_s(at[0].rate, k * step, x)[0] for k in (10, 1)]
    # the same prefill and carried decode; only the wait, and the prompts joining in it, differ
    assert at[0].ttft_s - at[1].ttft_s == pytest.approx((waits[0] - waits[1]) * (1 + 2 * at[0].rate * x), rel=1e-6)
    assert at[0].ttft_s > at[1].ttft_s + 4 * step                # about half a window more than half a step


def test_the_worksheet_time_to_first_token_at_a_request_rate_is_load_ttft():
    """TIME_TO_FIRST_TOKEN_MS with requests_per_minute answers capacity.load_ttft at that rate (one answer for
    the worksheet and the accuracy tool), more than the lone request's prefill it answers without one; a rate
    with a batch of prompts is #VALUE!, a rate the prefills cannot keep up with #NUM!."""
    args = ("Llama 3.1 8B", "H100", "bf16", 2048, 1, 1, "vllm")
    lone = udfs.call("TIME_TO_FIRST_TOKEN_MS", *args)
    at = udfs.call("TIME_TO_FIRST_TOKEN_MS", *args, 240, 256)
    load = capacity.load_ttft(L8, H100, "bf16", 2048, 256, 1, engines.engine("vllm"), rate=4)
    assert at == pytest.approx(load.ttft_s * 1000) and at > lone
    # the lone prefill by hand: products 2 x 7,504,924,672 x 2,048 / (989.5e12 x vLLM's 0.70), attention 32 x 256 x
    # 2,048 x (32 x 2,048) / (989.5e12 x 0.5), one read of 8,030,261,248 BF16 weights over 3.35e12 x 0.80, and 300 us +
    # 32 x (48.8 + 47 eager) us: 55.961 ms
    by_hand = (2 * 7_504_924_672 * 2048 / (989.5e12 * 0.70) + 32 * 256 * 2048 * (32 * 2048) / (989.5e12 * 0.5)
               + 8_030_261_248 * 2 / (3.35e12 * 0.80) + (300 + 32 * (48.8 + 47)) * 1e-6) * 1000
    assert by_hand == pytest.approx(55.961, rel=1e-4)
    assert lone == pytest.approx(by_hand)
    for bad, code in ((("Llama 3.1 8B", "H100", "bf16", 2048, 4, 1, "vllm", 240, 256), "#VALUE!"),
                      (args + (600_000, 256), "#NUM!")):
        with pytest.raises(FlopsheetError) as info:
            udfs.call("TIME_TO_FIRST_TOKEN_MS", *bad)
        assert info.value.code == code


def test_vllm_keeps_its_profile_run_out_of_the_kv_cache():
    """vLLM sizes its KV cache after a profile run at max_num_batched_tokens (gpu_worker.determine_available_memory):
    the reserve grows with those tokens by the MLP block's live values a token (2 x hidden + 3 x FFN width, 16-bit)
    or is the sampler's top-k / top-p peak (rows x vocabulary x 24 bytes: 16-bit logits, FP32 copy, sorted values
    and int64 indices, softmax, two masks), whichever is larger (the forward's values are freed before the sampler
    runs); SGLang and TensorRT-LLM keep no such run out of it."""
    from dataclasses import replace

    from udfs.catalogs import resolve
    from udfs.catalogs.engines import engine
    from udfs.units import GIB
    model, gpu = resolve.model("Llama 3.1 8B"), resolve.gpu("H100 SXM 80GB")
    vllm = engine("vLLM", gpu)
    one = replace(vllm, max_num_tokens=1000, max_batch=1, large_gpu_max_batch=None, large_gpu_max_num_tokens=None,
                  sampler_sorts=True)            # vLLM to 0.16: PyTorch's sort
    two = replace(one, max_num_tokens=2000)
    per_token = capacity.profile_run_gib(model, gpu, 1, two) - capacity.profile_run_gib(model, gpu, 1, one)
    assert per_token * GIB / 1000 == pytest.approx((2 * 4096 + 3 * 14336) * 2)
    assert capacity.profile_run_gib(model, gpu, 1, one) * GIB == pytest.approx(1000 * (2 * 4096 + 3 * 14336) * 2)
    many = replace(one, max_batch=1024)           # 1,000 rows sampled: the sampler's peak is the larger
    assert capacity.profile_run_gib(model, gpu, 1, many) * GIB == pytest.approx(
        1000 * 128256 * (2 + 4 + 4 + 8 + 4 + 1 + 1))
    in_place = replace(many, sampler_sorts=False)    # 0.17.0 on: Triton masks the FP32 copy in place; softmax, noise
    assert capacity.profile_run_gib(model, gpu, 1, in_place) * GIB == pytest.approx(1000 * 128256 * (2 + 4 + 4 + 4))
    assert capacity.profile_run_gib(model, gpu, 2, one) < capacity.profile_run_gib(model, gpu, 1, one)  # FFN split
    budget = capacity.kv_budget_gib(model, gpu, "bf16", 1, vllm)
    assert budget == pytest.approx(capacity.kv_budget_gib(model, gpu, "bf16", 1, replace(vllm, max_num_tokens=None,
                                                                                     large_gpu_max_num_tokens=None))
                                   - capacity.profile_run_gib(model, gpu, 1, vllm))
    for other in ("SGLang", "TensorRT-LLM"):
        assert capacity.profile_run_gib(model, gpu, 1, engine(other, gpu)) == 0


def test_a_load_beyond_the_engine_batch_cap_is_num_not_a_first_token():
    """load_ttft compares the sequences an arrival finds decoding with what the engine runs at once: the KV
    cache's fit within the engine's batch cap (capacity.concurrency_cap, the limit serving_point and batch_run
    use). vLLM V0 on an H100 caps the batch at 256 while the KV cache of 512 + 128-token requests fits more, so
    20 requests/s, which Little's law puts at over 256 decoding, has no steady state."""
    eng = engines.engine("vLLM V0")
    limit, limited = capacity.concurrency_cap(L8, H100, "bf16", 512, 128, 1, "bf16", eng)
    assert (limit, limited) == (eng.batch_cap(H100), "engine batch cap")
    assert capacity.kv_batch(L8, H100, "bf16", 512, 128, 1, "bf16", eng) > limit
    assert capacity.serving_point(L8, H100, "bf16", 512, 128, 1, eng=eng).batch == limit
    with pytest.raises(FlopsheetError) as info:
        capacity.load_ttft(L8, H100, "bf16", 512, 128, 1, eng, rate=20)
    assert info.value.code == "#NUM!" and "batch cap" in info.value.message and f"({limit:,})" in info.value.message


def test_a_load_near_saturation_settles_at_the_operating_point():
    """At the operating point's own rate (batch / (answer x TPOT), Little's law) an open load keeps its batch
    decoding, since the iteration at that batch is its TPOT: load_ttft's fixed point must land there and answer
    the operating point's first token, however slowly plain rounds would crawl to it. A closed loop of as many
    clients as the batch answers too, its rate concurrency / (TTFT + answer x iteration), and one of twice the
    engine's batch is #NUM!."""
    eng = engines.engine("trtllm")
    point = capacity.serving_point(L8, H100, "bf16", 1024, 256, 1, eng=eng)
    load = capacity.load_ttft(L8, H100, "bf16", 1024, 256, 1, eng, rate=point.tokens_per_sec / 256 * (1 - 1e-6))
    assert load.running == pytest.approx(point.batch, rel=1e-3)
    assert load.ttft_s * 1000 == pytest.approx(point.ttft_ms, rel=1e-3)
    closed = capacity.load_ttft(L8, H100, "bf16", 1024, 256, 1, eng, concurrency=point.batch)
    assert closed.rate == pytest.approx(point.batch / (closed.ttft_s + 256 * closed.iteration_s), rel=1e-6)
    assert closed.running < point.batch
    with pytest.raises(FlopsheetError) as info:
        capacity.load_ttft(L8, H100, "bf16", 1024, 256, 1, eng, concurrency=2 * point.batch)
    assert info.value.code == "#NUM!"


def test_the_first_token_at_a_load_is_continuous_where_one_request_is_decoding():
    """Below one request decoding an arrival mostly finds the GPU idle (prompts queue one after another), above
    it an iteration in progress: load_ttft weights the two by the share of time something decodes, so the mean
    first token does not jump where the requests decoding cross one (the rate found here by bisection)."""
    eng = engines.engine("vllm")

    def load(rate: float) -> capacity.Load:
        return capacity.load_ttft(L8, H100, "bf16", 1024, 256, 1, eng, rate=rate)

    lo, hi = 0.01, 5.0
    assert load(lo).running < 1 < load(hi).running
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if load(mid).running < 1 else (lo, mid)
    below, above = load(lo * (1 - 1e-4)), load(hi * (1 + 1e-4))
    assert below.running < 1 < above.running
    assert above.ttft_s == pytest.approx(below.ttft_s, rel=1e-3)
    assert load(lo / 100).ttft_s < below.ttft_s < above.ttft_s


def test_a_load_with_no_steady_state_is_quoted_in_the_callers_unit():
    """The #NUM! of a load the GPU cannot keep up with quotes the load as the caller gave it: requests per
    minute from TIME_TO_FIRST_TOKEN_MS, requests in flight from a closed loop, not a rate a second."""
    with pytest.raises(FlopsheetError) as info:
        udfs.call("TIME_TO_FIRST_TOKEN_MS", "Llama 3.1 8B", "H100", "bf16", 2048, 1, 1, "vllm", 1e9, 256)
    assert "1e+09 requests/min" in info.value.message and "requests/s" not in info.value.message
    with pytest.raises(FlopsheetError) as info:
        capacity.load_ttft(L8, H100, "bf16", 512, 128, 1, engines.engine("vLLM V0"), concurrency=600)
    assert "600 requests in flight" in info.value.message and "requests/s" not in info.value.message


def test_a_first_token_between_idle_and_busy_prefills_once(monkeypatch):
    """Below one request decoding the first token blends the idle and busy answers (_first_token_s); both use
    the same prefill, computed once, and the blend is that share of each."""
    calls = []
    real = capacity._prefill_s

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(capacity, "_prefill_s", counted)
    eng = engines.engine("vLLM", H100)
    blended = capacity.time_to_first_token_s(L8, H100, "bf16", 2048, 1, 1, eng, running=0.4)
    assert len(calls) == 1
    idle = capacity.time_to_first_token_s(L8, H100, "bf16", 2048, 1, 1, eng)
    busy = capacity.time_to_first_token_s(L8, H100, "bf16", 2048, 1, 1, eng, running=1)
    assert blended == pytest.approx(0.4 * busy + 0.6 * idle, rel=1e-12)


def test_vllm_serves_a_smaller_token_budget_on_an_a100_and_on_smaller_gpus():
    """`vllm serve` runs max_num_batched_tokens 8,192 on GPUs of at least 70 GiB other than the A100, 2,048
    elsewhere (arg_utils.get_batch_defaults); its profile run is that budget, and a prompt longer than it is
    prefilled in chunks, each re-reading the weights and paying a step's fixed costs."""
    from dataclasses import replace
    vllm, l40s = engines.engine("vLLM"), catalog.gpu("L40S")
    assert (vllm.token_budget(H100), vllm.token_budget(A100), vllm.token_budget(l40s)) == (8192, 2048, 2048)
    assert (vllm.profile_tokens(H100), vllm.profile_tokens(A100)) == (8192, 2048)
    assert engines.engine("SGLang").token_budget(A100) == engines.engine("SGLang").token_budget(H100) == 8192
    two = capacity.prefill_seconds(L8, A100, "bf16", 4096, 1, 1, vllm)           # 2 chunks of 2,048
    one = capacity.prefill_seconds(L8, A100, "bf16", 4096, 1, 1, replace(vllm, max_num_tokens=8192))
    # the second chunk's read and fixed time, by hand: Llama 3.1 8B's 8,030,261,248 BF16 parameters over the A100 SXM
    # 80GB's 2.039 TB/s at vLLM's HBM share 0.80 (9.845 ms), and 300 us a step + 32 layers x (48.8 us + the eager
    # launches' 47 us: a 2,048-token chunk is past vLLM's 512-sequence graph cap) (3.366 ms): 13.211 ms
    read = 8_030_261_248 * 2 / (2.039e12 * 0.80)
    fixed = (300 + 32 * (48.8 + 47)) * 1e-6
    assert read + fixed == pytest.approx(0.013211, rel=1e-4)
    assert two - one == pytest.approx(read + fixed, rel=1e-9)
