"""Subcommands added by the front ends. Each entry is a function that adds its parser to
the `flopsheet` sub-command set; their modules import heavy dependencies only when run."""

EXTENSIONS: list = []


def _addin_commands(sub):
    """`flopsheet addin install|lite` and `flopsheet serve` (addin/cli.py: argparse only;
    xlwings and the server are imported when a command runs)."""
    from addin.cli import add
    add(sub)


EXTENSIONS.append(_addin_commands)


def _templates_command(sub):
    """`flopsheet templates --out DIR [--only NAME ...] [--force]` (workbook_templates/cli.py;
    openpyxl is imported only when the command runs)."""
    from workbook_templates.cli import add
    add(sub)


EXTENSIONS.append(_templates_command)


def _report_command(sub):
    """`flopsheet report SCENARIO.toml -o report.xlsx [--force] [--csv]`: the parser is added
    here; workbook_templates.report (openpyxl) is imported only when the command runs."""
    def run(args):
        from workbook_templates.report import run_command
        return run_command(args)

    p = sub.add_parser("report", help="compare one workload (a scenario TOML file) across every GPU, count and "
                                      "rent/own option: a report workbook with charts and a sensitivity analysis")
    p.add_argument("scenario", help="scenario file (TOML); see examples/README.md")
    p.add_argument("-o", "--output", required=True, help="report workbook to write (.xlsx)")
    p.add_argument("--force", action="store_true", help="overwrite the output (and CSV) if they exist")
    p.add_argument("--csv", action="store_true", help="also write the options table as CSV next to the workbook")
    p.set_defaults(run=run)


EXTENSIONS.append(_report_command)
