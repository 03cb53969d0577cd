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
import difflib
import io
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import numbers
from ..errors import FlopsheetError, quote
from .names import key

ENV = "FLOPSHEET_CATALOG"
PACKAGED = "packaged"
TABLES = ("gpus.csv", "models.csv", "cloud.csv", "engines.csv", "api_prices.csv")
IDENTITY = {"cloud.csv": ("provider", "instance", "region", "pricing", "status", "price_date"),
            "api_prices.csv": ("provider", "model")}
# identity columns that may not be blank
KEY_COLUMNS = {"cloud.csv": ("provider", "instance"), "api_prices.csv": ("provider", "model")}
REQUIRED = {"gpus.csv": ("name", "memory_gb", "bandwidth_tbs"), "models.csv": ("name",),
            "cloud.csv": ("provider", "instance", "gpu", "pricing", "status"),
            "api_prices.csv": ("provider", "model", "open_weight", "usd_per_1m_input", "usd_per_1m_output"),
            "engines.csv": ("name", "multi_gpu", "memory_rule", "memory_fraction", "activation_reserve_gib",
                            "kv_reservation", "kv_precision", "precisions", "bandwidth_fraction_hbm",
                            "bandwidth_fraction_gddr", "quantized_factor", "layer_overhead_us", "step_overhead_us",
                            "matmul_fraction_16", "matmul_fraction_8", "matmul_fraction_4")}
# What a blank cell of a new row means where blank would mislead (a modern decoder).
NEW_ROW_DEFAULTS = {"models.csv": {"gated_mlp": "TRUE", "norm": "rmsnorm", "pos_embedding": "rope"}}
_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
_BOOL = ("TRUE", "FALSE", "YES", "NO", "1", "0", "")
_COLUMN_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_ ]{0,39}$")    # header text a message may repeat
MAX_FILE_BYTES = 10_000_000     # a catalog CSV is kilobytes; a bigger file is the wrong file

_R = numbers.Range
POSITIVE = _R(0, low_open=True)
SHARE = _R(0, 1, low_open=True)                 # a share of a peak: (0, 1]
# The allowed values of every numeric catalog column: positive where zero is meaningless (a GPU
# with no memory, a free H100), and bounded far above any real part so that a slip (1e308, a
# figure typed in the wrong unit a million times too large) is refused instead of computed
# with. Packaged rows satisfy these (tests/test_catalog_validation.py checks it); one table for
# `flopsheet catalog check` and the loader, so the two can never disagree.
_TFLOPS = _R(0, 1e6)             # a million TFLOPS: an exaFLOP per chip; 0: no units for the format (blank: unknown)
_PRICE = _R(0, 1e8, low_open=True)              # $100M for one GPU or its share of a system
_WIDTH = _R(1, 1e7, whole=True)                 # model widths, heads, ranks
LIMITS: dict[str, dict[str, numbers.Range]] = {
    "gpus.csv": {"memory_gb": _R(0, 100_000, low_open=True), "usable_gib": _R(0, 100_000, low_open=True),
                 "bandwidth_tbs": _R(0, 1000, low_open=True),
                 **dict.fromkeys(("fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops",
                                  "int8_tops", "fp4_tflops"), _TFLOPS),
                 "tdp_w": _R(0, 100_000, low_open=True), "interconnect_gbs": _R(0, 1e6, low_open=True),
                 "launch_year": _R(1980, 2100, whole=True),
                 **dict.fromkeys(("price_usd", "price_low_usd", "price_high_usd", "system_price_usd",
                                  "lesson_price_usd"), _PRICE),
                 "system_gpus": _R(1, 1e6, whole=True)},
    "models.csv": {**dict.fromkeys(("params", "active_params", "published_params", "published_active_params"),
                                   _R(0, 1e15, low_open=True)),
                   **dict.fromkeys(("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "n_experts",
                                    "experts_per_token", "dense_ffn", "kv_lora_rank", "q_lora_rank", "qk_rope_dim"),
                                   _WIDTH),
                   **dict.fromkeys(("shared_experts", "moe_layers", "local_layers"), _R(0, 1e7, whole=True)),
                   "sliding_window": _R(1, 1e10, whole=True), "context_length": _R(1, 1e10, whole=True)},
    "cloud.csv": {"gpu_count": _R(1, 1e6, whole=True), "usd_per_hour": _R(0, 1e6, low_open=True),
                  "usd_per_gpu_hour": _R(0, 1e5, low_open=True),
                  "cluster_network_gbps": _R(0, 1e6, low_open=True)},
    "api_prices.csv": dict.fromkeys(("usd_per_1m_input", "usd_per_1m_output"), _R(0, 10_000)),
    "engines.csv": {**dict.fromkeys(("memory_fraction", "bandwidth_fraction_hbm", "bandwidth_fraction_gddr",
                                     "bandwidth_fraction_unified",
                                     "quantized_factor", "matmul_fraction_16", "matmul_fraction_8",
                                     "matmul_fraction_4"), SHARE),
                    "activation_reserve_gib": _R(0, 10_000), "max_batch": _R(1, 1e7, whole=True),
                    "large_gpu_max_batch": _R(1, 1e7, whole=True), "graph_max_batch": _R(0, 1e7, whole=True),
                    "scheduler_steps": _R(1, 1e4, whole=True),
                    "max_num_tokens": _R(1, 1e10, whole=True), "large_gpu_max_num_tokens": _R(1, 1e10, whole=True),
                    "huge_gpu_max_num_tokens": _R(1, 1e10, whole=True), "huge_gpu_min_gib": _R(0, 100_000, low_open=True),
                    "family_graph_max_batch": _R(1, 1e7, whole=True),
                    "layer_overhead_us": _R(0, 1e6), "step_overhead_us": _R(0, 1e7),
                    "sequence_overhead_us": _R(0, 1e6), "eager_moe_layer_us": _R(0, 1e6),
                    "moe_prefill_share": SHARE},
}
# Figures of one row that must not exceed another of the same row (when both are given), and
# the one that must divide another: a model with more KV heads than heads, or more active
# parameters than total, is refused wherever it comes from (a file, `flopsheet model import`).
AT_MOST = {"models.csv": (("kv_heads", "heads"), ("heads", "hidden"), ("active_params", "params"),
                          ("published_active_params", "published_params"), ("experts_per_token", "n_experts"),
                          ("moe_layers", "layers"), ("local_layers", "layers")),
           "gpus.csv": (("price_low_usd", "price_high_usd"), ("usable_gib", "memory_gb"))}
DIVIDES = {"models.csv": (("kv_heads", "heads"),)}


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


def folder_problems(found: list[Path]) -> list[Problem]:
    """A folder named (in FLOPSHEET_CATALOG, or to `catalog check`) that is not there: said,
    never skipped, since a mistyped path would silently drop a team's prices."""
    return [Problem(str(f), 0, "", f"is not a folder (named by {ENV}: fix the path or remove it)")
            for f in found if not f.is_dir()]


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    column: str
    message: str

    def __str__(self) -> str:
        where = self.file + (f" line {self.line}" if self.line else "") + (f", column {self.column}" if self.column else "")
        return f"{where}: {self.message}"

    @property
    def table(self) -> str:
        """The catalog table the problem is in ("" for a folder: it concerns every table)."""
        name = Path(self.file).name
        return name if name in TABLES else ""


def _letter(index: int) -> str:
    """Spreadsheet column letter of a 0-based index (A, B, ..., Z, AA)."""
    text = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        text = chr(65 + rest) + text
    return text


def check_cell(table: str, column: str, text: str, kind: str) -> str | None:
    """Why a cell's text does not fit its column (None: it fits). Numbers are read by the one
    rule (numbers.py: "1,024" is 1024, "$27,500" is 27500) and checked against LIMITS; the
    loader reads the same text with the same parser, so what passes here loads."""
    text = text.strip()
    if not text:
        return None
    if "float" in kind or "int" in kind:
        allowed = LIMITS.get(table, {}).get(column, _R(0))
        if "int" in kind and not allowed.whole:
            allowed = _R(allowed.low, allowed.high, allowed.low_open, allowed.high_open, whole=True)
        return numbers.reason(column, text, allowed)
    if kind == "bool" and text.upper() not in _BOOL:
        return f"{quote(text)} must be TRUE or FALSE"
    if column in ("as_of", "price_date", "price_as_of") and not _DATE.match(text):
        return f"{quote(text)} must be a date YYYY-MM-DD (or YYYY-MM)"
    return None


def row_problems(table: str, row: dict[str, str]) -> list[tuple[str, str]]:
    """(column, why) for figures of one row that contradict each other (AT_MOST, DIVIDES)."""
    parsed = {c: numbers.try_parse(row.get(c) or "") for c in LIMITS.get(table, {})}
    value = {c: v for c, v in parsed.items() if v is not None}       # the figures the row gives
    found = [(a, f"{a} ({value[a]:g}) must not exceed {b} ({value[b]:g})") for a, b in AT_MOST.get(table, ())
             if a in value and b in value and value[a] > value[b]]
    found += [(a, f"{b} ({value[b]:g}) must be a whole multiple of {a} ({value[a]:g})") for a, b in DIVIDES.get(table, ())
              if value.get(a) and value.get(b) and value[b] % value[a]]
    return found


def row_reasons(table: str, row: dict[str, str], columns: dict[str, str]) -> list[tuple[str, str]]:
    """(column, why) for every cell and every contradiction of one row: what a file's row is
    checked for, applied to a row about to be written (`flopsheet model import --add`)."""
    found = [(c, why) for c, kind in columns.items() if (why := check_cell(table, c, row.get(c, ""), kind))]
    return found + row_problems(table, row)


def _read_text(path: Path) -> str:
    with open(path, encoding="utf-8-sig", newline="") as f:
        text = f.read(MAX_FILE_BYTES + 1)
    if len(text) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES // 1_000_000} MB: not a catalog file")
    return text


def _header_problems(path: Path, header: list[str], columns: dict[str, str], table: str) -> list[Problem]:
    """Unknown or missing columns. Header text is repeated only when it looks like a column
    name: a linked file that is not a catalog (say, a system file) must not have its first line
    echoed into messages."""
    if not any(h in columns for h in header):
        return [Problem(str(path), 1, "", f"line 1 is not a header of {table}: none of its {len(header)} cells is one "
                                          f"of its columns (the packaged {table}'s header lists them)")]
    problems = []
    for i, h in enumerate(header):
        if h not in columns:
            shown = f" ({h!r})" if _COLUMN_NAME.match(h) else ""
            close = difflib.get_close_matches(h, list(columns), n=1) if shown else []
            hint = f"did you mean {close[0]!r}?" if close else f"see the packaged {table}'s header"
            problems.append(Problem(str(path), 1, f"{_letter(i)}{shown}", f"unknown column; {hint}"))
    problems += [Problem(str(path), 1, "", f"missing column {need!r}")
                 for need in KEY_COLUMNS.get(table, ("name",)) if need not in header]
    return problems


def read_file(path: Path, columns: dict[str, str], table: str) -> tuple[list[tuple[dict, str]], list[Problem]]:
    """Rows of one private CSV with their origins ("path:line"), and its problems.
    `columns` maps each packaged column to its type ("float | None", "bool", "str", ...)."""
    try:
        text = _read_text(path)
    except (OSError, ValueError) as e:        # UnicodeDecodeError is a ValueError
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        if isinstance(e, UnicodeDecodeError):
            why = "not UTF-8 text (save it as CSV UTF-8)"
        return [], [Problem(str(path), 0, "", f"cannot read: {why}")]
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader, [])]
    except csv.Error as e:
        return [], [Problem(str(path), 1, "", f"not a CSV file ({e})")]
    problems = _header_problems(path, header, columns, table)
    if problems:
        return [], problems
    rows = []
    try:
        for cells in reader:
            line = reader.line_num
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                more = len(cells) > len(header)
                problems.append(Problem(str(path), line, _letter(min(len(cells), len(header))),
                                        f"{len(cells)} cells but the header has {len(header)} columns"
                                        + ("" if more else " (leave a cell empty with an extra comma)")))
                continue
            row = {h: cells[i].strip() for i, h in enumerate(header)}
            bad: list[tuple[int, str, str | None]] = [(i, h, check_cell(table, h, row[h], columns[h]))
                                                      for i, h in enumerate(header)]
            bad += [(header.index(h), h, "is required") for h in KEY_COLUMNS.get(table, ("name",)) if not row[h]]
            for i, h, wrong in bad:
                if wrong:
                    problems.append(Problem(str(path), line, f"{_letter(i)} ({h})", wrong))
            rows.append((row, f"{path}:{line}"))
    except csv.Error as e:
        problems.append(Problem(str(path), reader.line_num, "", f"not a CSV file ({e})"))
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
        seen: dict[tuple, str] = {}           # one row per name (or identity) in a file
        for row, origin in rows:
            found_ident = lookup.get(identity(table, row))
            line = origin.rsplit(":", 1)[1]
            first = seen.setdefault(found_ident or identity(table, row), line)
            if first != line:
                problems.append(Problem(str(path), int(line), "", f"{_label(table, row)} names the same row as line "
                                                                  f"{first} of this file (by name or alias); keep one"))
                continue
            if found_ident is not None:
                old, _ = merged[found_ident]
                given = {c: v for c, v in row.items() if v and c not in IDENTITY.get(table, ("name",))}
                given.update(_stale_with(table, given))
                put({**old, **given}, origin, found_ident)
                continue
            full = {c: "" for c in columns}
            full.update(NEW_ROW_DEFAULTS.get(table, {}))
            full.update({c: v for c, v in row.items() if v})
            problems += [Problem(str(path), int(origin.rsplit(":", 1)[1]), h, "is required for a new row")
                         for h in REQUIRED.get(table, ()) if not full.get(h)]
            put(full, origin, identity(table, row))
    return list(merged.values()), problems


def _stale_with(table: str, given: dict) -> dict:
    """Cells a private row's figures make stale: a GPU whose memory_gb is overridden without usable_gib no longer
    has the packaged usable memory (its budgets then read the given memory as GiB)."""
    if table == "gpus.csv" and "memory_gb" in given and "usable_gib" not in given:
        return {"usable_gib": "", "usable_source": "usable memory unmeasured: memory_gb given in a private catalog"}
    return {}


def _label(table: str, row: dict) -> str:
    return quote(" ".join(row.get(c, "") for c in IDENTITY.get(table, ("name",)) if row.get(c)))


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
