"""Benchmark (not a timed test): how long hostile spec texts take (issue 23 item 1).

A GPU or model spec text is parsed by every `gpu`/`model` argument; a long word of digits
used to backtrack quadratically (8,000 characters: 10 s). Target: a 100,000-character spec
text refused or parsed in under 50 ms; a spec at the length limit parsed in well under that.

    python3 benchmarks/bench_spec.py            # prints the timings; --write updates spec_results.md
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from udfs.catalogs import spec  # noqa: E402
from udfs.errors import FlopsheetError  # noqa: E402

LIMIT = spec.MAX_SPEC_CHARS
CASES = {
    "100,000 digits (refused: over the limit)": "gpu: " + "1" * 100_000,
    "100,000 characters, model (refused)": "model: " + "d" * 100_000,
    f"{LIMIT:,} digits, one word (unknown token)": "gpu: " + "1" * (LIMIT - 5),
    f"{LIMIT:,} characters, many tokens": "gpu: 80GB 3.35TB/s " + "bf16=1 " * ((LIMIT - 19) // 7),
    "a real spec (H100)": "gpu: 80GB 3.35TB/s bf16=989.5 fp8=1979 HBM3 700W $30000 link900 name=H100",
}


def _ms(text: str, repeats: int = 50) -> float:
    """Best of five rounds, per parse, in ms (a fresh parse each time: no cache)."""
    parse = spec.parse_gpu if text.startswith("gpu") else spec.parse_model
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            try:
                parse(text)
            except FlopsheetError:
                pass
        best = min(best, (time.perf_counter() - start) / repeats)
    return best * 1000


def main() -> int:
    lines = ["# Spec-text parsing benchmark", "",
             ("`python3 benchmarks/bench_spec.py --write`: the time to parse (or refuse) hostile GPU and model "
              f"spec texts; the length limit is {LIMIT:,} characters (udfs/catalogs/spec.py MAX_SPEC_CHARS). "
              "Target: under 50 ms for a 100,000-character text. A benchmark, not a timed test."), "",
             "| spec text | ms per parse |", "|---|---:|"]
    worst = 0.0
    for label, text in CASES.items():
        ms = _ms(text)
        worst = max(worst, ms)
        lines.append(f"| {label} | {ms:.3f} |")
    lines += ["", f"- slowest: {worst:.3f} ms (target < 50 ms)",
              f"- machine: Python {platform.python_version()} on {platform.machine()} ({platform.system()})"]
    text = "\n".join(lines) + "\n"
    print(text)
    if "--write" in sys.argv:
        (Path(__file__).parent / "spec_results.md").write_text(text)
    return 0 if worst < 50 else 1


if __name__ == "__main__":
    raise SystemExit(main())
