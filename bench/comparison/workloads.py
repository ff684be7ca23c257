"""The canonical workloads (W1-W6) and family H, and the arrays each one runs on.

A Workload names an op, its attributes and its family; workloads of one family share one
Case (the data, indices and updates, made once from a fixed seed). traffic_bytes is the
minimum traffic behind the GB/s columns (the same model as the C++ benchmarks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

SEED = 3


@dataclass(frozen=True)
class Workload:
    name: str  # "W3 sum f16/i32"
    group: str  # "W3"
    op: str  # "update", "elements", "nd" or "slice"
    family: str  # workloads of one family share their arrays
    reduction: str = "none"
    in_place: bool = False
    dtype: str = "float32"
    index_dtype: str = "int64"
    exact: bool = False  # scatterkit with exact=True; peers run their usual (inexact) sums
    bins: int = 0  # family H: the table size
    skewed: bool = False  # family H: half of the indices in the first 1% of the bins
    # Every implementation writes into an output allocated once (family H): scatterkit
    # `out=` is the reference and the row's scatterkit time, PyTorch and NumPy copy data into
    # their own preallocated output and run in place, ONNX Runtime binds its output (IOBinding).
    preallocated: bool = False


def canonical_workloads() -> list[Workload]:
    f16: dict[str, Any] = {"dtype": "float16", "index_dtype": "int32"}
    w = [
        Workload("W1", "W1", "update", "W1"),
        Workload("W2", "W2", "elements", "W2"),
        Workload("W2 in-place", "W2", "elements", "W2", in_place=True),
        Workload("W2 f16/i32", "W2", "elements", "W2", **f16),
    ]
    for red in ("sum", "max", "mean"):
        w.append(Workload(f"W3 {red}", "W3", "elements", "W2", reduction=red))
    for red in ("sum", "max", "mean"):
        w.append(Workload(f"W3 {red} f16/i32", "W3", "elements", "W2", reduction=red, **f16))
    for red in ("sum", "mean"):
        w.append(Workload(f"W3 {red} exact", "W3", "elements", "W2", reduction=red, exact=True))
    w += [
        Workload("W4", "W4", "nd", "W4"),
        Workload("W4 in-place", "W4", "nd", "W4", in_place=True),
        Workload("W5", "W5", "slice", "W5"),
        Workload("W6 sum", "W6", "elements", "W6", reduction="sum"),
        Workload("W6 max", "W6", "elements", "W6", reduction="max"),
        Workload("W6 sum exact", "W6", "elements", "W6", reduction="sum", exact=True),
        Workload("W6 mean exact", "W6", "elements", "W6", reduction="mean", exact=True),
    ]
    return w


# Family H (issue 33): the table sizes, 4K to 128M bins (16 KB to 512 MB of float32), and
# the updates per histogram; --quick runs the two smallest sizes with few updates.
HISTOGRAM_BINS = (1 << 12, 1 << 16, 1 << 20, 1 << 24, 1 << 27)
HISTOGRAM_UPDATES = 10_000_000
HISTOGRAM_QUICK_BINS = (1 << 12, 1 << 16)
HISTOGRAM_QUICK_UPDATES = 100_000


def bins_label(bins: int) -> str:
    """4096 -> '4K', 1 << 20 -> '1M', 1 << 27 -> '128M'."""
    for shift, unit in ((20, "M"), (10, "K")):
        if bins >= 1 << shift and bins % (1 << shift) == 0:
            return f"{bins >> shift}{unit}"
    return str(bins)


def histogram_workloads(
    bins_list: tuple[int, ...] = HISTOGRAM_BINS, plain: bool = True, exact: bool = False
) -> list[Workload]:
    """Family H: per table size and distribution, sum and max with int64 then int32 indices
    (so that each size's arrays are made once per index type); `exact` adds (or, without
    `plain`, gives only) the sum with exact=True, "H 4K sum exact i64 uniform" (issue 48)."""
    kinds = [(red, False) for red in ("sum", "max") if plain] + ([("sum", True)] if exact else [])
    w = []
    for bins in bins_list:
        for skewed in (False, True):
            dist = "skewed" if skewed else "uniform"
            for index_dtype, short in (("int64", "i64"), ("int32", "i32")):
                for red, is_exact in kinds:
                    label = f"{red} exact" if is_exact else red
                    w.append(
                        Workload(
                            f"H {bins_label(bins)} {label} {short} {dist}",
                            "H",
                            "elements",
                            f"H{bins}{dist[0]}",
                            reduction=red,
                            index_dtype=index_dtype,
                            exact=is_exact,
                            bins=bins,
                            skewed=skewed,
                            preallocated=True,
                        )
                    )
    return w


def histogram_indices(n: int, bins: int, skewed: bool, rng: np.random.Generator) -> np.ndarray:
    """n int64 indices in [0, bins): uniform, or (skewed) half uniform in the first 1% of the
    bins (bins // 100, at least 1) and half uniform in all of them, shuffled."""
    if not skewed:
        return rng.integers(0, bins, n, dtype=np.int64)
    hot = max(1, bins // 100)
    idx = np.concatenate(
        [rng.integers(0, hot, n // 2, dtype=np.int64), rng.integers(0, bins, n - n // 2)]
    )
    rng.shuffle(idx)
    return idx


@dataclass
class Case:
    """The arrays of one workload family, and what the checks and GB/s need from them."""

    data: np.ndarray
    indices: np.ndarray | None
    updates: np.ndarray
    axis: int
    slice: tuple[int, int, int] | None = None  # start, stop, step
    numpy_key: Any = None  # the NumPy index expression that addresses the targets
    dup_mask: np.ndarray | None = None  # True where several updates hit one element
    distinct: int = 0  # elements of data hit by at least one update
    # Family H skewed rows: the uniform row's indices (same table size and index type), so that
    # the skew ratio's two times come from the same rounds.
    uniform_indices: np.ndarray | None = None
    pristine: tuple[int, ...] = ()  # fingerprint of the inputs as made

    def __post_init__(self) -> None:
        self.pristine = self.fingerprint()

    def fingerprint(self) -> tuple[int, ...]:
        """Cheap checksums of the inputs: no implementation may write into them."""
        arrays = (self.data, self.indices, self.updates)
        return tuple(
            int(a.reshape(-1).view(np.uint8)[: a.nbytes // 8 * 8].view(np.uint64).sum())
            for a in arrays
            if a is not None
        )

    @property
    def index_array(self) -> np.ndarray:
        """The indices of an op that has them (every op but SliceScatter)."""
        if self.indices is None:
            raise ValueError("a SliceScatter workload has no indices")
        return self.indices

    @property
    def slice_bounds(self) -> tuple[int, int, int]:
        """start, stop, step of a SliceScatter workload."""
        if self.slice is None:
            raise ValueError("only a SliceScatter workload has a slice")
        return self.slice


def family_shapes(family: str, quick: bool) -> dict[str, Any]:
    outer = 100 if quick else 1000
    if family == "W1":
        n = 20 if quick else 1000
        return {"data": (n, 256, 10, 15), "indices": (125, 20), "axis": 1}
    if family == "W2":
        return {"data": (outer, 256, 7, 7), "indices": (125, 20, 7, 6), "axis": 0}
    if family == "W4":
        return {"data": (outer, 256, 10, 15), "indices": (25, 125, 3), "axis": 0}
    if family == "W5":
        return {"data": (outer, 256, 10, 15), "slice": (0, 256, 2), "axis": 1}
    if family == "W6":
        n = 100_000 if quick else 1_000_000
        return {"data": (n,), "indices": (10 * n,), "axis": 0, "zeros": True}
    raise ValueError(family)


def rng_for(family: str, stream: int) -> np.random.Generator:
    return np.random.default_rng([SEED, int(family[1:]), stream])


def make_histogram_case(w: Workload, quick: bool) -> Case:
    """Family H: a table of zeros, the indices (the same values for int64 and int32) and
    float32 updates in [0, 1). No duplicate mask: every H workload has a reduction."""
    n = HISTOGRAM_QUICK_UPDATES if quick else HISTOGRAM_UPDATES

    def indices_of(skewed: bool) -> np.ndarray:
        rng = np.random.default_rng([SEED, 33, w.bins, int(skewed)])
        return histogram_indices(n, w.bins, skewed, rng).astype(w.index_dtype)

    indices = indices_of(w.skewed)
    updates = np.random.default_rng([SEED, 33, 0]).random(n, dtype=np.float32)
    data = np.zeros(w.bins, np.dtype(w.dtype))
    case = Case(data, indices, updates.astype(w.dtype, copy=False), 0, None, (indices,))
    if w.skewed:
        case.uniform_indices = indices_of(False)
    return case


def make_case(w: Workload, quick: bool) -> Case:
    if w.group == "H":
        return make_histogram_case(w, quick)
    s = family_shapes(w.family, quick)
    dtype, axis = np.dtype(w.dtype), s["axis"]
    data_shape = s["data"]
    if s.get("zeros"):
        data = np.zeros(data_shape, dtype)
    else:
        data = rng_for(w.family, 0).random(data_shape, dtype=np.float32).astype(dtype, copy=False)
    rng = rng_for(w.family, 1)
    if w.op == "slice":
        start, stop, step = s["slice"]
        upd_shape = list(data_shape)
        upd_shape[axis] = len(range(start, stop, step))
        updates = rng.random(upd_shape, dtype=np.float32).astype(dtype, copy=False)
        key = (slice(None),) * axis + (slice(start, stop, step),)
        return Case(data, None, updates, axis, s["slice"], key, None, updates.size)
    idx_shape = s["indices"]
    if w.op == "nd":
        k = idx_shape[-1]
        cols = [rng.integers(0, data_shape[j], idx_shape[:-1]) for j in range(k)]
        indices = np.stack(cols, axis=-1)
    else:
        indices = rng.integers(0, data_shape[axis], idx_shape)
    indices = indices.astype(w.index_dtype)
    rank = len(data_shape)
    if w.op == "update":
        upd_shape = data_shape[:axis] + idx_shape + data_shape[axis + 1 :]
        key = (slice(None),) * axis + (indices,)
        counts = np.bincount(indices.reshape(-1), minlength=data_shape[axis])
        mask = (counts >= 2).reshape((1,) * axis + (-1,) + (1,) * (rank - axis - 1))
        per_target = data.size // data_shape[axis]
        distinct = int(np.count_nonzero(counts)) * per_target
    elif w.op == "elements":
        upd_shape = idx_shape
        key = tuple(
            indices if d == axis else np.arange(n).reshape((1,) * d + (n,) + (1,) * (rank - d - 1))
            for d, n in enumerate(idx_shape)
        )
        flat = np.ravel_multi_index(np.broadcast_arrays(*key), data_shape)
        counts = np.bincount(flat.reshape(-1), minlength=data.size)
        mask = (counts >= 2).reshape(data_shape)
        distinct = int(np.count_nonzero(counts))
    else:  # nd
        k = idx_shape[-1]
        upd_shape = idx_shape[:-1] + data_shape[k:]
        key = tuple(indices[..., j] for j in range(k))
        slabs = np.ravel_multi_index(key, data_shape[:k])
        counts = np.bincount(slabs.reshape(-1), minlength=int(np.prod(data_shape[:k])))
        mask = (counts >= 2).reshape(data_shape[:k] + (1,) * (rank - k))
        distinct = int(np.count_nonzero(counts)) * int(np.prod(data_shape[k:]))
    updates = rng_for(w.family, 2).random(upd_shape, dtype=np.float32).astype(dtype, copy=False)
    return Case(data, indices, updates, axis, None, key, mask, distinct)


def traffic_bytes(w: Workload, c: Case) -> int:
    """Bytes the op must move at least (bench/README.md; the same model as the C++ benches).

    Out of place: read data + write the output + indices + the updates that reach the output
    (one per distinct target for 'none', all of them for a reduction). In place: indices +
    read those updates + write their targets. The memcpy floor moves 2 * data bytes.
    """
    index_bytes = 0 if c.indices is None else c.indices.nbytes
    needed = c.distinct * c.data.itemsize if w.reduction == "none" else c.updates.nbytes
    if w.in_place:
        return index_bytes + 2 * needed
    return 2 * c.data.nbytes + index_bytes + needed
