"""Load benchmark: 60 clients mixing small and large calls over xlwings Server on loopback (not a test).

    XLWINGS_LICENSE_KEY=noncommercial python benchmarks/bench_load.py [--seconds 20] [--write]

Starts `flopsheet serve` on 127.0.0.1 and runs two phases, each bounded in time (--seconds) and
in calls (--max-calls per client):

1. alone: 60 clients send small calls (scalar JOB_COST, GPU_MEMORY, GPU_TOKENS_PER_SEC) back to back;
2. beside large ones: 54 clients send small calls while 6 send large array calls (a 200x500
   JOB_COST range, 100,000 cells, about 1 MB of JSON) back to back.

It reports calls per second per CPU core (all calls answered in the phase / seconds / cores) and the
p50/p99 round trip of the small calls. Issue 23's aim: small calls keep answering promptly beside
large ones (they run in a lane of their own, addin/offload.py). Network traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx

from bench_server import PAYLOAD, free_port, start

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = 60
LARGE_CLIENTS = 6
SMALL = [("job_cost", [[[32.77]], [[10]]]), ("gpu_memory", [[[7e9]]]), ("gpu_tokens_per_sec", [[["H100"]], [[14]]])]


def _client_loop(base_url, calls, until: float, max_calls: int, small: list, large: list, errors: list):
    """One client: its calls in turn until the deadline or `max_calls`, whichever first."""
    with httpx.Client(base_url=base_url, timeout=120) as client:
        for i in range(max_calls):
            if time.monotonic() > until:
                return
            name, args, is_large = calls[i % len(calls)]
            t = time.perf_counter()
            r = client.post("/xlwings/custom-functions-call", json={"func_name": name, "args": args, **PAYLOAD})
            elapsed = time.perf_counter() - t
            if r.status_code != 200:
                errors.append(f"{name}: {r.status_code} {r.text[:120]}")
            (large if is_large else small).append(elapsed)


def phase(base_url, seconds: float, max_calls: int, large_clients: int, large_args) -> dict:
    small, large, errors = [], [], []
    until = time.monotonic() + seconds
    small_calls = [(n, a, False) for n, a in SMALL]
    threads = [threading.Thread(target=_client_loop, args=(base_url, [("job_cost", large_args, True)], until,
                                                           max_calls, small, large, errors))
               for _ in range(large_clients)]
    threads += [threading.Thread(target=_client_loop, args=(base_url, small_calls, until, max_calls, small, large,
                                                            errors))
                for _ in range(CLIENTS - large_clients)]
    start_t = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 180)
    elapsed = time.monotonic() - start_t
    ordered = sorted(small)
    return {"small": len(small), "large": len(large), "errors": errors, "seconds": elapsed,
            "p50": statistics.median(ordered) * 1000 if ordered else float("nan"),
            "p99": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000 if ordered else float("nan"),
            "large_p50": statistics.median(large) if large else float("nan")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--max-calls", type=int, default=2000, help="at most this many calls per client per phase")
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--cols", type=int, default=500)
    parser.add_argument("--serve-args", default="", help="extra `flopsheet serve` options")
    parser.add_argument("--write", action="store_true", help="write benchmarks/load_results.md")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    proc, client = start(free_port(), *args.serve_args.split())
    large_args = [[[12.5] * args.cols for _ in range(args.rows)], [[10]]]
    try:
        base = str(client.base_url)
        phase(base, 2.0, 20, 0, large_args)                                     # warm up
        alone = phase(base, args.seconds, args.max_calls, 0, large_args)
        beside = phase(base, args.seconds, args.max_calls, LARGE_CLIENTS, large_args)
    finally:
        client.close()
        proc.terminate()
        proc.wait(30)
    lines = ["# Load benchmark (loopback)", "",
             (f"`python benchmarks/bench_load.py --write`: {CLIENTS} clients against one `flopsheet serve` on "
              f"127.0.0.1, each phase {args.seconds:g} s (at most {args.max_calls} calls a client). Small calls: "
              "scalar JOB_COST, GPU_MEMORY, GPU_TOKENS_PER_SEC in turn. Large calls: a "
              f"{args.rows}x{args.cols} JOB_COST range ({args.rows * args.cols:,} cells). Calls per second per core "
              "counts every answered call in the phase. Latency is the full HTTP round trip; the clients run on "
              "the same machine, so they take CPU from the server too."), "",
             "| phase | small calls | large calls | calls/s per core | small p50 ms | small p99 ms | large p50 s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for label, r in (("alone: 60 small-call clients", alone),
                     (f"beside large: {CLIENTS - LARGE_CLIENTS} small + {LARGE_CLIENTS} large", beside)):
        rate = (r["small"] + r["large"]) / r["seconds"] / cores
        large_p50 = f"{r['large_p50']:.2f}" if r["large"] else "-"
        lines.append(f"| {label} | {r['small']:,} | {r['large']:,} | {rate:.1f} | {r['p50']:.1f} | {r['p99']:.1f} | "
                     f"{large_p50} |")
    errors = alone["errors"] + beside["errors"]
    lines += ["", f"- errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""),
              f"- machine: {cores} CPU cores, Python {platform.python_version()} on {platform.machine()} "
              f"({platform.system()}), server and clients on the same machine"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        (ROOT / "benchmarks" / "load_results.md").write_text(text)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    raise SystemExit(main())
