"""The public operations: argument handling around the compiled kernels."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import _core
from ._coerce import (
    ELEMENTS_REDUCTIONS,
    ND_REDUCTIONS,
    as_axis,
    as_data,
    as_indices,
    as_updates,
    check_bool,
    check_reduction,
    dtype_tag,
    execute,
    slice_params,
)
from ._registry import OPS, op_version

ArrayLike = Any


def _scatter_update(data, indices, updates, axis, out, *, name):
    data = as_data(data, name)
    idx = as_indices(indices, name)
    upd = as_updates(updates, data.dtype, name)
    ax = as_axis(axis, name)
    tag = dtype_tag(data.dtype)

    def kernel(src, dst):
        _core.scatter_update(src, idx, upd, ax, dst, tag, False, name)

    return execute(name, data, out, (idx, upd), kernel)


def _scatter_elements_update(
    data, indices, updates, axis, out, *, reduction, use_init_val, allow_negative, name, exact=False
):
    data = as_data(data, name)
    idx = as_indices(indices, name)
    upd = as_updates(updates, data.dtype, name)
    ax = as_axis(axis, name)
    red = check_reduction(reduction, name, ELEMENTS_REDUCTIONS)
    init = check_bool(use_init_val, "use_init_val", name)
    exact = check_bool(exact, "exact", name)
    tag = dtype_tag(data.dtype)

    def kernel(src, dst):
        # dst is not the caller's out: a buffer of ours, dropped if the kernel raises
        fresh = dst is not out
        _core.scatter_elements_update(
            src, idx, upd, ax, dst, tag, red, init, allow_negative, fresh, exact, name
        )

    return execute(name, data, out, (idx, upd), kernel)


def _scatter_nd_update(
    data, indices, updates, out, *, reduction, allow_negative, name, exact=False
):
    data = as_data(data, name)
    idx = as_indices(indices, name)
    upd = as_updates(updates, data.dtype, name)
    red = check_reduction(reduction, name, ND_REDUCTIONS)
    exact = check_bool(exact, "exact", name)
    tag = dtype_tag(data.dtype)

    def kernel(src, dst):
        _core.scatter_nd_update(src, idx, upd, dst, tag, red, allow_negative, exact, name)

    return execute(name, data, out, (idx, upd), kernel)


def _slice_scatter(data, updates, start, stop, step, axis, out, *, name):
    data = as_data(data, name)
    upd = as_updates(updates, data.dtype, name)
    starts, stops, steps, axes = slice_params(start, stop, step, axis, name)
    tag = dtype_tag(data.dtype)

    def kernel(src, dst):
        _core.slice_scatter(src, upd, starts, stops, steps, axes, dst, tag, name)

    return execute(name, data, out, (upd,), kernel)


def scatter_update(
    data: ArrayLike,
    indices: ArrayLike,
    updates: ArrayLike,
    axis: Any,
    *,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Copy of `data` with slices along `axis` replaced (ScatterUpdate-3).

    For every position ``j...`` of `indices`::

        out[a..., indices[j...], b...] = updates[a..., j..., b...]

    where ``a...`` spans the dimensions before `axis` and ``b...`` those after it.
    When several indices name the same slice, the last in C order wins.

    Parameters
    ----------
    data : array_like
        Tensor of any rank >= 1 and any dtype but object.
    indices : array_like of integers
        Any shape, 0-D included; each value in ``[0, data.shape[axis] - 1]``.
    updates : array_like
        Shape ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``. Arrays cast
        to data's dtype under the ``same_kind`` rule; Python scalars and lists take it.
    axis : int
        In ``[-data.ndim, data.ndim - 1]``; an int, NumPy integer, 0-D or one-element array.
    out : ndarray, optional
        Where to write the result: data's shape and (native) dtype. ``out=data`` updates
        in place. Returned when given.

    Returns
    -------
    ndarray
        The updated copy of `data` (or `out`).

    Raises
    ------
    IndexError
        An index is out of range (negative indices included).
    ValueError
        Shapes do not fit, `axis` is out of range, or `out` is read-only or misshapen.
    TypeError
        Non-integer indices or axis, object data, an impossible cast, or a wrong `out` dtype.

    Examples
    --------
    >>> import numpy as np, scatterkit as sk
    >>> sk.scatter_update(np.zeros((3, 2)), [2, 0], [[1, 1], [2, 2]], axis=0)
    array([[2., 2.],
           [0., 0.],
           [1., 1.]])
    """
    return _scatter_update(data, indices, updates, axis, out, name="scatter_update")


def scatter_elements_update(
    data: ArrayLike,
    indices: ArrayLike,
    updates: ArrayLike,
    axis: Any,
    *,
    reduction: str = "none",
    use_init_val: bool = True,
    exact: bool = False,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Copy of `data` with single elements updated along `axis` (ScatterElementsUpdate-12).

    For every position ``p`` of `indices` (in C order)::

        out[p with p[axis] replaced by indices[p]] = reduction(out[...], updates[p])

    Parameters
    ----------
    data : array_like
        Tensor of rank >= 1. Any dtype but object for ``reduction="none"``; bool,
        integers, float16, bfloat16, float32 or float64 for the other reductions.
    indices : array_like of integers
        Same rank as `data`; ``indices.shape[d] <= data.shape[d]`` for ``d != axis``.
        Values in ``[-s, s - 1]`` with ``s = data.shape[axis]``; negatives count from the end.
    updates : array_like
        Same shape as `indices`.
    axis : int
        In ``[-data.ndim, data.ndim - 1]``.
    reduction : {"none", "sum", "prod", "min", "max", "mean"}
        How an update combines with the target. Duplicates fold in C order of `indices`.
        Integer sum/prod wrap; integer mean is exact, rounded toward -inf; float16 and
        bfloat16 accumulate in float32; NaN propagates through min/max; on bool, sum and
        max are OR, prod and min are AND, and mean is an error.
    use_init_val : bool
        If False, targeted elements start from the reduction's identity instead of
        `data` (untargeted ones keep `data`). No effect for "none".
    exact : bool
        For float data: sum and mean are the exact real sum of the terms (the initial
        value with `use_init_val`, and the updates) rounded once, nearest-even; min and
        max order -0 below +0 and turn any NaN into the default quiet NaN. The bits then
        do not depend on the order of the updates or the thread count. "none" and
        "prod" are ValueErrors; integer and bool data are unchanged (already exact).
    out : ndarray, optional
        Where to write the result: data's shape and (native) dtype; ``out=data`` is in place.

    Returns
    -------
    ndarray
        The updated copy of `data` (or `out`).

    Raises
    ------
    IndexError
        An index is out of range.
    ValueError
        Shapes or extents do not fit, `axis` or `reduction` is invalid, `out` is read-only.
    TypeError
        Non-integer indices, object data, a reduction the dtype has not, a bad cast.

    Examples
    --------
    >>> import numpy as np, scatterkit as sk
    >>> sk.scatter_elements_update(np.array([2, 3, 4, 6]), [1, 0, 0, -2, -1, 2],
    ...                            [10, 20, 30, 40, 70, 60], 0, reduction="sum")
    array([ 52,  13, 104,  76])
    """
    return _scatter_elements_update(
        data,
        indices,
        updates,
        axis,
        out,
        reduction=reduction,
        use_init_val=use_init_val,
        allow_negative=True,
        name="scatter_elements_update",
        exact=exact,
    )


def scatter_nd_update(
    data: ArrayLike,
    indices: ArrayLike,
    updates: ArrayLike,
    *,
    reduction: str = "none",
    exact: bool = False,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Copy of `data` with elements or slices at index tuples updated (ScatterNDUpdate-3/15).

    With ``k = indices.shape[-1]`` and every tuple position ``p`` (in C order)::

        out[indices[p, 0], ..., indices[p, k-1], ...] = reduction(out[...], updates[p, ...])

    Parameters
    ----------
    data : array_like
        Tensor of rank >= 1; any dtype but object for "none", arithmetic otherwise.
    indices : array_like of integers
        Rank >= 1, ``indices.shape[-1] <= data.ndim`` (0 addresses the whole tensor).
        Coordinate ``j`` lies in ``[-data.shape[j], data.shape[j] - 1]``.
    updates : array_like
        Shape ``indices.shape[:-1] + data.shape[k:]``; a one-element tensor where that is ().
    reduction : {"none", "sum", "sub", "prod", "min", "max"}
        The ScatterNDUpdate-15 reductions; duplicates fold in C order. On bool, sub is XOR.
    exact : bool
        For float data: sum and sub are exact (the real sum rounded once), min and max
        free of order (-0 below +0, any NaN the default quiet NaN); see
        `scatter_elements_update`. "none" and "prod" are ValueErrors.
    out : ndarray, optional
        Where to write the result; ``out=data`` is in place.

    Returns
    -------
    ndarray
        The updated copy of `data` (or `out`).

    Raises
    ------
    IndexError
        A coordinate is out of range for its axis.
    ValueError
        Shapes do not fit, an unknown reduction, `out` read-only or misshapen.
    TypeError
        Non-integer indices, object data, a reduction the dtype has not, a bad cast.

    Examples
    --------
    >>> import numpy as np, scatterkit as sk
    >>> sk.scatter_nd_update(np.arange(1, 9), [[4], [3], [1], [7]], [9, 10, 11, 12])
    array([ 1, 11,  3, 10,  9,  6,  7, 12])
    """
    return _scatter_nd_update(
        data,
        indices,
        updates,
        out,
        reduction=reduction,
        allow_negative=True,
        name="scatter_nd_update",
        exact=exact,
    )


def slice_scatter(
    data: ArrayLike,
    updates: ArrayLike,
    start: Any,
    stop: Any,
    step: Any,
    axis: Any,
    *,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Copy of `data` with a strided slice replaced by `updates` (SliceScatter-15).

    ``out[..., range(start, stop, step), ...] = updates`` along `axis`, after clamping
    (OpenVINO Slice-8): negative `start`/`stop` count from the end; for ``step > 0``
    both clamp to ``[0, dim]``; for ``step < 0`` start clamps to ``[0, dim - 1]`` and
    stop to ``[-1, dim]``.

    Parameters
    ----------
    data : array_like
        Tensor of rank >= 1, any dtype but object.
    updates : array_like
        Exactly the slice's shape.
    start, stop, step, axis : int or sequence of int
        All scalars (an int, 0-D array or one-element sequence), or all sequences of one
        common length naming distinct axes (several axes at once, an extension).
        `step` must not be 0.
    out : ndarray, optional
        Where to write the result; ``out=data`` is in place.

    Returns
    -------
    ndarray
        The updated copy of `data` (or `out`).

    Raises
    ------
    ValueError
        step 0, a bad axis, mismatched parameter lengths, wrong updates shape.
    TypeError
        Non-integer parameters, object data, a bad cast.

    Examples
    --------
    >>> import numpy as np, scatterkit as sk
    >>> sk.slice_scatter(np.arange(10.0).reshape(2, 5), [[10, 20, 30], [40, 50, 60]],
    ...                  -25, 25, 2, 1)
    array([[10.,  1., 20.,  3., 30.],
           [40.,  6., 50.,  8., 60.]])
    """
    return _slice_scatter(data, updates, start, stop, step, axis, out, name="slice_scatter")


# --- versioned operations -------------------------------------------------------


def _scatter_elements_update_v3(data, indices, updates, axis, *, out=None):
    """ScatterElementsUpdate-3: element scatter, no reduction, negative indices are errors."""
    return _scatter_elements_update(
        data,
        indices,
        updates,
        axis,
        out,
        reduction="none",
        use_init_val=True,
        allow_negative=False,
        name="ScatterElementsUpdate-3",
    )


def _scatter_nd_update_v3(data, indices, updates, *, out=None):
    """ScatterNDUpdate-3: tuple scatter, no reduction, negative indices are errors."""
    return _scatter_nd_update(
        data,
        indices,
        updates,
        out,
        reduction="none",
        allow_negative=False,
        name="ScatterNDUpdate-3",
    )


_OPS: dict[str, Callable[..., np.ndarray]] = {
    "ScatterUpdate-3": scatter_update,
    "ScatterElementsUpdate-3": _scatter_elements_update_v3,
    "ScatterNDUpdate-3": _scatter_nd_update_v3,
    "ScatterElementsUpdate-12": scatter_elements_update,
    "SliceScatter-15": slice_scatter,
    "ScatterNDUpdate-15": scatter_nd_update,
}
assert set(_OPS) == set(OPS), "get_op covers the registry's versions"


def get_op(name: str) -> Callable[..., np.ndarray]:
    """The operation with exactly the semantics of an OpenVINO versioned name.

    One of "ScatterUpdate-3", "ScatterElementsUpdate-3", "ScatterNDUpdate-3",
    "ScatterElementsUpdate-12", "SliceScatter-15", "ScatterNDUpdate-15". The v3
    callables take no reduction arguments and reject negative indices.

    Examples
    --------
    >>> import scatterkit as sk
    >>> sk.get_op("ScatterElementsUpdate-12") is sk.scatter_elements_update
    True
    """
    return _OPS[op_version(name, "get_op").name]


def set_num_threads(n: int) -> None:
    """Set the number of threads the kernels use (n >= 1; default: OpenMP's).

    Kernels start at most 8 threads per processor (`get_num_threads` reports the
    number in effect): these ops are memory bound, and thousands of threads would
    only cost start-up time or, past the system's thread limit, end the process.
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"set_num_threads: n must be an integer, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    _core.set_num_threads(min(int(n), 2**31 - 1))


def get_num_threads() -> int:
    """Number of threads the kernels use: `set_num_threads`'s value (else OpenMP's
    default, ``OMP_NUM_THREADS``), at most 8 per processor."""
    return _core.get_num_threads()


def set_output_cache(max_bytes: int) -> None:
    """Set how much memory of freed results is kept for the next ones (default 1 GiB).

    Results of 1 MiB and more are allocated from a cache: when such an array is
    freed its memory is kept, and the next result of the same size (rounded up to
    2 MiB) reuses it instead of a fresh mapping, which the operating system zeroes
    page by page on first touch (for a 50 MB result as costly as the scatter itself).
    The cache holds at most `max_bytes`, dropping the least recently freed memory
    first; ``set_output_cache(0)`` releases it all and turns recycling off.

    The same limit, capped at 256 MiB, bounds the scratch memory a kernel keeps for its
    next call: a 1-D histogram past the cache writes its updates out to 8 or 16 bytes
    each, and keeps that memory once freed.
    """
    if isinstance(max_bytes, (bool, np.bool_)) or not isinstance(max_bytes, (int, np.integer)):
        raise TypeError(
            f"set_output_cache: max_bytes must be an integer, got {type(max_bytes).__name__}"
        )
    if max_bytes < 0:
        raise ValueError(f"set_output_cache: max_bytes must be >= 0, got {max_bytes}")
    _core.set_output_cache(min(int(max_bytes), 2**63 - 1))


def output_cache_info() -> dict[str, int]:
    """The result cache's state: ``limit``, ``cached_bytes``, ``cached_blocks``, ``hits``
    and ``misses`` (allocations served from the cache, and not); ``scratch_bytes``, the
    kernels' scratch memory kept for their next call."""
    return dict(_core.output_cache_info())
