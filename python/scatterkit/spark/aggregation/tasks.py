"""Executor side of `aggregate`: the map-side combiner and the reduce-side finisher.

The combiner checks every event once and sends on rows of a key each (the layout:
`wire`): events packed in lists, combined states, or a bad event's problem. The finisher
gets them sorted by key and folds group after group."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._batch import Ragged
from ..core.element_types import numpy_dtype
from ..core.errors import RowError
from ..runtime.faults import pause_point
from ..runtime.tensors import tensor_array
from ..runtime.threads import configure_threads
from .slices import slice_lists
from .states import AggState, EventRows, flatten, locate
from .wire import (
    BLOB,
    COUNT_FIELDS,
    EVENTS,
    KIND,
    PROBLEM,
    STATE,
    AggPlan,
    cell_name,
    events_per_row,
    order_name,
    pack_numbers,
    pack_parts,
    pack_problem,
    result_name,
    run_positions,
    unpack_numbers,
    unpack_parts,
    unpack_problem,
    unpack_valid,
    valid_name,
    value_name,
)

STATE_BUDGET = 128 << 20  # bytes of states a task holds before it sends them on


def group_name(plan: AggPlan, key: Sequence[Any]) -> str:
    """A group as messages name it: ``user_id=17`` (``a=1, b='x'`` for several columns)."""
    return ", ".join(f"{name}={value!r}" for name, value in zip(plan.key_names, key))


def _key_reader(batch: pa.RecordBatch, plan: AggPlan) -> Callable[[int], tuple[Any, ...]]:
    columns = [batch.column(k) for k in plan.keys]
    return lambda row: tuple(c[row].as_py() for c in columns)


# -- map side ----------------------------------------------------------------------------


@dataclass
class _Checked:
    """A batch of raw events, checked: per cell group the offsets (int32, null if bad),
    per aggregate its problems (row -> message)."""

    cells: dict[str, pa.Array]
    problems: list[dict[int, str]]
    wrong_slices: dict[str, dict[int, str]]  # per value column
    values: dict[str, pa.Array]  # per value column: as the folds read it (`slice_lists`)


def _check(plan: AggPlan, batch: pa.RecordBatch) -> _Checked:
    cells: dict[str, pa.Array] = {}
    problems: list[dict[int, str]] = []
    wrong_slices: dict[str, dict[int, str]] = {}
    values: dict[str, pa.Array] = {}
    located: dict[str, tuple[np.ndarray, np.ndarray, dict[int, str]]] = {}
    for i, spec in enumerate(plan.specs):
        name = plan.cell_of(i)
        if name not in located:
            coordinates = [batch.column(c) for c in plan.coordinate_names(i)]
            located[name] = offset, good, _ = locate(spec, coordinates)
            cells[name] = pa.array(offset.astype(np.int32), mask=~good)
        value = plan.value_of(i)
        if value not in wrong_slices:
            values[value], wrong_slices[value] = slice_lists(spec, batch.column(value))
        found = dict(located[name][2])
        for row, message in wrong_slices[value].items():
            found.setdefault(row, message)
        problems.append(found)
    return _Checked(cells, problems, wrong_slices, values)


def _raise_if_failing(
    plan: AggPlan, problems: list[dict[int, str]], key_of_row: Callable[[int], Any]
) -> None:
    for spec, found in zip(plan.specs, problems):
        if spec.on_error == "fail" and found:
            row, message = min(found.items(), key=lambda item: item[1])
            raise RowError(f"group {group_name(plan, key_of_row(row))}: {message}")


def _events(plan: AggPlan, i: int, rows: pa.RecordBatch, problems: dict[int, str]) -> EventRows:
    """Aggregate i's events of compact rows (``__cell`` null where the event is bad)."""
    spec = plan.specs[i]
    cell = rows.column(plan.cell_of(i))
    good = np.asarray(cell.is_valid())
    offset = np.asarray(cell.fill_null(0), dtype=np.int64)
    values = rows.column(plan.value_of(i))
    for row in problems:  # a wrong slice length: bad for this aggregate only
        good[row] = False
    order_name = plan.order_of(i)
    order = rows.column(order_name) if order_name else None
    events = flatten(spec, offset, good, values, order)
    events.problems = problems
    return events


FLUSH_EVENTS = 1 << 21  # events a task gathers before it sorts and packs them (FLUSH_CONF)
FLUSH_CONF = "spark.scatterkit.aggregate.flushEvents"
FLUSH_BYTES = 64 << 20  # or bytes of events (slices make events large)
PACKED_BYTES = 64 << 20  # bytes of packed events a task gathers before it sends them on


def combine_events(plan: AggPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Checks events and packs them by key: the task gathers up to FLUSH_EVENTS events and
    sorts them by key; a key's events of several flushes (up to PACKED_BYTES of them) go on
    as one row, so the shuffle and its sort handle a row per key and PACKED_BYTES, not one
    per event (Spark's cost per row is several times that of a row's bytes). A key with more
    events in a flush than one state of it weighs folds them into a task-wide state
    instead, sent at the end (or at STATE_BUDGET): shuffled bytes then grow with keys, not
    events. A bad event fails the task (on_error fail) or travels as a PROBLEM row."""
    configure_threads()
    group_bytes = plan.state_bytes()
    hot: dict[tuple[Any, ...], list[AggState]] = {}
    packing = _Packing(plan)
    for events in _flushes(batches, plan.flush_events or FLUSH_EVENTS):
        yield from _pack_flush(plan, events, group_bytes, hot, packing)
        if packing.nbytes >= PACKED_BYTES:
            yield packing.rows()
        if packing.schema is not None and len(hot) * group_bytes > STATE_BUDGET:
            yield _state_rows(plan, packing.schema, hot)
            hot = {}
    if packing.nbytes:
        yield packing.rows()
    pause_point("map")  # tests only: the events read and sent, the task-wide states not yet
    if hot and packing.schema is not None:
        yield _state_rows(plan, packing.schema, hot)


def _flushes(batches: Iterator[pa.RecordBatch], events: int) -> Iterator[pa.RecordBatch]:
    """The batches gathered into one of `events` rows (or FLUSH_BYTES) at a time."""
    pending: list[pa.RecordBatch] = []
    rows = size = 0
    for batch in batches:
        pending.append(batch)
        rows, size = rows + batch.num_rows, size + batch.nbytes
        if rows >= events or size >= FLUSH_BYTES:
            yield _concat(pending)
            pending, rows, size = [], 0, 0
    if rows:
        yield _concat(pending)


def _concat(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


class _Packing:
    """Runs of a key's events (one per key and flush), gathered until they are sent on
    together as one row per key (`rows`)."""

    def __init__(self, plan: AggPlan):
        self.plan = plan
        self.keys: list[pa.RecordBatch] = []  # per flush: each run's key
        self.events: list[pa.RecordBatch] = []  # per flush: the runs' events, without keys
        self.lengths: list[np.ndarray] = []  # per flush: each run's events
        self.nbytes = 0
        self.schema: pa.Schema | None = None  # of the rows sent on

    def add(self, ordered: pa.RecordBatch, starts: np.ndarray) -> None:
        """A flush's events grouped by key, each key's run starting at `starts`."""
        keys = list(self.plan.keys)
        if self.schema is None:
            no_rows = np.zeros(0, np.int64)
            self.schema = _packed_rows(
                self.plan, ordered.select(keys).slice(0, 0), ordered.slice(0, 0), no_rows
            ).schema
        if not len(starts):
            return
        events = ordered.select([n for n in ordered.schema.names if n not in keys])
        self.keys.append(ordered.select(keys).take(pa.array(starts)))
        self.events.append(events)
        self.lengths.append(np.diff(np.append(starts, ordered.num_rows)))
        self.nbytes += events.nbytes

    def rows(self) -> pa.RecordBatch:
        """The gathered runs as a row per key, and a fresh start."""
        keys, lengths, gathered = _concat(self.keys), np.concatenate(self.lengths), self.events
        self.keys, self.events, self.lengths, self.nbytes = [], [], [], 0  # freed as they go
        if len(gathered) == 1:
            events = gathered[0]
        else:  # a key may have a run in each flush: bring them together, in one gather
            order = np.asarray(_key_order(self.plan, keys), np.int64)
            firsts = (np.cumsum(lengths) - lengths)[order]
            keys, lengths = keys.take(pa.array(order)), lengths[order]
            gather = run_positions(firsts, lengths, np.int32)
            events = _concat(gathered)
            gathered = []
            events = events.take(pa.array(gather))
        groups = _group_starts(keys, self.plan)
        counts = np.add.reduceat(lengths, groups)
        starts = np.cumsum(counts) - counts
        return _packed_rows(self.plan, keys.take(pa.array(groups)), events, starts)


def _pack_flush(
    plan: AggPlan,
    batch: pa.RecordBatch,
    group_bytes: int,
    hot: dict[tuple[Any, ...], list[AggState]],
    packing: _Packing,
) -> Iterator[pa.RecordBatch]:
    """One flush of events: checked, sorted by key, the keys frequent in it folded into
    `hot`, the others' runs added to `packing`; yields the PROBLEM rows."""
    checked = _check(plan, batch)
    _raise_if_failing(plan, checked.problems, _key_reader(batch, plan))
    compact = _compact(plan, batch, checked)
    ordered = compact.take(_key_order(plan, compact))
    starts = _group_starts(ordered, plan)
    counts = np.diff(np.append(starts, ordered.num_rows))
    threshold = max(2, group_bytes * ordered.num_rows // max(1, ordered.nbytes))
    frequent = counts >= threshold
    for g in np.flatnonzero(frequent):
        _fold_into_hot(plan, ordered.slice(int(starts[g]), int(counts[g])), hot)
    if frequent.any():
        ordered = ordered.filter(pa.array(np.repeat(~frequent, counts)))
        counts = counts[~frequent]
        starts = np.cumsum(counts) - counts
    packing.add(ordered, starts)
    assert packing.schema is not None
    yield from _problem_rows(plan, compact, packing.schema, checked.problems)


def _key_order(plan: AggPlan, batch: pa.RecordBatch) -> pa.Array | np.ndarray:
    """Row numbers that group the batch by key: each key's rows together, the keys and the
    rows within a key in any order."""
    if len(plan.keys) == 1:
        key = batch.column(plan.keys[0])
        if key.null_count == 0 and pa.types.is_integer(key.type):
            return _grouping_order(key)
    return pc.sort_indices(batch, sort_keys=[(k, "ascending") for k in plan.keys])


def _grouping_order(key: pa.Array) -> np.ndarray:
    """An integer key's rows grouped: the keys numbered by a hash (in the order they first
    appear), the numbers sorted by radix (NumPy's stable sort of 16-bit integers), in one
    pass or two; 2-3x faster than sorting the keys themselves."""
    numbers = pc.dictionary_encode(key).indices.to_numpy().view(np.uint32)
    order = np.argsort(numbers.astype(np.uint16), kind="stable")
    if len(numbers) > 1 << 16:  # more than 2^16 keys are possible: sort the high halves too
        high = (numbers[order] >> 16).astype(np.uint16)
        order = order[np.argsort(high, kind="stable")]
    return order


def _fold_into_hot(
    plan: AggPlan, rows: pa.RecordBatch, hot: dict[tuple[Any, ...], list[AggState]]
) -> None:
    key = _key_reader(rows, plan)(0)
    states = hot.setdefault(key, [AggState(spec, 1) for spec in plan.specs])
    slots = np.zeros(rows.num_rows, np.int64)
    for i, state in enumerate(states):
        state.fold(_events(plan, i, rows, {}), slots)


def _packed_rows(
    plan: AggPlan, keys: pa.RecordBatch, ordered: pa.RecordBatch, starts: np.ndarray
) -> pa.RecordBatch:
    """A row per key (`keys`, one row each): the key, and each event column as the key's
    events (`wire`), those of `ordered` from its ``starts`` on."""
    offsets = pa.array(np.append(starts, ordered.num_rows).astype(np.int32))
    columns = {k: keys.column(k) for k in plan.keys}
    for g in range(len(plan.cell_groups)):
        cells = ordered.column(cell_name(g)).fill_null(-1)  # -1: a bad event
        columns[cell_name(g)] = pack_numbers(np.asarray(cells), starts)
    for v, value in enumerate(plan.values):
        column = ordered.column(value_name(v))
        if not value.as_bytes:
            columns[value_name(v)] = pa.ListArray.from_arrays(offsets, column)
            continue
        filled = column.fill_null(0) if column.null_count else column
        numbers = np.asarray(filled, numpy_dtype(value.element))
        columns[value_name(v)] = pack_numbers(numbers, starts)
        if column.null_count:
            valid = np.asarray(column.is_valid()).view(np.uint8)
            columns[valid_name(v)] = pack_numbers(valid, starts)
        else:
            columns[valid_name(v)] = pa.nulls(len(starts), pa.binary())
    for o in range(len(plan.orders)):
        columns[order_name(o)] = pa.ListArray.from_arrays(offsets, ordered.column(order_name(o)))
    n = len(starts)
    columns[KIND] = pa.array(np.full(n, EVENTS, np.int8))
    columns[BLOB] = pa.nulls(n, pa.binary())
    return pa.RecordBatch.from_arrays(list(columns.values()), names=list(columns))


def _compact(plan: AggPlan, batch: pa.RecordBatch, checked: _Checked) -> pa.RecordBatch:
    n = batch.num_rows
    names = list(plan.keys) + list(checked.cells)
    columns = [batch.column(k) for k in plan.keys] + list(checked.cells.values())
    for v in range(len(plan.values)):
        names.append(value_name(v))
        values = checked.values[value_name(v)]
        wrong = checked.wrong_slices.get(value_name(v))
        if wrong:  # a slice of the wrong length travels as a null (its problem row follows)
            mask = np.zeros(n, bool)
            mask[list(wrong)] = True
            values = pa.compute.if_else(pa.array(mask), pa.nulls(n, values.type), values)
        columns.append(values)
    for o in range(len(plan.orders)):
        names.append(order_name(o))
        columns.append(batch.column(order_name(o)))
    return pa.RecordBatch.from_arrays(columns, names=names)


def _blob_rows(
    plan: AggPlan, schema: pa.Schema, keys: list[tuple[Any, ...]], kind: int, blobs: list[bytes]
) -> pa.RecordBatch:
    """Rows of `kind` carrying a key and a blob, every event column null."""
    n = len(keys)
    columns = []
    for field in schema:
        if field.name in plan.keys:
            j = plan.keys.index(field.name)
            columns.append(pa.array([k[j] for k in keys], type=field.type))
        elif field.name == KIND:
            columns.append(pa.array(np.full(n, kind, np.int8)))
        elif field.name == BLOB:
            columns.append(pa.array(blobs, pa.binary()))
        else:
            columns.append(pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _state_rows(
    plan: AggPlan, schema: pa.Schema, hot: dict[tuple[Any, ...], list[AggState]]
) -> pa.RecordBatch:
    keys = list(hot)
    blobs = [pack_parts([s.state_bytes(0) for s in hot[k]]) for k in keys]
    return _blob_rows(plan, schema, keys, STATE, blobs)


def _problem_rows(
    plan: AggPlan, compact: pa.RecordBatch, schema: pa.Schema, problems: list[dict[int, str]]
) -> Iterator[pa.RecordBatch]:
    key_of_row = _key_reader(compact, plan)
    keys, blobs = [], []
    for i, found in enumerate(problems):
        for row, message in found.items():
            keys.append(key_of_row(row))
            blobs.append(pack_problem(i, message))
    if keys:
        yield _blob_rows(plan, schema, keys, PROBLEM, blobs)


# -- reduce side ---------------------------------------------------------------------------


def _group_starts(batch: pa.RecordBatch, plan: AggPlan) -> np.ndarray:
    """Rows where a new group starts in a batch sorted by the key (row 0 included)."""
    rows = batch.num_rows
    change = np.zeros(rows, bool)
    change[0] = True
    for k in plan.keys:
        column = batch.column(k)
        valid = np.asarray(column.is_valid())
        before, after = column.slice(0, rows - 1), column.slice(1)
        differs = np.asarray(pc.not_equal(before, after).fill_null(False))
        if pa.types.is_floating(column.type):  # NaN keys are one group, as in Spark's groupBy
            nan = np.asarray(pc.is_nan(column).fill_null(False))
            differs &= ~(nan[:-1] & nan[1:])
        change[1:] |= differs | (valid[1:] != valid[:-1])
    return np.flatnonzero(change)


def _same_key(a: pa.RecordBatch, b: pa.RecordBatch, plan: AggPlan) -> bool:
    return all(_same_value(a.column(k)[0].as_py(), b.column(k)[0].as_py()) for k in plan.keys)


def _same_value(x: Any, y: Any) -> bool:
    return x == y or (isinstance(x, float) and isinstance(y, float) and x != x and y != y)


def finish_groups(plan: AggPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Folds events, merges states and applies problems of a partition sorted by the key,
    group by group, and yields each group's tensors. A group may span batches: its state
    is carried over (as bytes), never its events, so a group of any size takes one
    state's memory."""
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
            keys = batch.select(list(plan.keys))
            if done > first:
                firsts = keys.take(pa.array(starts[first:done]))
                yield _result_batch(plan, firsts, states, done - first)
            if last == len(starts):
                tail = keys.slice(int(starts[-1]), 1)
                carry = (tail, [s.state_bytes(last - 1 - first) for s in states])
    # tests only: the groups folded, the last one not emitted yet; partition 0, whose file
    # Spark's writer opens as the task starts (runtime/faults.py)
    pause_point("reduce", partition=0)
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
    event_rows = np.flatnonzero(kind == EVENTS)
    packed = rows if len(event_rows) == len(kind) else rows.take(pa.array(event_rows))
    events_batch, lengths = _unpacked_events(plan, packed)
    slot_of_event = np.repeat(slot_of_row[event_rows], lengths)
    states = []
    for i, spec in enumerate(plan.specs):
        state = AggState(spec, len(starts))
        if carry is not None:
            state.merge(0, carry[1][i])
        state.fold(_events(plan, i, events_batch, {}), slot_of_event)
        states.append(state)
    blobs = rows.column(BLOB)
    for r in np.flatnonzero(kind != EVENTS):
        slot, blob = int(slot_of_row[r]), blobs[int(r)].as_py()
        if kind[r] == STATE:
            for state, part in zip(states, unpack_parts(blob)):
                state.merge(slot, part)
        else:
            aggregate, message = unpack_problem(blob)
            states[aggregate].add_problem(slot, message)
    return states


def _unpacked_events(plan: AggPlan, packed: pa.RecordBatch) -> tuple[pa.RecordBatch, np.ndarray]:
    """The events of EVENTS rows, a row each, and how many each packed row holds."""
    lengths = events_per_row(packed.column(cell_name(0)))
    columns: dict[str, pa.Array] = {}
    for g in range(len(plan.cell_groups)):
        cells = unpack_numbers(packed.column(cell_name(g)), np.dtype(np.int32))
        bad = cells < 0
        columns[cell_name(g)] = pa.array(cells, mask=bad) if bad.any() else pa.array(cells)
    for v, value in enumerate(plan.values):
        column = packed.column(value_name(v))
        if not value.as_bytes:
            columns[value_name(v)] = column.flatten()
            continue
        numbers = unpack_numbers(column, numpy_dtype(value.element))
        valid = unpack_valid(packed.column(valid_name(v)), lengths)
        columns[value_name(v)] = pa.array(numbers, mask=None if valid is None else ~valid)
    for o in range(len(plan.orders)):
        columns[order_name(o)] = packed.column(order_name(o)).flatten()
    return pa.RecordBatch.from_arrays(list(columns.values()), names=list(columns)), lengths


def _finish_carry(plan: AggPlan, carry: tuple[pa.RecordBatch, list[bytes]]) -> pa.RecordBatch:
    keys, blobs = carry
    states = []
    for spec, blob in zip(plan.specs, blobs):
        state = AggState(spec, 1)
        state.merge(0, blob)
        states.append(state)
    return _result_batch(plan, keys, states, 1)


def tensor_results(state: AggState, groups: int) -> pa.StructArray:
    """The first `groups` slots of a state as tensor structs in the aggregate's layout,
    with ``error``, ``events`` and ``dropped``; a group with an error has a null tensor."""
    spec = state.spec
    values = state.finish()[:groups]
    failed = np.array([e is not None for e in state.errors[:groups]], bool)
    size, rank = spec.size, len(spec.shape)
    like = Ragged(
        values.reshape(-1),
        np.arange(groups + 1, dtype=np.int64) * size,
        np.tile(np.asarray(spec.shape, np.int64), groups),
        np.arange(groups + 1, dtype=np.int64) * rank,
    )
    errors = state.errors[:groups]
    tensors = tensor_array(like.values, like, ~failed, errors, spec.layout)
    fields = [*tensors.flatten(), pa.array(state.events[:groups]), pa.array(state.dropped[:groups])]
    names = [*(f.name for f in tensors.type), *COUNT_FIELDS]
    return pa.StructArray.from_arrays(fields, names=names)


def _result_batch(
    plan: AggPlan, keys: pa.RecordBatch, states: list[AggState], groups: int
) -> pa.RecordBatch:
    columns = list(keys.columns) + [tensor_results(s, groups) for s in states]
    names = list(keys.schema.names) + [result_name(i) for i in range(len(states))]
    return pa.RecordBatch.from_arrays(columns, names=names)
