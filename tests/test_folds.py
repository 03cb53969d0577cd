"""k-fold scoring of the constants chosen from measured rows (benchmarks/folds.py): folds are
deterministic, a constant is chosen on the training folds only, and no row scores itself."""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks import accuracy, folds
from benchmarks import serving_accuracy as serving_acc

DIRECTORY = accuracy.default_measured_dir()
ROOT = Path(__file__).resolve().parents[1]


def test_folds_are_deterministic_balanced_and_independent_of_order():
    refs = [f"file.csv:{i}" for i in range(2, 40)]
    first = folds.assign(refs)
    assert first == folds.assign(list(reversed(refs)))
    assert set(first.values()) == set(range(folds.K))
    sizes = [list(first.values()).count(k) for k in range(folds.K)]
    assert max(sizes) - min(sizes) <= 1
    assert first != folds.assign(refs, seed=folds.SEED + 1)      # the seed decides the deal


def test_few_rows_are_scored_leave_one_out():
    refs = [f"r{i}" for i in range(folds.LOO_BELOW - 1)]
    assert sorted(folds.assign(refs).values()) == list(range(len(refs)))
    assert folds.k_for(folds.LOO_BELOW) == folds.K
    assert "leave-one-out" in folds.describe(3) and f"seed {folds.SEED}" in folds.describe(40)


def test_a_constant_is_chosen_on_the_training_folds_only():
    pool = [(f"r{i}", float(i)) for i in range(25)]
    seen: list[list[str]] = []

    def choose(train):
        seen.append([ref for ref, _ in train])
        return sum(v for _, v in train)

    value = folds.out_of_fold(pool, lambda p: p[0], choose)
    fold = folds.assign(ref for ref, _ in pool)
    for ref, _ in pool:
        trained = value(ref)
        others = [v for r, v in pool if fold[r] != fold[ref]]
        assert trained == sum(others)               # every row outside the fold, none inside it
    assert len(seen) == folds.K                     # one choice per fold
    assert all(len(s) < len(pool) for s in seen)
    assert value("outside the pool") == sum(v for _, v in pool)


POOLED = [f for f in serving_acc.FITTED if sum(f.selects(c) for c in serving_acc.cases_of(DIRECTORY)) > 3]


@pytest.mark.parametrize("fit", POOLED, ids=lambda f: f"{f.engine}-{f.field}")
def test_a_serving_row_never_scores_itself(fit):
    """Poison one fitted row's measurement across the median the rule sets: the constant its own
    out-of-sample estimate uses does not move, while the constant of some row in another fold does
    (the row does help choose it). Every constant chosen from more than three rows."""
    cases = serving_acc.cases_of(DIRECTORY)
    row = next(c for c in cases if fit.selects(c))
    factor = 10.0 if serving_acc.log_error(row, row.engine) > 0 else 0.1     # 10x faster, or 10x slower
    factor = 1 / factor if row.unit == "ms" else factor                      # a time: faster is smaller
    poisoned = [replace(c, measured=c.measured * factor) if c is row else c for c in cases]
    before, after = serving_acc.fitted_out_of_fold(cases)[fit], serving_acc.fitted_out_of_fold(poisoned)[fit]
    assert after(row.ref) == before(row.ref)
    others = [c.ref for c in cases if fit.selects(c) and c is not row]
    assert any(after(ref) != pytest.approx(before(ref)) for ref in others)


def test_a_training_row_never_scores_itself():
    """The training-efficiency table's folds are dealt by source: poisoning the MFU of every row of one
    source leaves the out-of-sample estimates of that source's rows unchanged and moves some other
    source's (a cell is a median, so one poisoned row alone may not move it)."""
    rows = accuracy.read_rows(DIRECTORY, "training_measured.csv")
    found, _ = accuracy.training_rows(rows)
    # the largest source; ties broken by name, so the pick does not hang on set order (PYTHONHASHSEED)
    largest = max(sorted({r.source for r in found}), key=lambda src: sum(r.source == src for r in found))
    refs = {r.ref for r in found if r.source == largest and r.mfu}      # its cells hold other sources' rows
    poisoned = [(r, {**row, "mfu_pct": "95", "achieved_tflops_per_gpu": ""} if r in refs else row)
                for r, row in rows]

    def out_of_sample(rows_):
        scored = accuracy.compare_training(accuracy.training_rows(rows_)[0])
        return {(c.metric, c.row): c.estimate_out for c in scored}
    before, after = out_of_sample(rows), out_of_sample(poisoned)
    own = {r.what for r in found if r.source == largest}
    assert refs and all(after[key] == before[key] for key in before if key[1] in own)
    assert any(after[key] != pytest.approx(before[key]) for key in before if key[1] not in own)


def test_the_report_states_k_and_the_seed(accuracy_report):
    report = accuracy_report
    text = accuracy.format_report(report)
    assert f"k = {folds.K} (seed {folds.SEED}" in text
    assert report.pools
    for name, rows in report.pools:
        assert f"  {name}: {folds.describe(rows)}" in text


def test_every_constant_marked_fitted_is_scored_out_of_fold():
    """A constant udfs/data/engines.csv marks as chosen from rows (`fitted`) has its rule in
    serving_accuracy.FITTED, so the report re-chooses it within each fold; none is left in sample."""
    from udfs.catalogs import engines
    marked = {(e.name, f) for e in engines.engines() for f in e.fitted}
    assert marked == {(fit.engine, field) for fit in serving_acc.FITTED for field in fit.fields if fit.engine}
    # a constant of every engine lives in calibration.py, which says it is chosen from rows
    source = (ROOT / "udfs" / "physics" / "calibration.py").read_text()
    for fit in (f for f in serving_acc.FITTED if not f.engine):
        assert re.search(rf"CHOSEN FROM ROWS[^\n]*\n(#[^\n]*\n)*{fit.constant} = ", source), fit.constant
    found, _ = accuracy.read_training(DIRECTORY)
    assert ("training-efficiency table, folds dealt by source", len({r.source for r in found})) \
        in accuracy.constant_pools(DIRECTORY, found)
