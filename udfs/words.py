"""Counted nouns in the one form English wants: "1 GPU", "2 GPUs", "1 copy", "3 copies". Every
sentence and label that prints a count with its noun goes through `plural` (reports, workbooks,
evidence), so "1 GPUs" cannot appear in one place and not another."""

from __future__ import annotations

IRREGULAR = {"copy": "copies", "entry": "entries", "day": "days", "series": "series"}


def sentence_case(text: str) -> str:
    """`text` with its first letter capitalised and the rest as written (str.capitalize lowers "NVIDIA")."""
    return text[:1].upper() + text[1:]


def noun(count: float, word: str, many: str | None = None) -> str:
    """`word` or its plural for `count` (only exactly 1 is singular: "0 GPUs", "1.5 GPUs")."""
    if count == 1:
        return word
    if many is not None:
        return many
    if word in IRREGULAR:
        return IRREGULAR[word]
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def plural(count: float, word: str, many: str | None = None, fmt: str = ",") -> str:
    """The count with its noun: plural(1, "GPU") == "1 GPU", plural(2400, "server") == "2,400 servers"."""
    return f"{count:{fmt}} {noun(count, word, many)}"
