"""Offline batch jobs: N requests sent at once, from the first prompt to the last answer, and what the
GPUs cost for that time (udfs/physics/batch_run.py; docs/serving-model.md, A batch run)."""

import math

from ...errors import num_error
from ...physics import batch_run
from ..registry import Arg, worksheet
from .common import ENGINE, GPU, MODEL, N_GPUS, OUTPUT, PRECISION, PROMPT, USD_PER_GPU_HOUR, positive
from .serving import KV_AUTO

REQUESTS = Arg("requests", "integer", "Requests in the job, all sent at once", "requests", min=1)
MAX_OUTPUT = positive("max_output_tokens", "Longest answer a request may give (its max_tokens): answers then spread "
                      "up to it around output_tokens, an exponential truncated there (an assumed shape); blank: every "
                      "answer output_tokens long", "tokens", default="")
COPIES = Arg("copies", "integer", "Model copies sharing the job, each with n_gpus GPUs (the requests split evenly; "
             "at most one copy a request)",
             "copies", default=1, min=1)
JOB_PARTS = ("hours", "gpu_hours", "tail_hours")
JOB_ARGS = [MODEL, GPU, REQUESTS, PROMPT, OUTPUT, MAX_OUTPUT, PRECISION, N_GPUS, COPIES, ENGINE, KV_AUTO]
HOW = ("Each copy admits requests up to its concurrency cap (the KV cache under the engine's memory rules, within "
       "its batch limit), prefills prompts within the engine's token budget per iteration beside the running "
       "decodes, and decodes one token of every running answer per iteration; answers leave as they end, so the "
       "batch shrinks and the job lasts at least the longest answer's steps (the tail). For many times the cap "
       "requests it approaches requests x output_tokens / SERVING_THROUGHPUT at that batch; for a few it is the "
       "tail. No evidence band: the measured bursts (docs/accuracy.md) are a known miss, mostly too fast.")
EXAMPLE = ("Llama 3.1 8B", "H100 SXM", 100000, 1024, 256)


def _job(model, gpu, requests, prompt_tokens, output_tokens, max_output_tokens, precision, n_gpus, copies, engine,
         kv_precision) -> tuple[batch_run.BatchRun, int]:
    """One copy's share of the job (the largest, when the requests do not split evenly) and the GPUs in all. More
    copies than requests would bill copies that never run one: #NUM!."""
    if copies > requests:
        raise num_error(f"copies ({copies:g}) exceed requests ({requests:g}): {copies - requests:g} copies would hold "
                        f"their GPUs with no request to run; give at most {requests:g} copies")
    run = batch_run.run(model, gpu, precision, math.ceil(requests / copies), prompt_tokens, output_tokens, n_gpus,
                        engine or None, kv_precision or None, max_output_tokens or None)
    return run, copies * n_gpus


@worksheet("BATCH_JOB_HOURS", "Hours an offline batch job of N requests takes, all sent at once, first prompt to last "
           "answer. " + HOW + " part = hours (wall clock, default), gpu_hours (x every GPU of every copy) or "
           "tail_hours (the end, once fewer than half the cap still run).", "hours", "Serving",
           JOB_ARGS + [Arg("part", "choice", "What to return", choices=JOB_PARTS, default="hours")],
           examples=[(EXAMPLE, 1.1914), (EXAMPLE[:2] + (1000, 1024, 256), 0.011977),
                     (EXAMPLE[:2] + (1000, 1024, 256, 2048), 0.014918)], kind="time")
def batch_job_hours(model, gpu, requests, prompt_tokens, output_tokens, max_output_tokens, precision, n_gpus, copies,
                    engine, kv_precision, part):
    run, gpus = _job(model, gpu, requests, prompt_tokens, output_tokens, max_output_tokens, precision, n_gpus,
                     copies, engine, kv_precision)
    return {"hours": run.seconds, "gpu_hours": run.seconds * gpus, "tail_hours": run.tail_seconds}[part] / 3600


@worksheet("BATCH_JOB_COST", "What an offline batch job of N requests costs: BATCH_JOB_HOURS's GPU-hours x the price "
           "of a GPU-hour (every GPU of every copy, held from the first prompt to the last answer). " + HOW,
           "$", "Economics", [USD_PER_GPU_HOUR] + JOB_ARGS, examples=[((2.0,) + EXAMPLE, 2.383)], kind="money")
def batch_job_cost(usd_per_gpu_hour, model, gpu, requests, prompt_tokens, output_tokens, max_output_tokens, precision,
                   n_gpus, copies, engine, kv_precision):
    return usd_per_gpu_hour * batch_job_hours(model, gpu, requests, prompt_tokens, output_tokens, max_output_tokens,
                                              precision, n_gpus, copies, engine, kv_precision, "gpu_hours")
