"""Private catalogs: a team's own GPUs, models, prices and engines, without editing the
installed package (as pint lets users extend its unit definitions).

A private catalog is a folder holding any of `gpus.csv`, `models.csv`, `cloud.csv`,
`engines.csv` in the packaged columns (any subset, any order). Folders are read from the
per-user location (`user_dir()`) and then from `FLOPSHEET_CATALOG` (several folders
separated by the platform's path separator). A row naming an existing row (name or alias)
overrides the cells it fills; other rows are added. Cloud prices are keyed by provider,
instance, region, pricing, status and price date, so a newer private price is added and,
being newest, wins. Every row remembers where it came from. Bad rows are reported with
file, line and column; the catalog refuses to load until they are fixed, so a typo never
silently changes an estimate.
"""

from __future__ import annotations

import csv
import io
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import FlopsheetError
from .names import key

ENV = "FLOPSHEET_CATALOG"
PACKAGED = "packaged"
TABLES = ("gpus.csv", "models.csv", "cloud.csv", "engines.csv")
IDENTITY = {"cloud.csv": ("provider", "instance", "region", "pricing", "status", "price_date")}
KEY_COLUMNS = {"cloud.csv": ("provider", "instance")}     # identity columns that may not be blank
REQUIRED = {"gpus.csv": ("name", "memory_gb", "bandwidth_tbs"), "models.csv": ("name",),
            "cloud.csv": ("provider", "instance", "gpu", "pricing", "status"),
            "engines.csv": ("name", "multi_gpu", "memory_rule", "memory_fraction", "activation_reserve_gib",
                            "kv_reservation", "kv_precision", "precisions", "bandwidth_fraction_hbm",
                            "bandwidth_fraction_gddr", "quantized_factor", "layer_overhead_us", "step_overhead_us",
                            "matmul_fraction_16", "matmul_fraction_8", "matmul_fraction_4")}
# What a blank cell of a new row means where blank would mislead (a modern decoder).
NEW_ROW_DEFAULTS = {"models.csv": {"gated_mlp": "TRUE", "norm": "rmsnorm", "pos_embedding": "rope"}}
_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
_BOOL = ("TRUE", "FALSE", "YES", "NO", "1", "0", "")


def user_dir() -> Path | None:
    """The per-user catalog folder: ~/.config/flopsheet/catalog on Linux (or under
    $XDG_CONFIG_HOME), ~/Library/Application Support/flopsheet/catalog on macOS,
    %APPDATA%\\flopsheet\\catalog on Windows."""
    try:
        if sys.platform == "win32" and os.environ.get("APPDATA"):
            base = Path(os.environ["APPDATA"])
        elif sys.platform == "darwin":
            base = Path.home() / "Library" / "Application Support"
        else:
            base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    except (RuntimeError, KeyError):          # no home directory (e.g. in a browser)
        return None
    return base / "flopsheet" / "catalog"


def folders() -> list[Path]:
    """Private catalog folders in effect, lowest precedence first."""
    found = []
    user = user_dir()
    if user is not None and user.is_dir():
        found.append(user)
    for part in (os.environ.get(ENV) or "").split(os.pathsep):
        if part.strip():
            found.append(Path(part.strip()).expanduser())
    return found


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    column: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file} line {self.line}" + (f", column {self.column}" if self.column else "")
        return f"{where}: {self.message}"


def _letter(index: int) -> str:
    """Spreadsheet column letter of a 0-based index (A, B, ..., Z, AA)."""
    text = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        text = chr(65 + rest) + text
    return text


def _check_cell(column: str, text: str, kind: str) -> str | None:
    """Why a cell's text does not fit its column's type (None: it fits)."""
    text = text.strip()
    if not text:
        return None
    if kind in ("float | None", "int | None"):
        try:
            value = float(text.replace(",", ""))
        except ValueError:
            return f"{text!r} is not a number"
        if value < 0 or value != value or value in (float("inf"),):
            return f"{text!r} must be a finite number >= 0"
        if kind == "int | None" and not value.is_integer():
            return f"{text!r} must be a whole number"
    elif kind == "bool" and text.upper() not in _BOOL:
        return f"{text!r} must be TRUE or FALSE"
    elif column in ("as_of", "price_date", "price_as_of") and not _DATE.match(text):
        return f"{text!r} must be a date YYYY-MM-DD (or YYYY-MM)"
    return None


def read_file(path: Path, columns: dict[str, str], table: str) -> tuple[list[tuple[dict, str]], list[Problem]]:
    """Rows of one private CSV with their origins ("path:line"), and its problems.
    `columns` maps each packaged column to its type ("float | None", "bool", "str", ...)."""
    problems: list[Problem] = []
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        return [], [Problem(str(path), 0, "", f"cannot read: {e}")]
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader, [])]
    unknown = [(i, h) for i, h in enumerate(header) if h not in columns]
    for i, h in unknown:
        problems.append(Problem(str(path), 1, f"{_letter(i)} ({h!r})",
                                f"unknown column; valid: {', '.join(columns)}"))
    for need in KEY_COLUMNS.get(table, ("name",)):
        if need not in header:
            problems.append(Problem(str(path), 1, "", f"missing column {need!r}"))
    if problems:
        return [], problems
    rows = []
    for line, cells in enumerate(reader, start=2):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) > len(header):
            problems.append(Problem(str(path), line, _letter(len(header)), "more cells than the header has columns"))
            continue
        row = {h: (cells[i].strip() if i < len(cells) else "") for i, h in enumerate(header)}
        bad = [(i, h, _check_cell(h, row[h], columns[h])) for i, h in enumerate(header)]
        bad += [(header.index(h), h, "is required") for h in KEY_COLUMNS.get(table, ("name",)) if not row[h]]
        for i, h, why in bad:
            if why:
                problems.append(Problem(str(path), line, f"{_letter(i)} ({h})", why))
        rows.append((row, f"{path}:{line}"))
    return rows, problems


def identity(table: str, row: dict) -> tuple:
    return tuple(key(row.get(c, "")) for c in IDENTITY.get(table, ("name",)))


def _names(table: str, row: dict) -> list[tuple]:
    """Every identity a row answers to: its own, and one per alias (GPUs and models)."""
    ids = [identity(table, row)]
    if table not in IDENTITY:
        ids += [(key(a),) for a in (row.get("aliases") or "").split(";") if a.strip()]
    return ids


def merge(table: str, packaged: list[dict], columns: dict[str, str],
          extra_folders: list[Path] | None = None) -> tuple[list[tuple[dict, str]], list[Problem]]:
    """Packaged rows overlaid with every private folder's rows of this table. A private row
    naming an existing row (by name or alias) overrides the cells it fills (a negotiated
    price needs only `name,price_usd`); a new name is appended and must be complete."""
    merged: dict[tuple, tuple[dict, str]] = {}
    lookup: dict[tuple, tuple] = {}

    def put(row: dict, origin: str, ident: tuple) -> None:
        merged[ident] = (row, origin)
        for name in _names(table, row):
            lookup.setdefault(name, ident)

    for i, r in enumerate(packaged):
        ident = identity(table, r)
        put(r, PACKAGED, ident if ident not in merged else ident + (i,))   # never merge packaged rows
    problems: list[Problem] = []
    for folder in (folders() if extra_folders is None else extra_folders):
        path = folder / table
        if not path.is_file():
            continue
        rows, found = read_file(path, columns, table)
        problems += found
        for row, origin in rows:
            ident = lookup.get(identity(table, row))
            if ident is not None:
                old, _ = merged[ident]
                given = {c: v for c, v in row.items() if v and c not in IDENTITY.get(table, ("name",))}
                put({**old, **given}, origin, ident)
                continue
            full = {c: "" for c in columns}
            full.update(NEW_ROW_DEFAULTS.get(table, {}))
            full.update({c: v for c, v in row.items() if v})
            problems += [Problem(str(path), int(origin.rsplit(":", 1)[1]), h, "is required for a new row")
                         for h in REQUIRED.get(table, ()) if not full.get(h)]
            put(full, origin, identity(table, row))
    return list(merged.values()), problems
def raise_problems(problems: list[Problem]) -> None:
    if problems:
        shown = "; ".join(str(p) for p in problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise FlopsheetError(f"private catalog has bad rows: {shown}{more}; run `flopsheet catalog check`", "#VALUE!")


def cell_text(value) -> str:
    """A value as the catalog CSVs write it: TRUE/FALSE, a;b for lists, exact numbers."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (tuple, list)):
        return ";".join(str(v) for v in value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def row_text(row: dict, columns) -> dict[str, str]:
    """A row of values as CSV cells, in the table's columns."""
    return {c: cell_text(row.get(c)) for c in columns}
