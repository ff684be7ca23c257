"""Mergeable exact-sum states: fold updates, merge states, finish them into a tensor.

A state holds, per element of a float tensor, the exact sum of its terms, their
count and flags for infinities and NaN, in a fixed number of uint64 words: 8
(64 bytes) for float16, bfloat16 and float32, 36 (288 bytes) for float64. States
are plain ``uint64`` arrays of shape ``tensor_shape + (words,)``, so they travel
in Arrow and Parquet as fixed-size lists. Whatever the split of the updates
into states, and the order and grouping of the merges, the finished tensor has
the bits of ``scatter_nd_update(..., reduction="sum", exact=True)`` over all of
them (and of ``reduction="mean"`` with ``mean=True``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._coerce import as_c_array, as_data, as_indices, as_updates, check_bool, dtype_tag

_FLOAT_TAGS = ("float16", "bfloat16", "float32", "float64")


def _float_dtype(dtype: Any, op: str) -> tuple[np.dtype, str]:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: dtype must be a float dtype, got {dtype!r}") from None
    tag = dtype_tag(dt)
    if tag not in _FLOAT_TAGS:
        raise TypeError(
            f"{op}: exact sums are for float16, bfloat16, float32 and float64, not {dt}"
        )
    return dt, tag


def _state_array(state: Any, tag: str, op: str) -> np.ndarray:
    if not isinstance(state, np.ndarray):
        raise TypeError(f"{op}: state must be a NumPy array, got {type(state).__name__}")
    words = _core.exact_state_words(tag)
    if state.dtype != np.uint64 or state.ndim < 2 or state.shape[-1] != words:
        raise ValueError(
            f"{op}: a state for {tag} is a uint64 array of shape (*tensor_shape, {words}),"
            f" got {state.dtype} {state.shape}"
        )
    return state


def exact_state_words(dtype: Any) -> int:
    """uint64 words per element of a state: 8 for float16, bfloat16 and float32, 36 for
    float64."""
    return int(_core.exact_state_words(_float_dtype(dtype, "exact_state_words")[1]))


def exact_state(shape: Any, dtype: Any, *, data: Any = None) -> np.ndarray:
    """A new state for a tensor of `shape` and float `dtype`.

    Empty (no terms) by default; with `data` (an array of that shape), every element
    holds data's value as one term, as ``use_init_val=True`` counts it.

    Examples
    --------
    >>> import numpy as np, scatterkit as sk
    >>> st = sk.exact_state((3,), np.float32)
    >>> st.shape, st.dtype
    ((3, 8), dtype('uint64'))
    """
    dt, tag = _float_dtype(dtype, "exact_state")
    shp = (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)
    if len(shp) == 0 or min(shp) < 0:
        raise ValueError(
            f"exact_state: shape must have rank >= 1 and no negative extent, got {shp}"
        )
    state = np.zeros((*shp, _core.exact_state_words(tag)), dtype=np.uint64)
    if data is not None:
        values = as_c_array(as_data(data, "exact_state"))
        if values.shape != shp:
            raise ValueError(f"exact_state: data shape {values.shape} is not {shp}")
        if values.dtype != dt:
            raise TypeError(f"exact_state: data dtype {values.dtype} is not {dt}")
        _core.exact_state_init(state, values, tag)
    return state


def exact_fold(
    state: np.ndarray, indices: Any, updates: Any, *, dtype: Any, subtract: bool = False
) -> np.ndarray:
    """Folds updates into `state` in place (and returns it), addressed as
    ScatterNDUpdate-15 addresses them: ``indices`` of shape ``(..., k)``, ``updates`` of
    shape ``indices.shape[:-1] + tensor_shape[k:]``; negative coordinates wrap once.
    `subtract` folds minus the updates (reduction "sub"). Every index is checked before
    the state changes.

    Examples
    --------
    >>> import numpy as np, scatterkit as sk
    >>> st = sk.exact_state(2, np.float32)
    >>> _ = sk.exact_fold(st, [[0], [0], [0]], np.float32([1e30, 1, -1e30]), dtype=np.float32)
    >>> sk.exact_finish(st, dtype=np.float32)
    array([1., 0.], dtype=float32)
    """
    op = "exact_fold"
    dt, tag = _float_dtype(dtype, op)
    state = _state_array(state, tag, op)
    if not (state.flags.c_contiguous and state.flags.writeable):
        raise ValueError(f"{op}: state must be a writeable C-contiguous array")
    idx = as_indices(indices, op)
    upd = as_c_array(as_updates(updates, dt, op))
    _core.exact_state_fold(state, idx, upd, tag, check_bool(subtract, "subtract", op))
    return state


def exact_merge(
    a: np.ndarray, b: np.ndarray, *, dtype: Any, out: np.ndarray | None = None
) -> np.ndarray:
    """The state of both states' terms, elementwise (a new array, or `out`, which may be
    `a` or `b`). Merging is exact: any order and grouping of merges gives the same words."""
    op = "exact_merge"
    _, tag = _float_dtype(dtype, op)
    a = _state_array(a, tag, op)
    b = _state_array(b, tag, op)
    if a.shape != b.shape:
        raise ValueError(f"{op}: states of shapes {a.shape} and {b.shape} do not merge")
    if out is b:  # merging is commutative: fold a into b
        a, b = b, a
    if out is None:
        out = np.array(a, order="C")
    elif out is not a:
        out = _state_array(out, tag, op)
        if out.shape != a.shape:
            raise ValueError(f"{op}: out shape {out.shape} is not {a.shape}")
        np.copyto(out, a)
    if not (out.flags.c_contiguous and out.flags.writeable):
        raise ValueError(f"{op}: out must be a writeable C-contiguous array")
    _core.exact_state_merge(out, as_c_array(b), tag)
    return out


def exact_finish(
    state: np.ndarray, *, dtype: Any, reduction: str = "sum", data: Any = None
) -> np.ndarray:
    """The tensor of a state: each element's exact sum (``reduction="mean"``: the sum
    divided by the count of terms) rounded once to `dtype`, to nearest, ties to even.
    Elements whose state has no terms take `data`'s value (default 0).

    +inf with -inf gives NaN; any NaN term gives the default quiet NaN; an exact zero
    is -0 only when every term is -0.
    """
    op = "exact_finish"
    dt, tag = _float_dtype(dtype, op)
    state = as_c_array(_state_array(state, tag, op))
    if reduction not in ("sum", "mean"):
        raise ValueError(f"{op}: reduction must be 'sum' or 'mean', got {reduction!r}")
    shape = state.shape[:-1]
    if data is None:
        out = np.zeros(shape, dtype=dt)
    else:
        out = np.array(as_data(data, op), dtype=dt, order="C", copy=True)
        if out.shape != shape:
            raise ValueError(f"{op}: data shape {out.shape} is not the state's {shape}")
    _core.exact_state_finish(state, out, tag, reduction == "mean")
    return out
