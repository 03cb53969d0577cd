"""`flopsheet catalog check|list` and `flopsheet model import|spec`: private catalogs and
Hugging Face configs from the command line (registered in the `flopsheet.commands` group)."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from ..catalogs import catalog, hf_config, private_catalog, spec
from ..errors import FlopsheetError, quote

LIST_COLUMNS = {
    "gpus": ("name", "memory_gb", "bandwidth_tbs", "bf16_tflops", "fp8_tflops", "price_usd"),
    "models": ("name", "params", "active_params", "layers", "context_length"),
    "cloud": ("provider", "instance", "gpu", "pricing", "usd_per_hour", "usd_per_gpu_hour", "status"),
    "engines": ("name", "multi_gpu", "memory_rule", "memory_fraction", "max_batch", "bandwidth_fraction_hbm"),
}


def add_catalog(sub) -> None:
    """`flopsheet catalog check DIR | list [TABLE]` (entry point `catalog`)."""
    cat = sub.add_parser("catalog", help="private catalogs: check a folder, list what is in effect and where "
                                         "each row comes from")
    cat_sub = cat.add_subparsers(dest="catalog_command", required=True)
    check = cat_sub.add_parser("check", help="validate a private catalog folder (gpus.csv, models.csv, cloud.csv, "
                                             "engines.csv)")
    check.add_argument("folder", help="folder to check")
    check.set_defaults(run=cmd_check)
    show = cat_sub.add_parser("list", help="rows in effect (packaged + private) with their origin")
    show.add_argument("table", nargs="?", default="all", choices=("all", *LIST_COLUMNS))
    show.add_argument("--private", action="store_true", help="only rows from private catalogs")
    show.set_defaults(run=cmd_list)


def add_model(sub) -> None:
    """`flopsheet model import config.json` (entry point `model`)."""
    model = sub.add_parser("model", help="describe a model: import a Hugging Face config.json as a catalog row")
    model_sub = model.add_subparsers(dest="model_command", required=True)
    imp = model_sub.add_parser("import", help="print the catalog row (CSV with header, params computed) for a "
                                              "config.json, offline")
    imp.add_argument("config", help="path to a Hugging Face config.json")
    imp.add_argument("--name", help="catalog name (default: from the config or its folder)")
    imp.add_argument("--add", metavar="DIR", help="also append the row to DIR/models.csv (a private catalog)")
    imp.add_argument("--spec", action="store_true", help="print the MODEL_DEFINE spec text instead of CSV")
    imp.set_defaults(run=cmd_import)


def cmd_check(args) -> int:
    folder = Path(args.folder)
    if not folder.is_dir():
        print(f"#VALUE!: {folder} is not a folder", file=sys.stderr)
        return 2
    found = [f for f in private_catalog.TABLES if (folder / f).is_file()]
    if not found:
        print(f"#VALUE!: {folder} holds none of {', '.join(private_catalog.TABLES)}", file=sys.stderr)
        return 2
    problems, summary = catalog.check_folder(folder)
    for line in summary:
        print(line)
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) in {folder}", file=sys.stderr)
        return 2
    print(f"{folder}: OK")
    return 0


def cmd_list(args) -> int:
    """One table in detail, or every table as (table, name, origin)."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    detailed = args.table != "all"
    tables = [args.table] if detailed else [t for t in LIST_COLUMNS if f"{t}.csv" in catalog.TABLE_FILES]
    if detailed and f"{args.table}.csv" not in catalog.TABLE_FILES:
        print(f"#VALUE!: this version has no {args.table} catalog", file=sys.stderr)
        return 2
    writer.writerow([*(LIST_COLUMNS[args.table] if detailed else ("table", "name")), "origin"])
    for table in tables:
        for row, origin in catalog.rows_with_origin(f"{table}.csv"):
            if args.private and origin == private_catalog.PACKAGED:
                continue
            cells = [row.get(c, "") for c in LIST_COLUMNS[table]] if detailed else [table, _label(row)]
            writer.writerow([*cells, origin])
    return 0


def _label(row: dict) -> str:
    return row.get("name") or " ".join(row.get(c, "") for c in ("provider", "instance", "pricing", "price_date"))


def cmd_import(args) -> int:
    """Print (and with --add append) the catalog row of a config; a config that cannot make a
    row the catalog would load is refused with its reason (exit 2) and nothing is written."""
    config = hf_config.read(args.config)
    name = _import_name(args.name or hf_config.default_name(config, args.config))
    source = f"{Path(args.config).name} (Hugging Face config.json of {name}), imported by flopsheet model import"
    try:
        row = hf_config.model_row(config, name, source)
    except FlopsheetError as e:
        raise FlopsheetError(f"{quote(args.config, 80)}: {e.message}", e.code) from None
    if args.spec:
        print(spec.format_model(row, name))
        return 0
    columns = catalog.columns("models.csv")
    text = private_catalog.row_text(row, columns)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(columns))
    writer.writerow([text[c] for c in columns])
    sys.stdout.write(out.getvalue())
    if args.add:
        path = append_row(Path(args.add), "models.csv", text)
        print(f"added {name} to {path}", file=sys.stderr)
    return 0


def _import_name(name: str) -> str:
    """A catalog name: text with a letter, one line, at most 100 characters."""
    name = name.strip()
    if not any(ch.isalpha() for ch in name) or any(ord(ch) < 32 or ord(ch) == 127 for ch in name) or len(name) > 100:
        raise FlopsheetError(f"the model name must be one line of text with letters, at most 100 characters; "
                             f"got {quote(name)} (pass --name)")
    return name


def append_row(folder: Path, table: str, text: dict[str, str]) -> Path:
    """Append a row to a private catalog file, creating it (with the packaged header) if
    needed; an existing file keeps its own columns, and a row of the same name is refused."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / table
    if not path.is_file() or not path.read_text(encoding="utf-8-sig").strip():
        path.write_text(",".join(text) + "\n", encoding="utf-8")
    header = next(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    lost = [c for c in text if text[c] and c not in header]
    if lost:
        raise FlopsheetError(f"{path} has no column {', '.join(lost)}; add the column(s) to its header first")
    for line, row in enumerate(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))), start=2):
        if private_catalog.identity(table, row) == private_catalog.identity(table, text):
            raise FlopsheetError(f"{path} line {line} already has {text.get('name')!r}; remove it or pass --name")
    body = path.read_text(encoding="utf-8-sig")
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow([text.get(c, "") for c in header])
    with open(path, "a", encoding="utf-8") as f:
        if body and not body.endswith("\n"):
            f.write("\n")
        f.write(out.getvalue())
    return path
