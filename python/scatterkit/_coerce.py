"""Argument coercion shared by the public functions.

The wrappers only turn Python arguments into the arrays and integers the
kernels take; shape rules and index checks live once, in C++.
"""

from __future__ import annotations

import functools
import math
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _core
from ._registry import ELEMENTS_REDUCTIONS, ND_REDUCTIONS

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

# dtype tags the kernels do arithmetic on; every other dtype moves as bytes.
_ARITHMETIC = {
    ("b", 1): "bool",
    ("i", 1): "int8",
    ("i", 2): "int16",
    ("i", 4): "int32",
    ("i", 8): "int64",
    ("u", 1): "uint8",
    ("u", 2): "uint16",
    ("u", 4): "uint32",
    ("u", 8): "uint64",
    ("f", 2): "float16",
    ("f", 4): "float32",
    ("f", 8): "float64",
}


# Cached: dtype.name is formatted afresh on every access (2 us, a quarter of a
# small call).
@functools.lru_cache(maxsize=256)
def dtype_tag(dtype: np.dtype) -> str:
    """The kernel's name for a dtype: an arithmetic type, or 'opaque' bytes."""
    if dtype.name == "bfloat16" and dtype.itemsize == 2:  # ml_dtypes.bfloat16
        return "bfloat16"
    return _ARITHMETIC.get((dtype.kind, dtype.itemsize), "opaque")


def _directly_writable(arr: np.ndarray) -> bool:
    return bool(arr.flags.c_contiguous and arr.flags.aligned)


def as_c_array(arr: np.ndarray, dtype: Any = None) -> np.ndarray:
    """`arr` as a C-contiguous, aligned array (of `dtype`): itself when it already is.

    np.require makes that check too, at about the cost of a small call's whole kernel.
    """
    if _directly_writable(arr) and (dtype is None or arr.dtype == dtype):
        return arr
    return np.require(arr, dtype=dtype, requirements=["C", "A"])


def _asarray(value: Any, name: str, op: str) -> np.ndarray:
    """np.asarray, with a ragged nested list reported against the op and the argument."""
    try:
        return np.asarray(value)
    except ValueError as exc:  # "setting an array element with a sequence"
        raise ValueError(f"{op}: {name} is not a rectangular array: {exc}") from exc


def as_data(data: Any, op: str) -> np.ndarray:
    """`data` as an ndarray in native byte order (no copy when it already is)."""
    arr = _asarray(data, "data", op)
    if arr.dtype.hasobject:
        raise TypeError(
            f"{op}: data of dtype {arr.dtype} holds Python objects; object arrays are not supported"
        )
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def as_indices(indices: Any, op: str) -> np.ndarray:
    """Indices as a C-contiguous int32, int64 or uint64 array (lossless widening)."""
    given_array = isinstance(indices, np.ndarray)
    arr = _asarray(indices, "indices", op)
    if not given_array and arr.dtype.kind in "fO":
        if arr.size == 0:
            arr = arr.astype(np.int64)  # an empty Python list
        else:
            _check_python_int_indices(indices, op)
    kind, size = arr.dtype.kind, arr.dtype.itemsize
    if kind not in "iu":
        raise TypeError(f"{op}: indices must be an integer array, got dtype {arr.dtype}")
    target: type[np.integer[Any]]
    if kind == "i":
        target = np.int32 if size <= 4 else np.int64
    else:
        target = np.int32 if size <= 2 else (np.int64 if size == 4 else np.uint64)
    return as_c_array(arr, target)


def _check_python_int_indices(indices: Any, op: str) -> None:
    """Python ints that NumPy could not give one integer dtype (as [2**63, -1] or
    [2**64]) are indices out of every index type's range: an IndexError, as for
    any out-of-bounds index, rather than "not an integer array"."""
    values = np.asarray(indices, dtype=object).reshape(-1)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        return  # genuinely not integers: the caller's TypeError
    for value in values:
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise IndexError(f"{op}: index {value} is out of bounds (indices must fit in int64)")


def _text_width(dtype: np.dtype) -> int:
    """Characters (bytes for S) a string dtype holds."""
    return dtype.itemsize // (4 if dtype.kind == "U" else 1)


def _check_strings_fit(updates: Any, converted: np.ndarray, op: str) -> None:
    """NumPy cuts a value's text short to fit a fixed-width string dtype ('abcd' into S3
    gives b'abc', None gives b'Non'); for Python values that is a value out of the dtype's
    range, an error like 300 into uint8. Trailing NULs are not kept by these dtypes."""
    width = _text_width(converted.dtype)
    natural = np.asarray(updates)
    if natural.dtype.kind in "SU" and _text_width(natural.dtype) <= width:
        return  # strings, none longer than the dtype holds
    for value in np.asarray(updates, dtype=object).reshape(-1):
        text = value if isinstance(value, (str, bytes)) else str(value)
        kept = text.rstrip(b"\0") if isinstance(text, bytes) else text.rstrip("\0")
        if len(kept) > width:
            raise ValueError(
                f"{op}: updates value {value!r} does not fit in dtype {converted.dtype}"
            )


def as_updates(updates: Any, dtype: np.dtype, op: str) -> np.ndarray:
    """Updates in data's dtype.

    Arrays (and NumPy scalars) cast under NumPy's same_kind rule; Python scalars and
    lists take data's dtype directly, as in NumPy assignment, but a value that does
    not fit is an error.
    """
    is_array = isinstance(updates, (np.ndarray, np.generic)) or hasattr(updates, "__array__")
    if is_array:
        arr = np.asarray(updates)
        if arr.dtype != dtype:
            if not np.can_cast(arr.dtype, dtype, casting="same_kind"):
                raise TypeError(
                    f"{op}: cannot cast updates from dtype {arr.dtype} to data dtype {dtype} "
                    "under the 'same_kind' rule"
                )
            # NumPy's same_kind result (a float overflow gives inf), without its warning:
            # the cast is the documented behaviour, not an accident.
            try:
                with np.errstate(over="ignore", invalid="ignore"):
                    arr = arr.astype(dtype, casting="same_kind")
            except ValueError as exc:  # bytes that are not ASCII into a str dtype, say
                raise ValueError(
                    f"{op}: updates of dtype {arr.dtype} cannot be cast to data dtype {dtype}: "
                    f"{exc}"
                ) from exc
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                arr = np.asarray(updates, dtype=dtype)
        except (OverflowError, RuntimeWarning, DeprecationWarning) as exc:
            raise ValueError(f"{op}: updates value out of range for dtype {dtype}: {exc}") from exc
        except (TypeError, ValueError) as exc:
            _asarray(updates, "updates", op)  # a ragged nested list is a ValueError
            raise TypeError(f"{op}: updates cannot be converted to dtype {dtype}: {exc}") from exc
        if dtype.kind in "SU":
            _check_strings_fit(updates, arr, op)
    if arr.dtype.hasobject:
        raise TypeError(f"{op}: updates of dtype {arr.dtype} hold Python objects")
    return as_c_array(arr, dtype)


def _check_integer_array(arr: np.ndarray, name: str, op: str) -> None:
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{op}: {name} must be an integer, got dtype {arr.dtype}")


def as_int(value: Any, name: str, op: str) -> int:
    """An integer attribute: int, NumPy integer, 0-D or one-element 1-D array."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be an integer, got a bool")
    if isinstance(value, (int, np.integer)):
        return operator.index(value)
    arr = np.asarray(value)
    _check_integer_array(arr, name, op)
    if arr.ndim > 1 or arr.size != 1:
        raise ValueError(
            f"{op}: {name} must be a scalar or a one-element 1-D array, got shape {arr.shape}"
        )
    return int(arr.reshape(()))


def as_int_list(value: Any, name: str, op: str) -> list[int]:
    """A slice parameter as a list: a scalar gives one element."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be an integer, got a bool")
    if isinstance(value, (int, np.integer)):
        return [operator.index(value)]
    if isinstance(value, (list, tuple)):
        # Element by element: Python ints beyond int64 are valid (start/stop/step clamp).
        if any(isinstance(v, (list, tuple, np.ndarray)) and np.ndim(v) > 0 for v in value):
            raise ValueError(f"{op}: {name} must be a scalar or a 1-D sequence")
        return [as_int(v, name, op) for v in value]
    arr = np.asarray(value)
    if arr.size == 0 and arr.dtype.kind == "f" and not isinstance(value, np.ndarray):
        arr = arr.astype(np.int64)
    if arr.dtype.kind == "b":
        raise TypeError(f"{op}: {name} must be integers, got dtype bool")
    _check_integer_array(arr, name, op)
    if arr.ndim > 1:
        raise ValueError(f"{op}: {name} must be a scalar or a 1-D sequence, got shape {arr.shape}")
    return [int(v) for v in arr.reshape(-1)]


def clamp_int64(value: int) -> int:
    """Start/stop/step beyond int64 behave as the int64 limits (they clamp anyway)."""
    return min(max(value, _INT64_MIN), _INT64_MAX)


def check_axis_range(axis: int, op: str) -> int:
    if not _INT64_MIN <= axis <= _INT64_MAX:
        raise ValueError(f"{op}: axis {axis} is out of bounds")
    return axis


def as_axis(axis: Any, op: str) -> int:
    """A scatter op's axis: one integer that fits int64 (the range is checked in C++)."""
    return check_axis_range(as_int(axis, "axis", op), op)


def slice_params(
    start: Any, stop: Any, step: Any, axis: Any, op: str
) -> tuple[list[int], list[int], list[int], list[int]]:
    """slice_scatter's start/stop/step/axis: all scalars or sequences of one common length."""
    params = {
        key: as_int_list(value, key, op)
        for key, value in (("start", start), ("stop", stop), ("step", step), ("axis", axis))
    }
    lengths = [len(v) for v in params.values()]
    if len(set(lengths)) != 1 or lengths[0] == 0:
        raise ValueError(
            f"{op}: start, stop, step and axis must be scalars or sequences of the same "
            f"length >= 1, got lengths {lengths}"
        )
    starts, stops, steps = ([clamp_int64(v) for v in params[k]] for k in ("start", "stop", "step"))
    axes = [check_axis_range(v, op) for v in params["axis"]]
    return starts, stops, steps, axes


def check_bool(value: Any, name: str, op: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be a bool, got {type(value).__name__}")
    return bool(value)


_REDUCTIONS = frozenset(ELEMENTS_REDUCTIONS + ND_REDUCTIONS)


def check_reduction(value: Any, op: str, allowed: Sequence[str]) -> str:
    """A reduction name; an unknown one is reported with the op's own list, `allowed`.

    A known name the op lacks ("sub" for elements) is reported by C++.
    """
    if not isinstance(value, str):
        raise TypeError(f"{op}: reduction must be a string, got {type(value).__name__}")
    if value not in _REDUCTIONS:
        raise ValueError(
            f"{op}: unknown reduction {value!r} (expected one of {', '.join(allowed)})"
        )
    return value


# Outputs from this size up take recycled memory (_core.empty_output): a fresh
# mapping is zeroed page by page on first touch, which for tens of megabytes
# costs as much as the op. Smaller ones come from malloc's heap, already mapped.
# glibc maps a block afresh above its mmap threshold, which adapts between
# 128 KiB and 32 MiB to what the process freed before, so from about a megabyte
# a new array may or may not be a fresh mapping.
_RECYCLE_MIN_BYTES = 1 << 20


def new_output(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialised C-contiguous array for a result (or a temporary)."""
    if dtype.itemsize * math.prod(shape) >= _RECYCLE_MIN_BYTES:
        return _core.empty_output(dtype, list(shape))
    return np.empty(shape, dtype=dtype)


def _same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        and a.shape == b.shape
        and a.strides == b.strides
        and a.dtype == b.dtype
    )


def execute(
    op: str,
    data: np.ndarray,
    out: Any,
    reads: Sequence[np.ndarray],
    kernel: Callable[[np.ndarray, np.ndarray], None],
) -> np.ndarray:
    """Runs kernel(src, dst) with buffers it can use, honouring `out=`.

    The kernel validates everything before it writes, so when it raises, `out`
    (and `data` when out is data) is untouched. A non-contiguous `out`, or one that
    overlaps what the kernel reads, is written through a temporary.
    """
    if out is None:
        src = as_c_array(data)
        dst = new_output(src.shape, src.dtype)
        kernel(src, dst)
        return dst
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{op}: out must be a numpy.ndarray, got {type(out).__name__}")
    if not out.flags.writeable:
        raise ValueError(f"{op}: out is read-only")
    if out.shape != data.shape:
        raise ValueError(f"{op}: out shape {out.shape} does not match data shape {data.shape}")
    if out.dtype != data.dtype:
        if out.dtype.newbyteorder("=") == data.dtype:
            raise TypeError(
                f"{op}: out dtype {out.dtype.str} is not in native byte order; "
                f"results are written as {data.dtype.str}"
            )
        raise TypeError(f"{op}: out dtype {out.dtype} does not match data dtype {data.dtype}")

    overlaps_reads = any(np.may_share_memory(out, r) for r in reads)
    if _same_buffer(out, data):  # in place
        if _directly_writable(out) and not overlaps_reads:
            kernel(out, out)
        else:
            tmp = new_output(out.shape, out.dtype)
            np.copyto(tmp, out)
            kernel(tmp, tmp)
            np.copyto(out, tmp)
        return out
    src = as_c_array(data)
    if _directly_writable(out) and not overlaps_reads and not np.may_share_memory(out, src):
        kernel(src, out)
    else:
        tmp = new_output(src.shape, src.dtype)
        kernel(src, tmp)
        np.copyto(out, tmp)
    return out
