"""benchmarks/training_decomposition.py: a MoE training step by part is the step the step model gives, and what a row's
note states beside it (its pipeline split, its recompute, its routing's balance) is read as the note states it."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import accuracy
from benchmarks import training_decomposition as td
from udfs.physics import training_efficiency as teff

DIRECTORY = accuracy.default_measured_dir()
pytestmark = pytest.mark.skipif(not (DIRECTORY / "training_measured.csv").exists(), reason="no measured training rows")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rows():
    return td.moe_rows(DIRECTORY)


def _row(rows, *words):
    return next(r for r in rows if all(w in r.note for w in words))


def test_parts_make_up_the_models_step(rows):
    """The five parts add up to the step the model's MFU for the row implies, and the measured step is the row's."""
    assert len(rows) >= 10
    for r in rows:
        p = td.parts(r)
        assert p["matrix"] + p["attention"] + p["memory"] + p["routing"] + p["all_to_all"] == \
            pytest.approx(p["model"], rel=1e-9), r.ref
        assert p["model"] == pytest.approx(6 * r.params / (teff._peak(r.gpu, r.precision) *
                                           teff.lookup(r.gpu, r.shape, r.precision, True, "steady").mfu)), r.ref
        assert p["measured"] * r.mfu == pytest.approx(p["model"] * teff.lookup(r.gpu, r.shape, r.precision, True,
                                                                               "steady").mfu), r.ref


def test_the_busiest_stage_holds_the_loss(rows):
    """PP32 with three chunks a stage and 96 slots (94 layers, the embedding, the loss): chunk c runs on stage
    c mod 32, so stage 31 holds chunks 31, 63 and 95: two layers and the loss, the head's products."""
    r = _row(rows, "PP32 VPP3")
    p = td.parts(r)
    model = r.shape.routed_model
    peak = teff._peak(r.gpu, r.precision)
    head = 6 * model.output_head_params / (peak * p["share"])
    embedding = 6 * model.input_embedding_params / (peak * p["share"])
    layer = (p["model"] - head - embedding) / r.shape.layers
    assert td.busiest_stage(r, p) == pytest.approx((2 * layer + head) * 32 / p["model"], rel=1e-9)
    assert head > layer        # Qwen3-235B-A22B's untied 151,936 x 4,096 head is more than a layer's work


def test_no_stated_split_no_stage_and_an_even_split_is_near_one(rows):
    unstated = [r for r in rows if td.ENDS_SPLIT not in r.note]
    assert unstated and all(td.busiest_stage(r, td.parts(r)) == 1.0 for r in unstated)
    r = _row(rows, "TP2 EP32 PP8 VPP4", "1F1B")
    assert 1.0 < td.busiest_stage(r, td.parts(r)) < 1.1


def test_recompute_is_read_as_stated(rows):
    full = _row(rows, "full recompute")
    p = td.parts(full)
    seconds, what = td.recompute(full, p)
    assert what == "full" and seconds == pytest.approx(
        (p["matrix"] + p["attention"] + p["memory"]) / 3 + (p["routing"] + p["all_to_all"]) / 2)
    module = _row(rows, "selective recompute (layernorm, moe)")
    p = td.parts(module)
    seconds, what = td.recompute(module, p)
    m = module.shape.routed_model
    assert what == "moe module" and seconds == pytest.approx(
        p["matrix"] * m.experts_per_token * m.expert_params / module.params / 3 + (p["routing"] + p["all_to_all"]) / 2)
    assert td.recompute(_row(rows, "no recompute"), td.parts(_row(rows, "no recompute")))[0] == 0


def test_balance_is_the_sources_forced_over_dropless(rows):
    r = _row(rows, "seq 16384")
    assert td.balance(r.note) == (pytest.approx(295 / 237), "dropless")
    assert td.balance(_row(rows, "GB300").note)[1] == "forced"
    assert td.balance(_row(rows, "TP4 EP8 PP8 VPP4 DP8").note) == (1.0, "not stated")


def test_the_docs_quote_the_tools_figures(rows):
    """docs/accuracy.md's "MoE training steps by part" quotes the long-context rows' errors with what their notes
    state, as the tool finds them."""
    page = " ".join((ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8").split())
    lines = {line.split()[0]: line for line in td.table(rows)[2:]}
    long_context = [r for r in rows if r.gpu.family == "H100" and "Long context" in r.note]
    assert len(long_context) == 4
    quoted = " / ".join(lines[r.ref.split("/")[-1]].split()[16] for r in long_context)
    assert f"with all three {quoted}" in page, quoted
