"""The aggregation's shuffle rows: the one layout the map side writes and the reduce side reads.

The combiner reads the events under fixed names (`AggPlan` gives them): the group key
``__key{j}``, the raw coordinates ``__coord{m}``, each value column (cast to its
aggregate's type) ``__value{v}`` and each order_by column ``__order{o}``. It sends on rows
of a key each: the key, then the key's events, column by column: per distinct set of
coordinates the flat offsets ``__cell{g}``, and each value column, as the little-endian
bytes of one number per event (`pack_numbers`: Spark moves a ``binary`` as one value, an
``array`` element by element, bench/spark/RESULTS.md); a bad event's offset is -1, and where
some events of a row have no value, ``__valid{v}`` holds a byte per event (1: a value).
Slices, booleans and the orders travel as lists. Then a ``__kind`` and a ``__blob``:

- EVENTS: events of the key, in the lists;
- STATE: the combined states of a key (every aggregate) in the blob (`pack_parts`);
- PROBLEM: a bad event of aggregate i (on_error keep or drop): i and its message
  (`pack_problem`).

The finisher writes ``__agg{i}`` per aggregate: the tensor struct of the aggregate's layout
with ``error``, then COUNT_FIELDS.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
from pyspark.sql import types as T

from ..core.element_types import DATA, DTYPE, ERROR, SHAPE, VALUES, spark_type
from ..specs.agg_spec import AggSpec
from .states import AggState

KIND, BLOB = "__kind", "__blob"
EVENTS, STATE, PROBLEM = 0, 1, 2
COUNT_FIELDS = ("events", "dropped")  # after the tensor struct's fields in a result


def result_names(layout: str) -> list[str]:
    """The fields of an aggregate's result: its tensor's (in `layout`), error, counts."""
    tensor = [VALUES, SHAPE] if layout == "arrays" else [DATA, SHAPE, DTYPE]
    return [*tensor, ERROR, *COUNT_FIELDS]


def key_name(j: int) -> str:
    """The j-th group-by column."""
    return f"__key{j}"


def coord_name(m: int) -> str:
    """The m-th distinct coordinate column, as the events arrive."""
    return f"__coord{m}"


def cell_name(g: int) -> str:
    """The flat offsets of cell group g (aggregates sharing coordinates and extents)."""
    return f"__cell{g}"


def value_name(v: int) -> str:
    """The v-th distinct value column, cast to its aggregates' type."""
    return f"__value{v}"


def valid_name(v: int) -> str:
    """Which events of packed value column v have a value (null: all of them)."""
    return f"__valid{v}"


def order_name(o: int) -> str:
    """The o-th distinct order_by column."""
    return f"__order{o}"


def result_name(i: int) -> str:
    """Aggregate i's result column, before it takes the user's name."""
    return f"__agg{i}"


class ValueColumn(NamedTuple):
    """A value column as its aggregates read it: each event's value, or its slice."""

    updates: str
    element: str  # the aggregates' element type
    size: int  # values per event
    sliced: bool  # an array or tensor per event (a slice), not a value

    def spark_type(self) -> T.DataType:
        """Its type as the folds read it (a slice of any layout as an array)."""
        return T.ArrayType(spark_type(self.element)) if self.sliced else spark_type(self.element)

    @property
    def as_bytes(self) -> bool:
        """Packed as bytes (`pack_numbers`): a number per event, not a slice or a boolean."""
        return not self.sliced and self.element != "boolean"


@dataclass(frozen=True)
class AggPlan:
    """What the tasks of one `aggregate` need: the key's names (for messages), the
    aggregates (dtypes settled) and which shared event columns each one reads."""

    key_names: tuple[str, ...]
    specs: tuple[AggSpec, ...]
    flush_events: int | None = None  # FLUSH_EVENTS unless the session's conf says otherwise

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(key_name(j) for j in range(len(self.key_names)))

    @property
    def coordinates(self) -> tuple[str, ...]:
        """The distinct coordinate columns, read as ``__coord{m}``."""
        return tuple(dict.fromkeys(c for s in self.specs for c in s.indices))

    @property
    def cell_groups(self) -> tuple[tuple[Any, ...], ...]:
        """Aggregates with the same coordinates, leading extents and slice share an offset."""
        return tuple(dict.fromkeys(_cell_group(s) for s in self.specs))

    @property
    def values(self) -> tuple[ValueColumn, ...]:
        """The distinct value columns, read as ``__value{v}``."""
        return tuple(dict.fromkeys(_value_group(s) for s in self.specs))

    @property
    def orders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.order_by for s in self.specs if s.order_by))

    def cell_of(self, i: int) -> str:
        return cell_name(self.cell_groups.index(_cell_group(self.specs[i])))

    def value_of(self, i: int) -> str:
        return value_name(self.values.index(_value_group(self.specs[i])))

    def order_of(self, i: int) -> str | None:
        order = self.specs[i].order_by
        return None if order is None else order_name(self.orders.index(order))

    def coordinate_names(self, i: int) -> list[str]:
        return [coord_name(self.coordinates.index(c)) for c in self.specs[i].indices]

    def state_bytes(self) -> int:
        """Bytes of one group's states, all aggregates (what combining a group costs)."""
        return sum(len(AggState(spec, 1).state_bytes(0)) for spec in self.specs)


def _cell_group(spec: AggSpec) -> tuple[Any, ...]:
    return (spec.indices, spec.shape[: spec.k], spec.slice_size)


def _value_group(spec: AggSpec) -> ValueColumn:
    sliced = spec.k < len(spec.shape)
    return ValueColumn(spec.updates, spec.dtype or "", spec.slice_size, sliced)


def packed_schema(events: T.StructType, plan: AggPlan) -> T.StructType:
    """The combiner's rows for events of `event_columns`' schema (the map side's output)."""
    fields = {f.name: f for f in events.fields}
    packed: dict[str, T.DataType] = {
        cell_name(g): T.BinaryType() for g in range(len(plan.cell_groups))
    }
    for v, value in enumerate(plan.values):
        if value.as_bytes:
            packed[value_name(v)] = packed[valid_name(v)] = T.BinaryType()
        else:
            packed[value_name(v)] = T.ArrayType(value.spark_type())
    for o in range(len(plan.orders)):
        packed[order_name(o)] = T.ArrayType(fields[order_name(o)].dataType)
    return T.StructType(
        [fields[k] for k in plan.keys]
        + [T.StructField(c, kind) for c, kind in packed.items()]
        + [T.StructField(KIND, T.ByteType(), False), T.StructField(BLOB, T.BinaryType(), True)]
    )


def pack_numbers(numbers: np.ndarray, starts: np.ndarray) -> pa.BinaryArray:
    """A row per run of `numbers` (run r from ``starts[r]`` to the next start): its bytes."""
    ends = np.append(starts, len(numbers)).astype(np.int64) * numbers.dtype.itemsize
    offsets = pa.py_buffer(ends.astype(np.int32))
    data = pa.py_buffer(np.ascontiguousarray(numbers))
    return pa.Array.from_buffers(pa.binary(), len(starts), [None, offsets, data])


def _byte_offsets(column: pa.Array) -> np.ndarray:
    return np.frombuffer(column.buffers()[1], np.int32, len(column) + 1, column.offset * 4)


def unpack_numbers(column: pa.Array, dtype: np.dtype) -> np.ndarray:
    """The numbers of the rows of `pack_numbers`, one row after another (no row null)."""
    offsets = _byte_offsets(column)
    count = (int(offsets[-1]) - int(offsets[0])) // dtype.itemsize
    return np.frombuffer(column.buffers()[2], dtype, count, int(offsets[0]))


def events_per_row(cells: pa.Array) -> np.ndarray:
    """How many events each packed row holds, from one of its ``__cell`` columns."""
    return np.diff(_byte_offsets(cells)).astype(np.int64) // 4


def unpack_valid(column: pa.Array, lengths: np.ndarray) -> np.ndarray | None:
    """Which events of the rows have a value (`lengths`: events per row), or None for all:
    a null row's events all have one."""
    if column.null_count == len(column):
        return None
    rows = np.flatnonzero(np.asarray(column.is_valid()))
    events = run_positions((np.cumsum(lengths) - lengths)[rows], lengths[rows])
    at = run_positions(_byte_offsets(column)[:-1][rows].astype(np.int64), lengths[rows])
    valid = np.ones(int(lengths.sum()), bool)
    valid[events] = np.frombuffer(column.buffers()[2], np.uint8)[at] != 0
    return valid


def run_positions(firsts: np.ndarray, lengths: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """The positions of runs, one run after another: run r from ``firsts[r]`` on,
    ``lengths[r]`` long."""
    positions: np.ndarray = np.arange(int(lengths.sum()), dtype=dtype)
    positions += np.repeat((firsts - (np.cumsum(lengths) - lengths)).astype(dtype), lengths)
    return positions


def pack_parts(parts: list[bytes]) -> bytes:
    """Byte strings in one blob, each after its length (a STATE row: a state per aggregate)."""
    return b"".join(struct.pack("<Q", len(p)) + p for p in parts)


def unpack_parts(blob: bytes) -> list[bytes]:
    """The byte strings of `pack_parts`."""
    parts, at = [], 0
    while at < len(blob):
        (n,) = struct.unpack_from("<Q", blob, at)
        parts.append(blob[at + 8 : at + 8 + n])
        at += 8 + n
    return parts


def pack_problem(aggregate: int, message: str) -> bytes:
    """A PROBLEM row's blob: which aggregate, and the message."""
    return struct.pack("<I", aggregate) + message.encode()


def unpack_problem(blob: bytes) -> tuple[int, str]:
    """The aggregate and the message of `pack_problem`."""
    (aggregate,) = struct.unpack_from("<I", blob)
    return aggregate, blob[4:].decode()
