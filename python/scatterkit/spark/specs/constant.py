"""A constant tensor input (the same tensor in every row), checked where it is read."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.element_types import element_type, numpy_dtype


@dataclass(frozen=True)
class Constant:
    """The same tensor in every row: `shape` filled with `fill`, of Spark type `dtype`."""

    shape: tuple[int, ...]
    dtype: str
    fill: Any = 0


def check_constant(shape: Any, fill: Any, dtype: str) -> Constant:
    """The constant, checked: a ValueError names the field at fault.

    `fill` must be a value `dtype` holds exactly (a float fill is rounded, as floats are, but
    may not overflow): the executors fill with NumPy, which would fail or truncate in a task.
    """
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, np.ndarray)):
        raise ValueError(f"'shape' must be a list of non-negative integers, got {shape!r}")
    if not all(isinstance(d, numbers.Integral) and not _is_bool(d) and int(d) >= 0 for d in shape):
        raise ValueError(f"'shape' must be a list of non-negative integers, got {list(shape)}")
    name = element_type(dtype)
    return Constant(tuple(int(d) for d in shape), name, _fill_value(fill, name))


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _fill_value(fill: Any, dtype: str) -> bool | int | float:
    """`fill` as the Python bool, int or float that `dtype` holds exactly (else ValueError)."""
    if _is_bool(fill):
        if dtype != "boolean":
            raise ValueError(f"'fill' {fill!r} is a boolean; dtype {dtype} takes numbers")
        return bool(fill)
    if not isinstance(fill, numbers.Real):
        raise ValueError(f"'fill' must be a number or a boolean, got {fill!r}")
    if dtype == "boolean":
        if fill not in (0, 1):
            raise ValueError(f"'fill' {fill!r} is not a boolean (true, false, 0 or 1)")
        return bool(fill)
    kind = numpy_dtype(dtype)
    if kind.kind == "i":
        integral = isinstance(fill, numbers.Integral) or (
            math.isfinite(fill) and float(fill).is_integer()
        )
        if not integral:
            raise ValueError(
                f"'fill' {fill!r} is not an integer; dtype {dtype} holds integers only"
            )
        info = np.iinfo(kind)
        # Exact: an integer as it is, an integral float through the float it is.
        whole = int(fill) if isinstance(fill, numbers.Integral) else int(float(fill))
        if not info.min <= whole <= info.max:
            raise ValueError(
                f"'fill' {fill!r} is out of range for {dtype} ({info.min} to {info.max})"
            )
        return whole
    # Rounding to the nearest float is what a float tensor means; overflowing to inf is not.
    try:
        value = float(fill)
    except OverflowError:
        value = math.inf
    with np.errstate(over="ignore"):
        overflows = not np.isfinite(kind.type(value))
    if overflows and (isinstance(fill, numbers.Integral) or math.isfinite(fill)):
        limit = float(np.finfo(kind).max)
        raise ValueError(
            f"'fill' {fill!r} is out of range for {dtype} (magnitude {limit:.7g} at most)"
        )
    return value
