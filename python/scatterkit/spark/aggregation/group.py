"""One group's tensor in one call, for the grouped-aggregate UDF (``groupBy().agg()``), which
Spark calls once per group and aggregate: all that does not depend on the events is
prepared once per aggregate (`GroupFolder`), and a group whose events are all good folds
in one kernel call. Anything else (nulls, bad coordinates, slices, reduction none) goes
the general way (`states`), which gives the same bits."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ... import _fold
from ..specs.agg_spec import AggSpec
from .wire import result_names


class GroupFolder:
    """Folds a group's events of one aggregate into its result scalar, or says it cannot
    (None) where the general way must."""

    def __init__(self, spec: AggSpec):
        self.spec = spec
        self.dtype = spec.element_dtype
        self.size = spec.size
        self.extents = np.asarray(spec.shape[: spec.k], np.int64)
        strides = np.ones(spec.k, np.int64)
        for axis in range(spec.k - 2, -1, -1):
            strides[axis] = strides[axis + 1] * spec.shape[axis + 1]
        self.strides = strides
        self.fill = np.full(self.size, spec.fill, self.dtype)
        self.exact = self.dtype.kind == "f"
        self.simple = spec.reduction != "none" and spec.k == len(spec.shape)
        # The result's fields but the tensor's own, the same for every group.
        self.names = result_names(spec.layout)
        self.offsets = pa.array([0, self.size], pa.int32())
        shape = pa.array(np.asarray(spec.shape, np.int32))
        self.shape = pa.ListArray.from_arrays(pa.array([0, len(spec.shape)], pa.int32()), shape)
        self.dtype_name = pa.array([self.dtype.name])
        self.no_error = pa.nulls(1, pa.string())
        self.no_drop = pa.array([0], pa.int64())

    def __call__(self, arrays: list[pa.Array]) -> pa.Scalar | None:
        if not self.simple or any(a.null_count for a in arrays):
            return None
        coordinates, values = arrays[: self.spec.k], arrays[self.spec.k]
        targets = np.zeros(len(values), np.int64)
        for axis, column in enumerate(coordinates):
            c = np.asarray(column.to_numpy(zero_copy_only=False), np.int64)
            extent = self.extents[axis]
            c = np.where(c < 0, c + extent, c)
            if len(c) and (c.min() < 0 or c.max() >= extent):
                return None  # a bad coordinate: the general way names it
            targets += c * self.strides[axis]
        out = self.fill.copy()
        updates = np.ascontiguousarray(values.to_numpy(zero_copy_only=False), self.dtype)
        if len(updates):
            _fold.fold_fill(out, targets, updates, self.spec.reduction, exact=self.exact)
        return self._result(out, len(updates))

    def _result(self, out: np.ndarray, events: int) -> pa.Scalar:
        if self.spec.layout == "binary":
            tensor = [pa.array([out.tobytes()], pa.binary()), self.shape, self.dtype_name]
        else:
            tensor = [pa.ListArray.from_arrays(self.offsets, pa.array(out)), self.shape]
        counts = [pa.array([events], pa.int64()), self.no_drop]
        return pa.StructArray.from_arrays([*tensor, self.no_error, *counts], self.names)[0]
