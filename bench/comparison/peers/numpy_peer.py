"""NumPy: a copy of data, then fancy or slice assignment, or `ufunc.at` for a reduction."""

from __future__ import annotations

import numpy as np

from ..workloads import Case, Workload


def setup_numpy(w: Workload, c: Case, threads: int):
    key, upd = c.numpy_key, c.updates
    if w.reduction == "none":

        def apply(out):
            out[key] = upd
    elif w.reduction == "sum":

        def apply(out):
            np.add.at(out, key, upd)
    elif w.reduction == "max":

        def apply(out):
            np.maximum.at(out, key, upd)
    else:  # mean with the initial value: (data + sum) / (1 + count)

        def apply(out):
            np.add.at(out, key, upd)
            count = np.ones_like(out)
            np.add.at(count, key, 1)
            np.divide(out, count, out=out)

    if w.in_place:
        work = c.data.copy()

        def run_in_place():
            apply(work)
            return work

        return run_in_place

    if w.preallocated:
        dst = np.empty_like(c.data)

        def run_into():
            np.copyto(dst, c.data)
            apply(dst)
            return dst

        return run_into

    def run():
        out = c.data.copy()
        apply(out)
        return out

    return run
