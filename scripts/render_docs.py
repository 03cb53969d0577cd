"""Render each template workbook and an example report to PDF and a PNG under docs/ (the README,
docs/workbooks.md and docs/reports.md show them).

    python3 scripts/render_docs.py [--keep-pdf]

Writes the workbooks and the serve-70b example report (fresh, with their stored values), converts
them to PDF in one LibreOffice run, then `pdftoppm -png -r 80` of the first page of each template's
main sheet (found by its page footer, "<sheet> - page", after the cover) gives docs/<workbook>.png
and the report's first page docs/report-summary.png."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import workbook_templates as wt  # noqa: E402
from workbook_templates.recalc import convert  # noqa: E402
from workbook_templates.report import write_report  # noqa: E402


def main(argv: list[str]) -> int:
    docs = ROOT / "docs"
    docs.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="flopsheet-render-") as tmp:
        tmp = Path(tmp)
        files, main_sheets = [], []
        for name in wt.NAMES:
            path = tmp / "xlsx" / wt.module(name).FILENAME
            main_sheets.append(wt.build(name, path).main_sheets[0])
            files.append(path)
        report = tmp / "xlsx" / "report-summary.xlsx"
        write_report(ROOT / "examples" / "serve-70b.toml", report)
        pdfs = convert(files + [report], tmp / "pdf", to="pdf")
        for pdf in pdfs:
            stem = pdf.stem
            page = "1" if pdf == pdfs[-1] else first_page(pdf, main_sheets[pdfs.index(pdf)])
            subprocess.run(["pdftoppm", "-png", "-r", "80", "-f", page, "-l", page, "-singlefile", str(pdf),
                            str(docs / stem)], check=True)
            if "--keep-pdf" in argv:
                shutil.copy(pdf, docs / pdf.name)
            print(docs / f"{stem}.png")
    return 0


def first_page(pdf: Path, sheet: str) -> str:
    """The first page of `sheet` in the PDF: the page whose footer reads "<sheet> - page"."""
    pages = int(next(line.split()[-1] for line in subprocess.run(["pdfinfo", str(pdf)], capture_output=True,
                                                                   text=True, check=True).stdout.splitlines()
                      if line.startswith("Pages:")))
    for page in range(1, pages + 1):
        text = subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), str(pdf), "-"], capture_output=True,
                              text=True, check=True).stdout
        if f"{sheet} - page" in text:
            return str(page)
    raise RuntimeError(f"{pdf.name}: no page of sheet {sheet!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
