"""Render each template workbook to PDF and a first-page PNG under docs/ (the README and docs/workbooks.md show them).

    python3 scripts/render_docs.py [--keep-pdf]

Writes the workbooks (fresh), converts them to PDF in one LibreOffice run (recalculated on
load), then `pdftoppm -png -r 80` of the first page of the main sheet (page 2, after the one-page cover) gives docs/<workbook>.png."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PAGE = "2"   # page 1 is the cover sheet (one page); page 2 starts the main sheet
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import workbook_templates as wt  # noqa: E402
from workbook_templates.recalc import convert  # noqa: E402


def main(argv: list[str]) -> int:
    docs = ROOT / "docs"
    docs.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="flopsheet-render-") as tmp:
        tmp = Path(tmp)
        files = []
        for name in wt.NAMES:
            path = tmp / "xlsx" / wt.module(name).FILENAME
            wt.build(name, path)
            files.append(path)
        # the PDF shows the first sheets; render from a recalculated copy so values are cached
        recalced = convert(files, tmp / "recalc")
        pdfs = convert(recalced, tmp / "pdf", to="pdf")
        for pdf in pdfs:
            stem = pdf.stem
            subprocess.run(["pdftoppm", "-png", "-r", "80", "-f", PAGE, "-l", PAGE, "-singlefile", str(pdf),
                            str(docs / stem)], check=True)
            if "--keep-pdf" in argv:
                shutil.copy(pdf, docs / pdf.name)
            print(docs / f"{stem}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
