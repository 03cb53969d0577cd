"""The training-efficiency table and step-time model (udfs/physics/training_efficiency.py): the shipped cells are
the rule applied to the measured rows, the step model's share reproduces a row's MFU, every fallback is stated and
follows its rule, the worksheet functions and the picker read the one table, and the out-of-sample error (a
source's rows scored on a table chosen without them) is within its targets."""

from __future__ import annotations

import math
import statistics

import pytest

import udfs
from benchmarks import accuracy
from udfs.catalogs import catalog
from udfs.errors import MissingFigure
from udfs.physics import calibration as cal, collectives
from udfs.physics import training_efficiency as teff
from udfs.planning import picker

DIRECTORY = accuracy.HERE / "measured"


@pytest.fixture(scope="module")
def rows():
    found, _ = accuracy.training_rows(accuracy.read_rows(DIRECTORY, "training_measured.csv"))
    return found


@pytest.fixture(scope="module")
def report(accuracy_report):
    assert DIRECTORY == accuracy.default_measured_dir()
    return accuracy_report


def test_shipped_table_is_the_rule_applied_to_the_measured_rows():
    shipped = accuracy.EFFICIENCY_PATH.read_text(encoding="utf-8")
    assert accuracy.efficiency_text(accuracy.read_training(DIRECTORY)[0]) == shipped, \
        "stale: run `python benchmarks/accuracy.py --write-evidence > docs/accuracy-report.txt`"


def test_each_cell_is_the_median_of_its_rows(rows):
    """Each shipped cell is a steady share (size "any"): the median of the matrix shares that reproduce its rows'
    MFU under the step model. Whole-run rows choose no cell (a whole run is the steady figure x TRAINING_GOODPUT)."""
    assert any("run" in r.scopes() for r in rows)
    for cell in teff.shipped():
        assert (cell.scope, cell.size_class) == ("steady", teff.ANY_SIZE)
        inside = [r for r in rows if r.mfu and not accuracy.routed(r) and
                  (r.point().generation, r.point().precision, r.point().architecture) ==
                  (cell.generation, cell.precision, cell.architecture)]
        values = [teff.share_from(r.shape, r.gpu, r.precision, r.mfu) for r in inside]
        assert cell.rows == len(values) > 0
        assert cell.value == pytest.approx(statistics.median(values), abs=1e-4)
        assert all(r.ref in cell.source for r in inside) and cell.as_of


def test_the_share_reproduces_the_row_it_comes_from(rows):
    """share_from inverts mfu_at: a row's own share gives back its MFU; attention and memory-bound work take
    time, so a row's share is above its MFU, and more so at a longer sequence or a smaller hidden size."""
    for r in (r for r in rows if r.mfu):
        share = teff.share_from(r.shape, r.gpu, r.precision, r.mfu)
        assert teff.mfu_at(r.shape, r.gpu, r.precision, share) == pytest.approx(r.mfu, rel=1e-9)
        assert share > r.mfu
    h100, model = catalog.gpu("H100"), catalog.model("Llama 3.1 8B")
    short, long = teff.shape_of(model, 2048), teff.shape_of(model, 32768)
    assert teff.mfu_at(long, h100, "bf16", 0.5) < teff.mfu_at(short, h100, "bf16", 0.5) < 0.5
    small = teff.shape_of(catalog.model("Qwen3 0.6B"), 2048)
    large = teff.shape_of(catalog.model("Llama 3.1 70B"), 2048)
    assert teff.mfu_at(small, h100, "bf16", 0.5) < teff.mfu_at(large, h100, "bf16", 0.5)
    with pytest.raises(udfs.FlopsheetError, match="no time for the matrix products"):
        teff.share_from(long, h100, "bf16", 0.99)


def test_measured_rows_are_put_on_the_6n_basis():
    """A source that counts attention (llm-foundry) or Megatron's FLOPs has its figure rescaled to 6·N."""
    row = {"seq_len": "2048", "vocab": "50368"}
    shape = teff.Shape(6.66e9, 32, 4096, 4096, 2048)
    assert accuracy.six_n_mfu(0.5, "6N+attention", row, shape, 6.66e9) == \
        pytest.approx(0.5 * 6 * 6.66e9 / (6 * 6.66e9 + 12 * 32 * 4096 * 2048))
    assert accuracy.six_n_mfu(0.5, "", row, shape, 6.66e9) == 0.5
    megatron = accuracy.six_n_mfu(0.41, "megatron", {"vocab": "131072"}, teff.Shape(1.7e9, 24, 2048, 2048, 4096), 1.7e9)
    assert megatron == pytest.approx(0.41 * 6 * 1.7e9 / (72 * 24 * 2048**2 + 12 * 24 * 2048 * 4096 + 6 * 131072 * 2048))
    with pytest.raises(ValueError, match="flops_counted"):
        accuracy.six_n_mfu(0.5, "hfu", row, shape, 6.66e9)


@pytest.mark.parametrize("one_each", [False, True])
def test_a_source_is_scored_on_a_table_chosen_without_it(rows, one_each):
    """The folds are dealt by source: the table a source's rows are scored on holds no row of that source (dealt
    into 5 folds, or each source held out alone)."""
    held_out = accuracy.efficiency_out_of_fold(rows, one_each)
    for source in {r.source for r in rows}:
        refs = {r.ref for r in rows if r.source == source}
        cited = {part.split(" ", 1)[0] for c in held_out(source) for part in c.source.split("; ")}
        assert refs and not refs & cited, source
        assert cited, source


def test_steady_mfu_left_one_source_out_within_issue_20s_target(rows):
    """issue 20's target for training throughput (steady MFU, 6·N basis): <= 10% out of sample, held on the figure
    leaving one source out, the one docs/accuracy.md calls deal-free: the shipped 5-fold deal's figure moves when
    a new source re-deals the folds (13.1% -> 9.2% on 2026-11-24 with no estimate changed), so it proves nothing
    on its own. A regression guard: this figure is 9.5% (over 30 deals the median is 10.0%, within 10% for 15)."""
    scored = accuracy.compare_training(rows, one_each=True)
    errors = [abs(c.error_out) for c in scored if c.metric == "mfu"]
    assert len(errors) >= 40 and statistics.median(errors) <= 0.10


def test_the_readme_gives_the_deal_free_steady_mfu_beside_the_shipped_deals(report):
    """The README's table quotes the shipped deal's steady MFU; the sentence beside it must give the figure leaving
    one source out, as the report prints it, so a reader does not take the deal's figure for the robust one."""
    line = next(b for b in report.baselines if b.startswith("training, leaving one source out"))
    figures = dict(part.rsplit(" ", 1) for part in line.split(": ", 1)[1].split(", "))
    readme = " ".join((accuracy.HERE.parent / "README.md").read_text(encoding="utf-8").split())
    assert f"leaving one source out (no deal) {figures['mfu']}" in readme


def test_leaving_one_source_out_holds_every_other_source_and_the_docs_cite_it(rows, report):
    """Leave one source out (no deal): each source's table is chosen from every other source's rows, and the
    targets table quotes the report's figures for steady MFU and MFU at the GPU count."""
    held_out = accuracy.efficiency_out_of_fold(rows, one_each=True)
    steady_sources = {r.source for r in rows if r.mfu and not accuracy.routed(r)}
    source = next(iter(sorted(steady_sources)))
    cited = {part.split(" ", 1)[0] for c in held_out(source) for part in c.source.split("; ")}
    others = {r.ref for r in rows if r.mfu and not accuracy.routed(r) and r.source != source}
    assert cited == others
    line = next(b for b in report.baselines if b.startswith("training, leaving one source out"))
    figures = dict(part.rsplit(" ", 1) for part in line.split(": ", 1)[1].split(", "))
    table = " ".join((accuracy.HERE.parent / "docs" / "accuracy.md").read_text(encoding="utf-8").split())
    assert f"leaving one source out (no deal) {figures['mfu']}" in table
    assert f"leaving one source out {figures['scaling']}" in table


def test_out_of_sample_whole_run_gpu_hours_within_issue_20s_target(report):
    # issue 20's target for whole-run GPU-hours: <= 20% out of sample (the steady share re-chosen without the row's
    # source; no figure is chosen from whole-run rows)
    assert len(report.of("training_hours")) >= 16 and report.median_ape("training_hours", True) <= 0.20


CELLS = [teff.Cell("Hopper", "bf16", "any", "dense", "steady", 0.45, 3, "a", "2026-01-01"),
         teff.Cell("Hopper", "fp8", "any", "dense", "steady", 0.30, 1, "c", "2026-01-01"),
         teff.Cell("Ampere", "bf16", "any", "dense", "steady", 0.52, 2, "d", "2026-01-01")]
H100, A100, B200 = catalog.gpu("H100"), catalog.gpu("A100"), catalog.gpu("B200")
SMALL = teff.shape_of(catalog.model("Llama 3.1 8B"))


def test_an_exact_cell_is_measured_and_every_fallback_says_which_rule():
    exact = teff.lookup(H100, SMALL, "bf16", False, "steady", CELLS)
    assert exact.measured and exact.mfu == pytest.approx(teff.mfu_at(SMALL, H100, "bf16", 0.45))
    assert "share 0.450" in exact.basis
    run = teff.lookup(H100, SMALL, "bf16", False, "run", CELLS)             # a whole run: steady x goodput
    assert run.measured and run.mfu == pytest.approx(teff.mfu_at(SMALL, H100, "bf16", 0.45) * cal.TRAINING_GOODPUT)
    assert "TRAINING_GOODPUT" in run.basis
    generation = teff.lookup(B200, SMALL, "bf16", False, "steady", CELLS)
    assert generation.mfu == pytest.approx(teff.mfu_at(SMALL, B200, "bf16", 0.45))
    assert "nearest generation, Hopper" in generation.basis and not generation.measured
    run_b200 = teff.lookup(B200, SMALL, "bf16", False, "run", CELLS)        # the steady fallback, then goodput
    assert run_b200.mfu == pytest.approx(generation.mfu * cal.TRAINING_GOODPUT) and not run_b200.measured
    hopper_only = [c for c in CELLS if c.generation == "Hopper"]
    ampere = teff.lookup(A100, SMALL, "bf16", False, "steady", hopper_only)     # Ampere has no share: Hopper's
    assert ampere.mfu == pytest.approx(teff.mfu_at(SMALL, A100, "bf16", 0.45))
    gaudi = catalog.gpu("Gaudi 3")
    pooled = teff.lookup(gaudi, SMALL, "bf16", False, "run", [c for c in CELLS if c.generation == "Ampere"])
    assert pooled.mfu == pytest.approx(teff.mfu_at(SMALL, gaudi, "bf16", 0.52) * cal.TRAINING_GOODPUT)
    assert "median" in pooled.basis


def test_moe_and_fp8_fallbacks_keep_their_measured_ratios():
    dense = teff.lookup(H100, SMALL, "bf16", False, "steady", CELLS)
    moe = teff.lookup(H100, SMALL, "bf16", True, "steady", CELLS)
    assert moe.mfu == pytest.approx(dense.mfu * cal.MOE_TRAINING_EFFICIENCY) and "MoE" in moe.basis
    fp8_b200 = teff.lookup(B200, SMALL, "fp8", False, "steady", CELLS)     # no Blackwell fp8: bf16 x Hopper's ratio
    ratio = teff.mfu_at(SMALL, B200, "fp8", 0.30) / teff.mfu_at(SMALL, B200, "bf16", 0.45)
    bf16_b200 = teff.lookup(B200, SMALL, "bf16", False, "steady", CELLS)
    assert fp8_b200.mfu == pytest.approx(bf16_b200.mfu * ratio) and "fp8 / bf16" in fp8_b200.basis
    no_fp8 = [c for c in CELLS if c.precision != "fp8"]
    cautious = teff.lookup(H100, SMALL, "fp8", False, "steady", no_fp8)
    assert cautious.mfu == pytest.approx(dense.mfu * teff.FP8_FALLBACK) and "FP8_FALLBACK" in cautious.basis
    other = teff.lookup(H100, SMALL, "fp32", False, "steady", CELLS)
    assert other.mfu == pytest.approx(dense.mfu) and "no fp32 cells" in other.basis


def test_no_cell_and_no_fallback_is_na_naming_it():
    with pytest.raises(udfs.FlopsheetError, match="#N/A.*training efficiency"):
        teff.lookup(H100, SMALL, "bf16", False, "run", [])


def test_the_dense_generation_ordering_the_table_shows():
    """What the measurements say, kept: A100 runs reach more of their peak than H100 runs, steady-state
    more than whole-run, and an fp8 run less of its (doubled) peak than a bf16 run of its own."""
    a100, h100, model = catalog.gpu("A100"), catalog.gpu("H100"), catalog.model("Llama 2 7B")
    for scope in teff.SCOPES:
        assert teff.for_gpu(a100, model, scope=scope).mfu > teff.for_gpu(h100, model, scope=scope).mfu
    for gpu in (a100, h100):
        assert teff.for_gpu(gpu, model, scope="steady").mfu > teff.for_gpu(gpu, model, scope="run").mfu
    assert teff.for_gpu(h100, model, "fp8", scope="steady").mfu < teff.for_gpu(h100, model, scope="steady").mfu


def test_worksheet_functions_read_the_table():
    mfu = udfs.call("TRAINING_MFU", "A100", "Llama 2 7B")
    hours = udfs.call("TRAINING_GPU_HOURS", "Llama 2 7B", 2e12, "A100")
    assert hours == pytest.approx(udfs.call("TRAINING_GPU_HOURS", "Llama 2 7B", 2e12, "A100", mfu))
    steady = udfs.call("TRAINING_GPU_HOURS", "Llama 2 7B", 2e12, "A100", "", "bf16", "point", "steady")
    assert steady < hours
    assert udfs.call("TRAINING_GPU_HOURS", "Llama 2 7B", 2e12, "A100", 0.5, "bf16", "point", "steady") == \
        udfs.call("TRAINING_GPU_HOURS", "Llama 2 7B", 2e12, "A100", 0.5)          # a given MFU is used as it is
    days = udfs.call("TRAINING_DAYS", "Llama 2 7B", 2e12, "A100", 1024)
    assert days == pytest.approx(hours / 1024 / 24)
    cost = udfs.call("TRAINING_COST", "Llama 2 7B", 2e12, "A100", 2.0)
    assert cost == pytest.approx(hours * 2.0)
    for gpu in ("A100", "H100"):      # a catalog MoE model's whole run: its routing by physics, then goodput
        basis = udfs.call("TRAINING_MFU", gpu, "Mixtral 8x7B", "bf16", "run", "basis")
        assert "by physics" in basis and "TRAINING_GOODPUT" in basis and "MOE_TRAINING_EFFICIENCY" not in basis
    assert "TRAINING_GOODPUT" in udfs.call("TRAINING_MFU", "A100", "Llama 2 7B", "bf16", "run", "basis")
    with pytest.raises(udfs.FlopsheetError, match="no fp8 tensor units"):     # A100: no fp8 MFU
        udfs.call("TRAINING_MFU", "A100", "Llama 2 7B", "fp8")


def test_the_picker_prices_training_at_the_tables_mfu():
    """Pre-training on the cluster the picker sizes: the steady cell x goodput, the whole-run figure (its
    all-reduce is added apart)."""
    model, gpu = catalog.model("Llama 2 7B"), catalog.gpu("H100")
    option = next(o for o in picker.rank("train", model, tokens_or_traffic=2e12) if o.gpu == gpu.name)
    peak = gpu.tensor_peak("bf16", "test", weight_only=False).tflops
    mfu = teff.for_gpu(gpu, model, "bf16", "steady").mfu * cal.TRAINING_GOODPUT
    assert option.ideal_gpu_hours == pytest.approx(6 * model.active * 2e12 / (peak * 1e12 * mfu) / 3600)
    assert math.isfinite(option.gpu_hours) and option.gpu_hours >= option.ideal_gpu_hours


QWEN3 = catalog.model("Qwen3 235B-A22B")


def test_moe_routing_is_physics_with_its_layout():
    """A MoE token's routing costs time outside the 6·N products (none for a dense model); its expert all-to-alls
    inside one server run over the GPU link, and across servers each token crosses a NIC at most once a server, so
    spreading the same experts over 4 servers costs more than keeping them in one, but less than k copies each."""
    dense = teff.shape_of(catalog.model("Llama 3.1 70B"), 4096)
    assert teff.moe_seconds(dense, H100) == 0.0
    inside = teff.shape_of(QWEN3, 4096)
    assert inside.routed_model == QWEN3 and teff.expert_group(inside, H100) == 8       # one 8-GPU server, 128 experts
    assert teff.expert_group(inside, catalog.gpu("GB200")) == 64               # NVL72: the largest even split
    across = teff.Shape(**{**inside.__dict__, "expert_parallel": 32})
    assert 0 < teff.moe_seconds(inside, H100) < teff.moe_seconds(across, H100)
    tokens, k = 4096, QWEN3.experts_per_token
    copies = collectives.all_to_all_s(collectives.network(), 32, tokens * k * QWEN3.hidden * 2)
    assert teff.exchange_seconds(QWEN3, H100, 32, tokens) < copies
    assert teff.mfu_at(across, H100, "bf16", 0.43) < teff.mfu_at(inside, H100, "bf16", 0.43) < \
        teff.mfu_at(teff.Shape(**{**inside.__dict__, "routed_model": None}), H100, "bf16", 0.43)


def test_the_default_expert_group_needs_the_server_size_and_fits_the_job():
    """No server size in the catalog: #N/A naming system_gpus, not a silent one-GPU group with no all-to-all; a job
    of 4 GPUs spreads Qwen3's 128 experts over at most 4, not over the 8 of an H100 server."""
    import dataclasses
    shape = teff.shape_of(QWEN3, 4096)
    unknown = dataclasses.replace(H100, system_gpus=None)
    with pytest.raises(MissingFigure, match="system_gpus"):
        teff.expert_group(shape, unknown)
    with pytest.raises(MissingFigure, match="system_gpus"):
        teff.lookup(unknown, shape, "bf16", True, "steady", CELLS)
    assert teff.expert_group(dataclasses.replace(shape, job_gpus=4), H100) == 4
    assert teff.expert_group(dataclasses.replace(shape, job_gpus=64), H100) == 8


def test_a_moe_model_without_a_moe_share_takes_the_dense_share_with_its_routing():
    """Steady: no MoE share in the table means the dense share with the routing by physics (not a factor). A MoE
    share is chosen from rows whose routing is not modelled, so it holds the routing in: a model whose routing is
    not known (no catalog layout) takes it as it is, and a catalog MoE model never does (moe_seconds would add the
    routing a second time): it takes the dense share with its routing by physics even where a MoE share exists."""
    shape = teff.shape_of(QWEN3, 4096)
    found = teff.lookup(H100, shape, "bf16", True, "steady", CELLS)
    assert found.mfu == pytest.approx(teff.mfu_at(shape, H100, "bf16", 0.45)) and not found.measured
    assert "by physics" in found.basis
    unknown = teff.Shape(**{**shape.__dict__, "routed_model": None})
    moe_cell = CELLS + [teff.Cell("Hopper", "bf16", "any", "MoE", "steady", 0.30, 1, "e", "2026-01-01")]
    blind = teff.lookup(H100, unknown, "bf16", True, "steady", moe_cell)
    assert blind.mfu == pytest.approx(teff.mfu_at(unknown, H100, "bf16", 0.30)) and blind.measured
    routed = teff.lookup(H100, shape, "bf16", True, "steady", moe_cell)
    assert routed.mfu == pytest.approx(teff.mfu_at(shape, H100, "bf16", 0.45)) and "by physics" in routed.basis


def test_a_moe_row_is_scored_on_its_stated_expert_parallel_group(rows):
    qwen = [r for r in rows if r.model == QWEN3.name and r.gpu.family == "H100"]
    assert qwen and all(r.shape.routed_model is not None and r.shape.routed_model.name == QWEN3.name for r in qwen)
    assert {r.shape.expert_parallel for r in qwen} == {8, 32}
    assert all(str(r.shape.expert_parallel) in r.note for r in qwen)


def test_a_moe_row_with_its_routing_modelled_chooses_no_share(rows):
    """The routing is physics on the dense share: a MoE row the step model adds the routing of only scores it, so
    no steady cell cites it and changing its measurement moves no cell of the table."""
    import dataclasses
    routed = [r for r in rows if accuracy.routed(r)]
    assert routed and all(r.moe and r.mfu for r in routed)
    before = accuracy.efficiency_cells(rows)
    assert not [c for c in before for r in routed if c.scope == "steady" and f"{r.ref} " in c.source + " "]
    poisoned = [dataclasses.replace(r, mfu=(r.mfu or 0) * 0.5) if accuracy.routed(r) else r for r in rows]
    assert accuracy.efficiency_cells(poisoned) == before
