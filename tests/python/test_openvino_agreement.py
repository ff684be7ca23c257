"""scatterkit gives OpenVINO's answers: random cases run through both, compared bit for bit.

The other tests check scatterkit against tests/python/reference.py, which we wrote from the
specification; this file checks the reading of the specification itself against the
operations' home, OpenVINO's CPU plugin, one single-op model per case.

What the cases leave out, and why:
- Updates that collide without a reduction: OpenVINO leaves their order undefined.
- Orders of float additions: values are small integers, exact in any order, so a sum that
  OpenVINO folds in another order still gives the same bits (C order is tested elsewhere).
- float64: the CPU plugin computes it in float32.
- Negative integer means: the plugin rounds them toward zero, where the specification (and
  scatterkit) rounds toward negative infinity; integer means here are of values >= 0.
"""

from __future__ import annotations

import numpy as np
import pytest

import scatterkit as sk

ov = pytest.importorskip("openvino")
ops3 = pytest.importorskip("openvino.opset3")
ops12 = pytest.importorskip("openvino.opset12")
ops15 = pytest.importorskip("openvino.opset15")

DTYPES = [np.dtype(t) for t in (np.float32, np.float16, np.int8, np.uint8, np.int32, np.int64)]
INDEX_DTYPES = [np.dtype(np.int32), np.dtype(np.int64)]
CASES = 60  # per test; each compiles a model (about 20 ms)

_core = ov.Core()


def openvino_result(make_node, inputs, *constants, **attributes) -> np.ndarray | Exception:
    """make_node(*parameters, *constants, **attributes), run on `inputs` in the CPU plugin:
    its output, or the error it raised."""
    try:
        params = [ops15.parameter(a.shape, ov.Type(a.dtype)) for a in inputs]
        model = ov.Model([make_node(*params, *constants, **attributes)], params)
        compiled = _core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": 2})
        return np.asarray(compiled(list(inputs))[0])
    except RuntimeError as e:  # OpenVINO reports every rejected input this way
        return e


def scatterkit_result(op, *args, **kwargs) -> np.ndarray | Exception:
    try:
        return op(*args, **kwargs)
    except (ValueError, IndexError, TypeError) as e:
        return e


def assert_agree(ours, theirs, case: dict) -> None:
    if isinstance(ours, Exception) or isinstance(theirs, Exception):
        assert isinstance(ours, Exception) and isinstance(theirs, Exception), (case, ours, theirs)
        return
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, case
    assert np.array_equal(ours, theirs), (case, np.argwhere(ours != theirs)[:3].tolist())


def small_values(rng, shape, dtype, reduction="none") -> np.ndarray:
    lo, hi = {"prod": (-1, 3), "mean": (0, 6)}.get(reduction, (-4, 5))
    if dtype.kind == "u":
        lo = 0
    return rng.integers(lo, hi, size=shape).astype(dtype)


def random_shape(rng, rank: int, elements: int) -> tuple[int, ...]:
    """A shape of `rank` dimensions with about `elements` elements, each dimension >= 1."""
    shares = rng.dirichlet(np.ones(rank))
    return tuple(max(1, round(elements**s)) for s in shares)


def along_axis(shape: tuple[int, ...], axis: int, length: int) -> tuple[int, ...]:
    """`shape` with its extent along `axis` set to `length`."""
    return (*shape[:axis], length, *shape[axis + 1 :])


def with_negatives(rng, idx: np.ndarray, size, dtype) -> np.ndarray:
    """About a fifth of the indices written as their negative twin (v12 and v15 wrap them)."""
    return np.where(rng.random(idx.shape) < 0.2, idx - np.asarray(size), idx).astype(dtype)


def distinct_along(rng, full: tuple[int, ...], axis: int, count: int) -> np.ndarray:
    """Indices of shape along_axis(full, axis, count), distinct along `axis`."""
    keys = rng.random(full)
    return np.take(np.argsort(keys, axis=axis), np.arange(count), axis=axis)


def random_cases(elements: int, seed: int):
    """Yields (rng, dtype, shape) for each case of a test, run at 2 threads: a random data
    type and a shape of rank 1 to 3 with about `elements` elements."""
    rng = np.random.default_rng(seed)
    sk.set_num_threads(2)
    for _ in range(CASES if elements < 1000 else CASES // 6):
        dtype = DTYPES[rng.integers(len(DTYPES))]
        rank = int(rng.integers(1, 4))
        yield rng, dtype, random_shape(rng, rank, elements)


def random_axis(rng, shape: tuple[int, ...]) -> tuple[int, int, int]:
    """An axis as given (maybe negative), the same axis normalised, and its extent."""
    axis = int(rng.integers(-len(shape), len(shape)))
    return axis, axis % len(shape), shape[axis]


@pytest.mark.parametrize("elements", [24, 100_000])
def test_scatter_elements_update(elements):
    for rng, dtype, shape in random_cases(elements, seed=elements):
        axis, ax, n = random_axis(rng, shape)
        reduction = str(rng.choice(["none", "sum", "prod", "min", "max", "mean"]))
        use_init_val = bool(rng.integers(2))
        lines = tuple(int(rng.integers(1, d + 1)) for d in shape)
        if reduction == "none":
            full = along_axis(lines, ax, n)
            idx = distinct_along(rng, full, ax, int(rng.integers(1, n + 1)))
        else:
            along = int(rng.integers(1, 3 * n + 2))
            idx = rng.integers(0, n, size=along_axis(lines, ax, along))
        idx = with_negatives(rng, idx, n, INDEX_DTYPES[rng.integers(2)])
        data = small_values(rng, shape, dtype, reduction)
        updates = small_values(rng, idx.shape, dtype, reduction)
        attributes = dict(reduction=reduction, use_init_val=use_init_val)
        case = dict(dtype=dtype, shape=shape, indices=idx.shape, axis=axis, **attributes)
        ours = scatterkit_result(sk.scatter_elements_update, data, idx, updates, axis, **attributes)
        theirs = openvino_result(
            ops12.scatter_elements_update, (data, idx, updates), np.int64(axis), **attributes
        )
        assert_agree(ours, theirs, case)


@pytest.mark.parametrize("elements", [24, 100_000])
def test_scatter_nd_update(elements):
    for rng, dtype, shape in random_cases(elements, seed=elements + 1):
        k = int(rng.integers(1, len(shape) + 1))
        reduction = str(rng.choice(["none", "sum", "prod", "min", "max"]))
        addressable = int(np.prod(shape[:k]))
        if reduction == "none":
            flat = rng.permutation(addressable)[: int(rng.integers(1, addressable + 1))]
        else:
            flat = rng.integers(0, addressable, size=int(rng.integers(1, 3 * addressable + 1)))
        flat = flat[: 200_000 // int(np.prod(shape[k:])) + 1]
        idx = np.stack(np.unravel_index(flat, shape[:k]), axis=-1)
        idx = with_negatives(rng, idx, shape[:k], INDEX_DTYPES[rng.integers(2)])
        data = small_values(rng, shape, dtype, reduction)
        updates = small_values(rng, idx.shape[:-1] + shape[k:], dtype, reduction)
        case = dict(dtype=dtype, shape=shape, indices=idx.shape, reduction=reduction)
        ours = scatterkit_result(sk.scatter_nd_update, data, idx, updates, reduction=reduction)
        theirs = openvino_result(ops15.scatter_nd_update, (data, idx, updates), reduction=reduction)
        assert_agree(ours, theirs, case)


@pytest.mark.parametrize("elements", [24, 100_000])
def test_scatter_update(elements):
    for rng, dtype, shape in random_cases(elements, seed=elements + 2):
        axis, ax, n = random_axis(rng, shape)
        idx = rng.permutation(n)[: int(rng.integers(1, n + 1))]
        if rng.random() < 0.5:  # indices of rank 2: their shape replaces the axis in updates
            idx = idx[None, :]
        idx = idx.astype(INDEX_DTYPES[rng.integers(2)])
        updates = small_values(rng, shape[:ax] + idx.shape + shape[ax + 1 :], dtype)
        data = small_values(rng, shape, dtype)
        case = dict(dtype=dtype, shape=shape, indices=idx.shape, axis=axis)
        ours = scatterkit_result(sk.scatter_update, data, idx, updates, axis)
        theirs = openvino_result(ops3.scatter_update, (data, idx, updates), np.int64(axis))
        assert_agree(ours, theirs, case)


def openvino_slice_length(size: int, start: int, stop: int, step: int) -> int:
    """The slice length OpenVINO's own shape inference gives (no compiling needed)."""
    param = ops15.parameter([size], ov.Type.i32)
    as_1d = [np.array([v], np.int64) for v in (start, stop, step, 0)]
    node = ops15.slice(param, *as_1d)
    return node.get_output_partial_shape(0)[0].get_length()


def test_slice_scatter_lengths_everywhere_on_a_small_grid():
    # Every start and stop within 3 of both ends, every step up to 3: scatterkit accepts
    # exactly the updates length that OpenVINO's Slice gives, and no other.
    for size in range(0, 5):
        for start in range(-size - 3, size + 3):
            for stop in range(-size - 3, size + 3):
                for step in (-3, -2, -1, 1, 2, 3):
                    length = openvino_slice_length(size, start, stop, step)
                    data = np.zeros(size, np.int32)
                    written = sk.slice_scatter(
                        data, np.ones(length, np.int32), start, stop, step, 0
                    )
                    assert int(written.sum()) == length, (size, start, stop, step)
                    with pytest.raises(ValueError):
                        sk.slice_scatter(data, np.ones(length + 1, np.int32), start, stop, step, 0)


@pytest.mark.parametrize("elements", [24, 100_000])
def test_slice_scatter(elements):
    extremes = [np.iinfo(np.int64).min, np.iinfo(np.int64).max]
    for rng, dtype, shape in random_cases(elements, seed=elements + 3):
        axis, ax, n = random_axis(rng, shape)
        start, stop = (int(v) for v in rng.integers(-n - 3, n + 4, size=2))
        if rng.random() < 0.15:
            start = int(rng.choice(extremes))
        if rng.random() < 0.15:
            stop = int(rng.choice(extremes))
        step = int(rng.choice([-7, -3, -2, -1, 1, 2, 3, 7]))
        length = openvino_slice_length(n, start, stop, step)
        data = small_values(rng, shape, dtype)
        updates = small_values(rng, along_axis(shape, ax, length), dtype)
        case = dict(dtype=dtype, shape=shape, axis=axis, start=start, stop=stop, step=step)
        ours = scatterkit_result(sk.slice_scatter, data, updates, start, stop, step, axis)
        params = [np.array([v], np.int64) for v in (start, stop, step, axis)]
        theirs = openvino_result(ops15.slice_scatter, (data, updates), *params)
        assert_agree(ours, theirs, case)
