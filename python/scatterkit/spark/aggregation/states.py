"""Executor side of event aggregation: events read from Arrow, folded into per-group states.

A state holds one aggregate for a run of groups ("slots"). Folding events and merging
states give the same bits whatever their order and grouping: float sums and means are
exact (scatterkit's exact states), min and max use the exact kernels' order-free rules,
integers wrap (associative), and ``none`` keeps, per element, the greatest (order_by,
value) pair. So a group's tensor does not depend on how Spark split or ordered its events.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa

from ... import _fold
from ..specs.agg_spec import AggSpec
from .slices import slice_lists


@dataclass
class EventRows:
    """One batch of events for one aggregate, checked and flattened to elements.

    Rows that update something have ``counted``; rows with a bad coordinate or slice have
    a message in ``problems`` (row -> message). Elements: the row they come from, their
    flat offset in the tensor, their value and (reduction none) their order key.
    """

    rows: int
    counted: np.ndarray  # bool per row
    problems: dict[int, str]
    element_row: np.ndarray
    element_offset: np.ndarray
    element_value: np.ndarray
    element_order: np.ndarray | None


def _ints(array: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """An integer column's values (a view where there are no nulls) and its validity mask
    (None: no nulls)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.null_count:
        valid = np.asarray(array.is_valid())
        return np.asarray(array.fill_null(0).cast(pa.int64()), dtype=np.int64), valid
    return array.to_numpy(zero_copy_only=False), None


def order_keys(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """An order_by column as int64 keys that sort as its values do, and a validity mask."""
    kind = array.type
    valid = np.asarray(array.is_valid())
    if pa.types.is_floating(kind):
        values = np.asarray(array.fill_null(0).cast(pa.float64()), dtype=np.float64)
        return total_order_key(values), valid
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_time(kind):
        array = array.view(pa.int64() if kind.bit_width == 64 else pa.int32())
    return np.asarray(array.fill_null(0).cast(pa.int64()), dtype=np.int64), valid


def total_order_key(values: np.ndarray) -> np.ndarray:
    """int64 keys ordering values as IEEE 754 totalOrder does (-NaN < -inf < -0 < +0 <
    +inf < +NaN) for floats, and by value for integers and bools."""
    if values.dtype.kind != "f":
        return values.astype(np.int64)
    bits = values.astype(np.float64).view(np.int64)
    # Negative floats sort backwards as integers: flipping all but the sign bit fixes that.
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


def _coordinate_problem(spec: AggSpec, axis: int, value: int | None) -> str:
    name, extent = spec.indices[axis], spec.shape[axis]
    if value is None:
        return f"coordinate {name} is null"
    return f"coordinate {name}={value} is out of range [-{extent}, {extent}) of dimension {axis}"


def locate(
    spec: AggSpec, coordinates: Sequence[pa.Array]
) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """Each event's flat offset in the tensor (negative coordinates wrap once), whether its
    coordinates are good, and the message of each bad one (row -> message)."""
    rows = len(coordinates[0])
    offset = np.zeros(rows, np.int64)
    good = np.ones(rows, bool)
    problems: dict[int, str] = {}
    stride = spec.slice_size
    for axis in range(spec.k - 1, -1, -1):
        values, valid = _ints(coordinates[axis])
        extent = spec.shape[axis]
        wrapped = np.array(values, np.int64)  # a copy, whatever the integer type
        np.add(wrapped, extent, out=wrapped, where=wrapped < 0)
        ok = wrapped.view(np.uint64) < extent  # negative after one wrap: out of range too
        if valid is not None:
            ok &= valid
        if not ok.all():
            for row in np.flatnonzero(~ok & good).tolist():
                found = None if valid is not None and not valid[row] else values[row]
                problems[row] = _coordinate_problem(spec, axis, found)
            good &= ok
            wrapped[~ok] = 0
        if stride != 1:
            wrapped *= stride
        offset += wrapped
        stride *= extent
    return offset, good, problems


def flatten(
    spec: AggSpec,
    offset: np.ndarray,
    good: np.ndarray,
    updates: pa.Array,
    order: pa.Array | None = None,
) -> EventRows:
    """The elements of the good events (checked already) with a value: a null value, a
    null inside a slice or a null order_by is skipped, as Spark's aggregates skip nulls."""
    rows = len(updates)
    dtype = spec.element_dtype
    order_key = None
    present = np.asarray(updates.is_valid()) & good
    if order is not None:
        order_key, order_valid = order_keys(order)
        present &= order_valid
    fill = False if dtype == np.bool_ else 0
    arrow_type = pa.from_numpy_dtype(dtype)
    element_row = np.flatnonzero(present)
    if spec.k == len(spec.shape):
        values = np.asarray(updates.fill_null(fill).cast(arrow_type))
        element_value = values[element_row]
        element_offset = offset[element_row]
    else:
        size = spec.slice_size
        starts = np.asarray(updates.offsets, dtype=np.int64)[:-1][element_row]
        positions = (starts[:, None] + np.arange(size)).ravel()
        element_row = np.repeat(element_row, size)
        element_offset = (offset[present][:, None] + np.arange(size)).ravel()
        child = updates.values
        keep = np.asarray(child.is_valid())[positions]
        child_values = np.asarray(child.fill_null(fill).cast(arrow_type))
        element_row, element_offset = element_row[keep], element_offset[keep]
        element_value = child_values[positions[keep]]
    element_order = order_key[element_row] if order_key is not None else None
    return EventRows(rows, present, {}, element_row, element_offset, element_value, element_order)


def read_events(
    spec: AggSpec,
    coordinates: Sequence[pa.Array],
    updates: pa.Array,
    order: pa.Array | None = None,
) -> EventRows:
    """Checks and flattens a batch of events (columns as Arrow arrays, nulls allowed;
    slices in any layout, `slices.slice_lists`)."""
    offset, good, problems = locate(spec, coordinates)
    updates, wrong = slice_lists(spec, updates)
    for row, message in wrong.items():
        good[row] = False
        problems.setdefault(row, message)
    events = flatten(spec, offset, good, updates, order)
    events.problems = problems
    return events


def _identity(reduction: str, dtype: np.dtype) -> object:
    if dtype == np.bool_:
        return reduction in ("prod", "min")
    if reduction in ("sum", "mean", "none"):
        return 0
    if reduction == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduction == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if reduction == "max" else info.max


Part = tuple[np.dtype, tuple[int, ...]]  # one array of a slot's state: its dtype and shape


class Accumulator(Protocol):
    """The values of one aggregate for `slots` groups, in one representation. Folding and
    merging in any order and grouping give the same bits (see the module docstring)."""

    def parts(self) -> list[Part]:
        """The arrays of one slot's state, in `slot_bytes` order."""
        ...

    def fold(self, targets: np.ndarray, values: np.ndarray, order: np.ndarray | None) -> None:
        """Folds values at flat targets (slot * size + offset)."""
        ...

    def slot_bytes(self, slot: int) -> bytes:
        """One slot's state as bytes (the arrays of `parts`)."""
        ...

    def merge(self, slot: int, parts: list[np.ndarray]) -> None:
        """Merges another state of the same group (its arrays of `parts`) into `slot`."""
        ...

    def finish(self, fill: np.ndarray) -> np.ndarray:
        """The tensors (slots, size); untargeted elements keep `fill`'s value."""
        ...


class ExactSums:
    """Float sums and means, exact. The terms are kept until a state must exist (a merge, a
    state sent on): finishing terms straight with the exact kernel beats a state per element."""

    def __init__(self, spec: AggSpec, slots: int):
        self.spec, self.dtype = spec, spec.element_dtype
        self.terms: list[tuple[np.ndarray, np.ndarray]] = []
        self.merged: dict[int, np.ndarray] = {}  # slot -> states merged into it

    def parts(self) -> list[Part]:
        return [(np.dtype(np.uint64), (self.spec.size, _fold.state_words(self.dtype)))]

    def fold(self, targets: np.ndarray, values: np.ndarray, order: np.ndarray | None) -> None:
        self.terms.append((targets, values))

    def _slot_state(self, slot: int) -> np.ndarray:
        """The exact state (size, words) of one slot: its merged states and its terms."""
        size = self.spec.size
        merged = self.merged.get(slot)
        state = merged.copy() if merged is not None else _fold.new_state(size, self.dtype)
        for targets, values in self.terms:
            mine = targets // size == slot
            _fold.state_fold(state, targets[mine] % size, values[mine])
        return state

    def slot_bytes(self, slot: int) -> bytes:
        return self._slot_state(slot).tobytes()

    def merge(self, slot: int, parts: list[np.ndarray]) -> None:
        mine = self.merged.get(slot)
        if mine is None:
            mine = self.merged[slot] = _fold.new_state(self.spec.size, self.dtype)
        _fold.state_merge(mine, np.ascontiguousarray(parts[0]), self.dtype)

    def finish(self, fill: np.ndarray) -> np.ndarray:
        reduction = self.spec.reduction
        if self.terms:
            targets = np.concatenate([t for t, _ in self.terms])
            values = np.concatenate([v for _, v in self.terms])
            # each targeted element's exact sum (or mean), rounded once; the rest keep fill
            _fold.fold_fill(fill.reshape(-1), targets, values, reduction, exact=True)
        for slot in self.merged:
            out = np.full(self.spec.size, self.spec.fill, self.dtype)
            _fold.state_finish(self._slot_state(slot), out, mean=reduction == "mean")
            fill[slot] = out
        return fill


class IntegerMeans:
    """Integer means: exact sums as two int64 halves, and counts; rounded toward -inf."""

    def __init__(self, spec: AggSpec, slots: int):
        self.spec, self.dtype = spec, spec.element_dtype
        self.hi, self.lo, self.count = (np.zeros((slots, spec.size), np.int64) for _ in range(3))

    def parts(self) -> list[Part]:
        return [(np.dtype(np.int64), (self.spec.size,))] * 3

    def fold(self, targets: np.ndarray, values: np.ndarray, order: np.ndarray | None) -> None:
        wide = values.astype(np.int64)
        np.add.at(self.hi.reshape(-1), targets, wide >> 32)
        np.add.at(self.lo.reshape(-1), targets, wide & 0xFFFFFFFF)
        np.add.at(self.count.reshape(-1), targets, 1)

    def slot_bytes(self, slot: int) -> bytes:
        return self.hi[slot].tobytes() + self.lo[slot].tobytes() + self.count[slot].tobytes()

    def merge(self, slot: int, parts: list[np.ndarray]) -> None:
        for mine, theirs in zip((self.hi, self.lo, self.count), parts):
            mine[slot] += theirs

    def finish(self, fill: np.ndarray) -> np.ndarray:
        hi = self.hi + (self.lo >> 32)  # carry: lo now in [0, 2**32)
        lo = self.lo & 0xFFFFFFFF
        count = self.count
        out = fill.copy()
        hit = count > 0
        small = hit & (np.abs(hi) < (1 << 30))  # the whole sum fits in int64
        total = (hi[small] << 32) + lo[small]
        out[small] = np.floor_divide(total, count[small]).astype(self.dtype)
        for i, j in zip(*np.nonzero(hit & ~small)):  # rare: Python's integers are exact
            out[i, j] = ((int(hi[i, j]) << 32) + int(lo[i, j])) // int(count[i, j])
        return out


class Folded:
    """Integer sums and products (wrapping), min and max: each element folded in place
    (float min and max by the exact kernels' order-free rules), and whether it was hit."""

    def __init__(self, spec: AggSpec, slots: int):
        self.spec, self.dtype = spec, spec.element_dtype
        shape = (slots, spec.size)
        self.acc = np.full(shape, _identity(spec.reduction, self.dtype), self.dtype)
        self.hit = np.zeros(shape, bool)

    def parts(self) -> list[Part]:
        return [(self.dtype, (self.spec.size,)), (np.dtype(bool), (self.spec.size,))]

    def fold(self, targets: np.ndarray, values: np.ndarray, order: np.ndarray | None) -> None:
        exact = self.dtype.kind == "f"
        _fold.fold_flat(self.acc.reshape(-1), targets, values, self.spec.reduction, exact=exact)
        self.hit.reshape(-1)[targets] = True

    def slot_bytes(self, slot: int) -> bytes:
        return self.acc[slot].tobytes() + self.hit[slot].tobytes()

    def merge(self, slot: int, parts: list[np.ndarray]) -> None:
        hit = np.flatnonzero(parts[1])
        if len(hit):
            values = np.ascontiguousarray(parts[0][hit])
            self.fold(slot * self.spec.size + hit, values, None)

    def finish(self, fill: np.ndarray) -> np.ndarray:
        return np.where(self.hit, self.acc, fill)


class Latest:
    """Reduction none: per element, the value of the greatest (order_by, value's total
    order) pair, with that pair's keys."""

    def __init__(self, spec: AggSpec, slots: int):
        self.spec, self.dtype = spec, spec.element_dtype
        shape = (slots, spec.size)
        self.acc = np.zeros(shape, self.dtype)
        self.hit = np.zeros(shape, bool)
        lowest = np.iinfo(np.int64).min
        self.best_order, self.best_value = (np.full(shape, lowest, np.int64) for _ in range(2))

    def parts(self) -> list[Part]:
        size: tuple[int, ...] = (self.spec.size,)
        return [(self.dtype, size), (np.dtype(bool), size)] + [(np.dtype(np.int64), size)] * 2

    def fold(self, targets: np.ndarray, values: np.ndarray, order: np.ndarray | None) -> None:
        assert order is not None  # an order_by column is required for none
        acc, hit = self.acc.reshape(-1), self.hit.reshape(-1)
        best_order, best_value = self.best_order.reshape(-1), self.best_value.reshape(-1)
        value_key = total_order_key(values)
        sort = np.lexsort((value_key, order, targets))
        targets, order, value_key = targets[sort], order[sort], value_key[sort]
        last = np.ones(len(targets), bool)
        last[:-1] = targets[1:] != targets[:-1]
        t, o, v = targets[last], order[last], value_key[last]
        wins = ~hit[t] | (o > best_order[t]) | ((o == best_order[t]) & (v > best_value[t]))
        t = t[wins]
        acc[t] = values[sort][last][wins]
        best_order[t], best_value[t] = o[wins], v[wins]
        hit[t] = True

    def slot_bytes(self, slot: int) -> bytes:
        arrays = (self.acc, self.hit, self.best_order, self.best_value)
        return b"".join(a[slot].tobytes() for a in arrays)

    def merge(self, slot: int, parts: list[np.ndarray]) -> None:
        hit = np.flatnonzero(parts[1])
        if len(hit):
            self.fold(slot * self.spec.size + hit, parts[0][hit], parts[2][hit])

    def finish(self, fill: np.ndarray) -> np.ndarray:
        return np.where(self.hit, self.acc, fill)


def accumulator(spec: AggSpec, slots: int) -> Accumulator:
    """The representation of `spec`'s values."""
    dtype, reduction = spec.element_dtype, spec.reduction
    if dtype.kind == "f" and reduction in ("sum", "mean"):
        return ExactSums(spec, slots)
    if reduction == "mean":
        return IntegerMeans(spec, slots)
    if reduction == "none":
        return Latest(spec, slots)
    return Folded(spec, slots)


class AggState:
    """One aggregate for `slots` groups: its values (an `Accumulator`), and each group's
    counts and error."""

    def __init__(self, spec: AggSpec, slots: int):
        self.spec = spec
        self.slots = slots
        self.events = np.zeros(slots, np.int64)
        self.dropped = np.zeros(slots, np.int64)
        self.errors: list[str | None] = [None] * slots
        self.values = accumulator(spec, slots)

    def fold(self, events: EventRows, slot_of_row: np.ndarray) -> None:
        """Folds a batch's events; `slot_of_row` gives each row's group slot. Bad rows count
        as dropped (on_error drop) or set their group's error (keep); `fail` is the
        caller's to raise before folding."""
        if len(events.problems):
            rows = np.fromiter(events.problems, np.int64, len(events.problems))
            if self.spec.on_error == "drop":
                np.add.at(self.dropped, slot_of_row[rows], 1)
            else:
                for row, message in events.problems.items():
                    self.set_error(int(slot_of_row[row]), message)
        self.events += np.bincount(slot_of_row[events.counted], minlength=self.slots)
        targets = slot_of_row[events.element_row] * self.spec.size + events.element_offset
        if len(targets):
            self.values.fold(targets, events.element_value, events.element_order)

    def state_bytes(self, slot: int) -> bytes:
        """One group's state, counts and error as bytes (fixed layout for this spec)."""
        error = (self.errors[slot] or "").encode()
        head = np.array([self.events[slot], self.dropped[slot], len(error)], np.int64)
        return head.tobytes() + self.values.slot_bytes(slot) + error

    def merge(self, slot: int, blob: bytes) -> None:
        """Merges another state of the same group (from `state_bytes`) into `slot`."""
        head = np.frombuffer(blob, np.int64, 3)
        self.events[slot] += head[0]
        self.dropped[slot] += head[1]
        at = head.nbytes
        parts = []
        for dtype, shape in self.values.parts():
            part = np.frombuffer(blob, dtype, math.prod(shape), at).reshape(shape)
            parts.append(part)
            at += part.nbytes
        if head[2]:
            self.set_error(slot, blob[at : at + int(head[2])].decode())
        self.values.merge(slot, parts)

    def add_problem(self, slot: int, message: str) -> None:
        """A bad event of group `slot`: counted (on_error drop) or its message kept."""
        if self.spec.on_error == "drop":
            self.dropped[slot] += 1
        else:
            self.set_error(slot, message)

    def set_error(self, slot: int, message: str) -> None:
        """Keeps the smallest message: the same one whatever order the events come in."""
        current = self.errors[slot]
        if current is None or message < current:
            self.errors[slot] = message

    def finish(self) -> np.ndarray:
        """The tensors, (slots, size) of the aggregate's dtype: untargeted elements hold
        `fill`."""
        spec = self.spec
        return self.values.finish(np.full((self.slots, spec.size), spec.fill, spec.element_dtype))
