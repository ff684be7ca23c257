"""Executor side of `aggregate`: the map-side combiner and the reduce-side finisher.

Columns between the driver's plan and these tasks have fixed names: the group key
columns ``__key0..``, then for aggregate i its coordinates ``__a{i}_c{j}``, its updates
``__a{i}_u`` and its order ``__a{i}_o`` (reduction none). The combiner adds ``__kind``
(0: an event, 1: a combined state) and the states ``__a{i}_s``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .agg_spec import AggSpec
from .agg_states import AggState, EventRows, read_events
from .errors import RowError
from .steps import configure_threads

KIND = "__kind"
EVENT, STATE = 0, 1
STATE_BUDGET = 128 << 20  # bytes of states a task holds before it sends them on


def key_name(j: int) -> str:
    return f"__key{j}"


def coordinate_name(i: int, j: int) -> str:
    return f"__a{i}_c{j}"


def updates_name(i: int) -> str:
    return f"__a{i}_u"


def order_name(i: int) -> str:
    return f"__a{i}_o"


def state_name(i: int) -> str:
    return f"__a{i}_s"


@dataclass(frozen=True)
class AggPlan:
    """What the tasks of one `aggregate` need: the key's names (for messages) and the
    aggregates, dtypes settled."""

    key_names: tuple[str, ...]
    specs: tuple[AggSpec, ...]

    @property
    def keys(self) -> int:
        return len(self.key_names)

    def state_bytes(self) -> int:
        """Bytes of one group's states, all aggregates (what combining a group costs)."""
        return sum(len(AggState(spec, 1).state_bytes(0)) for spec in self.specs)


def group_name(plan: AggPlan, key: Sequence[Any]) -> str:
    """A group as messages name it: ``user_id=17`` (``a=1, b='x'`` for several columns)."""
    return ", ".join(f"{name}={value!r}" for name, value in zip(plan.key_names, key))


def _events_of(batch: pa.RecordBatch, i: int, spec: AggSpec) -> EventRows:
    coordinates = [batch.column(coordinate_name(i, j)) for j in range(spec.k)]
    order = batch.column(order_name(i)) if spec.order_by else None
    return read_events(spec, coordinates, batch.column(updates_name(i)), order)


def _raise_first_problem(plan: AggPlan, spec: AggSpec, events: EventRows, key_of_row: Any) -> None:
    if spec.on_error == "fail" and events.problems:
        row, message = min(events.problems.items(), key=lambda item: item[1])
        raise RowError(f"group {group_name(plan, key_of_row(row))}: {message}")


def _key_rows(batch: pa.RecordBatch, plan: AggPlan) -> Any:
    columns = [batch.column(key_name(j)) for j in range(plan.keys)]
    return lambda row: tuple(c[row].as_py() for c in columns)


# -- map side ----------------------------------------------------------------------------


def combine_events(plan: AggPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Passes events on, except those of keys frequent enough in a batch that one state
    per key is smaller than their events: those fold into task-wide states, sent at the
    end (or when they pass STATE_BUDGET). Shuffled bytes then grow with keys, not events."""
    configure_threads()
    group_bytes = plan.state_bytes()
    hot: dict[tuple[Any, ...], list[AggState]] = {}
    template: pa.RecordBatch | None = None
    names = [key_name(j) for j in range(plan.keys)]
    for batch in batches:
        template = batch
        rows = batch.num_rows
        threshold = max(2, group_bytes * rows // max(1, batch.nbytes))
        if rows < threshold:
            yield _as_events(plan, batch)
            continue
        table = pa.Table.from_batches([batch]).select(names)
        table = table.append_column("__row", pa.array(np.arange(rows)))
        groups = table.group_by(names, use_threads=False).aggregate([("__row", "list")])
        lists = groups.column("__row_list")
        lengths = np.asarray(lists.combine_chunks().value_lengths())
        frequent = np.flatnonzero(lengths >= threshold)
        if len(frequent) == 0:
            yield _as_events(plan, batch)
            continue
        combined = np.zeros(rows, bool)
        for g in frequent:
            key = tuple(groups.column(n)[int(g)].as_py() for n in names)
            member_rows = np.asarray(lists[int(g)].values)
            combined[member_rows] = True
            _fold_into(plan, hot, key, batch.take(pa.array(member_rows)))
        yield _as_events(plan, batch.filter(pa.array(~combined)))
        if len(hot) * group_bytes > STATE_BUDGET:
            yield _states_batch(plan, template, hot)
            hot = {}
    if hot and template is not None:
        yield _states_batch(plan, template, hot)


def _fold_into(
    plan: AggPlan,
    hot: dict[tuple[Any, ...], list[AggState]],
    key: tuple[Any, ...],
    rows: pa.RecordBatch,
) -> None:
    states = hot.get(key)
    if states is None:
        states = hot[key] = [AggState(spec, 1) for spec in plan.specs]
    slot_of_row = np.zeros(rows.num_rows, np.int64)
    for i, (spec, state) in enumerate(zip(plan.specs, states)):
        events = _events_of(rows, i, spec)
        _raise_first_problem(plan, spec, events, lambda _row: key)
        state.fold(events, slot_of_row)


def _as_events(plan: AggPlan, batch: pa.RecordBatch) -> pa.RecordBatch:
    n = batch.num_rows
    columns = [*batch.columns, pa.array(np.zeros(n, np.int8))]
    columns += [pa.nulls(n, pa.binary()) for _ in plan.specs]
    names = list(batch.schema.names) + [KIND] + [state_name(i) for i in range(len(plan.specs))]
    return pa.RecordBatch.from_arrays(columns, names=names)


def _states_batch(
    plan: AggPlan, template: pa.RecordBatch, hot: dict[tuple[Any, ...], list[AggState]]
) -> pa.RecordBatch:
    """One row per combined key: its key, null event columns, kind STATE and the states."""
    keys = sorted(hot, key=repr)
    n = len(keys)
    columns, names = [], []
    for field in template.schema:
        if field.name.startswith("__key"):
            j = int(field.name[len("__key") :])
            columns.append(pa.array([k[j] for k in keys], type=field.type))
        else:
            columns.append(pa.nulls(n, field.type))
        names.append(field.name)
    columns.append(pa.array(np.full(n, STATE, np.int8)))
    names.append(KIND)
    for i in range(len(plan.specs)):
        columns.append(pa.array([hot[k][i].state_bytes(0) for k in keys], pa.binary()))
        names.append(state_name(i))
    return pa.RecordBatch.from_arrays(columns, names=names)


# -- reduce side ---------------------------------------------------------------------------


def _group_starts(batch: pa.RecordBatch, plan: AggPlan) -> np.ndarray:
    """Rows where a new group starts in a batch sorted by the key (row 0 included)."""
    rows = batch.num_rows
    change = np.zeros(rows, bool)
    change[0] = True
    for j in range(plan.keys):
        column = batch.column(key_name(j))
        valid = np.asarray(column.is_valid())
        a, b = column.slice(0, rows - 1), column.slice(1)
        differs = np.asarray(pa.compute.not_equal(a, b).fill_null(False))
        change[1:] |= differs | (valid[1:] != valid[:-1])
    return np.flatnonzero(change)


def _same_key(a: pa.RecordBatch, b: pa.RecordBatch, plan: AggPlan) -> bool:
    return all(
        a.column(key_name(j))[0].as_py() == b.column(key_name(j))[0].as_py()
        for j in range(plan.keys)
    )


def finish_groups(plan: AggPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Folds events and merges states of a partition sorted by the key, group by group,
    and yields each group's tensors. A group may span batches: its state is carried over
    (as bytes), never its events, so a group of any size takes one state's memory."""
    configure_threads()
    per_chunk = max(1, STATE_BUDGET // max(1, plan.state_bytes()))
    carry: tuple[pa.RecordBatch, list[bytes]] | None = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        starts = _group_starts(batch, plan)
        ends = np.append(starts[1:], batch.num_rows)
        if carry is not None and not _same_key(carry[0], batch, plan):
            yield _finish_carry(plan, carry)
            carry = None
        for first in range(0, len(starts), per_chunk):
            last = min(first + per_chunk, len(starts))
            states = _fold_groups(plan, batch, starts[first:last], ends[first:last], carry)
            carry = None
            done = last if last < len(starts) else last - 1  # the batch's last group may go on
            if done > first:
                keys = batch.select([key_name(j) for j in range(plan.keys)]).take(
                    pa.array(starts[first:done])
                )
                yield _result_batch(plan, keys, states, done - first)
            if last == len(starts):
                tail = batch.slice(int(starts[-1]), 1).select(
                    [key_name(j) for j in range(plan.keys)]
                )
                carry = (tail, [s.state_bytes(last - 1 - first) for s in states])
    if carry is not None:
        yield _finish_carry(plan, carry)


def _fold_groups(
    plan: AggPlan,
    batch: pa.RecordBatch,
    starts: np.ndarray,
    ends: np.ndarray,
    carry: tuple[pa.RecordBatch, list[bytes]] | None,
) -> list[AggState]:
    r0, r1 = int(starts[0]), int(ends[-1])
    rows = batch.slice(r0, r1 - r0)
    slot_of_row = np.repeat(np.arange(len(starts)), ends - starts)
    kind = np.asarray(rows.column(KIND))
    event_rows = np.flatnonzero(kind == EVENT)
    state_rows = np.flatnonzero(kind == STATE)
    events_batch = rows.take(pa.array(event_rows)) if len(state_rows) else rows
    key_of_row = _key_rows(events_batch, plan)
    states = []
    for i, spec in enumerate(plan.specs):
        state = AggState(spec, len(starts))
        if carry is not None:
            state.merge(0, carry[1][i])
        events = _events_of(events_batch, i, spec)
        _raise_first_problem(plan, spec, events, key_of_row)
        state.fold(events, slot_of_row[event_rows])
        blobs = rows.column(state_name(i))
        for r in state_rows:
            state.merge(int(slot_of_row[r]), blobs[int(r)].as_py())
        states.append(state)
    return states


def _finish_carry(plan: AggPlan, carry: tuple[pa.RecordBatch, list[bytes]]) -> pa.RecordBatch:
    keys, blobs = carry
    states = []
    for spec, blob in zip(plan.specs, blobs):
        state = AggState(spec, 1)
        state.merge(0, blob)
        states.append(state)
    return _result_batch(plan, keys, states, 1)


def tensor_results(state: AggState, groups: int) -> pa.StructArray:
    """The first `groups` slots of a state as tensor structs ``<values, shape, error,
    events, dropped>``; a group with an error has null values and shape."""
    spec = state.spec
    values = state.finish()[:groups]
    failed = np.array([e is not None for e in state.errors[:groups]], bool)
    size, rank = spec.size, len(spec.shape)
    value_counts = np.where(failed, 0, size)
    shape_counts = np.where(failed, 0, rank)
    flat = values[~failed].ravel()
    shapes = np.tile(np.asarray(spec.shape, np.int32), int((~failed).sum()))
    mask = pa.array(failed) if failed.any() else None
    fields = [
        pa.ListArray.from_arrays(_offsets(value_counts), pa.array(flat), mask=mask),
        pa.ListArray.from_arrays(_offsets(shape_counts), pa.array(shapes), mask=mask),
        pa.array(state.errors[:groups], pa.string()),
        pa.array(state.events[:groups]),
        pa.array(state.dropped[:groups]),
    ]
    return pa.StructArray.from_arrays(fields, names=list(RESULT_FIELDS))


RESULT_FIELDS = ("values", "shape", "error", "events", "dropped")


def _offsets(counts: np.ndarray) -> pa.Array:
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    return pa.array(offsets.astype(np.int32))


def _result_batch(
    plan: AggPlan, keys: pa.RecordBatch, states: list[AggState], groups: int
) -> pa.RecordBatch:
    columns = list(keys.columns) + [tensor_results(s, groups) for s in states]
    names = list(keys.schema.names) + [f"__agg{i}" for i in range(len(states))]
    return pa.RecordBatch.from_arrays(columns, names=names)
