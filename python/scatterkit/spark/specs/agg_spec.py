"""What one event aggregation computes: `AggSpec`, checked once on the driver.

An aggregation builds, per group of events, the tensor of `shape` that ScatterNDUpdate-15
builds from the group's rows: `indices` names one integer column per leading coordinate
(k of them), `updates` a value column (k equal to the rank) or an array column of
``prod(shape[k:])`` values (k below the rank: the row updates a slice).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.element_types import element_type, numpy_dtype
from ..core.errors import SpecError
from ..core.options import AGG_ON_ERROR, LAYOUTS
from .constant import check_constant

REDUCTIONS = ("sum", "prod", "min", "max", "mean", "none")
_FLOATS = ("float", "double")


@dataclass(frozen=True)
class AggSpec:
    """One aggregate: ScatterNDUpdate-15 over a group's events. `dtype` None: the updates'
    type, settled (`with_dtype`) once the events' schema is known."""

    indices: tuple[str, ...]
    updates: str
    shape: tuple[int, ...]
    reduction: str = "sum"
    fill: Any = 0
    dtype: str | None = None
    order_by: str | None = None
    on_error: str = "fail"
    layout: str = "arrays"  # of the tensor written: "arrays" or "binary"

    @property
    def k(self) -> int:
        return len(self.indices)

    @property
    def slice_size(self) -> int:
        """Elements one event updates: 1, or ``prod(shape[k:])`` for a slice."""
        return math.prod(self.shape[self.k :])

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def element_dtype(self) -> np.dtype:
        if self.dtype is None:
            raise SpecError("the aggregate's dtype is not settled yet (see AggSpec.with_dtype)")
        return numpy_dtype(self.dtype)

    def columns(self) -> tuple[str, ...]:
        """The event columns this aggregate reads."""
        extra = (self.order_by,) if self.order_by else ()
        return (*self.indices, self.updates, *extra)

    def with_dtype(self, updates_type: str) -> AggSpec:
        """The spec with `dtype` settled: the given one, else the updates' element type."""
        if self.dtype is not None:
            return self
        return check_agg(**{**self.to_dict(), "dtype": updates_type})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "indices": list(self.indices),
            "updates": self.updates,
            "shape": list(self.shape),
            "reduction": self.reduction,
            "fill": self.fill,
            "on_error": self.on_error,
        }
        if self.dtype is not None:
            out["dtype"] = self.dtype
        if self.order_by is not None:
            out["order_by"] = self.order_by
        if self.layout != "arrays":
            out["layout"] = self.layout
        return out


def check_agg(
    indices: Any,
    updates: Any,
    shape: Any,
    *,
    reduction: str = "sum",
    fill: Any = 0,
    dtype: str | None = None,
    order_by: str | None = None,
    on_error: str = "fail",
    layout: str = "arrays",
) -> AggSpec:
    """The aggregate, checked; a SpecError (a ValueError) names the argument at fault."""

    if isinstance(indices, str):
        indices = [indices]
    if not isinstance(indices, Sequence) or not all(_is_name(c) for c in indices):
        raise SpecError(f"'indices' must be a list of column names, got {indices!r}")
    if not _is_name(updates):
        raise SpecError(f"'updates' must be a column name, got {updates!r}")
    try:
        constant = check_constant(shape, 0, "double")
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    dims = constant.shape
    if not 1 <= len(indices) <= len(dims):
        raise SpecError(
            f"{len(indices)} index column(s) for a tensor of rank {len(dims)}: "
            "expected 1 to the rank (one per leading coordinate)"
        )
    if reduction not in REDUCTIONS:
        raise SpecError(f"'reduction' must be one of {list(REDUCTIONS)}, got {reduction!r}")
    if on_error not in AGG_ON_ERROR:
        raise SpecError(f"'on_error' must be one of {list(AGG_ON_ERROR)}, got {on_error!r}")
    if reduction == "none" and not _is_name(order_by):
        raise SpecError("reduction 'none' needs 'order_by': the column whose greatest value wins")
    if reduction != "none" and order_by is not None:
        raise SpecError(f"'order_by' is for reduction 'none', not {reduction!r}")
    if dtype is not None:
        try:
            dtype = element_type(dtype)
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        if reduction == "prod" and dtype in _FLOATS:
            raise SpecError(
                f"reduction 'prod' of {dtype} is refused: a float product rounds at every "
                "step, so its bits would depend on the order of the events (the partitioning); "
                "aggregate integers, or sums of logarithms"
            )
        if reduction == "mean" and dtype == "boolean":
            raise SpecError("reduction 'mean' of booleans is not defined (as in v12); cast to int")
        try:
            fill = check_constant([], fill, dtype).fill
        except ValueError as exc:
            raise SpecError(str(exc)) from None
    elif not isinstance(fill, (bool, int, float, np.generic)):
        raise SpecError(f"'fill' must be a number or a boolean, got {fill!r}")
    if layout not in LAYOUTS:
        raise SpecError(f"'layout' must be one of {list(LAYOUTS)}, got {layout!r}")
    return AggSpec(
        tuple(indices), updates, dims, reduction, fill, dtype, order_by, on_error, layout
    )


def agg_from_dict(raw: Any, where: str) -> AggSpec:
    """An aggregate of a job specification (the keywords of `check_agg`)."""
    if not isinstance(raw, Mapping):
        raise SpecError(f"{where}: expected an object, got {type(raw).__name__}")
    allowed = {"indices", "updates", "shape", "reduction", "fill", "dtype", "order_by", "on_error"}
    allowed.add("layout")
    unknown = sorted(set(raw) - allowed)
    missing = sorted({"indices", "updates", "shape"} - set(raw))
    if missing:
        raise SpecError(f"{where}: missing {missing}")
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {unknown}; allowed {sorted(allowed)}")
    try:
        return check_agg(**raw)
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class AggregateStep:
    """A job's aggregation: events grouped by `by`, one output column per aggregate."""

    by: tuple[str, ...]
    aggregates: Mapping[str, AggSpec]

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": list(self.by),
            "aggregates": {n: a.to_dict() for n, a in self.aggregates.items()},
        }


def aggregate_from_dict(raw: Any, where: str) -> AggregateStep:
    """A job's ``aggregate`` entry: ``{"by": [COL, ...], "aggregates": {NAME: {...}}}``."""
    if not isinstance(raw, Mapping) or set(raw) != {"by", "aggregates"}:
        raise SpecError(f"{where}: expected {{'by': [columns], 'aggregates': {{name: {{...}}}}}}")
    by = raw["by"]
    if isinstance(by, str):
        by = [by]
    if not isinstance(by, list) or not by or not all(_is_name(c) for c in by):
        raise SpecError(f"{where}.by: expected a list of column names, got {by!r}")
    aggregates = raw["aggregates"]
    if not isinstance(aggregates, Mapping) or not aggregates:
        raise SpecError(f"{where}.aggregates: expected an object of name: aggregate")
    parsed = {}
    for name, entry in aggregates.items():
        if not _is_name(name) or name in by:
            raise SpecError(f"{where}.aggregates: {name!r} must be a new column name")
        parsed[name] = agg_from_dict(entry, f"{where}.aggregates.{name}")
    return AggregateStep(tuple(by), parsed)


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value)
