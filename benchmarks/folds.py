"""Out-of-sample scoring for constants chosen by looking at measured rows: k-fold cross-validation.

A constant chosen from rows (the llama.cpp and MLC-LLM achieved bandwidth, the default MFU) is
chosen from a *pool* of rows by a stated rule. To score a row out of sample, the rule re-chooses the
constant from the pool without the row's fold, and the row is scored with that value: a row never
helps choose the constant it is scored with.

The folds: the pool's row references are ordered by SHA-256 of "SEED:reference" (deterministic,
independent of file order and of Python's hash seed) and dealt round-robin into K folds. A pool with
fewer than LOO_BELOW rows is scored leave-one-out (one fold per row): with a handful of rows, a fold of
several would leave the rule too little to choose from. A row outside the pool did not help choose
the constant: it is scored with the value the rule picks from the whole pool.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

K = 5
SEED = 20
LOO_BELOW = 2 * K          # fewer rows than this in a pool: leave-one-out

T = TypeVar("T")
V = TypeVar("V")


def k_for(rows: int) -> int:
    """Folds for a pool of `rows` rows: K, or one per row (leave-one-out) when rows are few."""
    return rows if rows < LOO_BELOW else K


def describe(rows: int) -> str:
    k = k_for(rows)
    return f"leave-one-out ({rows} rows)" if k == rows else f"{k}-fold ({rows} rows, seed {SEED})"


def assign(refs: Iterable[str], seed: int = SEED, one_each: bool = False) -> dict[str, int]:
    """Each reference's fold (0..k-1), k from k_for(number of distinct references); one_each: a fold per
    reference (leave one out whatever the count: no deal)."""
    ordered = sorted(set(refs), key=lambda r: hashlib.sha256(f"{seed}:{r}".encode()).hexdigest())
    k = len(ordered) if one_each else k_for(len(ordered))
    return {ref: i % k for i, ref in enumerate(ordered)}


def out_of_fold(pool: Sequence[T], ref: Callable[[T], str], choose: Callable[[list[T]], V],
                seed: int = SEED, one_each: bool = False) -> Callable[[str], V]:
    """A function giving, for a row reference, the constant `choose` picks from the pool without
    that row's fold (from the whole pool for a reference outside it). Each fold's value is chosen
    once."""
    folds = assign((ref(p) for p in pool), seed, one_each)
    cache: dict[int | None, V] = {}

    def value(row: str) -> V:
        fold = folds.get(row)
        if fold not in cache:
            cache[fold] = choose([p for p in pool if folds[ref(p)] != fold] if fold is not None else list(pool))
        return cache[fold]
    return value
