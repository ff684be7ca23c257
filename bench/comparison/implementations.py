"""The rows of a comparison and what a row's setup returns.

setup_<impl>(w, c, threads) returns a zero-argument callable that runs the op once and
returns its output (anything np.asarray accepts), or a NotAvailable string saying why the
implementation cannot express the workload ("n/a"). Setup (model compilation, index
reshaping, working copies) is never timed. scatterkit_rows.SETUP and peers.SETUP hold the
setups; IMPLS gives the rows' order in every table.
"""

from __future__ import annotations

from .workloads import Workload

IMPLS = [
    "floor",
    "scatterkit",
    "scatterkit out=",
    "scatterkit inexact",  # rows of exact workloads only: the same call with exact=False
    "baseline",  # with --baseline only: the scatterkit call through the build under DIR
    "bare loop",  # family H only: the serial loop in C, no check (bare_loop.py)
    "inputs read",  # family H, exact rows: one thread reading the indices and updates once
    "sk uniform",  # family H skewed rows only: scatterkit out= on the uniform row's indices
    "OpenVINO",
    "PyTorch",
    "ONNX Runtime",
    "NumPy",
]
# Rows that give no output to check: the floors, and a skewed row's uniform call (another
# histogram).
UNCHECKED = ("floor", "inputs read", "sk uniform")


class NotAvailable(str):
    """Why an implementation cannot run a workload: the cell's note, in place of a time."""


def reference_impl(w: Workload) -> str:
    """The scatterkit row every output is checked against, and the row's scatterkit time:
    `scatterkit out=` where every implementation writes into a preallocated output."""
    return "scatterkit out=" if w.preallocated else "scatterkit"
