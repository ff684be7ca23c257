"""Batched execution: one operation over many independent rows in one C++ call.

This is the executors' entry point of the Spark pipeline: an Arrow list column
is already a `Ragged` (values back to back, with offsets), so a whole record
batch is handed to the kernels at once and the threads split the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core
from ._coerce import (
    as_axis,
    as_c_array,
    as_data,
    as_indices,
    as_updates,
    check_bool,
    check_reduction,
    dtype_tag,
    slice_params,
)
from ._registry import op_version


@dataclass(frozen=True)
class Ragged:
    """Rows of tensors stored back to back.

    Row ``r`` holds ``values[offsets[r]:offsets[r + 1]]`` with shape
    ``shapes[shape_offsets[r]:shape_offsets[r + 1]]``.
    """

    values: np.ndarray
    offsets: np.ndarray
    shapes: np.ndarray
    shape_offsets: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def from_arrays(cls, arrays: Sequence[Any], dtype: Any = None) -> Ragged:
        """Packs a sequence of arrays (one per row)."""
        arrays = [np.asarray(a, dtype=dtype) for a in arrays]
        sizes = [a.size for a in arrays]
        ranks = [a.ndim for a in arrays]
        offsets = np.zeros(len(arrays) + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        shape_offsets = np.zeros(len(arrays) + 1, np.int64)
        np.cumsum(ranks, out=shape_offsets[1:])
        shapes = np.array([d for a in arrays for d in a.shape], np.int64)
        if arrays:
            values = np.concatenate([a.reshape(-1) for a in arrays])
        else:
            values = np.empty(0, dtype=dtype or np.float64)
        return cls(values, offsets, shapes, shape_offsets)

    def row(self, r: int) -> np.ndarray:
        """Row ``r`` as an array of its shape (a view)."""
        shape = tuple(
            int(d) for d in self.shapes[self.shape_offsets[r] : self.shape_offsets[r + 1]]
        )
        return self.values[self.offsets[r] : self.offsets[r + 1]].reshape(shape)

    def _parts(
        self, values: np.ndarray, op: str
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        def int64(a: Any, name: str) -> np.ndarray:
            arr = np.asarray(a)
            if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
                raise TypeError(f"{op}: Ragged {name} must be integers, got dtype {arr.dtype}")
            if arr.dtype == np.uint64 and arr.size and arr.max() > np.uint64(2**63 - 1):
                raise ValueError(f"{op}: Ragged {name} hold a value beyond int64")
            return as_c_array(arr, np.int64)

        return (
            values,
            int64(self.offsets, "offsets"),
            int64(self.shapes, "shapes"),
            int64(self.shape_offsets, "shape_offsets"),
        )


def run_batch(
    op: str,
    data: Ragged,
    updates: Ragged,
    indices: Ragged | None = None,
    *,
    axis: Any = 0,
    reduction: str = "none",
    use_init_val: bool = True,
    exact: bool = False,
    start: Any = None,
    stop: Any = None,
    step: Any = None,
) -> tuple[np.ndarray, list[str | None]]:
    """Applies the versioned operation `op` to every row.

    Returns the output values (data's offsets and shapes apply to them) and one
    entry per row: None when the row succeeded, else its error message (the
    output row is then a copy of the data row). Raises only for a malformed
    batch or bad attributes, never for a bad row. `exact` is as in
    `scatter_elements_update` and `scatter_nd_update`.
    """
    version = op_version(op, "run_batch")
    kind, allow_negative = version.kernel, version.negative_indices
    reductions = version.reductions or ("none",)
    name = op
    values = as_c_array(as_data(data.values, name))
    upd_values = as_updates(updates.values, values.dtype, name)
    red = check_reduction(reduction, name, reductions)
    if red not in reductions:
        if reductions == ("none",):
            raise ValueError(f"{name}: this operation version has no reduction (got {red!r})")
        raise ValueError(
            f"{name}: reduction {red!r} is not one of this version's ({', '.join(reductions)})"
        )
    init = check_bool(use_init_val, "use_init_val", name)
    exact = check_bool(exact, "exact", name)  # where it applies, _core.run_batch decides

    idx_parts = None
    if kind != "slice_scatter":
        if indices is None:
            raise ValueError(f"{name}: indices are required")
        idx_parts = indices._parts(as_indices(indices.values, name), name)
    starts: list[int] = []
    stops: list[int] = []
    steps: list[int] = []
    axes: list[int] = []
    ax = 0
    if kind == "slice_scatter":
        starts, stops, steps, axes = slice_params(start, stop, step, axis, name)
        # What is wrong for every row is an error of the call, not of each row.
        if 0 in steps:
            raise ValueError(f"{name}: step must not be 0")
        if len(set(axes)) != len(axes):
            raise ValueError(f"{name}: axes must be distinct, got {axes}")
    elif kind != "scatter_nd_update":
        ax = as_axis(axis, name)

    data_parts, upd_parts = data._parts(values, name), updates._parts(upd_values, name)
    out = np.empty_like(values)
    errors = _core.run_batch(
        kind,
        data.rows,
        data_parts,
        idx_parts,
        upd_parts,
        out,
        dtype_tag(values.dtype),
        ax,
        red,
        init,
        allow_negative,
        starts,
        stops,
        steps,
        axes,
        exact,
        name,
    )
    # Values before the first row and after the last belong to no row: keep data's.
    offsets = data_parts[1]
    if len(offsets):
        head, tail = int(offsets[0]), int(offsets[-1])
        out[: max(head, 0)] = values[: max(head, 0)]
        out[max(tail, 0) :] = values[max(tail, 0) :]
    return out, [e or None for e in errors]
