"""Folds with prepared arguments, for scatterkit's own callers (the Spark aggregation's
states) that already hold C-contiguous arrays of the right dtypes: the public functions
would check and coerce every argument again on every call.

Every argument must be as the kernels take it: `acc` and `state` writeable C-contiguous
arrays, `targets` int64 flat offsets, `values` of `acc`'s dtype (the state's float dtype).
The kernels still check every index before they write.
"""

from __future__ import annotations

import numpy as np

from . import _core
from ._coerce import dtype_tag

_NAME = "aggregate"  # how a kernel's error names the caller


def fold_flat(
    acc: np.ndarray, targets: np.ndarray, values: np.ndarray, reduction: str, *, exact: bool
) -> None:
    """``acc[targets[i]] = reduction(acc[targets[i]], values[i])`` in place, in order
    (ScatterElementsUpdate-12 on a 1-D `acc` with use_init_val)."""
    tag = dtype_tag(acc.dtype)
    _core.scatter_elements_update(
        acc, targets, values, 0, acc, tag, reduction, True, False, False, exact, _NAME
    )


def fold_fill(
    acc: np.ndarray, targets: np.ndarray, values: np.ndarray, reduction: str, *, exact: bool
) -> None:
    """Each targeted element of `acc` becomes the reduction of its values alone (from the
    reduction's identity: use_init_val False), in place; the others keep their value."""
    tag = dtype_tag(acc.dtype)
    _core.scatter_elements_update(
        acc, targets, values, 0, acc, tag, reduction, False, False, False, exact, _NAME
    )


def state_words(dtype: np.dtype) -> int:
    """uint64 words per element of an exact state of float `dtype`."""
    return int(_core.exact_state_words(dtype_tag(dtype)))


def new_state(size: int, dtype: np.dtype) -> np.ndarray:
    """An empty exact state of `size` elements: (size, words) uint64."""
    return np.zeros((size, state_words(dtype)), np.uint64)


def state_fold(state: np.ndarray, targets: np.ndarray, values: np.ndarray) -> None:
    """Folds `values` at flat `targets` into `state` ((size, words)) in place."""
    _core.exact_state_fold(state, targets[:, None], values, dtype_tag(values.dtype), False)


def state_merge(into: np.ndarray, other: np.ndarray, dtype: np.dtype) -> None:
    """Merges `other` into `into`, both exact states of float `dtype` and one shape."""
    _core.exact_state_merge(into, other, dtype_tag(dtype))


def state_finish(state: np.ndarray, out: np.ndarray, *, mean: bool) -> None:
    """Writes each element's exact sum (or mean) into `out`, rounded once; elements with
    no terms keep `out`'s value."""
    _core.exact_state_finish(state, out, dtype_tag(out.dtype), mean)
