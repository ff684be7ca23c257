"""Plain-loop NumPy reference oracle for the scatterkit ops.

Written straight from the OpenVINO specifications of the five operations and the semantics
decisions the README's table records.  Every function walks the indices with ``np.ndindex`` in C
order and applies one update at a time, so duplicate indices fold in exactly the order the
design prescribes.  Nothing here is vectorised or clever: it is meant to be read and trusted.

Arithmetic rules encoded here:

* integers: sum/sub/prod wrap in two's complement (computed on Python ints, then wrapped);
  mean is exact (Python ints) with floor division, count = #updates (+1 with use_init_val).
* float32/float64: fold in their own type (NumPy scalars of that type).
* float16/bfloat16: fold in float32, round once when the target is written.
* bool: sum = OR, prod = AND, max = OR, min = AND, sub = XOR; mean is an error.
* min/max: NaN in either operand gives NaN.
* use_init_val=False: targeted positions start at the identity (sum/mean 0, prod 1,
  min +inf / type max, max -inf / type lowest; bool: sum/max False, prod/min True).
"""

from __future__ import annotations

import operator

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
HALF_DTYPES = (np.dtype(np.float16), BFLOAT16)
FLOAT_DTYPES = (np.dtype(np.float16), BFLOAT16, np.dtype(np.float32), np.dtype(np.float64))

ELEMENTS_REDUCTIONS = ("none", "sum", "prod", "min", "max", "mean")
ND_REDUCTIONS = ("none", "sum", "sub", "prod", "min", "max")


# --------------------------------------------------------------------------------------------
# small helpers


def native_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype`` in native byte order (structured fields included)."""
    return np.dtype(dtype).newbyteorder("=")


def _as_native_array(x) -> np.ndarray:
    a = np.asarray(x)
    return a.astype(native_dtype(a.dtype), copy=True)


def _check_integer_array(a: np.ndarray, what: str) -> None:
    if a.dtype == np.bool_ or a.dtype.kind not in "iu":
        raise TypeError(f"{what} must have an integer dtype, got {a.dtype}")


def _normalize_index(value, size: int, axis: int, allow_negative: bool) -> int:
    """An index value checked against ``[0, size)`` (or ``[-size, size)`` when allowed)."""
    v = int(value)
    if allow_negative and -size <= v < 0:
        v += size
    if not 0 <= v < size:
        raise IndexError(f"index {int(value)} is out of bounds for axis {axis} with size {size}")
    return v


def _scalar_int(x, what: str) -> int:
    """A scalar integer parameter: Python int, NumPy integer, 0-D or 1-element 1-D array."""
    a = np.asarray(x)
    _check_integer_array(a, what)
    if a.ndim > 1 or a.size != 1:
        raise ValueError(f"{what} must be a scalar or a 1-element 1-D array, got shape {a.shape}")
    return int(a.reshape(()))


def _normalize_axis(axis, rank: int) -> int:
    a = _scalar_int(axis, "axis")
    if not -rank <= a < rank:
        raise ValueError(f"axis {a} is out of range for rank {rank}")
    return a + rank if a < 0 else a


def _cast_updates(updates, dtype: np.dtype) -> np.ndarray:
    u = np.asarray(updates)
    if u.dtype != dtype:
        u = u.astype(dtype)
    return u


def _wrap_int(value: int, dtype: np.dtype) -> int:
    """Two's complement wrap of an exact Python int into ``dtype``."""
    bits = dtype.itemsize * 8
    value &= (1 << bits) - 1
    if dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


# --------------------------------------------------------------------------------------------
# reduction arithmetic, one element at a time


def _check_reducible(dtype: np.dtype, reduction: str) -> None:
    if reduction == "none":
        return
    if dtype == np.bool_:
        if reduction == "mean":
            raise TypeError("reduction 'mean' is not supported for bool data")
        return
    if dtype.kind in "iu" or dtype in FLOAT_DTYPES:
        return
    raise TypeError(f"reduction '{reduction}' is not supported for dtype {dtype}")


def _to_acc(x, dtype: np.dtype):
    """The accumulator value of one element of ``dtype``."""
    if dtype == np.bool_:
        return bool(x)
    if dtype.kind in "iu":
        return int(x)
    if dtype in HALF_DTYPES:
        return np.float32(x)
    return dtype.type(x)


def _acc_float_type(dtype: np.dtype):
    return np.float32 if dtype in HALF_DTYPES else dtype.type


def _identity(reduction: str, dtype: np.dtype):
    if dtype == np.bool_:
        return reduction in ("prod", "min")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return {
            "sum": 0,
            "mean": 0,
            "sub": 0,
            "prod": 1,
            "min": int(info.max),
            "max": int(info.min),
        }[reduction]
    t = _acc_float_type(dtype)
    return {
        "sum": t(0.0),
        "mean": t(0.0),
        "sub": t(0.0),
        "prod": t(1.0),
        "min": t(np.inf),
        "max": t(-np.inf),
    }[reduction]


def _float_min(a, b):
    if np.isnan(a):
        return a
    if np.isnan(b):
        return b
    return b if b < a else a


def _float_max(a, b):
    if np.isnan(a):
        return a
    if np.isnan(b):
        return b
    return b if b > a else a


def _combine(acc, u, reduction: str, dtype: np.dtype):
    """``acc`` folded with one more update ``u`` (both accumulator values)."""
    if dtype == np.bool_:
        if reduction in ("sum", "max"):
            return acc or u
        if reduction in ("prod", "min"):
            return acc and u
        if reduction == "sub":
            return acc != u
        raise AssertionError(reduction)
    if dtype.kind in "iu":
        if reduction == "mean":
            return acc + u  # exact, the mean never wraps
        if reduction == "sum":
            return _wrap_int(acc + u, dtype)
        if reduction == "sub":
            return _wrap_int(acc - u, dtype)
        if reduction == "prod":
            return _wrap_int(acc * u, dtype)
        if reduction == "min":
            return min(acc, u)
        if reduction == "max":
            return max(acc, u)
        raise AssertionError(reduction)
    with np.errstate(all="ignore"):
        if reduction in ("sum", "mean"):
            return acc + u
        if reduction == "sub":
            return acc - u
        if reduction == "prod":
            return acc * u
        if reduction == "min":
            return _float_min(acc, u)
        if reduction == "max":
            return _float_max(acc, u)
    raise AssertionError(reduction)


def _finalize(acc, count: int, reduction: str, dtype: np.dtype):
    if reduction != "mean":
        return acc
    if dtype.kind in "iu":
        return acc // count  # floor division: rounds toward -inf
    with np.errstate(all="ignore"):
        return acc / _acc_float_type(dtype)(count)


class _Folder:
    """Applies updates to targets one by one, keeping accumulators until ``finish``."""

    def __init__(self, out: np.ndarray, reduction: str, use_init_val: bool = True):
        self.out = out
        self.dtype = out.dtype
        self.reduction = reduction
        self.use_init_val = use_init_val
        self.acc: dict[tuple, object] = {}
        self.count: dict[tuple, int] = {}

    def apply(self, target: tuple, value) -> None:
        if self.reduction == "none":
            self.out[target] = value
            return
        if target not in self.acc:
            if self.use_init_val:
                self.acc[target] = _to_acc(self.out[target], self.dtype)
                self.count[target] = 1
            else:
                self.acc[target] = _identity(self.reduction, self.dtype)
                self.count[target] = 0
        self.acc[target] = _combine(
            self.acc[target], _to_acc(value, self.dtype), self.reduction, self.dtype
        )
        self.count[target] += 1

    def finish(self) -> np.ndarray:
        for target, acc in self.acc.items():
            value = _finalize(acc, self.count[target], self.reduction, self.dtype)
            with np.errstate(all="ignore"):  # float32 -> float16 may overflow to inf
                self.out[target] = value
        return self.out


# --------------------------------------------------------------------------------------------
# the ops


def ref_scatter_update(data, indices, updates, axis, allow_negative: bool = False) -> np.ndarray:
    """ScatterUpdate-3: ``out[..., indices[m..p], ...] = updates[..., m..p, ...]``."""
    out = _as_native_array(data)
    indices = np.asarray(indices)
    _check_integer_array(indices, "indices")
    axis = _normalize_axis(axis, out.ndim)
    upd = _cast_updates(updates, out.dtype)
    pre, size, post = out.shape[:axis], out.shape[axis], out.shape[axis + 1 :]
    expected = pre + indices.shape + post
    if upd.shape != expected:
        raise ValueError(f"updates shape {upd.shape} does not match expected {expected}")
    positions = {
        ii: _normalize_index(indices[ii], size, axis, allow_negative)
        for ii in np.ndindex(indices.shape)
    }
    for ii in np.ndindex(indices.shape):
        v = positions[ii]
        for p in np.ndindex(pre):
            for q in np.ndindex(post):
                out[(*p, v, *q)] = upd[p + ii + q]
    return out


def ref_scatter_elements_update(
    data,
    indices,
    updates,
    axis,
    reduction: str = "none",
    use_init_val: bool = True,
    allow_negative: bool = True,
) -> np.ndarray:
    """ScatterElementsUpdate-12 (``allow_negative=False``: v3).

    ``out[i_0, ..., indices[i], ..., i_n] = reduction(updates[i], out[...])`` for every ``i``
    of ``indices`` in C order, ``indices[i]`` standing at position ``axis``.
    """
    if reduction not in ELEMENTS_REDUCTIONS:
        raise ValueError(f"unknown reduction '{reduction}'")
    out = _as_native_array(data)
    indices = np.asarray(indices)
    _check_integer_array(indices, "indices")
    _check_reducible(out.dtype, reduction)
    axis = _normalize_axis(axis, out.ndim)
    upd = _cast_updates(updates, out.dtype)
    if indices.ndim != out.ndim:
        raise ValueError(f"indices rank {indices.ndim} differs from data rank {out.ndim}")
    if upd.shape != indices.shape:
        raise ValueError(f"updates shape {upd.shape} differs from indices shape {indices.shape}")
    for d in range(out.ndim):
        if d != axis and indices.shape[d] > out.shape[d]:
            raise ValueError(f"indices.shape[{d}]={indices.shape[d]} exceeds {out.shape[d]}")
    size = out.shape[axis]
    targets = {}
    for ii in np.ndindex(indices.shape):
        t = list(ii)
        t[axis] = _normalize_index(indices[ii], size, axis, allow_negative)
        targets[ii] = tuple(t)
    folder = _Folder(out, reduction, use_init_val)
    for ii in np.ndindex(indices.shape):
        folder.apply(targets[ii], upd[ii])
    return folder.finish()


def ref_scatter_nd_update(
    data, indices, updates, reduction: str = "none", allow_negative: bool = True
) -> np.ndarray:
    """ScatterNDUpdate-15 (``allow_negative=False``, ``reduction='none'``: v3).

    ``out[indices[b]] = reduction(updates[b], out[indices[b]])`` slab by slab, for every batch
    position ``b`` of ``indices.shape[:-1]`` in C order.
    """
    if reduction not in ND_REDUCTIONS:
        raise ValueError(f"unknown reduction '{reduction}'")
    out = _as_native_array(data)
    if out.ndim == 0:
        raise ValueError("data must have rank >= 1")
    indices = np.asarray(indices)
    _check_integer_array(indices, "indices")
    _check_reducible(out.dtype, reduction)
    upd = _cast_updates(updates, out.dtype)
    if indices.ndim == 0:
        raise ValueError("indices must have rank >= 1")
    k = indices.shape[-1]
    if k > out.ndim:
        raise ValueError(f"indices.shape[-1]={k} exceeds data rank {out.ndim}")
    batch, slab = indices.shape[:-1], out.shape[k:]
    expected = batch + slab
    if upd.shape != expected:
        if expected == () and upd.size == 1:
            upd = upd.reshape(())
        else:
            raise ValueError(f"updates shape {upd.shape} does not match expected {expected}")
    coords = {}
    for b in np.ndindex(batch):
        coords[b] = tuple(
            _normalize_index(indices[(*b, j)], out.shape[j], j, allow_negative) for j in range(k)
        )
    folder = _Folder(out, reduction)
    for b in np.ndindex(batch):
        for s in np.ndindex(slab):
            folder.apply(coords[b] + s, upd[b + s])
    return folder.finish()


def _param_list(x, what: str) -> list[int]:
    items = x if isinstance(x, (list, tuple)) else [x]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        return [int(v) for v in items]  # Python ints, possibly beyond int64
    a = np.asarray(x)
    _check_integer_array(a, what)
    if a.ndim > 1:
        raise ValueError(f"{what} must be a scalar or 1-D, got shape {a.shape}")
    return [int(v) for v in a.reshape(-1)]


def slice_positions(start: int, stop: int, step: int, dim: int) -> list[int]:
    """The positions a slice selects along an axis of size ``dim`` (OpenVINO Slice-8 rule)."""
    if step == 0:
        raise ValueError("step must not be 0")
    if dim == 0:
        return []
    if start < 0:
        start += dim
    if stop < 0:
        stop += dim
    if step > 0:
        start = min(max(start, 0), dim)
        stop = min(max(stop, 0), dim)
    else:
        start = min(max(start, 0), dim - 1)
        stop = min(max(stop, -1), dim)
    return list(range(start, stop, step))


def ref_slice_scatter(data, updates, start, stop, step, axis) -> np.ndarray:
    """SliceScatter-15, with equal-length sequences of start/stop/step/axis as an extension.

    ``out[..., positions[i], ...] = updates[..., i, ...]`` on every sliced axis at once.
    """
    out = _as_native_array(data)
    params = [
        _param_list(p, name)
        for p, name in ((start, "start"), (stop, "stop"), (step, "step"), (axis, "axis"))
    ]
    n = len(params[0])
    if n == 0 or any(len(p) != n for p in params):
        raise ValueError("start, stop, step and axis must have the same length")
    rank = out.ndim
    axes = []
    for a in params[3]:
        if not -rank <= a < rank:
            raise ValueError(f"axis {a} is out of range for rank {rank}")
        axes.append(a + rank if a < 0 else a)
    if len(set(axes)) != len(axes):
        raise ValueError(f"axes must be distinct, got {params[3]}")
    positions = [list(range(d)) for d in out.shape]
    for a, s0, s1, st in zip(axes, params[0], params[1], params[2]):
        positions[a] = slice_positions(s0, s1, st, out.shape[a])
    upd = _cast_updates(updates, out.dtype)
    expected = tuple(len(p) for p in positions)
    if upd.shape != expected:
        raise ValueError(f"updates shape {upd.shape} does not match slice shape {expected}")
    for ii in np.ndindex(expected):
        target = tuple(map(operator.getitem, positions, ii))
        out[target] = upd[ii]
    return out
