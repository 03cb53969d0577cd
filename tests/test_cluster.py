"""Training across many GPUs (udfs/physics/training.py: layout, global batch, gradient synchronisation over
the hierarchical collectives of udfs/physics/collectives.py), checked against its physics and the published
large runs (benchmarks/measured/training_measured.csv)."""

from __future__ import annotations

import pytest

import udfs
from benchmarks import accuracy
from udfs.catalogs import catalog
from udfs.physics import calibration as cal
from udfs.physics import collectives, training

COUNTS = (8, 16, 64, 256, 1024, 4096, 16384, 65536)


@pytest.mark.parametrize("name", ["Llama 3.1 8B", "Llama 2 13B", "Llama 3.1 70B", "Llama 3.1 405B"])
@pytest.mark.parametrize("gpu", ["H100 SXM", "A100 SXM 80GB", "B200"])
@pytest.mark.parametrize("batch", [4e6, 16_777_216])
def test_scaling_efficiency_never_rises_with_gpus_at_a_fixed_batch(name, gpu, batch):
    """At a fixed global batch each GPU computes 1/n of the step while its gradient share does not shrink:
    the share of the step left computing never rises as GPUs are added, and stays in (0, 1]."""
    model, row = catalog.model(name), catalog.gpu(gpu)
    eff = [training.scale_out_efficiency(model, row, n, batch_tokens=batch) for n in COUNTS]
    assert all(0 < e <= 1 for e in eff)
    assert eff == sorted(eff, reverse=True), list(zip(COUNTS, eff))
    assert eff[-1] < eff[0]


def test_the_batch_grows_with_the_cluster_as_large_runs_do():
    """4M tokens on a modest cluster (Llama 2), then MIN_TOKENS_PER_GPU a GPU, capped at Llama 3's 16M."""
    assert training.global_batch_tokens(64) == cal.GLOBAL_BATCH_TOKENS
    assert training.global_batch_tokens(8192) == 8192 * cal.MIN_TOKENS_PER_GPU
    assert training.global_batch_tokens(16384) == cal.MAX_GLOBAL_BATCH_TOKENS
    assert training.global_batch_tokens(65536) == cal.MAX_GLOBAL_BATCH_TOKENS


def test_the_layout_rule_reproduces_the_published_large_layouts():
    """The rule (smallest tensor x pipeline group holding at most MODEL_PARALLEL_PARAMS_PER_GPU a GPU) gives
    Llama 3 405B the layout Meta ran on 16,384 H100 (TP8 PP16 DP128, arXiv:2407.21783 Table 4), and a small
    model stays within a server."""
    h100 = catalog.gpu("H100 SXM")
    assert training.layout(catalog.model("Llama 3.1 405B"), h100, 16384) == training.Layout(8, 16, 128)
    small = training.layout(catalog.model("Llama 3.1 8B"), h100, 64)
    assert small.pp == 1 and small.tp <= 8 and small.tp * small.dp == 64
    assert training.layout(catalog.model("Llama 3.1 405B"), h100, 8).group == 8    # never more GPUs than the job


def test_hierarchical_beats_a_flat_ring_over_the_network():
    """Across servers NCCL reduces inside each server over NVLink first, so each GPU sends only its 1/8 share
    over its NIC: faster than one flat ring of every GPU over the network; inside one server it is the NVLink
    ring alone; with a model-parallel group as large as a server every peer is in another server."""
    h100, size = catalog.gpu("H100 SXM"), 14e9
    nvlink = collectives.link_class(h100, 8)
    for n in (16, 64, 1024):
        hier = training.allreduce_seconds(size, n, 8, nvlink)
        flat = collectives.all_reduce_s(collectives.network(), n, size)
        assert hier < flat
        assert hier > collectives.all_reduce_s(nvlink, 8, size)          # leaving the server costs more
    assert training.allreduce_seconds(size, 8, 8, nvlink) == collectives.all_reduce_s(nvlink, 8, size)
    model = catalog.model("Llama 3.1 70B")             # TP8: each data-parallel peer in another server
    plan = training.layout(model, h100, 1024)
    sync = training.gradient_sync(model, h100, plan, compute_s=1e-9)
    share = model.total_params / plan.group / sync.buckets * cal.GRAD_REDUCE_BYTES
    assert sync.comm_s == pytest.approx(sync.buckets * collectives.all_reduce_s(collectives.network(), plan.dp, share))


def test_overlap_hides_what_the_passes_cover_and_no_more():
    """Exposed = what exceeds the backward pass (reduce-scatter) and the forward pass (all-gather), never less
    than one bucket's: long compute leaves only the bucket tail, no compute exposes everything."""
    model, h100 = catalog.model("Llama 3.1 70B"), catalog.gpu("H100 SXM")
    plan = training.layout(model, h100, 1024)
    long = training.gradient_sync(model, h100, plan, compute_s=1e3)
    assert long.exposed_s == pytest.approx(long.comm_s / long.buckets)
    none = training.gradient_sync(model, h100, plan, compute_s=0.0)
    assert none.exposed_s == pytest.approx(none.comm_s)


def test_llama3_405b_on_16k_h100_is_within_the_target_out_of_sample(accuracy_report):
    """The Llama 3 paper's 16,384-H100 runs (Table 4: 41% MFU at TP8 PP16 DP128, 16M tokens) scored as
    TRAINING_MFU(..., n_gpus) models them, with the steady-state cell chosen without Meta's rows: within issue
    20's 10% training-throughput target (the old pure data-parallel, no-overlap model gave 0.03). Not checked
    against the P10..P90 band of the thousands-of-GPUs rows: the other seven are all estimated low (-1.6% to
    -28%), so their P90 is -0.9% and this row, at +0.8%, sits just above a band that does not hold zero."""
    directory = accuracy.default_measured_dir()
    report = accuracy_report
    refs = [ref for ref, r in accuracy.read_rows(directory, "training_measured.csv")
            if r["model"] == "Llama 3 405B" and r["gpu_count"] == "16384" and "TP8 PP16 DP128, seq 8192" in r["note"]]
    rows = [c for c in report.of("scaling") if c.row.split(" ")[0] in refs]
    assert len(rows) == 1
    row = rows[0]
    assert abs(row.error_out) <= 0.10, row
    assert udfs.call("TRAINING_MFU", "H100", "Llama 3.1 405B", "bf16", "steady", "mfu", 16384) > 0.3


def test_training_mfu_with_n_gpus_is_the_cell_times_the_scale_out():
    """TRAINING_MFU with n_gpus is the steady cell (x goodput for scope run) x scale_out_efficiency on the rules'
    layout and batch: one formula (training.on_cluster)."""
    model, h100 = catalog.model("Llama 3.1 405B"), catalog.gpu("H100 SXM")
    cell = udfs.call("TRAINING_MFU", "H100", "Llama 3.1 405B", "bf16", "steady")
    for n in (1024, 16384):
        got = udfs.call("TRAINING_MFU", "H100", "Llama 3.1 405B", "bf16", "steady", "mfu", n)
        assert got == pytest.approx(cell * training.scale_out_efficiency(model, h100, n))


def test_the_report_says_why_the_blank_figure_and_the_sized_job_differ():
    """A buyer shown the sized job's hours and the blank-n_gpus figure's is told why they differ: the
    share this model loses at the option's count and at Llama 3's 16,384 GPUs, from the same physics."""
    from udfs.planning import report_model, scenario
    sc = scenario.from_dict({"name": "why", "workload": {"kind": "train", "model": "Llama 3.1 8B", "tokens": 15e12,
                                                         "precision": "bf16"},
                             "constraints": {"deadline_days": 90},
                             "candidates": {"gpus": ["H100 SXM"], "pricing": ["cloud"], "tiers": "any"}})
    res = report_model.analyse(sc, sensitivity=False)
    best = res.best
    big = training.LARGEST_PUBLISHED_CLUSTER
    at_big = training.scale_out_efficiency(catalog.model("Llama 3.1 8B"), catalog.gpu("H100 SXM"), big)
    assert big == 16384
    assert f"{1 - best.scale_efficiency:.1%} of the time to gradient synchronisation" in res.mfu_basis
    assert f"{1 - at_big:.1%} on {big:,}" in res.mfu_basis
    assert at_big < best.scale_efficiency


def test_the_basis_names_the_layout_and_batch_it_was_sized_on():
    text = udfs.call("TRAINING_MFU", "H100", "Llama 3.1 405B", "bf16", "run", "basis", 16384)
    plan = training.layout(catalog.model("Llama 3.1 405B"), catalog.gpu("H100 SXM"), 16384)
    assert f"TP{plan.tp} PP{plan.pp} DP{plan.dp}, {training.global_batch_tokens(16384):,.0f} tokens a step" in text
