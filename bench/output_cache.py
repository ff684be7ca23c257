#!/usr/bin/env python3
"""What the output cache saves: W2 and W4 (bench/README.md) with it on and off.

A new 50 MB result in fresh memory costs the page faults that zero it, about as much as the
scatter itself; the cache hands the next result of that size the memory of a freed one.
Both settings run in one process, interleaved round by round; prints medians and ratios.

    python bench/output_cache.py                 # 1 thread, 25 rounds
    python bench/output_cache.py --threads 2 --repeats 9
"""

from __future__ import annotations

import argparse
import statistics
import time

from comparison.environment import machine_info  # bench/comparison, beside this file
from comparison.scatterkit_rows import sk_call
from comparison.workloads import canonical_workloads, make_case

import scatterkit as sk

WORKLOADS = ("W2", "W4")
SETTINGS = {"on (default)": 1 << 30, "off": 0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=25, help="rounds (default 25)")
    args = parser.parse_args(argv)
    sk.set_num_threads(args.threads)
    chosen = [w for w in canonical_workloads() if w.name in WORKLOADS]
    cases = {w.name: (w, make_case(w, quick=False)) for w in chosen}
    times: dict[tuple[str, str], list[float]] = {
        (name, setting): [] for name in cases for setting in SETTINGS
    }
    for _ in range(args.repeats):
        for setting, limit in SETTINGS.items():
            sk.set_output_cache(limit)
            for name, (w, c) in cases.items():
                sk_call(w, c, c.data, None)  # frees a result the timed call may reuse
                start = time.perf_counter()
                result = sk_call(w, c, c.data, None)
                times[(name, setting)].append(time.perf_counter() - start)
                del result
    sk.set_output_cache(SETTINGS["on (default)"])
    info = machine_info()
    print(f"{info['cpu']}, {info['logical cpus']} logical cpus; {args.threads} thread(s)")
    print(f"medians of {args.repeats} interleaved rounds, a new result per call")
    print("| workload | cache on (ms) | cache off (ms) | off / on |")
    print("| --- | ---: | ---: | ---: |")
    for name in cases:
        on, off = (statistics.median(times[(name, s)]) * 1e3 for s in SETTINGS)
        print(f"| {name} | {on:.2f} | {off:.2f} | {off / on:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
