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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import scatterkit as sk

from .agg_spec import AggSpec

_FLOAT_KINDS = "f"


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


def _ints(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """An integer column as int64 values and a validity mask."""
    valid = np.asarray(array.is_valid())
    values = np.asarray(array.fill_null(0).cast(pa.int64()), dtype=np.int64)
    return values, valid


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
        wrapped = np.where(values < 0, values + extent, values)
        ok = valid & (wrapped >= 0) & (wrapped < extent)
        for row in np.flatnonzero(~ok & good):
            problems[int(row)] = _coordinate_problem(
                spec, axis, values[row] if valid[row] else None
            )
        good &= ok
        offset += np.where(ok, wrapped, 0) * stride
        stride *= extent
    return offset, good, problems


def slice_problems(spec: AggSpec, updates: pa.Array) -> dict[int, str]:
    """Rows whose (non-null) slice does not hold ``prod(shape[k:])`` values."""
    if spec.k == len(spec.shape):
        return {}
    if not (pa.types.is_list(updates.type) or pa.types.is_large_list(updates.type)):
        raise TypeError(
            f"updates {spec.updates!r} must be an array column for {spec.k} index column(s) "
            f"of a rank-{len(spec.shape)} tensor, got {updates.type}"
        )
    size = spec.slice_size
    lengths = np.asarray(pc.list_value_length(updates).fill_null(size), dtype=np.int64)
    return {
        int(row): f"updates {spec.updates!r} holds {lengths[row]} value(s); a slice of shape "
        f"{list(spec.shape[spec.k :])} takes {size}"
        for row in np.flatnonzero(lengths != size)
    }


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
    """Checks and flattens a batch of events (columns as Arrow arrays, nulls allowed)."""
    offset, good, problems = locate(spec, coordinates)
    wrong = slice_problems(spec, updates)
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


class AggState:
    """States of one aggregate for `slots` groups, plus each group's counts and error."""

    def __init__(self, spec: AggSpec, slots: int):
        self.spec = spec
        self.slots = slots
        self.dtype = spec.element_dtype
        self.events = np.zeros(slots, np.int64)
        self.dropped = np.zeros(slots, np.int64)
        self.errors: list[str | None] = [None] * slots
        size, reduction = spec.size, spec.reduction
        self.exact = self.dtype.kind in _FLOAT_KINDS and reduction in ("sum", "mean")
        self.int_mean = self.dtype.kind != "f" and reduction == "mean"
        # Exact sums keep their terms until they must become states (a merge, a state sent
        # on): finishing terms straight with the exact kernel beats a state per element.
        self.terms: list[tuple[np.ndarray, np.ndarray]] | None = None
        self.merged: dict[int, np.ndarray] = {}  # slot -> state merged into it (terms kept)
        if self.exact:
            self.arrays = []
            self.terms = []
        elif self.int_mean:  # exact integer sums as two int64 halves, and counts
            self.arrays = [np.zeros((slots, size), np.int64) for _ in range(3)]
        else:
            acc = np.full((slots, size), _identity(reduction, self.dtype), self.dtype)
            self.arrays = [acc, np.zeros((slots, size), bool)]
            if reduction == "none":
                lowest = np.iinfo(np.int64).min
                self.arrays += [np.full((slots, size), lowest, np.int64) for _ in range(2)]

    # -- folding -------------------------------------------------------------------------
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
        self._fold_elements(targets, events.element_value, events.element_order)

    def _fold_elements(
        self, targets: np.ndarray, values: np.ndarray, order: np.ndarray | None
    ) -> None:
        if len(targets) == 0:
            return
        reduction = self.spec.reduction
        if self.terms is not None:
            self.terms.append((targets, values))
        elif self.int_mean:
            hi, lo, count = (a.reshape(-1) for a in self.arrays)
            wide = values.astype(np.int64)
            np.add.at(hi, targets, wide >> 32)
            np.add.at(lo, targets, wide & 0xFFFFFFFF)
            np.add.at(count, targets, 1)
        elif reduction == "none":
            assert order is not None  # an order_by column is required for none
            self._fold_latest(targets, values, order)
        else:
            acc, hit = (a.reshape(-1) for a in self.arrays)
            exact = self.dtype.kind == "f"
            sk.scatter_elements_update(
                acc, targets, values, 0, reduction=reduction, exact=exact, out=acc
            )
            hit[targets] = True

    def _fold_latest(self, targets: np.ndarray, values: np.ndarray, order: np.ndarray) -> None:
        """Per element, the value of the greatest (order, value's total order) pair."""
        acc, hit, best_order, best_value = (a.reshape(-1) for a in self.arrays)
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

    # -- merging and shipping --------------------------------------------------------------
    def _parts(self) -> list[tuple[np.dtype, tuple[int, ...]]]:
        """The dtype and shape of each array of one slot's state, in `state_bytes` order."""
        if self.terms is not None:
            return [(np.dtype(np.uint64), (self.spec.size, sk.exact_state_words(self.dtype)))]
        return [(a.dtype, a.shape[1:]) for a in self.arrays]

    def _slot_state(self, slot: int) -> np.ndarray:
        """The exact state (1, size, words) of one slot kept as terms: its merged states and
        its terms."""
        size = self.spec.size
        merged = self.merged.get(slot)
        state = merged.copy() if merged is not None else sk.exact_state((1, size), self.dtype)
        flat = state.reshape(-1, state.shape[-1])
        for targets, values in self.terms or ():
            mine = targets // size == slot
            sk.exact_fold(flat, (targets[mine] % size)[:, None], values[mine], dtype=self.dtype)
        return state

    def state_bytes(self, slot: int) -> bytes:
        """One group's state, counts and error as bytes (fixed layout for this spec)."""
        error = (self.errors[slot] or "").encode()
        head = np.array([self.events[slot], self.dropped[slot], len(error)], np.int64)
        if self.terms is not None:
            arrays = self._slot_state(slot).tobytes()
        else:
            arrays = b"".join(np.ascontiguousarray(a[slot]).tobytes() for a in self.arrays)
        return head.tobytes() + arrays + error

    def merge(self, slot: int, blob: bytes) -> None:
        """Merges another state of the same group (from `state_bytes`) into `slot`."""
        head = np.frombuffer(blob, np.int64, 3)
        self.events[slot] += head[0]
        self.dropped[slot] += head[1]
        at = head.nbytes
        parts = []
        for dtype, shape in self._parts():
            part = np.frombuffer(blob, dtype, math.prod(shape), at).reshape(shape)
            parts.append(part)
            at += part.nbytes
        if head[2]:
            self.set_error(slot, blob[at : at + int(head[2])].decode())
        if self.terms is not None:  # kept beside the terms, for this slot only
            mine = self.merged.get(slot)
            if mine is None:
                mine = self.merged[slot] = sk.exact_state((1, self.spec.size), self.dtype)
            sk.exact_merge(mine, parts[0][None], dtype=self.dtype, out=mine)
            return
        base = slot * self.spec.size
        if self.int_mean:
            for mine, theirs in zip(self.arrays, parts):
                mine[slot] += theirs
            return
        hit = np.flatnonzero(parts[1])
        if self.spec.reduction == "none":
            self._fold_latest(base + hit, parts[0][hit], parts[2][hit])
        else:
            self._fold_elements(base + hit, parts[0][hit], None)

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

    # -- finishing ---------------------------------------------------------------------------
    def finish(self) -> np.ndarray:
        """The tensors, (slots, size) of the aggregate's dtype: untargeted elements hold
        `fill`."""
        spec, dtype = self.spec, self.dtype
        fill = np.full((self.slots, spec.size), spec.fill, dtype)
        if self.terms is not None:
            flat = fill.reshape(-1)
            if self.terms:
                targets = np.concatenate([t for t, _ in self.terms])
                values = np.concatenate([v for _, v in self.terms])
                # each targeted element's exact sum (or mean), rounded once; the rest keep fill
                sk.scatter_elements_update(
                    flat, targets, values, 0, reduction=spec.reduction, use_init_val=False,
                    exact=True, out=flat,
                )  # fmt: skip
            for slot in self.merged:
                fill[slot] = sk.exact_finish(
                    self._slot_state(slot), dtype=dtype, reduction=spec.reduction,
                    data=np.full((1, spec.size), spec.fill, dtype),
                )[0]  # fmt: skip
            return fill
        if self.int_mean:
            return self._finish_int_mean(fill)
        acc, hit = self.arrays[0], self.arrays[1]
        return np.where(hit, acc, fill)

    def _finish_int_mean(self, fill: np.ndarray) -> np.ndarray:
        hi, lo, count = self.arrays
        hi = hi + (lo >> 32)  # carry: lo now in [0, 2**32)
        lo = lo & 0xFFFFFFFF
        out = fill.copy()
        hit = count > 0
        small = hit & (np.abs(hi) < (1 << 30))  # the whole sum fits in int64
        total = (hi[small] << 32) + lo[small]
        out[small] = np.floor_divide(total, count[small]).astype(self.dtype)
        for i, j in zip(*np.nonzero(hit & ~small)):  # rare: Python's integers are exact
            out[i, j] = ((int(hi[i, j]) << 32) + int(lo[i, j])) // int(count[i, j])
        return out
