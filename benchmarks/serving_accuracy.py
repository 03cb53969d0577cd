"""Honest accuracy of the serving estimates: every measured inference row, in-sample and
out-of-sample.

    python3 benchmarks/serving_accuracy.py [--measured DIR] [--worst N]

Every constant that was chosen by looking at measured rows is listed in FITTED with the rows
it is chosen from and the rule that chooses it (the value that makes the median error of
those rows zero). The in-sample error scores the shipped constants on every row; the
out-of-sample error re-chooses each constant without the row's fold (k-fold, or leave-one-out
for a pool of few rows: benchmarks/folds.py), by the same rule (falling back to its physical
prior when fewer than MIN_ROWS rows remain), so a constant is never scored on a row it was
chosen from. Constants not in FITTED come from engine
documentation or physics (udfs/data/engines.csv says which) and score the same either way.

Metrics (one per kind of measurement; none is skipped silently):
  decode_b1       decode tokens/s of one sequence, with the row's engine
  fixed_batch     output tokens/s of a static batch (prefill, then decode), total over GPUs
  max_throughput  output tokens/s of a model copy at the largest batch the engine runs
                  (trtllm-bench max-throughput, MLPerf Offline/Server), SERVING_THROUGHPUT
  burst           output tokens/s of N requests sent at once (`vllm bench serve --num-prompts N`,
                  request rate inf): the run's mean, ramp and tail included; not a steady state, so
                  not what SERVING_THROUGHPUT estimates, and kept out of its evidence bands
  prefill         time to first token (ms) and prompt processing (tokens/s)
  fit             out-of-memory rows: does the estimate agree that it does not fit
Rows whose GPU or model is not in the catalog are listed with the reason.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from udfs.physics import arch, batch_run, capacity, collectives, defaults, moe, queueing, serving, shape  # noqa: E402
from udfs.physics import calibration as cal  # noqa: E402
from udfs.physics.shape import moe_layer_count  # noqa: E402
from udfs.catalogs import catalog, engines  # noqa: E402
from udfs.errors import FlopsheetError  # noqa: E402

from benchmarks import folds  # noqa: E402
from benchmarks.accuracy import find_gpu, find_model, find_precision, number  # noqa: E402  (row matching)

METRICS = {
    "decode_b1": "Batch-1 decode tokens/s, with the row's engine",
    "fixed_batch": "Fixed-batch throughput (output tokens/s, total)",
    "max_throughput": "Max-throughput output tokens/s (SERVING_THROUGHPUT)",
    "burst": "Burst of N requests sent at once: the run's mean output tokens/s (prefill queue, ramp and tail)",
    "prefill": "Time to first token / prompt processing",
}
MIN_ROWS = 2

# Engines named in measurements that are not profiles of their own.
ENGINE_ALIASES = {
    "amd submission stack": ("vLLM V0", "AMD's MLPerf Inference v4.1 Llama 2 70B submission (2024-08) ran vLLM's V0 "
                                        "engine on ROCm"),
}
# Workloads named instead of lengths. MLPerf's Llama 2 70B set (OpenOrca): answers average
# ~290 tokens as the runs generate them (the H100 Offline row: 24,524.9 tokens/s at 84.48 samples/s; a row whose
# note states its run's TOKENS_PER_SAMPLE, MLPerf v5.1's, is scored at its own: _lengths);
# prompts average 222 tokens: the mean of tok_input_length over the 24,576 samples of the official
# open_orca_gpt4_tokenized_llama.sampled_24576.pkl.gz, as openshift-psap/performance-dashboard publishes
# them (mlperf-data/summaries/llama2-70b-99.csv, commit 7cd1065, 2025-11-04: mean 222.3, median 152,
# longest 1,021; the set's reference answers average 218.9, shorter than the runs' 290). They were
# taken as 290, the answers' length, before the set's own counts were read.
# MLPerf's Mixtral 8x7B set (5,000 samples each of OpenOrca, GSM8K and MBXP): answers average
# 146 tokens (tokens/s over samples/s of the v4.1 results, 52,415.9 / 359.173); prompts average 427
# tokens: the mean of tok_input_len over the 15,000 samples of the official
# 09292024_mixtral_15k_mintoken2_v1.pkl, as openshift-psap/performance-dashboard publishes them
# (mlperf-data/summaries/mixtral-8x7b.csv, 2025-11-20: mean 427.4, median 283; its reference answers
# average 144.84 tokens, MLCommons' own tokens_per_sample in language/mixtral-8x7b/README.md).
# Listed first: the set's name also says OpenOrca.
DATASETS: dict[str, tuple[float | None, float | None]] = {"mbxp": (427, 146), "openorca": (222, 290)}
# Tables that report output tokens/s per GPU without saying so in every header: TensorRT-LLM
# v0.6.1 performance.md heads its H100 table "out tok/s/GPU" and its A100 and L40S tables
# "out tok/s"; the A100 tensor-parallel rows are only physical per GPU (LLaMA 70B at batch
# 1280, 128/128 tokens, on four A100s: 670 tok/s in total would be a fifth of what the four
# GPUs' FP16 peak allows for the prefill and decode FLOPs alone).
PER_GPU_SOURCES = ("TensorRT-LLM/blob/v0.6.1/docs/source/performance.md",)
# Hugging Face's BLOOM inference scripts generate 100 new tokens from one-sentence prompts.
HF_BLOOM_LENGTHS = (16, 100)


# ---------------------------------------------------------------------------- rows

@dataclass(frozen=True)
class Case:
    metric: str
    ref: str
    label: str
    model: catalog.Model
    gpu: catalog.Gpu
    precision: str
    n_gpus: int
    engine: engines.Engine
    batch: int            # 0 for max-throughput rows
    prompt: float
    output: float
    measured: float       # in `unit`
    unit: str             # "tokens/s" or "ms"
    note: str = ""
    max_tpot_ms: float | None = None
    max_ttft_ms: float | None = None
    system: bool = False  # a whole system's result (MLPerf): its GPUs may run several model copies
    copy: int = 0         # GPUs in one model copy as the system's configuration states it (_stated_copy); 0: not stated
    continuous: bool = False  # a fixed number of requests in flight under continuous batching
    kv: str | None = None     # the KV-cache format the row records ("KV cache FP8"); None: the engine's default
    rate: float | None = None  # requests/s of a time-to-first-token row measured at a stated load
    concurrency: float | None = None  # or the requests such a row keeps in flight (a closed loop)
    answer: float = 0.0        # that row's answer length (its requests stay in flight while they decode)
    requests: float | None = None      # a closed-loop row's requests in all, the first `concurrency` sent at once
    admission_steps: int | None = None  # decode steps between the engine's polls for new requests, as the row set it
    burst: int = 0            # requests sent at once (a "1000 prompts" benchmark run); 0: a steady state
    answer_cap: float | None = None   # a burst's longest answer allowed (_answer_cap); None: every answer the mean

    def speed(self, value: float) -> float:
        """A figure where bigger is faster, so every error has the same sign convention."""
        return 1 / value if self.unit == "ms" else value


@dataclass
class Result:
    """A scored case: its estimate with the shipped constants and with the row-chosen
    constants re-chosen without it. Errors are (estimate - measured) / measured in the row's
    own unit (for a latency, positive means the estimate is slower)."""
    case: Case
    estimate: float
    estimate_out: float
    worksheet: float | None = None      # both again with only the worksheet's terms (worksheet_terms); None: the same
    worksheet_out: float | None = None

    @property
    def in_sample(self) -> float:
        return self.estimate / self.case.measured - 1

    @property
    def out_of_sample(self) -> float:
        return self.estimate_out / self.case.measured - 1


def default_dir() -> Path:
    return ROOT / "benchmarks" / "measured"


def read(directory: Path) -> list[tuple[str, dict[str, str]]]:
    path = directory / "inference_measured.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        return [(f"{path.name}:{i}", r) for i, r in enumerate(csv.DictReader(handle), start=2)]


def _engine(name: str, gpu: catalog.Gpu) -> tuple[engines.Engine, str]:
    mapped = ENGINE_ALIASES.get(name.strip().lower())
    if mapped:
        return engines.engine(mapped[0]), mapped[1]
    try:
        return engines.engine(name, gpu), ""
    except FlopsheetError:
        default = engines.engine("", gpu)
        return default, f"engine '{name}' has no profile: {default.name}'s used"


def _constraints(row: dict[str, str]) -> tuple[float | None, float | None]:
    """Latency limits of a server scenario, from the row's note ("TTFT 2 s, TPOT 200 ms")."""
    limits = []
    for what in ("TPOT", "TTFT"):
        match = re.search(what + r"\s*([\d.]+)\s*(ms|s)\b", row["note"])
        limits.append(None if not match else float(match.group(1)) * (1000 if match.group(2) == "s" else 1))
    return limits[0], limits[1]


def _lengths(row: dict[str, str]) -> tuple[float | None, float | None]:
    """(prompt, answer) tokens: a named data set's (DATASETS), with the answers' mean the row's own where its note
    states it (MLPerf v5.1's TOKENS_PER_SAMPLE: the tokens its run generated a sample), else the row's lengths."""
    text = (row["input_len"] + " " + row["output_len"]).lower()
    for name, (prompt, answer) in DATASETS.items():
        if name in text:
            stated = re.search(r"TOKENS_PER_SAMPLE ([\d.]+)", row["note"])
            return prompt, float(stated.group(1)) if stated else answer
    return number(row["input_len"]), number(row["output_len"])


def _per_gpu(row: dict[str, str]) -> bool:
    unit = row["unit"].lower()
    return "per gpu" in unit or (int(number(row["num_gpus"]) or 1) > 1 and "total" not in unit
                                 and any(s in row["source"] for s in PER_GPU_SOURCES))


def _total(value: float, row: dict[str, str], n_gpus: int) -> float:
    """Output tokens/s of all the row's GPUs from the row's unit."""
    return value * n_gpus if _per_gpu(row) else value


def parse(ref: str, row: dict[str, str]) -> Case | str:
    """A scoreable case, or the reason the row cannot be scored."""
    what = " | ".join(row[k].strip() for k in ("model", "precision", "gpu", "num_gpus", "engine", "batch_size"))
    label = f"{ref} {what}"
    model, gpu = find_model(row["model"]), find_gpu(row["gpu"])
    if gpu is None:
        return f"{label}\n      GPU '{row['gpu']}' is not in the catalog"
    if model is None:
        return f"{label}\n      model '{row['model']}' is not in the catalog"
    eng, note = _engine(row["engine"], gpu)
    precision = find_precision(row["precision"]) or eng.vendor_precision(gpu)
    if not find_precision(row["precision"]):
        note = "; ".join(filter(None, [note, f"precision not recorded: {precision}, the fastest format "
                                             f"{eng.name} runs on {gpu.name}"]))
    n_gpus = int(number(row["num_gpus"]) or 1)
    metric_text, unit = row["metric"].lower(), row["unit"].lower()
    batch_text = row["batch_size"].strip().lower()
    value_text = row["value"].strip()
    prompt, output = _lengths(row)
    eng, stated = _stated(eng, row["note"])
    note = "; ".join(filter(None, [note, stated]))
    kv_match = re.search(r"KV cache (?:in )?([A-Za-z0-9_]+)", row["precision"] + " " + row["note"], re.IGNORECASE)
    kv = find_precision(kv_match.group(1)) if kv_match else None
    if kv == "fp8" and eng.kv_format(precision) != "fp8":
        eng = replace(eng, kv_precision="fp8_if_8bit")    # the row's FP8 cache, in every fit check too
    common = dict(ref=ref, label=label, model=model, gpu=gpu, precision=precision, n_gpus=n_gpus, engine=eng, kv=kv)
    if value_text.upper() == "OOM":
        return Case("fit", batch=1, prompt=prompt or 0, output=output or 0, measured=0, unit="fits",
                    note=note, **common)
    value = number(value_text)
    if value is None or value <= 0:
        return f"{label}\n      value '{value_text}' is not a measurement"
    if unit.strip() in ("s", "seconds", "sec"):
        value, unit = value * 1000, "ms"
    batch = _batch(batch_text, metric_text)
    per_token = "token" in unit + metric_text or any(k in metric_text for k in ("tpot", "itl", "inter-token"))
    if "ms" in unit and per_token and "first" not in metric_text and "ttft" not in metric_text:
        if "normali" in metric_text:           # throughput-normalised: total time / (batch x tokens)
            if not (prompt and output):
                prompt, output = HF_BLOOM_LENGTHS
                note = "; ".join(filter(None, [note, f"prompt {prompt}, {output} new tokens (the blog's scripts)"]))
            note = "; ".join(filter(None, [note, "ms/token = 1000 / tokens/s"]))
            value = 1000 / value
        else:                                   # time per output token of each sequence
            note = "; ".join(filter(None, [note, "per-sequence ms/token: batch x 1000 / ms tokens/s"]))
            value = (batch or 1) * 1000 / value
        unit = "tokens/s"
    elif any(w in unit for w in ("per user", "per sequence", "per request", "per stream")) and batch:
        note = "; ".join(filter(None, [note, "per-sequence figure x batch"]))
        value *= batch
    if "ttft" in metric_text or "first-token" in metric_text or "first token" in metric_text:
        load = re.search(r"at ([\d.]+) requests?/s", metric_text) if output else None
        closed = re.search(r"at (?:max-)?concurrency ([\d.]+)", metric_text) if output else None
        if load:
            note = "; ".join(filter(None, [note, f"{load.group(1)} request/s: the prefill queue and the requests in "
                                                 f"flight (Little's law)"]))
        if closed:
            note = "; ".join(filter(None, [note, f"{closed.group(1)} in flight, a closed loop: the rate that follows"]))
        run = re.search(r"--num-prompts (\d+)", row["note"] or "") if closed else None
        recv = re.search(r"--scheduler-recv-interval (\d+)", row["note"] or "") if closed else None
        if run:
            note = "; ".join(filter(None, [note, f"{run.group(1)} requests, the first {closed.group(1)} sent at once "
                                                 f"(capacity.first_wave_s)"]))
        if recv:
            note = "; ".join(filter(None, [note, f"new requests taken every {recv.group(1)} decode steps"]))
        return Case("prefill", batch=1, prompt=prompt or 1, output=1, measured=value, unit="ms", note=note,
                    rate=float(load.group(1)) if load else None, answer=output or 0.0,
                    concurrency=float(closed.group(1)) if closed else None,
                    requests=float(run.group(1)) if run else None,
                    admission_steps=int(recv.group(1)) if recv else None, **common)
    if "prefill" in metric_text or "prompt processing" in metric_text:
        return Case("prefill", batch=1, prompt=prompt or 1, output=1, measured=value, unit="tokens/s",
                    note=note, **common)
    if not batch and prompt is None and any(name in (row["input_len"] or "").lower() for name in DATASETS):
        return f"{label}\n      the mean prompt length of its data set is not recorded (DATASETS)"
    if not batch:
        tpot, ttft = _constraints(row) if ("server" in metric_text or "interactive" in metric_text) else (None, None)
        burst = re.fullmatch(r"(\d+)\s+prompts", batch_text)
        cap, how = _answer_cap(row, prompt or 1) if burst else (None, "")
        if burst:
            note = "; ".join(filter(None, [note, f"a burst of {burst.group(1)} requests run to the last answer "
                                                 f"(udfs/physics/batch_run.py): {how}"]))
        system = "mlperf" in metric_text
        copy = _stated_copy(row["note"], n_gpus) if system else 0
        if copy:
            note = "; ".join(filter(None, [note, f"scored as copies of {copy} GPUs, the "
                                                 f"tensor_parallelism its configuration states"]))
        return Case("burst" if burst else "max_throughput", batch=0, prompt=prompt or 1, output=output or 1,
                    measured=_total(value, row, n_gpus), unit="tokens/s", note=note, system=system, copy=copy,
                    max_tpot_ms=tpot, max_ttft_ms=ttft, burst=int(burst.group(1)) if burst else 0,
                    answer_cap=cap, **common)
    continuous = "concurren" in batch_text + metric_text
    if batch == 1 and not (continuous and "tokens/s" in row["unit"].lower()):
        return Case("decode_b1", batch=1, prompt=prompt or 0, output=output or 1, measured=value,
                    unit="tokens/s", note=note, **common)
    if _per_gpu(row) and n_gpus > 1:
        note = "; ".join(filter(None, [note, "per-GPU figure x GPUs" + ("" if "per gpu" in unit else
                                                                        " (see PER_GPU_SOURCES)")]))
    if continuous:
        note = "; ".join(filter(None, [note, "a fixed number of requests in flight: continuous batching at that batch"]))
    return Case("fixed_batch", batch=batch, prompt=prompt or 1, output=output or 1,
                measured=_total(value, row, n_gpus), unit="tokens/s", note=note, continuous=continuous, **common)


def _stated_copy(note: str, n_gpus: int) -> int:
    """The GPUs of one model copy a system result's configuration states ("tensor_parallelism 8": the
    `llm_fields.tensor_parallelism` of NVIDIA's and HPE's MLPerf configs, which the row's note quotes), where it
    divides the system's GPUs; 0 where not stated (the row is then scored as its best split, best_split)."""
    match = re.search(r"tensor_parallelism (\d+)", note or "")
    copy = int(match.group(1)) if match else 0
    return copy if copy and n_gpus % copy == 0 else 0


def _stated(eng: engines.Engine, note: str) -> tuple[engines.Engine, str]:
    """The engine as the row ran it, where its note states a setting the profile defaults otherwise: an
    "engine batch cap N" a model copy (vLLM's max_num_seqs, TensorRT-LLM's max batch size, as the row's launch
    configuration sets it); an "engine memory fraction F" (SGLang's --mem-fraction-static, TensorRT-LLM's
    free_gpu_memory_fraction: the profile's memory_fraction under its own memory rule); "attention data-parallel"
    (MoE experts split over the GPUs, each GPU attending to its own sequences: SGLang's --enable-dp-attention,
    TensorRT-LLM's enable_attention_dp) or "expert parallel, attention tensor-parallel" (E/n whole experts a GPU,
    attention split by heads: SGLang's --ep-size without DP attention, TensorRT-LLM's --ep_size with
    enable_attention_dp false); "attention-DP balancing on" (its ranks prefill together: TensorRT-LLM's
    adp_balancing_enable); "FlashInfer sampler" (vLLM run with FlashInfer installed, which its V1 sampler then uses:
    the start-up profile's sampler peak, capacity.profile_run_gib). A row is scored like for like, never with a setting
    its source does not state."""
    said = []
    cap = re.search(r"engine batch cap ([\d,]+)", note)
    if cap:
        value = int(cap.group(1).replace(",", ""))
        eng = replace(eng, max_batch=value, large_gpu_max_batch=value)
        said.append(f"the row's batch cap {value:,}")
    share = re.search(r"engine memory fraction (0\.\d+)", note)
    if share:
        eng = replace(eng, memory_fraction=float(share.group(1)))
        said.append(f"the row's memory fraction {share.group(1)}")
    if "attention data-parallel" in note.lower():
        eng = replace(eng, moe_parallel="expert_dp")
        said.append("the row's layout: experts split over the GPUs, attention data-parallel")
    elif "expert parallel, attention tensor-parallel" in note.lower():
        eng = replace(eng, moe_parallel="expert")
        said.append("the row's layout: experts split over the GPUs, attention tensor-parallel")
    if "attention-dp balancing on" in note.lower():
        eng = replace(eng, dp_balance=True)
        said.append("its ranks prefill together (attention-DP balancing)")
    if "flashinfer sampler" in note.lower():
        eng = replace(eng, flashinfer_sampler=True)
        said.append("the row's FlashInfer sampler (FlashInfer installed)")
    return eng, "; ".join(said)


# The longest answer a burst's client allows. ShareGPT under vLLM's and SGLang's benchmark clients: each
# request asks for its reference answer's length (max_tokens), and samples with prompt + answer over 2,048
# tokens are dropped (vLLM vllm/benchmarks/datasets.py is_valid_sequence: max_prompt_len 1024, max_total_len
# 2048, the pruning of benchmark_serving.py's sample_sharegpt_requests; sgl-project/sglang
# python/sglang/bench_serving.py sample_sharegpt_requests: the same rule; read 2026-11-24), so an answer is at
# most 2,048 - prompt tokens. The client applies that per request, to each request's own prompt; a row records
# only its MEAN prompt, so the cap here is 2,048 - the mean prompt, an assumption: with long-tailed prompts a
# request whose prompt is longer than the mean may answer less than this cap, and one with a shorter prompt more
# (up to 2,048 - the shortest prompt). The random data set: `--random-output-len L` asks for L tokens (range ratio 0 by
# default), answers may stop early at the end of sequence, never later.
SHAREGPT_MAX_TOTAL_TOKENS = 2048


def _answer_cap(row: dict[str, str], prompt: float) -> tuple[float | None, str]:
    """The longest answer a burst row's client allows, and the note saying why (SHAREGPT_MAX_TOTAL_TOKENS above)."""
    text = " ".join(row[k] for k in ("input_len", "output_len", "note"))
    random_len = re.search(r"--random-output-len\s+(\d+)", text)
    if random_len:
        cap = float(random_len.group(1))
        return cap, (f"answers at most {cap:g} tokens (--random-output-len), spread as an exponential truncated "
                     "there with the row's mean")
    fixed = re.search(r"benchmark_throughput\.py.*?--output-len\s+(\d+)", text)
    if fixed:            # vLLM's benchmark_throughput.py samples with ignore_eos and max_tokens = the output length
        cap = float(fixed.group(1))
        return cap, f"every answer {cap:g} tokens (benchmark_throughput.py ignores the end of sequence)"
    if "sharegpt" in text.lower():
        cap = SHAREGPT_MAX_TOTAL_TOKENS - prompt
        return cap, (f"ShareGPT answers at most {cap:g} tokens (the client drops prompt + answer over "
                     f"{SHAREGPT_MAX_TOTAL_TOKENS:,} per request; the cap here is from the row's mean prompt, an "
                     "assumption), spread as an exponential truncated there with the row's mean "
                     "(an assumed shape: no published length distribution of this sample)")
    return None, "the answers' spread is not recorded: every answer the row's mean (no tail)"


def _batch(text: str, metric: str) -> int | None:
    """Sequences decoded together, or None for a maximum-throughput run ("max", "1000 prompts")."""
    if re.fullmatch(r"\d+", text):
        return int(text)
    if "concurren" in text + " " + metric and re.search(r"\d+", text):
        return int(re.search(r"\d+", text).group(0))
    return None


def safe_parse(ref: str, row: dict[str, str]) -> Case | str:
    try:
        return parse(ref, row)
    except (FlopsheetError, ValueError, KeyError, TypeError) as exc:
        return f"{ref} {row.get('model', '')}\n      could not read the row: {exc}"


# ---------------------------------------------------------------------------- estimates

# Estimates already made in this process, by (case, engine): the report re-chooses each fitted constant within
# every fold (a bisection over the pool's rows), and the tests score the same rows again in several modules. An
# estimate is a function of its case, its engine and the world below; the memo is emptied when that world changes
# (a catalog reloaded, a constant or a physics function replaced), so it never serves a figure the code would not
# compute now. In this process only: nothing is written to disk.
_MEMO: dict[tuple[Case, engines.Engine], float] = {}
_MEMO_WORLD: list[tuple] = []
_PHYSICS = (arch, batch_run, capacity, cal, collectives, defaults, moe, queueing, serving, shape)


def _world() -> tuple:
    """What an estimate reads besides its case and engine: the loaded catalog and engine rows, and every name the
    serving physics modules hold (constants and functions, compared by value or identity)."""
    return (catalog.gpus(), catalog.models(), engines.engines(), engines.moe_kernels(),
            tuple(tuple(vars(module).values()) for module in _PHYSICS))


def estimate(case: Case, eng: engines.Engine) -> float:
    """The engine's estimate of the case's measured figure, in the case's unit (made once a process: _MEMO)."""
    world = _world()
    if _MEMO_WORLD != [world]:
        _MEMO.clear()
        _MEMO_WORLD[:] = [world]
    key = (case, eng)
    if key not in _MEMO:
        _MEMO[key] = _estimate(case, eng)
    return _MEMO[key]


def _estimate(case: Case, eng: engines.Engine) -> float:
    m, g, p, n = case.model, case.gpu, case.precision, case.n_gpus
    if case.metric == "decode_b1":
        return 1 / capacity.decode_step(m, g, p, 1, case.prompt + case.output / 2, n, case.kv, eng).total
    if case.metric == "fixed_batch" and case.continuous:
        return capacity.serving_point(m, g, p, case.prompt, case.output, n, None, eng, case.kv,
                                      batch=case.batch).tokens_per_sec
    if case.metric == "fixed_batch":
        step = capacity.decode_step(m, g, p, case.batch, case.prompt + case.output / 2, n, case.kv, eng).total
        prefill = capacity.prefill_seconds(m, g, p, case.prompt, case.batch, n, eng)
        return case.batch * case.output / (prefill + case.output * step)
    if case.metric in ("max_throughput", "burst"):
        return max_throughput(case, eng)
    if case.metric == "prefill" and case.unit == "ms":
        if case.rate or case.concurrency:       # at a stated load: the prefill queue and the running decode
            return capacity.load_ttft(m, g, p, case.prompt, case.answer, n, eng, case.kv, case.rate,
                                      case.concurrency, admission_steps=case.admission_steps,
                                      requests=case.requests).ttft_s * 1000
        return capacity.time_to_first_token_s(m, g, p, case.prompt, 1, n, eng) * 1000
    if case.metric == "prefill":
        return case.prompt / capacity.prefill_seconds(m, g, p, case.prompt, 1, n, eng)
    raise ValueError(case.metric)


def max_throughput(case: Case, eng: engines.Engine) -> float:
    """SERVING_THROUGHPUT of the row's GPUs. A system result (MLPerf) is the best split of its
    GPUs into model copies (best_split). A burst (N requests sent at once) runs at most N at a time:
    burst_throughput."""
    if case.burst:
        return burst_throughput(case, eng)
    return best_split(case, eng)[0]


def best_split(case: Case, eng: engines.Engine) -> tuple[float, int]:
    """(output tokens/s, GPUs a copy) of the row's GPUs at the largest batch: a system result (MLPerf) is
    copies x the throughput of one copy, of the GPUs its configuration states (Case.copy) or else of the
    tensor-parallel group that divides them best; any other row is one copy on all its GPUs."""
    m, g, p, n = case.model, case.gpu, case.precision, case.n_gpus
    groups = [case.copy] if case.copy else [t for t in capacity.TP_CHOICES if n % t == 0] if case.system else [n]
    best, error = (0.0, n), None
    for t in groups:
        try:
            point = capacity.serving_point(m, g, p, case.prompt, case.output, t, case.max_tpot_ms, eng,
                                           case.kv, case.max_ttft_ms)
            best = max(best, (n // t * point.tokens_per_sec, t))
        except FlopsheetError as exc:
            error = exc
    if not best[0]:
        raise error
    return best


def copy_gpus(case: Case) -> int:
    """GPUs in one model copy as the row is scored: a system result's best split (best_split, with the
    row's engine), else all its GPUs. The regime's layout (one GPU or parallel) is the copy's: a system of
    eight one-GPU copies measures a one-GPU estimate, not a tensor-parallel one."""
    if not case.system or case.metric != "max_throughput":
        return case.n_gpus
    try:
        return best_split(case, case.engine)[1]
    except FlopsheetError:
        return case.n_gpus


def burst_throughput(case: Case, eng: engines.Engine) -> float:
    """Output tokens/s of N requests sent at once, from the first prompt to the last answer
    (udfs/physics/batch_run.py): admitted up to the engine's concurrency cap, prompts prefilled within its
    token budget beside the running decodes, answers spread up to the row's cap (_answer_cap) and leaving
    as they end, so the batch shrinks to the longest answer's last steps (the tail)."""
    return batch_run.run(case.model, case.gpu, case.precision, case.burst, case.prompt, case.output, case.n_gpus,
                         eng, case.kv, case.answer_cap).tokens_per_sec


def fits(case: Case, eng: engines.Engine) -> bool:
    try:
        capacity.kv_batch(case.model, case.gpu, case.precision, case.prompt or 1, case.output or 1,
                          case.n_gpus, case.kv or eng.kv_format(case.precision), eng)
        return True
    except FlopsheetError:
        return False


def log_error(case: Case, eng: engines.Engine) -> float:
    return math.log(case.speed(estimate(case, eng)) / case.speed(case.measured))


# ---------------------------------------------------------------------------- fitted constants

@dataclass(frozen=True)
class Fitted:
    engine: str
    field: str
    prior: float           # physical prior, used when too few rows remain
    lo: float
    hi: float
    basis: str
    tied: tuple[str, ...] = ()   # fields set to the same value (one unit runs several formats)
    lent: tuple[str, ...] = ()   # engines that ship the value the rule picks, with no row in its pool
    iterations: int = 40         # bisection steps: fewer where each row's estimate is a closed loop (slow)
    constant: str = ""           # one value for every engine (engine ""): its home, a udfs.physics.calibration name

    @property
    def fields(self) -> tuple[str, ...]:
        return (self.field, *self.tied)

    @property
    def label(self) -> str:
        return self.engine or "every engine"

    def shipped(self, field: str) -> float:
        """The value the package ships: calibration's for a constant of every engine, else the engine profile's."""
        return getattr(cal, self.constant) if self.constant else getattr(engines.engine(self.engine), field)

    def selects(self, case: Case) -> bool:
        if self.engine and case.engine.name != self.engine:
            return False
        if self.field == "moe_layer_us":          # MoE rows at a stated concurrency: the step of a few to hundreds
            return case.model.is_moe and case.metric == "fixed_batch" and case.continuous and not case.burst
        if self.field.startswith("bandwidth_fraction_"):     # the share the row's estimate reads
            return case.metric == "decode_b1" and case.engine.bandwidth_field(case.gpu) == self.field
        if self.field == "layer_overhead_us":
            return case.metric == "decode_b1"
        if self.field == "sequence_overhead_us":             # per running sequence: steady rows of many sequences
            return case.metric in ("fixed_batch", "max_throughput")     # (a burst's run is not the rule's pool)
        if self.field.startswith("matmul_fraction_"):      # batches of hundreds: the products bound the step
            return case.metric in ("fixed_batch", "max_throughput", "burst")
        if self.field == "moe_prefill_share":              # a MoE model's first token at the fewest in flight its
            return case.metric == "prefill" and case.unit == "ms" and moe_layer_count(case.model) > 0 \
                and case.concurrency is not None and case.concurrency <= 4       # runs state: the pass, little queue
        if self.field == "eager_moe_layer_us":             # a MoE model's first token at 1-2 in flight: the lone
            return case.metric == "prefill" and case.unit == "ms" and moe_layer_count(case.model) > 0 \
                and (case.concurrency or 1) <= 2           # prompt's fixed part, before any window or first wave
        return False


FITTED = (
    Fitted("llama.cpp", "bandwidth_fraction_gddr", 0.90, 0.3, 1.0, "llama.cpp batch-1 rows on GDDR cards"),
    Fitted("llama.cpp", "bandwidth_fraction_unified", 0.90, 0.3, 1.0,
           "llama.cpp batch-1 rows on Apple silicon's unified memory (Metal kernels)"),
    Fitted("llama.cpp", "bandwidth_fraction_hbm", 0.80, 0.3, 1.0, "llama.cpp batch-1 rows on HBM parts"),
    Fitted("MLC-LLM", "bandwidth_fraction_gddr", 0.90, 0.3, 1.0, "MLC-LLM batch-1 rows"),
    Fitted("vLLM", "layer_overhead_us", 10.0, 0.0, 500.0,
           "vLLM V1 batch-1 rows (tensor parallel on H200, B200, MI300X): piecewise CUDA graphs launch attention "
           "outside the graph in every layer"),
    Fitted("gpt-fast", "layer_overhead_us", 10.0, 0.0, 500.0,
           "gpt-fast batch-1 rows (Llama 2 7B and 70B on 1-8 A100s, bf16 and int8): the decode step is one CUDA graph, "
           "so what a layer costs beyond its bytes is its kernels' own start, ramp and tail; vLLM V0 and SGLang, which "
           "replay their decode step as one CUDA graph too, ship the same value (none of their rows chose it)",
           lent=("vLLM V0", "vLLM V0 multi-step", "SGLang")),
    Fitted("vLLM V0", "sequence_overhead_us", 100.0, 0.0, 2000.0,
           "vLLM V0 fixed-batch and max-throughput rows (Oracle's 405B and vLLM issue #16300's QwQ-32B batches, AMD's "
           "MLPerf v4.1 stack): the CPU work per running sequence between steps (sampling, output processing, input "
           "preparation, scheduling) that V0 does not overlap with the GPU; prior 100 us (vLLM RFC #6801: ~20 ms at 200 "
           "sequences)"),
    Fitted("SGLang", "eager_moe_layer_us", 0.0, 0.0, 20000.0,
           "SGLang's DeepSeek-R1 first tokens at 1-2 in flight (SemiAnalysis InferenceX, SGLang 0.5.12 on 4-8 B200 and "
           "B300, 1k and 8k prompts): what a lone prompt's prefill pays beyond its products, reads and launches, a "
           "fixed host time a MoE layer of an eager prefill pass; prior 0 (not counted)"),
    Fitted("vLLM", "moe_prefill_share", 1.0, 0.1, 1.0,
           "vLLM's MoE first tokens at 4 in flight (SemiAnalysis InferenceX, gpt-oss-120b on vLLM 0.13.0, 1-8 H100, H200 "
           "and B200, 1k and 8k prompts): the share of its modelled speed a MoE prefill pass reaches (the lone prompt's "
           "pass, where the closed loop's queue is least); prior 1 (the modelled pass)", iterations=14),
    Fitted("", "moe_layer_us", 0.0, 0.0, 500.0,
           "MoE rows at a stated concurrency (SemiAnalysis InferenceX's DeepSeek-R1 on SGLang and TensorRT-LLM and "
           "gpt-oss-120b on vLLM and TensorRT-LLM, 1-128 in flight; trtllm-bench's DeepSeek-R1): the fixed time of a "
           "MoE layer of a decode step beyond its experts' bytes (routing, sorting, activation quantisation, the grouped "
           "GEMMs' ramp and tail), one value for every engine; prior 0 (not counted)", constant="MOE_LAYER_US"),
    Fitted("Intel Gaudi software", "matmul_fraction_8", 0.70, 0.1, 1.0,
           "Intel's Gaudi 3 fixed-batch rows (Gaudi software 1.18.0): batches of 44 to 4,000 sequences are bound by "
           "the matrix products; Gaudi 3 runs FP8 and BF16 on the same matrix engines at the same peak, so one share "
           "serves both", tied=("matmul_fraction_16",)),
)


def with_value(eng: engines.Engine, fit: Fitted, value: float) -> engines.Engine:
    return replace(eng, **{field: value for field in fit.fields})


def choose(fit: Fitted, cases: list[Case]) -> float:
    """The value making the median log error of the selected rows zero (bisection: the
    estimated speed rises with every fitted fraction and falls with a fixed time); the prior with
    too few rows."""
    chosen = [c for c in cases if fit.selects(c)]
    if len(chosen) < MIN_ROWS:
        return fit.prior
    sign = -1.0 if fit.field.endswith("_us") else 1.0     # a fixed time slows the estimate

    def median(value: float) -> float:       # each row's own engine (it may carry the row's KV-cache format)
        return sign * statistics.median(log_error(c, with_value(c.engine, fit, value)) for c in chosen)

    lo, hi = fit.lo, fit.hi
    if median(lo) > 0 or median(hi) < 0:
        return lo if median(lo) > 0 else hi
    for _ in range(fit.iterations):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if median(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def profile(case: Case, cases: list[Case], fold_values: dict[Fitted, Callable[[str], float]] | None = None
            ) -> engines.Engine:
    """The case's engine with every fitted constant that selects it re-chosen out of fold: from
    the rows of `cases` outside the case's fold (benchmarks/folds.py), by the fitted rule."""
    eng = case.engine
    values = fold_values if fold_values is not None else fitted_out_of_fold(cases)
    for fit in FITTED:
        if fit.selects(case):       # an engine the value is lent to has no row in the pool: it ships the pool's value
            eng = with_value(eng, fit, values[fit](case.ref))
    return eng


def fitted_out_of_fold(cases: list[Case]) -> dict[Fitted, Callable[[str], float]]:
    """For each fitted constant, its value chosen without a row's fold, by row reference."""
    return {fit: folds.out_of_fold([c for c in cases if fit.selects(c)], lambda c: c.ref,
                                   lambda train, fit=fit: choose(fit, train)) for fit in FITTED}


def leave_one_model_out(cases: list[Case]) -> list[str]:
    """Each constant chosen from rows of several models, re-chosen without one model's rows and scored on them: how
    it transfers to a model it never saw (the k-fold deal splits a model's rows, near-duplicate sweeps among them)."""
    lines = []
    for fit in FITTED:
        pool = [c for c in cases if fit.selects(c)]
        models = sorted({c.model.name for c in pool})
        if len(models) < 2:
            continue
        parts, errors = [], []
        for name in models:
            value = choose(fit, [c for c in pool if c.model.name != name])
            own = [abs(estimate(c, with_value(c.engine, fit, value)) / c.measured - 1) for c in pool if c.model.name == name]
            errors += own
            parts.append(f"{name} {value:.4g} -> {statistics.median(own):.1%} over {len(own)}")
        lines.append(f"{fit.label} {fit.field}, leaving one model out (chosen without a model's rows, scored on "
                     f"them): {'; '.join(parts)}; the {len(errors)} rows {statistics.median(errors):.1%}")
    return lines


def pools(cases: list[Case]) -> list[tuple[Fitted, int]]:
    """Each fitted constant and the number of rows its rule chooses from."""
    return [(fit, sum(fit.selects(c) for c in cases)) for fit in FITTED]


# ---------------------------------------------------------------------------- report

def worksheet_terms(case: Case) -> Case:
    """The case as a worksheet function can state it: no closed-loop run's request count (the first wave,
    capacity.first_wave_s) and the engine profile's poll interval, not the one the row's script set
    (admission_steps): the accuracy harness applies those two, no worksheet function or planning path does."""
    return replace(case, requests=None, admission_steps=None)


def parse_all(directory: Path) -> list[Case | str]:
    """Every row of the directory's inference_measured.csv as safe_parse reads it: a case, or why it cannot be scored
    (benchmarks/accuracy.py reads the file once a run and hands this to evaluate and cases_of)."""
    return [safe_parse(ref, row) for ref, row in read(directory)]


def evaluate(directory: Path, parsed: list[Case | str] | None = None
             ) -> tuple[list[Result], list[tuple[Case, bool, bool]], list[str]]:
    """Scored rows, fit rows (case, ran, estimated to fit: out-of-memory rows, and measured runs the estimate refuses
    as not fitting) and the rows not scored, with why. `parsed`: the directory's rows already read (parse_all)."""
    cases, skipped = [], []
    for one in parse_all(directory) if parsed is None else parsed:
        (skipped if isinstance(one, str) else cases).append(one)
    results, fit_rows = [], []
    scored = [c for c in cases if c.metric != "fit"]
    values = fitted_out_of_fold(scored)
    for case in cases:
        if case.metric == "fit":
            fit_rows.append((case, False, fits(case, case.engine)))
            continue
        try:
            out = profile(case, scored, values)
            bare = worksheet_terms(case)
            both = (estimate(bare, case.engine), estimate(bare, out)) if bare != case else (None, None)
            results.append(Result(case, estimate(case, case.engine), estimate(case, out), *both))
        except capacity.NoFit:        # the run ran, the estimate says it cannot start: a wrong fit verdict, scored
            fit_rows.append((case, True, False))
        except FlopsheetError as exc:
            skipped.append(f"{case.label}\n      NO ESTIMATE: {exc}")
    return results, fit_rows, skipped


def summary(results: list[Result], metric: str) -> tuple[int, float | None, float | None, float | None]:
    rows = [r for r in results if r.case.metric == metric]
    if not rows:
        return 0, None, None, None
    return (len(rows), statistics.median(abs(r.in_sample) for r in rows),
            statistics.median(abs(r.out_of_sample) for r in rows),
            statistics.median(r.out_of_sample for r in rows))


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def format_report(results, fit_rows, skipped, cases_for_fit, worst: int = 8) -> str:
    lines = ["Serving accuracy: estimates against measured inference rows",
             "error = (estimate - measured) / measured, in the row's unit (tokens/s, or ms for latencies);",
             "in-sample: shipped constants; out-of-sample: each row-chosen constant re-chosen without the row's",
             f"fold ({folds.K}-fold, seed {folds.SEED}; leave-one-out for a pool under {folds.LOO_BELOW} rows)",
             "", f"{'metric':<16}{'rows':>5}{'in-sample':>11}{'out-of-sample':>15}{'bias':>8}  description"]
    for key, title in METRICS.items():
        n, inside, outside, bias = summary(results, key)
        lines.append(f"{key:<16}{n:>5}{_pct(inside):>11}{_pct(outside):>15}{_pct(bias):>8}  {title}")
    right = sum(1 for _, ran, fit in fit_rows if ran == fit)
    lines.append(f"{'fit':<16}{len(fit_rows):>5}{f'{right}/{len(fit_rows)} right':>26}          out-of-memory rows, "
                 "runs estimated not to fit")
    lines += ["", "By engine (all metrics; median absolute error out of sample):"]
    for name in sorted({r.case.engine.name for r in results}):
        rows = [r for r in results if r.case.engine.name == name]
        lines.append(f"  {name:<28}{len(rows):>4} rows  {statistics.median(abs(r.out_of_sample) for r in rows):>6.1%}")
    lines += ["", "Constants chosen from rows (shipped value; value the rule picks from all rows):"]
    for fit, rows in pools(cases_for_fit):
        shipped = fit.shipped(fit.field)
        lines.append(f"  {fit.label} {fit.field}: shipped {shipped:g}, rule {choose(fit, cases_for_fit):.3f}, "
                     f"prior {fit.prior:g}, scored {folds.describe(rows)}  ({fit.basis})")
    for key, title in METRICS.items():
        rows = sorted((r for r in results if r.case.metric == key), key=lambda r: -abs(r.out_of_sample))
        if not rows:
            continue
        lines += ["", f"== {title} ({key}) ==", "  in-sample  out-of-sample"]
        for r in rows[:worst] if worst else rows:
            c = r.case
            lines.append(f"  {r.in_sample:+8.1%}  {r.out_of_sample:+8.1%}   measured {c.measured:,.4g} {c.unit}  "
                         f"<- {c.label} | {c.prompt:g}/{c.output:g}" + (f"  [{c.note}]" if c.note else ""))
        if worst and len(rows) > worst:
            lines.append(f"  ... {len(rows) - worst} more within {abs(rows[worst].out_of_sample):.1%}")
    lines += ["", "== Out-of-memory rows and runs estimated not to fit (fit) =="]
    for case, ran, fit in fit_rows:
        lines.append(f"  [{'right' if ran == fit else 'WRONG'}] {case.label}" + (" (ran; estimated not to fit)" if ran else ""))
    lines += ["", f"== Not scored ({len(skipped)}) =="] + [f"  {s}" for s in skipped]
    return "\n".join(lines)


def cases_of(directory: Path, parsed: list[Case | str] | None = None) -> list[Case]:
    """The scoreable rows, fit rows left out (`parsed`: the directory's rows already read, parse_all)."""
    return [c for c in (parse_all(directory) if parsed is None else parsed)
            if not isinstance(c, str) and c.metric != "fit"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--measured", default=os.environ.get("FLOPSHEET_MEASURED"),
                        help="directory holding inference_measured.csv")
    parser.add_argument("--worst", type=int, default=8, help="rows shown per metric (0: all)")
    args = parser.parse_args(argv)
    directory = Path(args.measured) if args.measured else default_dir()
    parsed = parse_all(directory)
    results, fit_rows, skipped = evaluate(directory, parsed)
    print(format_report(results, fit_rows, skipped, cases_of(directory, parsed), args.worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
