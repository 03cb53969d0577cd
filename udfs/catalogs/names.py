"""Forgiving name resolution for catalog rows (GPUs, models, instances, precisions).

Users type "nvidia h100", "H100-SXM5-80GB", "RTX4090 24 gb" or "meta-llama/Llama-2-7b-hf".
Every name and alias is reduced to a key of lower-case letters and digits, with vendor
words dropped and memory sizes spelled one way ("24gb"). A key that belongs to one row
resolves; a key shared by several rows is ambiguous; anything else is unknown. Both
errors list the closest names, so the user can fix the cell.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Generic, TypeVar
from collections.abc import Iterable

from ..errors import FlopsheetError, quote

T = TypeVar("T")

SUGGEST_PREFIX = 100     # characters of an unknown name compared with the known ones
MAX_NAME_CHARS = 200     # no catalog name (or alias) is longer
TOO_LONG = "#too-long"

# Words that never tell two catalog rows apart.
_NOISE = re.compile(r"\b(nvidia|amd|intel|geforce|instinct|tesla|habana|the|gpu|card)\b")
_MEMORY = re.compile(r"(\d+)\s*(?:gib|gb|g)\b")


def key(text: str) -> str:
    """The comparison key of a name: lower-case alphanumerics, noise words removed."""
    text = str(text).strip().lower()
    if len(text) > MAX_NAME_CHARS:      # matches no name (keys are [a-z0-9_]); the regexes below
        return TOO_LONG                 # are quadratic on a long run of digits
    if "/" in text:                       # Hugging Face repo id: keep the model part
        text = text.rsplit("/", 1)[1]
    text = _MEMORY.sub(lambda m: f" {m.group(1)}gb ", text)
    text = _NOISE.sub(" ", text)
    return re.sub(r"[^a-z0-9.]+", "", text).replace(".", "_")




@dataclass
class NameIndex(Generic[T]):
    """Maps keys of names and aliases to rows; built once per catalog."""

    what: str                                   # "GPU", "model", ... for messages
    exact: dict[str, T] = field(default_factory=dict)
    loose: dict[str, list[T]] = field(default_factory=dict)
    display: dict[str, str] = field(default_factory=dict)   # key -> name shown to users

    def add(self, row: T, name: str, aliases: Iterable[str] = (), loose: Iterable[str] = ()) -> None:
        for text in (name, *aliases):
            k = key(text)
            if not k:
                continue
            other = self.exact.get(k)
            if other is not None and other is not row:
                raise ValueError(f"{self.what} alias {text!r} names two rows")
            self.exact[k] = row
            self.display.setdefault(k, name)
        for text in loose:                     # generated variants: may be shared
            k = key(text)
            if k and row not in self.loose.setdefault(k, []):
                self.loose[k].append(row)
                self.display.setdefault(k, name)

    def names(self) -> list[str]:
        return sorted(set(self.display.values()))

    def resolve(self, text: str, name_of=lambda row: row.name) -> T:
        if len(str(text).strip()) > MAX_NAME_CHARS:
            raise FlopsheetError(f"unknown {self.what} {quote(text)}: longer than any {self.what} name", "#N/A")
        k = key(text)
        if k in self.exact:
            return self.exact[k]
        rows = self.loose.get(k, [])
        if len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            options = ", ".join(sorted(name_of(r) for r in rows))
            raise FlopsheetError(f"{self.what} name {quote(text)} is ambiguous: did you mean one of {options}?", "#N/A")
        raise FlopsheetError(f"unknown {self.what} {quote(text)}{self.suggest(text)}", "#N/A")

    def suggest(self, text: str) -> str:
        k = key(text)[:SUGGEST_PREFIX]   # difflib is quadratic: a 20,000-character cell took seconds
        close = difflib.get_close_matches(k, list(self.display), n=8, cutoff=0.5)
        if not close and k:
            close = [c for c in self.display if k in c or c in k]
        names = []
        for c in close:
            if self.display[c] not in names:
                names.append(self.display[c])
        if not names:
            return f"; known {self.what} names include {', '.join(self.names()[:12])}"
        return f"; closest: {', '.join(names[:5])}"
