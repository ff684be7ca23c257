#!/usr/bin/env python3
"""Compare scatterkit with its peers on the canonical workloads (bench/README.md).

Peers: OpenVINO's CPU plugin, PyTorch (CPU), ONNX Runtime and NumPy; each one that is
installed. Everything runs in one process: per workload and thread count, one warm-up call
per implementation (its output is checked against scatterkit's), then repeats in
round-robin order, rotated every round, so that noise from a loaded machine hits every
implementation alike. Prints medians and writes RESULTS.md and results.png.

    python bench/compare.py                        # every workload at 1 and 2 threads
    python bench/compare.py --quick                # small shapes: a smoke run (results to /tmp)
    python bench/compare.py --workloads W2,W3 --threads 2 --repeats 5
    python bench/compare.py --baseline DIR --peers none   # A/B: this build against DIR's
    python bench/compare.py --workloads H --out /tmp/h.md # the histogram sweep (issue 33)
    python bench/compare.py --workloads W3,W6,HX --threads 2  # exact sums against peers (#48)

Family H (histograms at every table size) runs only when named in --workloads: 10M float32
updates into 1-D tables of 4K to 128M bins, sum and max, int64 and int32 indices, uniform and
skewed indices; every implementation writes into a preallocated output (scatterkit `out=`).
HX is the same sweep's sums with exact=True (issue 48), with H or on its own.

Rows named "exact" run scatterkit with exact=True (the real sum rounded once), the peers with
their usual sums, and scatterkit with exact=False beside them ("scatterkit inexact").
bench/README.md explains the workloads, the peers' formulations and how to read the ratios.
This file is the command line; the work is in the package beside it, bench/comparison/.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

# Imported before any peer: scatterkit sets OMP_WAIT_POLICY=PASSIVE unless it is set already,
# and every OpenMP runtime loaded after it (PyTorch bundles its own) then waits the same way.
import scatterkit as sk

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the package bench/comparison and bench/bare_loop.py
from comparison import baseline, peers, reports  # noqa: E402
from comparison.environment import SK_BUILD, source_revision  # noqa: E402
from comparison.plots import plot  # noqa: E402
from comparison.run import run_all  # noqa: E402
from comparison.workloads import (  # noqa: E402
    HISTOGRAM_BINS,
    HISTOGRAM_QUICK_BINS,
    canonical_workloads,
    histogram_workloads,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workloads",
        default="",
        help="e.g. W1,W3 (default: W1-W6); H, the histogram sweep, and HX, its sums with "
        "exact=True, only when named",
    )
    parser.add_argument(
        "--histogram-bins",
        default="",
        help="table sizes of family H, e.g. 4096,1048576 (default: 4K, 64K, 1M, 16M, 128M; "
        "with --quick: 4K, 64K)",
    )
    parser.add_argument("--threads", default="1,2", help="thread counts (default: 1,2)")
    parser.add_argument("--repeats", type=int, default=25, help="timed repeats (default: 25)")
    parser.add_argument(
        "--budget",
        type=float,
        default=10.0,
        help="seconds per implementation and workload; slow ones get fewer repeats (min 3)",
    )
    parser.add_argument("--quick", action="store_true", help="small shapes: a smoke run")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results file (default: bench/RESULTS.md; with --quick, one in the temp directory, "
        "so that a smoke run never replaces the committed results)",
    )
    parser.add_argument("--png", type=Path, default=None, help="chart (default: next to --out)")
    parser.add_argument(
        "--peers",
        default="",
        help="only these peers, e.g. PyTorch,NumPy, or none (default: all)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="DIR",
        help="also time the scatterkit installed in DIR (pip install --target DIR) as "
        "'baseline', beside this one: an A/B of two builds in one process",
    )
    args = parser.parse_args(argv)
    try:
        wanted_peers = peers.parse_peers(args.peers)
    except ValueError as e:
        parser.error(str(e))
    source_revision()
    if args.baseline is not None:
        try:
            baseline.use(args.baseline)
        except ValueError as e:
            parser.error(f"--baseline: {e}")
        print(
            f"baseline: {baseline.BASELINE_NAME} {baseline.BASELINE.__version__} from "
            f"{baseline.BASELINE_BUILD}; scatterkit {sk.__version__} from {SK_BUILD}",
            flush=True,
        )
    if args.out is None:
        args.out = (
            Path(tempfile.gettempdir()) / "scatterkit-bench" / "RESULTS.md"
            if args.quick
            else HERE / "RESULTS.md"
        )
    threads = [int(t) for t in args.threads.split(",") if t]
    groups = {g.strip().upper() for g in args.workloads.split(",") if g.strip()}
    workloads = [w for w in canonical_workloads() if not groups or w.group in groups]
    if groups & {"H", "HX"}:
        bins = HISTOGRAM_QUICK_BINS if args.quick else HISTOGRAM_BINS
        if args.histogram_bins:
            try:
                bins = tuple(int(b) for b in args.histogram_bins.split(",") if b.strip())
            except ValueError:
                parser.error(f"--histogram-bins: not integers: {args.histogram_bins!r}")
            if not bins or min(bins) < 1:
                parser.error(f"--histogram-bins: sizes must be >= 1: {args.histogram_bins!r}")
        workloads += histogram_workloads(bins, plain="H" in groups, exact="HX" in groups)
    if not workloads:
        parser.error(f"no workload matches {args.workloads!r}")
    found, missing = peers.available_peers(wanted_peers)
    for peer, why in missing.items():
        print(f"note: {peer} skipped: {why}", flush=True)

    run = run_all(workloads, threads, found, args.repeats, args.budget, args.quick)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    png = args.png or args.out.with_name("results.png")
    note = plot(run.rows, threads, png)
    reports.write_results(
        args.out, run.rows, args, found, missing, run.started, run.elapsed, run.load, run.rss
    )
    bad = reports.print_tables(run.rows)
    print(f"wrote {args.out}" + (f" and {png}" if not note else f" ({note})"))
    print(f"{run.elapsed / 60:.1f} min, peak RSS {run.rss / 2**30:.1f} GiB")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
