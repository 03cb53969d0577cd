"""Benchmark (not a timed test): a report over a 1,000+ option sweep - every catalog GPU x
16 GPU counts x cloud and owned pricing - analysed and written as a workbook.

    python3 benchmarks/bench_report.py            # prints the timings; --write updates report_results.md
"""

from __future__ import annotations

import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from udfs.catalogs import catalog  # noqa: E402
from udfs.planning import report_model, scenario  # noqa: E402
from workbook_templates import report  # noqa: E402
from workbook_templates.common import atomic_save  # noqa: E402

COUNTS = [8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048]
SWEEP = f"""
name = "Sweep: 7B pre-training, every GPU x {len(COUNTS)} counts x rent/own"
[workload]
kind = "train"
model = "Llama 2 7B"
tokens = 2e12
[constraints]
deadline_days = 120
[candidates]
gpus = "all"
counts = {COUNTS}
pricing = ["cloud", "owned"]
"""


def main() -> int:
    sc = scenario.parse(SWEEP)
    t0 = time.perf_counter()
    res = report_model.analyse(sc)
    t1 = time.perf_counter()
    wb = report.build(sc, res)
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "sweep.xlsx"
        atomic_save(wb, out)
        t3 = time.perf_counter()
        size = out.stat().st_size
    n = len(res.rows)
    lines = [
        f"- options: {n:,} ({len(catalog.gpus())} GPUs x up to {len(COUNTS) + 1} counts x 2 pricing bases; "
        f"{len(res.ok_rows):,} meet every constraint)",
        f"- analyse (picker + pricing + sensitivity): {t1 - t0:.2f} s",
        f"- build workbook (openpyxl): {t2 - t1:.2f} s",
        f"- save (atomic): {t3 - t2:.2f} s ({size / 1024:,.0f} KiB)",
        f"- total: {t3 - t0:.2f} s",
        f"- machine: Python {platform.python_version()} on {platform.machine()} ({platform.system()})",
    ]
    print("\n".join(lines))
    assert n >= 1000, n
    if "--write" in sys.argv:
        text = ("# `flopsheet report` benchmark\n\n"
                "`python3 benchmarks/bench_report.py --write`: a scenario sweeping every catalog GPU x "
                f"{len(COUNTS)} GPU counts (plus the picker's own count) x cloud and owned pricing "
                "(7B pre-training on 2T tokens), analysed and written as a report workbook. "
                "A benchmark, not a timed test.\n\n" + "\n".join(lines) + "\n")
        (ROOT / "benchmarks" / "report_results.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
