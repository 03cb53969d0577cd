"""Serving capacity: the output tokens/s one model copy sustains under continuous batching,
the batch and latencies at that operating point, and the GPUs a traffic level needs
(udfs/physics/capacity.py; docs/serving-model.md explains the model and its physical basis)."""

from dataclasses import replace

from ...physics import capacity, curve, defaults, evidence
from ...planning import picker
from ...catalogs.engines import DEFAULT_ENGINE_TEXT
from ..registry import Arg, worksheet
from ..table import Table
from .common import ENGINE, ESTIMATE, GPU, MODEL, N_GPUS, OUTPUT, PRECISION, PROMPT, SPARE, MAX_LATENCY, positive
from .common import HEADROOM as HEADROOM_ARG

MAX_TPOT = positive("max_tpot_ms", "Latency target: longest time per output token a request may see (blank: none)",
                    "ms", default="")
MAX_TTFT = positive("max_ttft_ms", "Latency target: longest time to the first token (blank: none)", "ms", default="")
KV_AUTO = Arg("kv_precision", "precision", "KV-cache number format (blank: the engine's own: FP8 for TensorRT-LLM "
              "with 8- and 4-bit float weights, 16-bit otherwise)", default="")
N_GPUS_AUTO = replace(N_GPUS, default="", help="GPUs per model copy (tensor parallel); blank: the size among 1, 2, 4 "
                      "and 8 that needs the fewest GPUs")
HEADROOM = replace(HEADROOM_ARG, help="Burst headroom on top of the average traffic (as TOKENS_PER_SEC_NEEDED; "
                   "\"20%\" accepted)")
SERVING_ARGS = [MODEL, GPU, PRECISION, PROMPT, OUTPUT, N_GPUS, MAX_TPOT, ENGINE, KV_AUTO]
HOW = ("A decode step, per GPU of the tensor-parallel group, is the sum of its operations, each on its own roofline: "
       "the weight matrices (bytes / bandwidth or FLOPs / peak, whichever is longer), every sequence's KV cache at "
       "its length, two all-reduces per layer, and the engine's fixed time per layer and per step. The prefill of "
       "the same requests is paid in the same GPU-seconds. The batch is the largest whose KV cache fits under the "
       f"engine's memory rules and batch cap, and meets max_tpot_ms. Engine default: {DEFAULT_ENGINE_TEXT}.")
EXAMPLE = ("Llama 3.1 8B", "H100 SXM", "fp8", 2048, 2048)


def _point(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine, kv_precision):
    return capacity.serving_point(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms or None,
                                  engine or None, kv_precision or None)


@worksheet("SERVING_THROUGHPUT", "Output tokens/s one copy of a model sustains under continuous batching (all its "
           "GPUs together), at the largest batch that fits and meets the latency target. " + HOW + " estimate = "
           "low / high: the throughput at the P90 / P10 of its regime's measured error (ESTIMATE_EVIDENCE).",
           "tokens/s (total)", "Serving", SERVING_ARGS + [ESTIMATE],
           examples=[(EXAMPLE, 8980.7), (EXAMPLE + (1, 10), 7333.9), (EXAMPLE + (1, "", "vllm"), 5090.7)], kind="rate")
def serving_throughput(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine,
                       kv_precision, estimate):
    tokens_per_sec = _point(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine,
                            kv_precision).tokens_per_sec
    if estimate == "point":
        return tokens_per_sec
    return evidence.for_option("throughput", model, gpu, precision, n_gpus, engine).pick(tokens_per_sec, estimate)


@worksheet("SERVING_BATCH", "Sequences SERVING_THROUGHPUT runs at once: the most whose KV cache fits under the "
           "engine's memory rules, capped by its batch limit and by max_tpot_ms.", "sequences", "Serving",
           SERVING_ARGS, examples=[(EXAMPLE, 251), (EXAMPLE + (1, 10), 73)], kind="count")
def serving_batch(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine, kv_precision):
    return _point(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine,
                  kv_precision).batch


@worksheet("SERVING_LATENCY_MS", "Latency at SERVING_THROUGHPUT's operating point: tpot = time per output token "
           "each request sees (the step, plus its share of the prefills), ttft = the mean time to the first token "
           "of a request arriving at that load (batch / (output x TPOT) requests a second): the wait for the "
           "engine iteration in progress, which may carry other prompts, then its prefill in an iteration that "
           "also decodes the running batch and prefills the prompts that arrived with it.", "ms", "Serving",
           SERVING_ARGS + [Arg("part", "choice", "tpot or ttft", choices=("tpot", "ttft"), default="tpot")],
           examples=[(EXAMPLE, 27.95), (EXAMPLE + (1, "", "", "", "ttft"), 82.68)], kind="time")
def serving_latency_ms(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine,
                       kv_precision, part):
    point = _point(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine, kv_precision)
    return point.tpot_ms if part == "tpot" else point.ttft_ms


TRAFFIC_PARTS = ("gpus", "copies", "gpus_per_copy", "batch", "tokens_per_sec_per_copy", "spare_copies",
                 "wait_ms", "ttft_ms", "latency_ms")
PERCENTILE = Arg("percentile", "number", "The percentile the TTFT and latency targets hold at (default 95%)", "share",
                 default=defaults.LATENCY_PERCENTILE, min=0, max=1, min_open=True, max_open=True)


@worksheet("GPUS_FOR_TRAFFIC", "GPUs to serve a traffic level: requests/min / 60 x output tokens x (1 + headroom), "
           "divided by SERVING_THROUGHPUT of one copy at the latency targets, rounded up to whole copies. Blank n_gpus "
           "tries tensor-parallel groups of 1, 2, 4 and 8 GPUs and keeps the one needing the fewest GPUs (copies "
           "over 2, 4 or 8 servers, pipeline stages joined by the network, when no server holds the model). More "
           "copies are added until the wait for a free slot at the percentile (Erlang C with the Allen-Cunneen "
           "correction) keeps max_ttft_ms and max_latency_s, then the spare copies (default N+1). part = "
           "gpus (default), copies (spares included), gpus_per_copy, batch, tokens_per_sec_per_copy, spare_copies, "
           "wait_ms (the wait for a free slot at the percentile), ttft_ms or latency_ms (that wait plus the operating "
           "point's mean first token or whole request). estimate = low / high: GPUs "
           "and copies at the P10 / P90 of the regime's measured throughput error (the copy's throughput high / "
           "low; ESTIMATE_EVIDENCE), same GPUs per copy, batch, queueing extra and spares.", "GPUs", "Serving",
           [MODEL, GPU, positive("requests_per_minute", "Requests per minute at the peak", "requests/min"),
            PROMPT, OUTPUT, MAX_TPOT, MAX_TTFT, PRECISION, N_GPUS_AUTO, ENGINE, HEADROOM,
            Arg("part", "choice", "What to return", choices=TRAFFIC_PARTS, default="gpus"), ESTIMATE, SPARE,
            MAX_LATENCY, PERCENTILE],
           examples=[(("Llama 3.1 8B", "H100", 1000, 1024, 256, 50, "", "fp8"), 2),
                     (("Llama 3.3 70B", "H100", 1000, 2048, 512, 50), 28),
                     (("Llama 3.3 70B", "H100", 1000, 2048, 512, 50, "", "bf16", "", "", 0.2, "gpus_per_copy"), 4)], kind="count")
def gpus_for_traffic(model, gpu, requests_per_minute, prompt_tokens, output_tokens, max_tpot_ms, max_ttft_ms,
                     precision, n_gpus, engine, headroom, part, estimate, spare, max_latency_s, percentile):
    plan = capacity.gpus_for_traffic(model, gpu, requests_per_minute, prompt_tokens, output_tokens,
                                     max_tpot_ms or None, max_ttft_ms or None, precision, n_gpus or None,
                                     engine or None, headroom, None, spare, max_latency_s or None, percentile)
    per_copy, copies = plan.point.tokens_per_sec, plan.copies
    if estimate != "point":     # fewer GPUs where the copy is faster: low GPUs = high throughput
        ev = evidence.for_option("throughput", model, gpu, precision, plan.n_gpus, engine)
        per_copy = ev.pick(per_copy, estimate)
        picked = ev.pick(plan.point.tokens_per_sec, "high" if estimate == "low" else "low")
        copies += capacity.copies_for(plan.demand_tokens_per_sec, picked) \
            - capacity.copies_for(plan.demand_tokens_per_sec, plan.point.tokens_per_sec)
    return {"gpus": copies * plan.n_gpus, "copies": copies, "gpus_per_copy": plan.n_gpus, "batch": plan.point.batch,
            "tokens_per_sec_per_copy": per_copy, "spare_copies": plan.spare_copies, "wait_ms": plan.wait_ms,
            "ttft_ms": plan.ttft_ms, "latency_ms": plan.latency_ms}[part]


CURVE_PRICE = Arg("usd_per_gpu_hour", "number", "Price of one GPU-hour for the cost column (blank: the cheapest "
                  "current on-demand cloud instance in the catalog that holds the copy's n_gpus, up to a server, as "
                  "the picker rents them; the column is empty when there is none)",
                  "$/GPU-hour", default="", min=0, min_open=True)
CURVE_HEADER = ["Batch", "Tokens_per_sec_per_GPU", "Tokens_per_sec_per_user", "TPOT_ms", "TTFT_ms",
                "USD_per_1M_output_tokens", "Operating_point"]


@worksheet("SERVING_CURVE", "The serving trade-off curve of one model copy: per batch (1, 2, 4, ... up to "
           "SERVING_THROUGHPUT's operating point, the last row), output tokens/s per GPU, tokens/s each user sees "
           "(1000 / TPOT), time per output token, time to first token and $ per 1M output tokens "
           "(COST_PER_1M_OUTPUT_TOKENS at that batch). Larger batches give more tokens per GPU and fewer per user. "
           + HOW, "table", "Serving",
           [MODEL, GPU, PRECISION, PROMPT, OUTPUT, N_GPUS, CURVE_PRICE, MAX_TPOT, ENGINE, KV_AUTO],
           returns="table", examples=[(EXAMPLE, None)], kind="table")
def serving_curve(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, usd_per_gpu_hour, max_tpot_ms, engine,
                  kv_precision):
    if usd_per_gpu_hour in ("", None):           # the instance that holds the copy's GPUs (picker.option_row)
        row = picker.option_row(gpu, int(n_gpus), int(n_gpus))
        usd_per_gpu_hour = row.usd_per_gpu_hour if row else None
    points = curve.serving_curve(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, usd_per_gpu_hour,
                                 engine or None, kv_precision or None, max_tpot_ms or None)
    return Table(CURVE_HEADER, [[p.batch, p.tokens_per_sec_per_gpu, p.tokens_per_sec_per_user, p.tpot_ms, p.ttft_ms,
                                 p.usd_per_1m_output, p.operating_point] for p in points])
