"""The README stays short and true: every command it shows runs as written after the quick
start, its figures are the tools' output, its links resolve; the function reference is
generated from the registry."""

import argparse
import re
import shlex
from pathlib import Path

import pytest

from benchmarks import accuracy, folds
from udfs import cli
from udfs.api import docs, registry

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
PLACEHOLDERS = {"NAME"}                                     # `flopsheet calc NAME ARG...`
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code_blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def commands(text: str) -> list[list[str]]:
    """Shell commands shown in bash/sh blocks and after `$ ` in console blocks, comments dropped."""
    found = []
    for lang, body in code_blocks(text):
        for line in body.splitlines():
            if lang == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            elif lang not in ("bash", "sh"):
                continue
            words = shlex.split(line, comments=True)
            if words:
                found.append(words)
    return found


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def flopsheet_calls(text: str) -> list[list[str]]:
    """Every `flopsheet ...` in a code block or inline code, as words after `flopsheet`."""
    spans = [body for _, body in code_blocks(text)] + re.findall(r"`([^`\n]+)`", text)
    calls = []
    for span in spans:
        for match in re.finditer(r"(?:^|[\s/])flopsheet ([^\n#|]+)", span):
            calls.append(shlex.split(match.group(1).replace("...", "")))
    return calls


def test_function_reference_is_generated_from_the_registry():
    page = (ROOT / "docs" / "functions.md").read_text(encoding="utf-8")
    assert page == docs.reference(), "docs/functions.md is stale: run `python -m udfs.api.docs > docs/functions.md`"
    for name in registry.functions():
        assert f"\n### {name}\n" in page


def test_readme_is_short():
    assert len(README.splitlines()) <= 250
    assert max(len(line) for line in README.splitlines()) <= 250


def test_readme_shows_the_two_quick_start_commands():
    shown = [" ".join(c) for c in commands(README)]
    assert "bash scripts/main" in shown and "bash scripts/test" in shown


def test_every_readme_command_runs_from_the_checkout_after_the_quick_start():
    """No bare `flopsheet` or `python` (they need an activated environment): each command is
    a script in the checkout or a program in .venv/bin, and the files it names exist."""
    found = commands(README)
    assert len(found) >= 8
    for words in found:
        while re.fullmatch(r"[A-Z_]+=\S*", words[0]):          # VAR=value prefix
            words = words[1:]
        program = words[0]
        if program == "bash":
            assert (ROOT / words[1]).is_file(), words
        elif program == "source":
            assert words[1] == ".venv/bin/activate", words
        else:
            assert program in (".venv/bin/flopsheet", ".venv/bin/python"), words
            if program == ".venv/bin/python":
                assert (ROOT / words[1]).is_file(), words
        for word in words:
            if re.fullmatch(r"(examples|benchmarks|scripts)/\S+", word):
                assert (ROOT / word).exists(), word


def test_every_flopsheet_subcommand_and_calc_function_in_the_readme_exists():
    parser = cli.build_parser()
    top = subcommands(parser)
    calls = flopsheet_calls(README)
    assert len(calls) >= 8
    for words in calls:
        assert words[0] in top, f"flopsheet {words[0]}: no such subcommand"
        nested = subcommands(top[words[0]])
        if nested:
            assert words[1] in nested, f"flopsheet {' '.join(words[:2])}: no such subcommand"
        if words[0] == "calc":
            name = next(w for w in words[1:] if not w.startswith("-"))
            if name not in PLACEHOLDERS:
                registry.get(name)                             # raises for an unknown function


def test_readme_console_examples_print_what_they_show(capsys):
    examples = 0
    for lang, body in code_blocks(README):
        if lang != "console":
            continue
        lines = body.splitlines()
        for i, line in enumerate(lines[:-1]):
            nxt = lines[i + 1]
            if not line.startswith("$ .venv/bin/flopsheet ") or nxt.startswith("$ "):
                continue
            assert cli.main(shlex.split(line[len("$ .venv/bin/flopsheet "):])) == 0, line
            assert capsys.readouterr().out.strip() == nxt.strip(), line
            examples += 1
    assert examples >= 4


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        assert (page.parent / path).exists(), f"{page.name}: broken link {target}"


def test_readme_accuracy_figures_are_the_reports(accuracy_report):
    """The README's accuracy table is the report's out-of-sample figures by metric and regime, and
    its prose states the folds the report uses."""
    report = accuracy_report
    assert accuracy.readme_block(README) == accuracy.readme_table(report), (
        "stale: run `python benchmarks/accuracy.py --write-docs`")
    prose = README.replace("\n", " ")
    assert f"{folds.K}-fold cross-validation" in prose and f"fewer than {folds.LOO_BELOW} rows" in prose
    measured = sum(len(accuracy.read_rows(accuracy.default_measured_dir(), name)) for name in
                   ("inference_measured.csv", "training_measured.csv", "memory_measured.csv"))
    assert re.search(rf"\b{measured}\s+published\s+measurements", README)
