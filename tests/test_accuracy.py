"""The accuracy report against the measured rows kept in benchmarks/measured: the issue's
three targets, and the published report (docs/accuracy-report.txt) is the tool's output."""

from collections import Counter
from pathlib import Path

import re
import pytest

from benchmarks import accuracy

ROOT = Path(__file__).resolve().parent.parent
DIRECTORY = accuracy.default_measured_dir()
FILES = ("inference_measured.csv", "training_measured.csv", "memory_measured.csv", "lora_time_measured.csv")


@pytest.fixture(scope="module")
def report(accuracy_report):
    return accuracy_report


def test_decode_batch1_median_within_10_percent(report):
    rows = report.of("decode_b1")
    assert len(rows) >= 10
    assert report.median_ape("decode_b1") <= 0.10


# Fit rows the estimate gets wrong, each a known miss with its cause in docs/accuracy.md ("Engine memory beyond
# the weights"): the test fails when another row goes wrong and when one of these comes right (then drop it here).
# None now: GPUStack's four gpt-oss-120b vLLM 0.10.2 H100 bursts start with their FlashInfer sampler ("Why GPUStack's
# 0.10.2 runs start"). label -> rows.
KNOWN_FIT_MISSES: dict[str, int] = {}


def test_fit_right_on_every_oom_row(report):
    right, total = report.correct("fit")
    wrong = Counter(c.row.split(" ", 1)[1] for c in report.of("fit") if c.error)
    assert total >= 3 and right == total - sum(KNOWN_FIT_MISSES.values()) and wrong == KNOWN_FIT_MISSES, wrong


@pytest.mark.xfail(strict=True, reason="known miss of our own 15% (issue 20's 20% is met out of sample, "
                   "tests/test_training_efficiency.py): 16.5% in sample over 20 whole runs, where Meta's Llama 3 8B / "
                   "70B cards and OPT-175B lose far more than TRAINING_GOODPUT (docs/accuracy.md)")
def test_training_gpu_hours_median_within_15_percent(report):
    rows = report.of("training_hours")
    assert len(rows) >= 4
    assert report.median_ape("training_hours") <= 0.15


def test_every_row_is_compared_or_skipped_with_a_reason(report):
    total = sum(len(accuracy.read_rows(DIRECTORY, name)) for name in FILES)
    assert all(s.reason for s in report.skipped)
    # an MFU row can also carry GPU-hours, so rows used >= rows
    assert len({c.row.split(" ")[0] for c in report.comparisons}) + len(report.skipped) == total


def test_known_skips_are_listed_and_no_row_class_is_skipped(report):
    reasons = " ".join(s.row + " " + s.reason for s in report.skipped)
    assert "TPU v4" in reasons and "not in the catalog" in reasons
    scored = " ".join(c.row for c in report.comparisons)
    assert "| 2 | llama.cpp |" in scored            # multi-GPU llama.cpp rows: a layer pipeline, scored
    assert len(report.of("max_throughput")) >= 10    # trtllm-bench and MLPerf max-throughput rows
    assert "ms/token" in " ".join(c.note for c in report.comparisons)   # HF Accelerate rows converted


def test_out_of_sample_column_differs_only_where_constants_were_chosen_from_rows(report):
    for metric in ("decode_b1", "mfu", "training_hours", "fixed_batch", "max_throughput"):
        assert any(abs(c.error_out - c.error) > 1e-6 for c in report.of(metric)), metric
    for metric in ("memory", "qlora_context"):
        assert all(c.error_out == c.error for c in report.of(metric)), metric
    # fixed batches and max throughput: only Gaudi 3's rows (the Intel profile's matrix share), vLLM V0's (its CPU
    # time per running sequence) and the MoE rows (the fixed time a MoE layer, MOE_LAYER_US) rest on a constant chosen
    # from rows
    def v0(c) -> bool:
        return c.config is not None and c.config.engine == "vLLM V0"

    def moe(c) -> bool:
        return c.config is not None and c.config.moe

    for metric in ("fixed_batch", "max_throughput"):
        assert all(c.error_out == c.error for c in report.of(metric)
                   if "Gaudi 3" not in c.row and not v0(c) and not moe(c)), metric
        assert any(c.error_out != c.error for c in report.of(metric) if v0(c)), metric
    assert any(c.error_out != c.error for c in report.of("fixed_batch") if moe(c))


def test_name_mapping():
    assert accuracy.find_gpu("H100 SXM 80GB (DGX H100)").name == "H100 SXM 80GB"
    assert accuracy.find_gpu("B200 SXM 180GB").name == "B200 180GB"
    assert accuracy.find_gpu("RTX 3090 Ti").name == "RTX 3090 Ti 24GB"
    assert accuracy.find_gpu("A100-80GB (400W)").name == "A100 SXM 80GB"
    assert accuracy.find_gpu("Apple M2 Ultra 192GB").name == "Apple M2 Ultra 192GB"
    assert accuracy.find_gpu("TPU v4") is None
    assert accuracy.find_model("LLaMA 70B").name == "Llama 2 70B"
    assert accuracy.find_precision("Q4_K_M (GGUF)") == "q4_k_m"
    assert accuracy.find_precision("F16") == "fp16"
    assert accuracy.find_precision("INT8 (bitsandbytes)") == "int8"
    assert accuracy.find_precision("vendor-chosen (not recorded)") is None


def test_missing_directory_exits_cleanly(tmp_path, capsys):
    assert accuracy.main(["--measured", str(tmp_path / "nowhere")]) == 0
    assert "No measured data" in capsys.readouterr().out


def test_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv("FLOPSHEET_MEASURED", str(tmp_path))
    assert accuracy.measured_dir() == tmp_path
    assert accuracy.measured_dir("/x") == accuracy.Path("/x")


def test_measured_rows_ship_with_the_repository_and_cite_a_source():
    assert DIRECTORY == ROOT / "benchmarks" / "measured"
    for name in FILES:
        rows = accuracy.read_rows(DIRECTORY, name)
        assert len(rows) >= 10, name
        assert all(row["source"].strip() for _, row in rows), name


def test_published_report_is_the_tools_output(report, capsys):
    assert accuracy.main([]) == 0
    printed = capsys.readouterr().out
    published = (ROOT / "docs" / "accuracy-report.txt").read_text(encoding="utf-8")
    assert printed == published, "stale: run `python benchmarks/accuracy.py --write-evidence > docs/accuracy-report.txt`"
    assert printed.rstrip("\n") == accuracy.format_report(report)


def test_accuracy_page_shows_the_current_report(report):
    page = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    assert accuracy.page_block(page) == accuracy.format_report(report), (
        "stale: run `python benchmarks/accuracy.py --write-docs`")


def test_allocator_reserve_is_the_rules_choice_and_scored_out_of_sample(report):
    """ALLOCATOR_RESERVE is chosen from the rows measuring reserved memory or nvidia-smi: the shipped value
    is the rule's over all of them, and those rows are scored with it re-chosen without their fold."""
    from udfs.physics import calibration
    rows = accuracy.adapter_rows(accuracy.read_rows(DIRECTORY, "memory_measured.csv"))
    pool = accuracy.reserve_pool(rows)
    assert len(pool) >= 10
    assert calibration.ALLOCATOR_RESERVE == pytest.approx(accuracy.allocator_reserve(pool), abs=5e-4)
    scored = report.of("lora_memory") + report.of("qlora_memory")
    assert any(abs(c.error_out - c.error) > 1e-6 for c in scored)
    allocated = [c for c in scored if c.note.endswith("measured: allocated")]
    assert allocated and all(c.error_out == c.error for c in allocated)


def test_states_rows_are_scored_against_the_state_parts_by_hand(report):
    """A row measuring the model states after the optimizer step is compared with weights + gradients +
    optimizer (full) or base + adapters (LoRA): pure BF16 AdamW is 8 B a parameter; a frozen BF16 base with FP32
    adapters 2 B a parameter plus 16 per adapter parameter."""
    from udfs.catalogs import catalog
    from udfs.physics import training_memory
    from udfs.units import GIB
    full = [c for c in report.of("full_memory") if c.note.endswith("measured: states")]
    assert full
    m = catalog.model("Llama 3.2 3B")
    assert any(c.estimate == pytest.approx(m.total_params * 8 / GIB) for c in full if "Llama 3.2 3B" in c.row)
    lora = [c for c in report.of("lora_memory") if c.note.endswith("measured: states")]
    assert len(lora) >= 3
    expected = {m.total_params * 2 + training_memory.lora_params(m, r, t) * 16
                for r, t in ((32, "q,v"), (64, "q,v"), (10, "gate,up,down"))}
    assert sorted(round(c.estimate * GIB) for c in lora) == sorted(round(e) for e in expected)


def test_full_training_rows_are_scored_with_their_own_configuration(report):
    """Each full-training row is estimated for the run it describes (train_config): torchtune's PagedAdamW run with
    the optimizer in backward holds its BF16 weights, one gradient and the activations (the paged states are off
    the allocator's books), so it is within 1.5 GiB of the weights; the fused-AdamW run holds BF16 weights, gradients
    and both moments, at least 8 B a parameter; 4-bit states come in under 8-bit ones. A key the tool does not
    know is refused, not ignored."""
    from udfs.catalogs import catalog
    from udfs.units import GIB
    n = catalog.model("Llama 2 7B").total_params
    full = {c.row.split(" | ")[1]: c for c in report.of("full_memory") if "Llama 2 7B" in c.row}
    paged = full["full fine-tuning (torchtune, pure BF16, bitsandbytes PagedAdamW, optimizer in backward)"]
    assert n * 2 / GIB < paged.estimate < n * 2 / GIB + 1.5
    fused = full["full fine-tuning (torchtune, pure BF16, PyTorch fused AdamW)"]
    assert fused.estimate >= n * 8 / GIB
    assert full["full fine-tuning (torchtune, pure BF16, torchao AdamW4bit)"].estimate < \
        full["full fine-tuning (torchtune, pure BF16, torchao AdamW8bit)"].estimate
    with pytest.raises(ValueError, match="train_config key"):
        accuracy.train_config({"train_config": "optimiser=adamw"})


def test_full_training_fit_rows_take_the_stated_verdict_and_the_rows_configuration(report):
    """A full-training row stated to run out of memory ('OOM') is a fit row measured False, one stated to fit is
    measured True, and both are judged on the estimate for their own configuration (the ZeRO stage, tensor and
    pipeline split and micro-batch the row's train_config gives, named in the note)."""
    rows = [r for _, r in accuracy.read_rows(accuracy.default_measured_dir(), "memory_measured.csv")
            if r["method"].startswith("full") and (r.get("train_config") or "").strip()
            and r["peak_gpu_mem_gb"].strip().lower() in ("fits", "oom")]
    assert {r["peak_gpu_mem_gb"].strip().lower() for r in rows} == {"fits", "oom"}
    fit = {c.row.split(" ", 1)[1]: c for c in report.of("fit")}
    for r in rows:
        c = next(v for k, v in fit.items() if k.startswith(f"{r['model']} | {r['method']}"))
        assert c.measured is (r["peak_gpu_mem_gb"].strip().lower() == "fits")
        assert f"{int(r['micro_batch'])} x {int(r['seq_len']):,} tokens" in c.note


def test_kv_capacity_rows_are_scored_with_their_own_engine_and_memory_share(report):
    """A startup log's KV cache memory is compared with capacity.kv_budget_gib under the row's engine, its
    stated memory share (gmu / mem_fraction_static) and, for vLLM, its profile run's tokens and sequences, not
    the profile's defaults; a log whose engine did not start is a fit row measured False."""
    from dataclasses import replace
    from udfs.catalogs import engines
    from udfs.physics import capacity
    rows = {ref: r for ref, r in accuracy.read_rows(accuracy.default_measured_dir(), "memory_measured.csv")
            if r["method"].lower().startswith("inference kv cache")}
    scored = {c.row.split(" ", 1)[0]: c for c in report.of("kv_capacity") + report.of("fit")}
    assert rows and set(rows) <= set(scored)
    shares = set()
    for ref, r in rows.items():
        c, s = scored[ref], accuracy.kv_settings(r)
        share = float(s.get("gmu") or s["mem_fraction_static"])
        shares.add(share)
        model, gpu = accuracy.find_model(r["model"]), accuracy.find_gpu(r["gpu"])
        eng = replace(engines.engine(s["engine"], gpu), memory_fraction=share)
        if "max_num_batched_tokens" in s:   # the row's own profile run, not the profile's default
            eng = replace(eng, max_num_tokens=int(s["max_num_batched_tokens"]), max_batch=int(s["max_num_seqs"]),
                          large_gpu_max_batch=None, large_gpu_max_num_tokens=None)
            assert capacity.profile_run_gib(model, gpu, int(r["num_gpus"]), eng) > 0
        assert c.config.engine == eng.name
        if accuracy.number(r["peak_gpu_mem_gb"]) is None:
            assert c.metric == "fit" and c.measured is False
            continue
        assert c.metric == "kv_capacity" and c.measured == float(r["peak_gpu_mem_gb"])
        budget = capacity.kv_budget_gib(model, gpu, accuracy.find_precision(r["precision"]),
                                        int(r["num_gpus"]), eng)
        assert c.estimate == pytest.approx(budget)
    assert len(shares) > 1          # the rows' own shares, not one default


def _full_fit_row(**changes) -> dict[str, str]:
    row = {"model": "Llama 2 70B", "method": "full fine-tuning (FSDP FULL_SHARD)", "precision": "BF16",
           "gpu": "A100 80GB", "num_gpus": "16", "peak_gpu_mem_gb": "fits", "seq_len": "2048", "micro_batch": "1",
           "train_config": "zero=3; recompute=full"}
    return {**row, **changes}


def test_a_full_training_fit_row_on_a_gpu_outside_the_catalog_is_skipped_with_its_reason():
    model = accuracy.find_model("Llama 2 70B")
    skip = accuracy.compare_full_fit("ref | row", model, _full_fit_row(gpu="Imaginary 99GB"))
    assert isinstance(skip, accuracy.Skip) and "Imaginary 99GB" in skip.reason
    out, skipped = accuracy.compare_memory([("memory_measured.csv:99", _full_fit_row(gpu="Imaginary 99GB"))])
    assert not out and len(skipped) == 1 and "not in the catalog" in skipped[0].reason


@pytest.mark.parametrize("field", ["seq_len", "micro_batch", "num_gpus"])
def test_a_full_training_row_missing_a_number_the_memory_needs_is_refused_by_name(field):
    model = accuracy.find_model("Llama 2 70B")
    with pytest.raises(ValueError, match=f"Llama 2 70B.*{field}"):
        accuracy.full_training_parts(model, _full_fit_row(**{field: ""}))


def test_every_full_training_verdict_on_a_catalog_model_comes_from_the_rows_own_configuration(report):
    """Every full-training fit row whose model is in the catalog states its train_config, sequence and batch (no
    configuration is assumed in the tool); only a model outside the catalog is judged by the bound its
    parameter count sets (model states alone)."""
    rows = accuracy.read_rows(accuracy.default_measured_dir(), "memory_measured.csv")
    fits = {c.row.split(" ", 1)[0]: c for c in report.of("fit")}
    for ref, r in rows:
        if not (r["method"].lower().startswith("full") and r["peak_gpu_mem_gb"].strip().lower() in ("fits", "oom")):
            continue
        if accuracy.find_model(r["model"]) is None:
            assert "model states alone" in fits[ref].note
            continue
        assert (r.get("train_config") or "").strip() and r["seq_len"] and r["micro_batch"], ref
        assert f"{int(r['micro_batch'])} x {int(r['seq_len']):,} tokens" in fits[ref].note, ref


def test_a_readme_regime_of_fewer_than_3_rows_shows_its_rows_signed_errors_not_a_median(report):
    """Two rows' median is their midpoint, which no row has: the README shows one row's signed error, or two
    rows' range; three rows and more their median |error| out of sample."""
    assert accuracy.readme_cell("X", accuracy.Group(1, 0.1, 0.103, 0.103, 0.103, 0, 0.103, 0.103)) == "X +10.3% (1)"
    assert accuracy.readme_cell("X", accuracy.Group(2, 0, 3.944, 1.3, 5.6, 0, 0.77, 6.12)) == "X +77% to +612% (2)"
    assert accuracy.readme_cell("X", accuracy.Group(3, 0, 0.2, -0.1, 0.3, 0, -0.2, 0.4)) == "X 20.0% (3)"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    vllm_v1 = sorted(c.error_out for c in report.of("kv_capacity") if c.config.engine == "vLLM")
    assert len(vllm_v1) == 2 and f"vLLM {vllm_v1[0]:+.0%} to {vllm_v1[1]:+.0%} (2)" in readme


def _targets_table() -> str:
    page = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    table = page.split("## Targets and where they stand", 1)[1].split("### Known misses", 1)[0]
    return " ".join(table.split())


# Each figure docs/accuracy.md's targets table cites, as (metric, dimension, value) of the report's by-regime
# breakdown or ("cited", group) of its "Groups docs/accuracy.md's targets table cites", and the words it is
# cited in: rows, inn / out (median |error| in / out of sample), least / most (signed out of sample), p10 / p90 (the
# signed out-of-sample error's), over.
TABLE_FIGURES = [
    (("cited", "every inference row"), "{out:.1%} out of sample over {rows} rows ({inn:.1%} in sample)"),
    (("cited", "every inference row, bursts left out"), "without the bursts {out:.1%} over {rows}"),
    (("fixed_batch", "architecture", "MoE"), "against {out:.1%} with folds dealt by row"),
    (("max_throughput", "all", ""), "{out:.1%} out of sample over {rows} rows ({inn:.1%} in sample)"),
    (("max_throughput", "architecture", "dense"), "dense {out:.1%} over {rows}"),
    (("max_throughput", "architecture", "MoE"), "the {rows} MoE rows, {out:.1%}"),
    (("max_throughput", "engine", "TensorRT-LLM"), "TensorRT-LLM {out:.1%} over {rows}"),
    (("max_throughput", "engine", "vLLM"), "vLLM V1 {out:.1%} ({rows})"),
    (("max_throughput", "engine", "vLLM V0"), "vLLM V0 {out:.1%} ({rows})"),
    (("cited", "max_throughput, TensorRT-LLM, dense"), "(dense {out:.1%} over {rows})"),
    (("cited", "bursts"), "{out:.1%} over {rows} rows"),
    (("fixed_batch", "vendor", "AMD"), "AMD over every model {out:.1%} over {rows}"),
    (("cited", "MoE, gpt-oss-120b first token in flight"), "{out:.1%} off out of sample ({inn:.1%} in sample;"),
    (("cited", "MoE, gpt-oss-120b first token in flight"), "{over} too long ({least:+.1%} to {most:+.1%})"),
    (("cited", "bursts"), "{over} of them too fast"),
    (("burst", "vendor", "NVIDIA"), "NVIDIA's {rows}: {out:.1%}"),
    (("burst", "vendor", "AMD"), "AMD's {rows} MI300X rows {out:.0%}"),
    (("cited", "served by vLLM, SGLang or TGI, dense, every metric"),
     "{out:.1%} out of sample over {rows} dense rows ({inn:.1%} in sample"),
    (("cited", "served by vLLM, SGLang or TGI, every metric, MoE too"),
     "MoE rows included: {out:.1%} out of sample over {rows} rows ({inn:.1%} in sample"),
    (("cited", "served by vLLM, SGLang or TGI, dense, bursts"),
     "their {rows} bursts alone are {out:.0%} off (median, {least:+.0%} to {most:+.0%}"),
    (("decode_b1", "all", ""), "{out:.1%} out of sample over {rows} rows ({inn:.1%} in sample)"),
    (("decode_b1", "layout", "one GPU"), "one GPU {out:.1%}"),
    (("decode_b1", "layout", "parallel"), "tensor parallel {out:.1%} ({rows} rows)"),
    (("prefill", "architecture", "dense"), "{out:.1%} over {rows} dense rows, in and out of sample"),
    (("prefill", "all", ""), "all {rows} rows {out:.1%}"),
    (("cited", "MoE, DeepSeek-R1 first token in flight"),
     "{rows} DeepSeek-R1 first tokens at 1-128 in flight"),
    (("cited", "MoE, DeepSeek-R1 first token in flight"), "{out:.1%} off out of sample"),
    (("cited", "MoE, DeepSeek-R1 first token in flight"), "{over} too long ({least:+.1%} to {most:+.1%}"),
    (("cited", "MoE, DeepSeek-R1 first token, worksheet's terms"),
     "the same {rows} rows score {out:.1%} ({inn:.1%} in sample), {over} too long"),
    (("cited", "MoE, gpt-oss-120b first token, worksheet's terms"), "the {rows} gpt-oss-120b rows {out:.1%}: those"),
    (("cited", "prefill at a stated load"), "the {rows} dense rows at a stated request rate"),
    (("fixed_batch", "architecture", "dense"), "({out:.1%} out of sample over {rows} rows)"),
    (("cited", "fixed_batch, dense, NVIDIA"), "NVIDIA {out:.1%}"),
    (("fixed_batch", "engine", "Intel Gaudi software"), "Intel Gaudi 3 {out:.1%} ({rows};"),
    (("cited", "fixed_batch, dense, AMD"), "AMD {out:.1%}"),
    (("cited", "MoE, every serving metric"), "{rows} rows ("),
    (("cited", "MoE, every serving metric"), "median {out:.0%} out of sample"),
    (("cited", "MoE, every serving metric"), "{over} too fast"),
    (("cited", "MoE, steady throughput"), "The {rows} steady-state throughput ones: {out:.1%}"),
    (("cited", "MoE, steady throughput"), "from {least:+.1%} to {most:+.1%}"),
    (("cited", "MoE, steady, Mixtral 8x7B"), "Mixtral 8x7B, large experts, {out:.1%} over {rows} rows"),
    (("cited", "MoE, steady throughput, DeepSeek-R1"), "{least:+.0%} to {most:+.0%} over {rows} rows, {out:.0%}"),
    (("cited", "MoE, DeepSeek-R1 in flight, experts tensor-parallel"),
     "experts tensor-parallel {out:.1%} over {rows} rows ({least:+.1%} to {most:+.1%}"),
    (("cited", "MoE, DeepSeek-R1 in flight, EP, attention TP"),
     "expert parallel with tensor-parallel attention {out:.1%} over {rows} ({least:+.1%} to {most:+.1%}"),
    (("cited", "MoE, DeepSeek-R1 in flight, EP, attention DP"),
     "with data-parallel attention {out:.1%} over {rows} ({least:+.1%} to {most:+.1%}"),
    (("cited", "MoE, gpt-oss-120b in flight"), "InferenceX's {rows} gpt-oss-120b rows in flight {out:.1%}, all but {over}"),
    (("cited", "MoE, bursts"), "The other {rows} are bursts ({out:.0%}"),
    (("training_hours", "all", ""), "out of sample **{out:.1%}** over {rows} rows ({inn:.1%} in sample"),
    (("cluster_hours", "all", ""), "(`cluster_hours`): {out:.1%} over {rows} rows"),
    (("mfu", "all", ""), "**{out:.1%}** out of sample over {rows} rows on the 6·N basis ({inn:.1%} in sample"),
    (("scaling", "all", ""), "{out:.1%} out of sample over {rows} rows on the 6·N basis ({inn:.1%} in sample"),
    (("scaling", "architecture", "dense"), "Dense {out:.1%} ({rows})"),
    (("scaling", "architecture", "MoE"), "MoE {out:.1%} ({rows}), too fast"),
    (("scaling", "GPUs", "65-1,024"), "65-1,024 GPUs {out:.1%} ({rows})"),
    (("scaling", "GPUs", ">1,024"), "more than 1,024 GPUs {out:.1%} ({rows})"),
    (("mfu", "architecture", "dense"), "dense {out:.1%} over {rows}, MoE"),
    (("mfu", "architecture", "MoE"), "MoE {out:.1%} over {rows})"),
    (("training_hours", "all", ""), "P10 {p10:+.0%}, P90 {p90:+.0%}"),
]


# The MoE cells of docs/accuracy.md's regime table ("Out of sample, median absolute error"), as the report's
# cited groups find them.
REGIME_FIGURES = [
    ("MoE, steady throughput", "| {rows} | {out:.1%}: Mixtral"),
    ("MoE, steady, Mixtral 8x7B", ": Mixtral {out:.1%}, DeepSeek-R1"),
    ("MoE, steady throughput, DeepSeek-R1", "DeepSeek-R1 {out:.1%} ({least:+.0%} to {most:+.0%}), Qwen3"),
    ("MoE, DeepSeek-R1 first token in flight", "| {rows} | {out:.1%}, {over} too long ({least:+.1%} to {most:+.1%}"),
]


def test_the_regime_table_states_the_moe_figures_as_the_report_finds_them(report):
    page = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    table = page.split("| regime | rows | out of sample |", 1)[1].split("\n\n", 1)[0]
    cited = accuracy.cited_groups(report)
    for name, words in REGIME_FIGURES:
        g = accuracy.group_of(cited[name])
        wanted = words.format(rows=g.rows, out=g.outside, least=g.least, most=g.most,
                              over=sum(1 for c in cited[name] if c.error_out > 0))
        assert wanted in table, (name, wanted)


def test_the_targets_table_states_each_figure_as_the_report_finds_it(report):
    """Every figure the targets table cites is the report's: the by-regime breakdown or the groups the report
    prints for the table; a change that moves one must update the table."""
    table = _targets_table()
    cited = {name: (accuracy.group_of(rows), rows) for name, rows in accuracy.cited_groups(report).items()}
    broken = {(m, d, v): g for m in accuracy.METRICS for d, v, g in accuracy.breakdown(report, m)}
    for key, words in TABLE_FIGURES:
        g, rows = cited[key[1]] if key[0] == "cited" else (broken[key], None)
        figures = dict(rows=g.rows, inn=g.inside, out=g.outside, least=g.least, most=g.most, p10=g.low, p90=g.high,
                       over=sum(1 for c in rows if c.error_out > 0) if rows is not None else None)
        assert words.format(**figures) in table, (key, words.format(**figures))
    # first tokens at a stated load: the rows within 8% by name, and the range of the others
    errors = sorted((c.error_out for c in accuracy.cited_groups(report)["prefill at a stated load"]), reverse=True)
    near, far = [e for e in errors if abs(e) <= 0.08], [e for e in errors if abs(e) > 0.08]
    assert (f"{len(near)} of them within 8%: {', '.join(f'{e:+.1%}' for e in near)}; the other {len(far)} "
            f"{far[0]:+.1%} to {far[-1]:+.1%}") in table
    # MoE's fitted layer time leaving one model out (the report's line): each model's value and score, and the pool's
    line = next(b for b in report.baselines if b.startswith("every engine moe_layer_us, leaving one model out"))
    for model in ("gpt-oss-120b", "DeepSeek-R1"):
        value, score, rows = re.search(rf"{model} ([\d.]+) -> ([\d.]+%) over (\d+)", line).groups()
        assert f"{model} {float(value):.1f} µs, {score} over its {rows} rows" in table, (model, line)
    pool, score = re.search(r"the (\d+) rows ([\d.]+%)$", line).groups()
    assert f"its {pool} rows together {score} leaving one model out" in table, line


# Issue 20's inference targets: the median absolute error out of sample over every row of the metric, MoE rows
# included (the breakdown's "all" line, or a group the report prints for the targets table).
ISSUE_20_TARGETS = [
    (("cited", "every inference row"), 0.12),
    (("max_throughput", "all", ""), 0.12),
    (("decode_b1", "all", ""), 0.12),
    (("prefill", "all", ""), 0.15),
    (("cited", "MoE, every serving metric"), 0.25),
    (("cited", "served by vLLM, SGLang or TGI, every metric, MoE too"), 0.25),
]


@pytest.mark.parametrize("key, target", ISSUE_20_TARGETS, ids=[" ".join(k).strip() for k, _ in ISSUE_20_TARGETS])
def test_issue_20_inference_targets_hold_out_of_sample(report, key, target):
    if key[0] == "cited":
        group = accuracy.group_of(accuracy.cited_groups(report)[key[1]])
    else:
        group = {(d, v): g for d, v, g in accuracy.breakdown(report, key[0])}[key[1:]]
    assert group is not None and group.outside <= target, (key, group)


@pytest.mark.parametrize("name, share, sampler_bytes", [
    ("vLLM 0.11.0", 0.9, 2 + 4 + 4 + 8 + 4 + 1 + 1),   # sorts: 16-bit logits, FP32 copy, sorted values, int64 indices,
    ("vLLM", 0.92, 14),                               # softmax, two masks; 0.33.0 (the default) works in place
])
def test_the_vllm_kv_budget_by_hand(name, share, sampler_bytes):
    """Llama 3.1 8B in BF16 on one H100 under vLLM's defaults, worked by hand: 79.22 GiB (the total CUDA reports, as
    vLLM's own log prints it: vLLM PR #10511) x gpu_memory_utilization (0.90 to 0.19, 0.92 from 0.20)
    - 8,030,261,248 weights x 2 B - the profile run's peak, the larger of its forward (8,192 tokens x (2 x 4,096 +
    3 x 14,336) 16-bit values) and its sampler's top-k / top-p on 1,024 rows x 128,256 (0.11.0 sorts: 24 bytes a
    row x vocabulary entry; 0.33.0 in place: 14, udfs/data/engine_releases.csv) - the flat 1.5 GiB reserve."""
    from udfs.catalogs import engines, resolve
    from udfs.physics import capacity
    gpu = resolve.gpu("H100 SXM 80GB")
    eng = engines.engine(name, gpu)
    assert (eng.memory_fraction, eng.profile_tokens(gpu), eng.batch_cap(gpu), eng.activation_reserve_gib) \
        == (share, 8192, 1024, 1.5)
    gib = 2 ** 30
    profile = max(8192 * (2 * 4096 + 3 * 14336) * 2, 1024 * 128256 * sampler_bytes) / gib
    assert gpu.memory_gib == 79.22
    expected = 79.22 * share - 8_030_261_248 * 2 / gib - profile - 1.5
    assert capacity.kv_budget_gib(resolve.model("Llama 3.1 8B"), gpu, "bf16", 1, eng) == pytest.approx(expected, rel=1e-12)


def _kv_row(**changes) -> dict[str, str]:
    row = {"model": "Llama 3.1 8B", "method": "inference KV cache (vLLM)", "precision": "BF16",
           "gpu": "H100 SXM 80GB", "num_gpus": "1", "peak_gpu_mem_gb": "53.29", "note": "",
           "context_or_batch": "engine=vLLM; gmu=0.90; max_num_batched_tokens=8192; max_num_seqs=1024"}
    return {**row, **changes}


def test_a_kv_capacity_row_with_a_misspelt_setting_is_refused_not_dropped():
    model = accuracy.find_model("Llama 3.1 8B")
    with pytest.raises(ValueError, match="gpu_memory_utilisation"):
        accuracy.compare_kv_capacity("r", model, _kv_row(context_or_batch="engine=vLLM; gpu_memory_utilisation=0.9"))
    with pytest.raises(ValueError, match="neither GiB nor"):
        accuracy.compare_kv_capacity("r", model, _kv_row(peak_gpu_mem_gb="n/a"))


def test_a_numeric_kv_capacity_row_the_estimate_refuses_is_an_error_not_a_zero_budget():
    """Only a log whose engine did not start may meet a refused estimate (a fit row); a numeric row scored
    against 0 GiB would be a silent -100%."""
    from udfs.errors import FlopsheetError
    model = accuracy.find_model("Llama 3.1 70B")
    row = _kv_row(model="Llama 3.1 70B", gpu="RTX 3090 24GB")
    with pytest.raises(FlopsheetError):
        accuracy.compare_kv_capacity("r", model, row)
    fit = accuracy.compare_kv_capacity("r", model, {**row, "peak_gpu_mem_gb": "does not start"})
    assert fit.metric == "fit" and fit.measured is False and fit.estimate is False


def test_a_kv_row_states_its_release_not_a_kernel_switch():
    """A row's stated release picks its MoE kernel (udfs/data/moe_kernels.csv): the gpt-oss-120b rows of vLLM 0.10.1
    (issue #23278) get Marlin's padding from their version, no `mxfp4_kernel=` switch is read any more (refused as an
    unknown setting), and the 0.10.1 log that did not start is estimated not to start."""
    model = accuracy.find_model("gpt-oss-120b")
    assert "mxfp4_kernel" not in accuracy.KV_SETTINGS
    row = _kv_row(model="gpt-oss-120b", gpu="H100 80GB", precision="MXFP4", num_gpus="1",
                  peak_gpu_mem_gb="does not start",
                  context_or_batch="engine=vLLM 0.10.1; gmu=0.90; max_num_batched_tokens=8192; max_num_seqs=1024")
    assert accuracy.compare_kv_capacity("r", model, row).estimate is False
    assert accuracy.compare_kv_capacity("r", model, {**row, "context_or_batch": row["context_or_batch"].replace(
        "0.10.1", "0.14.1")}).estimate is True
    with pytest.raises(ValueError, match="mxfp4_kernel"):
        accuracy.kv_settings({**row, "context_or_batch": row["context_or_batch"] + "; mxfp4_kernel=marlin"})
