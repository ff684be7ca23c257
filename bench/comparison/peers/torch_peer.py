"""PyTorch (CPU): a clone of data, then the in-place op (`index_copy_`, `scatter_`,
`scatter_reduce_`, `index_put_`, slice assignment)."""

from __future__ import annotations

import numpy as np

from ..workloads import Case, Workload


def setup_torch(w: Workload, c: Case, threads: int):
    import torch

    data, upd, axis = torch.from_numpy(c.data), torch.from_numpy(c.updates), c.axis
    if w.op == "update":
        idx = torch.from_numpy(c.index_array.reshape(-1).astype(np.int64, copy=False))
        shape = (*c.data.shape[:axis], idx.numel(), *c.data.shape[axis + 1 :])
        src = upd.reshape(shape)

        def apply(t):
            t.index_copy_(axis, idx, src)
    elif w.op == "elements":
        idx = torch.from_numpy(c.indices)
        if w.reduction == "none":

            def apply(t):
                t.scatter_(axis, idx, upd)
        else:
            how = {"sum": "sum", "max": "amax", "mean": "mean"}[w.reduction]

            def apply(t):
                t.scatter_reduce_(axis, idx, upd, how, include_self=True)
    elif w.op == "nd":
        key = tuple(torch.from_numpy(np.ascontiguousarray(k)) for k in c.numpy_key)

        def apply(t):
            t.index_put_(key, upd)
    else:
        key = c.numpy_key

        def apply(t):
            t[key] = upd

    if w.in_place:
        work = data.clone()

        def run_in_place():
            apply(work)
            return work.numpy()

        return run_in_place

    if w.preallocated:
        dst = torch.empty_like(data)

        def run_into():
            dst.copy_(data)
            apply(dst)
            return dst.numpy()

        return run_into

    def run():  # out of place: clone + in-place op, what a user writes
        t = data.clone()
        apply(t)
        return t.numpy()

    return run
