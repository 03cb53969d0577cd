"""The `flopsheet` command line: evaluate any worksheet function, list them, and run the
front ends (templates, reports, the add-ins). Front ends add their own subcommands through the
`flopsheet.commands` entry-point group (pyproject.toml): the engine never imports them, and a
front end that is missing or broken cannot break `calc` or `functions`."""

from __future__ import annotations

import argparse
import csv
import json
import signal
import sys
from importlib.metadata import entry_points

from .. import __version__, numbers
from ..api import registry
from ..errors import FlopsheetError
from .safe_write import WriteError
from ..api.table import Table

EXIT_BAD_INPUT = 2
COMMAND_GROUP = "flopsheet.commands"      # entry points: name = "module:add", add(subparsers)
CORE_COMMANDS = ("calc", "functions")


def parse_cli_value(text: str):
    """Numbers as people type them ("12000", "$12,000", "70%", "2T") are numbers, other words
    text, an empty string an omitted argument."""
    if text == "":
        return None
    number = numbers.try_parse(text)
    return text if number is None else number


def format_scalar(value) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}"
    return "" if value is None else str(value)


def _jsonable(value):
    if isinstance(value, Table):
        return {"header": value.header, "rows": value.rows}
    return value


def cmd_calc(args) -> int:
    if "--json" in args.args:
        args.args.remove("--json")
        args.json = True
    try:
        result = registry.call(args.name, *[parse_cli_value(a) for a in args.args])
    except FlopsheetError as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:  # strict JSON: never Infinity/NaN (the registry's guard already refuses them)
        print(json.dumps(_jsonable(result), default=str, allow_nan=False))
    elif isinstance(result, Table):
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(result.header)
        writer.writerows([[format_scalar(v) for v in row] for row in result.rows])
    else:
        print(format_scalar(result))
    return 0


def cmd_functions(args) -> int:
    fns = registry.functions()
    if args.json:
        print(json.dumps([f.to_dict() for f in fns.values()], indent=1, default=str))
        return 0
    for fn in fns.values():
        print(f"{fn.signature()}  ->  {fn.unit}")
        print(f"    {fn.help}")
        for a in fn.args:
            print(f"    {a.name}: {a.describe()}")
        print()
    return 0


def build_parser(front_ends: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flopsheet",
        description="GPU sizing and AI-compute budgeting: worksheet functions, planning workbooks and reports.")
    parser.add_argument("--version", action="version", version=f"flopsheet {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    calc = sub.add_parser("calc", help="evaluate a worksheet function, e.g. flopsheet calc GPU_TOKENS_PER_SEC H100 14")
    calc.add_argument("name", help="function name, e.g. GPU_MEMORY")
    calc.add_argument("--json", action="store_true", help="print the result as JSON")
    # REMAINDER so that negative numbers ("-7e9") are arguments, not options
    calc.add_argument("args", nargs=argparse.REMAINDER,
                      help="arguments in order; \"\" omits one; numbers as typed: 12,000 $12,000 70%% 1.5k 2T")
    calc.set_defaults(run=cmd_calc)

    fns = sub.add_parser("functions", help="list every worksheet function with its arguments and help")
    fns.add_argument("--json", action="store_true", help="print as JSON")
    fns.set_defaults(run=cmd_functions)

    if front_ends:
        for ep in sorted(entry_points(group=COMMAND_GROUP), key=lambda ep: ep.name):
            _add_front_end(sub, ep)
    return parser


def _add_front_end(sub, ep) -> None:
    """Let an installed front end add its subcommands; if it cannot, its command says why."""
    try:
        ep.load()(sub)
    except Exception as e:  # noqa: BLE001 - any failure of a plug-in must stay inside it
        why = f"{type(e).__name__}: {e}"

        def unavailable(args, why=why) -> int:
            print(f"flopsheet {ep.name}: this front end could not be loaded ({ep.value}): {why}", file=sys.stderr)
            return EXIT_BAD_INPUT

        if ep.name not in sub.choices:
            broken = sub.add_parser(ep.name, help=f"unavailable: {why}")
            broken.add_argument("args", nargs=argparse.REMAINDER)
            broken.set_defaults(run=unavailable)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # calc and functions never load the front ends (faster, and immune to a broken one)
    core = bool(argv) and argv[0] in CORE_COMMANDS
    # SIGTERM unwinds like Ctrl-C, so a half-written file's temporary copy is removed
    signal.signal(signal.SIGTERM, _interrupt)
    try:   # Ctrl-C while the front ends load (a second or so) is no traceback either
        args = build_parser(front_ends=not core).parse_args(argv)
    except KeyboardInterrupt:
        print("flopsheet: interrupted before it started; nothing was written", file=sys.stderr)
        return 130
    try:
        return args.run(args)
    except FlopsheetError as e:
        print(str(e), file=sys.stderr)
        return EXIT_BAD_INPUT
    except WriteError as e:
        print(f"flopsheet {args.command}: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"flopsheet {args.command}: interrupted; nothing half-written was left behind", file=sys.stderr)
        return 130
    except BrokenPipeError:              # output piped into `head`: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
