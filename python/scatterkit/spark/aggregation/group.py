"""Executor side of ``groupBy().agg(scatter_nd_agg(...))``, in one of two shapes (the
column's plan, `api.scatter_nd_agg`, picks one):

- batched (`fold_lists`): Spark collects each group's events into a list
  (``collect_list``) and a scalar Arrow UDF folds a whole batch of groups in one call,
  through the same states as `aggregate`'s reduce side;
- per group (`fold_group`): a grouped-aggregate Arrow UDF, which Spark calls once per
  group and aggregate. What does not depend on the events is prepared once per aggregate
  (`GroupFolder`), and a group whose events are all good folds in one kernel call;
  anything else (nulls, bad coordinates, slices, reduction none) goes the general way
  (`states`), which gives the same bits.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import _fold
from ..core.errors import RowError
from ..runtime.threads import configure_threads
from ..specs.agg_spec import AggSpec
from .states import AggState, EventRows, read_events
from .tasks import STATE_BUDGET, tensor_results
from .wire import result_names


def _memory_named(fold: Callable[..., Any]) -> Callable[..., Any]:
    """`fold` with a MemoryError turned into a RowError that says how large the group
    was (a UDF is not given its group's key) and what to use instead."""

    @functools.wraps(fold)
    def named(spec: AggSpec, *columns: pa.Array | pa.ChunkedArray) -> Any:
        try:
            return fold(spec, *columns)
        except MemoryError as exc:
            reason = f"MemoryError: {exc}"
        # Raised here, not in the except clause: the failed fold's arrays are freed first.
        raise RowError(_too_large(spec, columns, reason, batched=fold is _fold_lists))

    return named


def _too_large(
    spec: AggSpec, columns: Sequence[pa.Array | pa.ChunkedArray], reason: str, batched: bool
) -> str:
    if batched:  # one column: a batch of collected groups
        lengths = np.asarray(pc.list_value_length(columns[0]).fill_null(0), np.int64)
        events = int(lengths.max()) if len(lengths) else 0
    else:
        events = len(columns[0]) if columns else 0
    names = ", ".join([*spec.indices, spec.updates, *([spec.order_by] if spec.order_by else [])])
    size = f"{sum(c.nbytes for c in columns) / 2**20:,.0f} MB of {names}"
    what = f"the group of {events:,} events ({size})"
    if batched and len(lengths) > 1:
        what = f"a batch of {len(lengths):,} groups (the largest of {events:,} events; {size})"
    cap = os.environ.get("PYSPARK_EXECUTOR_MEMORY_MB")  # what Spark caps the worker at
    memory = (
        f"spark.executor.pyspark.memory caps it at {int(cap):,} MB of address space"
        if cap
        else "spark.executor.pyspark.memory is not set"
    )
    return (
        f"scatter_nd_agg: {what} does not fit in a Python "
        f"worker's memory ({memory}; {reason}). groupBy().agg() gives the aggregate whole "
        "groups and does not tell it their keys (the largest groups: "
        "df.groupBy(by).count().orderBy('count', ascending=False)). Use "
        "skf.aggregate(df, by, name=skf.scatter_nd_agg(...)): the same tensors, and a group "
        "of any size folds in one state's memory; or raise spark.executor.pyspark.memory"
    )


def _raise_first_problem(spec: AggSpec, events: EventRows, coordinates: list[pa.Array]) -> None:
    """Under on_error fail: the bad event with the smallest message, named by its
    coordinates (the same one whatever order the events come in)."""
    if spec.on_error != "fail" or not events.problems:
        return
    row, message = min(events.problems.items(), key=lambda item: item[1])
    event = ", ".join(f"{c}={coordinates[j][row].as_py()!r}" for j, c in enumerate(spec.indices))
    raise RowError(f"event ({event}): {message}")


def _fold_general(
    spec: AggSpec, columns: list[pa.Array], slot: np.ndarray, groups: int
) -> pa.Array:
    """The tensors of `groups` groups from their events' columns (coordinates, updates,
    order), `slot` giving each event's group."""
    coordinates = columns[: spec.k]
    order = columns[spec.k + 1] if spec.order_by else None
    events = read_events(spec, coordinates, columns[spec.k], order)
    _raise_first_problem(spec, events, coordinates)
    state = AggState(spec, groups)
    state.fold(events, slot)
    return tensor_results(state, groups)


# -- batched: one call per batch of collected groups -------------------------------------------


def _fold_lists(spec: AggSpec, lists: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The tensors of a batch of groups, each row a list of one group's events (structs of
    coordinates, updates and order), in chunks of groups whose states fit STATE_BUDGET."""
    configure_threads()
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    groups = len(lists)
    lengths = np.asarray(pc.list_value_length(lists).fill_null(0), np.int64)
    columns = lists.flatten().flatten()  # the events of every group, then their fields
    ends = np.cumsum(lengths)
    per_chunk = max(1, STATE_BUDGET // max(1, len(AggState(spec, 1).state_bytes(0))))
    results = []
    for first in range(0, groups, per_chunk):
        last = min(first + per_chunk, groups)
        e0 = int(ends[first - 1]) if first else 0
        e1 = int(ends[last - 1]) if last else 0
        chunk = [c.slice(e0, e1 - e0) for c in columns]
        slot = np.repeat(np.arange(last - first), lengths[first:last])
        results.append(_fold_general(spec, chunk, slot, last - first))
    if len(results) == 1:
        return results[0]
    return pa.concat_arrays(results)


fold_lists = _memory_named(_fold_lists)


# -- per group: one call per group and aggregate ---------------------------------------------


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


_FOLDERS: dict[AggSpec, GroupFolder] = {}  # per Python worker: one per aggregate


@_memory_named
def fold_group(spec: AggSpec, *columns: pa.Array | pa.ChunkedArray) -> pa.Scalar:
    """One group's tensor from all of its events."""
    configure_threads()
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    folder = _FOLDERS.get(spec)
    if folder is None:
        folder = _FOLDERS[spec] = GroupFolder(spec)
    folded = folder(arrays)
    if folded is not None:
        return folded
    return _fold_general(spec, arrays, np.zeros(len(arrays[0]), np.int64), 1)[0]
