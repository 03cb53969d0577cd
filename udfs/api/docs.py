"""The function reference (docs/functions.md), generated from the registry.

    python -m udfs.api.docs > docs/functions.md      (or: python -m udfs.api.docs --write)

Reads only what `flopsheet functions --json` shows (Function.to_dict), so the reference, the
CLI and the add-ins describe every function the same way. tests/test_docs.py fails when
docs/functions.md is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .registry import functions

TARGET = Path(__file__).resolve().parents[2] / "docs" / "functions.md"

INTRO = """# Worksheet functions

Generated from the registry (`udfs/api/functions/*.py`) by `python -m udfs.api.docs > docs/functions.md`;
do not edit by hand. `flopsheet functions` prints the same list, `flopsheet functions --json`
the same data as JSON.

Every function works the same way in Excel (classic add-in, xlwings Lite, xlwings Server), in the
planning workbooks' add-in sheet and from the command line (`flopsheet calc NAME ARG...`).
Optional arguments are in `[brackets]`: leave them out, or leave the cell blank, to get the
default. Give a range where a single number is expected and a numeric function returns a
same-shaped range; a function whose result is a table spills it with a header row. A bad input
gives an Excel error with a message (`#VALUE!`, `#NUM!`, `#N/A`), never a wrong number.
Units are explained in [cost-model.md](cost-model.md#units). The word in parentheses after a
function's unit is its result's kind, from one closed table (`udfs/api/kinds.py`: money, memory,
rate, count, time, fraction, ratio, power, year, text, flag; a table's columns and a catalog field
have theirs): no result is inf or NaN, and one of a kind that cannot be negative never is (`#NUM!`
with the reason instead).

## Numbers as you type them

Every number that enters Flopsheet (a worksheet argument in any front end, a cell holding text,
the command line, a scenario file, a private catalog cell, an imported `config.json`) is read by one
rule and range-checked by one check (`udfs/numbers.py`), so the same text is the same number, or
the same refusal, wherever it is typed:

| you type | it means | | you type | it means |
|---|---|---|---|---|
| `12000`, `12,000` | 12000 | | `1.5k`, `350M` | 1,500; 350,000,000 |
| `$12,000`, `US$12,000` | 12000 (US dollars) | | `8B`, `8bn`, `2T` | 8e9; 2e12 |
| `70%` | 0.7 (a percentage is a fraction) | | `7e9` | 7,000,000,000 |
| `-5`, `-$5`, `(5)`, `($5)` | -5 | | ` 2 T `, `70 %` | spaces around are fine |

Commas only group thousands in threes (`12,00` and `1,5` are refused: a decimal comma would be
misread); `€`, `£` and other currencies are refused (amounts are US dollars: convert first);
text around a number (`7B parameters`), a scale with `%` (`5%k`) or an exponent with a scale
(`1e3k`) are refused. A refused value is `#VALUE!` with the rule in its message; a number outside
an argument's range (or a catalog column's: [catalog.md](catalog.md#a-private-catalog)) is `#NUM!`
naming the range. A spreadsheet saved as CSV keeps its thousands separators (`"1,024"`): a private
catalog reads them by this same rule.
"""


def _value(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return str(value).upper()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _example(fn: dict) -> str:
    if not fn["examples"]:
        return ""
    example = fn["examples"][0]
    call = f"`={fn['name']}({', '.join(_value(a) for a in example['args'])})`"
    result = example["result"]
    if result is None:
        return f"Example: {call} returns a table."
    shown = _value(result) if isinstance(result, (bool, int, float)) else str(result)
    return f"Example: {call} → {shown}"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _allowed(arg: dict) -> str:
    if arg["choices"]:
        return ", ".join(arg["choices"])
    return arg["range"]


def _default(arg: dict) -> str:
    if not arg["optional"]:
        return "required"
    default = arg["default"]
    return "blank" if default is None or default == "" else _cell(_value(default))


def function_section(fn: dict) -> list[str]:
    lines = [f"### {fn['name']}", "", f"`{fn['signature']}` → {fn['unit']} ({fn['kind']})", "", fn["help"], ""]
    if fn["args"]:
        lines += ["| argument | meaning | unit | allowed | default |", "|---|---|---|---|---|"]
        lines += [f"| `{a['name']}` | {_cell(a['help'])} | {_cell(a['unit'])} | {_cell(_allowed(a))} | "
                  f"{_default(a)} |" for a in fn["args"]]
        lines.append("")
    example = _example(fn)
    if example:
        lines += [example, ""]
    return lines


def reference() -> str:
    by_category: dict[str, list[dict]] = {}
    for fn in functions().values():
        by_category.setdefault(fn.category, []).append(fn.to_dict())
    lines = [INTRO, "## Contents", ""]
    for category, fns in by_category.items():
        links = ", ".join(f"[{f['name']}](#{f['name'].lower()})" for f in fns)
        lines.append(f"- **{category}**: {links}")
    lines.append("")
    for category, entries in by_category.items():
        lines += [f"## {category}", ""]
        for entry in entries:
            lines += function_section(entry)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    text = reference()
    if "--write" in argv:
        TARGET.write_text(text, encoding="utf-8")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
