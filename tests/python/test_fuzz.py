r"""Fuzzing every public op with mostly malformed arguments.

Hypothesis draws data of rank 0-4 (extents 0-3) in every dtype and memory layout, then
indices, updates, axes, slice parameters, reductions, flags and ``out=`` buffers; about 70%
of the examples break one to three of those arguments.  Every call must either return or
raise TypeError, ValueError or IndexError (the documented errors).  When it raises, every
byte of every input buffer (and of the whole buffer each one views) is unchanged.  When it
returns, only ``out`` changed, and the result equals the reference oracle bit for bit; the
library and the oracle (behind the documented argument rules) must agree on what is valid.
``run_batch`` is fuzzed the same way: a malformed ragged batch must raise, a bad row must be
reported with its data row copied to the output, a good row must match the oracle.

The normal suite runs a fixed, derandomized few hundred examples per test.  A long fuzz
explores fresh random inputs on every run (the seed is printed at the end; set
SCATTERKIT_FUZZ_SEED to replay one)::

    SCATTERKIT_FUZZ_EXAMPLES=200000 \
        python -m pytest tests/python/test_fuzz.py -s -p no:cacheprovider
"""

from __future__ import annotations

import math
import os
import secrets
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
from conftest import (
    ALL_DTYPES,
    INDEX_DTYPES,
    STRUCT_DTYPE,
    assert_same,
    assert_unchanged,
    random_values,
    snapshot,
)
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from reference import (
    ELEMENTS_REDUCTIONS,
    ND_REDUCTIONS,
    native_dtype,
    ref_scatter_elements_update,
    ref_scatter_nd_update,
    ref_scatter_update,
    ref_slice_scatter,
    slice_positions,
)

import scatterkit as sk
from scatterkit._batch import Ragged, run_batch
from scatterkit._registry import OPS

# --------------------------------------------------------------------------------------------
# budget: a fixed CI run, or SCATTERKIT_FUZZ_EXAMPLES fresh random examples per test

DEFAULT_EXAMPLES = 250
LONG_EXAMPLES = int(os.environ.get("SCATTERKIT_FUZZ_EXAMPLES") or 0)
LONG_RUN = LONG_EXAMPLES > 0
SEED = int(os.environ.get("SCATTERKIT_FUZZ_SEED") or secrets.randbits(64)) if LONG_RUN else None

# Slow or large draws are expected here; they are not a reason to stop fuzzing.
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
if LONG_RUN:
    _SETTINGS = settings(
        max_examples=LONG_EXAMPLES,
        derandomize=False,
        database=None,
        deadline=None,
        suppress_health_check=_QUIET,
    )
else:  # the "ci" profile of conftest: derandomized, no database
    _SETTINGS = settings(max_examples=DEFAULT_EXAMPLES, deadline=None, suppress_health_check=_QUIET)


def fuzz(test):
    """The budget for one fuzz test (goes above @given)."""
    test = _SETTINGS(test)
    return seed(SEED)(test) if LONG_RUN else test


# inputs / rejected / accepted / failures, per fuzzed entry point
STATS: dict[str, Counter] = defaultdict(Counter)


@pytest.fixture(scope="module", autouse=True)
def fuzz_summary():
    """One line per fuzzed entry point once the module is done (shown with -s)."""
    if LONG_RUN:  # up front too: a crash of the process never reaches the summary
        print(f"\nfuzz: seed {SEED} (replay with SCATTERKIT_FUZZ_SEED={SEED})")
    yield
    mode = f"seed {SEED}, {LONG_EXAMPLES} examples per test" if LONG_RUN else "CI budget"
    print(f"\nfuzz summary ({mode}):")
    for label, c in sorted(STATS.items()):
        print(
            f"fuzz {label}: {c['inputs']} inputs, {c['rejected']} rejected, "
            f"{c['accepted']} accepted, {c['failures']} failures"
        )


# --------------------------------------------------------------------------------------------
# the documented argument rules: an argument either normalizes or is Rejected

ALLOWED_ERRORS = (TypeError, ValueError, IndexError)


class Rejected(Exception):
    """The documented argument rules reject this input, so the library must raise."""


def norm_data(data) -> np.ndarray:
    """`data` as a native-order copy: any array_like of rank >= 1 without Python objects."""
    try:
        arr = np.asarray(data)
    except Exception as exc:  # a ragged nested list, ...
        raise Rejected(f"data: {exc}") from None
    if arr.dtype.hasobject:
        raise Rejected("data holds Python objects")
    if arr.ndim == 0:
        raise Rejected("data must have rank >= 1")
    return arr.astype(native_dtype(arr.dtype))


def norm_indices(indices) -> np.ndarray:
    """`indices`: an array_like of integers (an empty Python list counts as one)."""
    try:
        arr = np.asarray(indices)
    except Exception as exc:
        raise Rejected(f"indices: {exc}") from None
    if not isinstance(indices, np.ndarray) and arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise Rejected(f"indices of dtype {arr.dtype}")
    return arr.copy()


def norm_updates(updates, dtype: np.dtype) -> np.ndarray:
    """Arrays cast under the same_kind rule; Python values take `dtype` if they fit."""
    if isinstance(updates, (np.ndarray, np.generic)):
        arr = np.asarray(updates)
        if not np.can_cast(arr.dtype, dtype, casting="same_kind"):
            raise Rejected(f"updates of dtype {arr.dtype} do not cast to {dtype}")
        try:
            with warnings.catch_warnings():  # float narrowing may overflow, as in NumPy
                warnings.simplefilter("ignore")
                arr = arr.astype(dtype)
        except ValueError as exc:  # e.g. non-ASCII bytes into a str dtype
            raise Rejected(f"updates do not convert to {dtype}: {exc}") from None
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                arr = np.asarray(updates, dtype=dtype)
        except Exception as exc:
            raise Rejected(f"updates {updates!r} do not fit {dtype}: {exc}") from None
    if arr.dtype.hasobject:
        raise Rejected("updates hold Python objects")
    return arr


def norm_int(value, name: str) -> int:
    """An integer: int, NumPy integer, 0-D or one-element 1-D integer array (no bool)."""
    if isinstance(value, (bool, np.bool_)):
        raise Rejected(f"{name} is a bool")
    if isinstance(value, (int, np.integer)):
        return int(value)
    try:
        arr = np.asarray(value)
    except Exception as exc:
        raise Rejected(f"{name}: {exc}") from None
    if arr.dtype.kind not in "iu" or arr.ndim > 1 or arr.size != 1:
        raise Rejected(f"{name} {value!r} is not one integer")
    return int(arr.reshape(()))


def norm_slice_param(value, name: str) -> list[int]:
    """A slice parameter: one integer, or a 1-D sequence/array of integers."""
    if isinstance(value, (bool, np.bool_)):
        raise Rejected(f"{name} is a bool")
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    if isinstance(value, (list, tuple)):
        items = []
        for v in value:  # each a scalar integer (Python ints beyond int64 included)
            if isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.ndim > 0):
                raise Rejected(f"{name} element {v!r} is not a scalar")
            items.append(norm_int(v, name))
        return items
    try:
        arr = np.asarray(value)
    except Exception as exc:
        raise Rejected(f"{name}: {exc}") from None
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise Rejected(f"{name} {value!r} is not a 1-D integer sequence")
    return [int(v) for v in arr.reshape(-1)]


def norm_slice_params(start, stop, step, axis) -> tuple[list[int], ...]:
    params = tuple(
        norm_slice_param(v, n)
        for v, n in ((start, "start"), (stop, "stop"), (step, "step"), (axis, "axis"))
    )
    if len({len(p) for p in params}) != 1 or not params[0]:
        raise Rejected(f"slice parameter lengths {[len(p) for p in params]}")
    return params


def check_str(value, name: str) -> str:
    if not isinstance(value, str):
        raise Rejected(f"{name} {value!r} is not a str")
    return value


def check_flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise Rejected(f"{name} {value!r} is not a bool")
    return bool(value)


def check_out(out, data: np.ndarray) -> None:
    """`out`: None, or a writeable ndarray of data's shape and native dtype."""
    if out is None:
        return
    if not isinstance(out, np.ndarray):
        raise Rejected(f"out is a {type(out).__name__}")
    if not out.flags.writeable:
        raise Rejected("out is read-only")
    if out.shape != data.shape or out.dtype != data.dtype:
        raise Rejected(f"out {out.shape} {out.dtype} for data {data.shape} {data.dtype}")


# --------------------------------------------------------------------------------------------
# the operations and what the oracle says about a call


@dataclass(frozen=True)
class OpSpec:
    kind: str  # "update", "elements", "nd" or "slice"
    allow_negative: bool
    reductions: tuple[str, ...] = ()  # () when the callable takes no reduction keyword
    has_init: bool = False  # takes use_init_val


_KINDS = {
    "scatter_update": "update",
    "scatter_elements_update": "elements",
    "scatter_nd_update": "nd",
    "slice_scatter": "slice",
}
SPECS = {
    name: OpSpec(_KINDS[v.kernel], v.negative_indices, v.reductions, "use_init_val" in v.defaults)
    for name, v in OPS.items()
}


def split_kwargs(spec: OpSpec, kwargs: dict) -> tuple[Any, Any, Any]:
    """(out, reduction, use_init_val); a keyword the callable does not take is rejected."""
    allowed = {"out"}
    allowed |= {"reduction"} if spec.reductions else set()
    allowed |= {"use_init_val"} if spec.has_init else set()
    unknown = set(kwargs) - allowed
    if unknown:
        raise Rejected(f"unexpected keyword arguments {sorted(unknown)}")
    return kwargs.get("out"), kwargs.get("reduction", "none"), kwargs.get("use_init_val", True)


def expected_result(spec: OpSpec, args: tuple, kwargs: dict) -> np.ndarray:
    """The oracle's result for a call, behind the documented argument rules.

    Raises Rejected, or the oracle's own TypeError/ValueError/IndexError, when the call
    must fail.
    """
    out, reduction, use_init_val = split_kwargs(spec, kwargs)
    data = norm_data(args[0])
    if spec.kind == "slice":
        _, updates, start, stop, step, axis = args
        upd = norm_updates(updates, data.dtype)
        starts, stops, steps, axes = norm_slice_params(start, stop, step, axis)
        check_out(out, data)
        return ref_slice_scatter(data, upd, starts, stops, steps, axes)
    idx = norm_indices(args[1])
    upd = norm_updates(args[2], data.dtype)
    check_out(out, data)
    if spec.kind == "nd":
        check_str(reduction, "reduction")
        return ref_scatter_nd_update(data, idx, upd, reduction, spec.allow_negative)
    axis = norm_int(args[3], "axis")
    if spec.kind == "update":
        return ref_scatter_update(data, idx, upd, axis, spec.allow_negative)
    check_str(reduction, "reduction")
    init = check_flag(use_init_val, "use_init_val")
    return ref_scatter_elements_update(
        data, idx, upd, axis, reduction, init, allow_negative=spec.allow_negative
    )


# --------------------------------------------------------------------------------------------
# buffers: which bytes a call may change


def root_of(a: np.ndarray) -> np.ndarray:
    """The array at the bottom of `a`'s chain of views (owning or wrapping the memory)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class Guard:
    """Snapshots of every buffer the given arguments view."""

    def __init__(self, objects):
        self.arrays = {}
        for obj in objects:
            if isinstance(obj, np.ndarray):  # object arrays: their pointers must stay
                self.arrays.setdefault(id(root_of(obj)), (obj, snapshot(obj)))

    def assert_unchanged(self, written: np.ndarray | None = None) -> None:
        """Nothing changed, except the elements of `written` (the out= array)."""
        for array, snap in self.arrays.values():
            if written is not None and root_of(array) is root_of(written):
                snap = with_bytes_of(snap, written)
            assert_unchanged(array, snap)


def with_bytes_of(root_snapshot: bytes, view: np.ndarray) -> bytes:
    """`root_snapshot` (of view's root) with view's elements replaced by their current bytes."""
    root = root_of(view)
    assert root.flags.c_contiguous, "test bug: a generated buffer must be C-contiguous"
    buffer = np.frombuffer(bytearray(root_snapshot), np.uint8)
    raw = np.dtype((np.void, view.itemsize))
    offset = view.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    region = np.ndarray(view.shape, raw, buffer=buffer, offset=offset, strides=view.strides)
    region[...] = view.view(raw)
    return buffer.tobytes()


def call_recording_warnings(fn: Callable, stats: Counter):
    """fn() -> (result, error); any warning the library emits is a failure."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = fn(), None
        except ALLOWED_ERRORS as exc:
            result, error = None, exc
    assert not caught, f"unexpected warning {caught[0].category.__name__}: {caught[0].message}"
    return result, error


# --------------------------------------------------------------------------------------------
# checking one call


@dataclass
class Case:
    """One call of an op: `fn(*args, **kwargs)`; `notes` say how the inputs were made."""

    label: str
    name: str
    args: tuple
    kwargs: dict
    notes: dict = field(default_factory=dict)
    fn: Callable = field(default=None, repr=False)


def run_case(case: Case) -> None:
    stats = STATS[case.label]
    stats["inputs"] += 1
    try:
        check_case(case, stats)
    except BaseException:
        stats["failures"] += 1
        raise


def check_case(case: Case, stats: Counter) -> None:
    spec = SPECS[case.name]
    try:  # before the call: out= may be data itself
        expected, why = expected_result(spec, case.args, case.kwargs), None
    except (Rejected, *ALLOWED_ERRORS) as exc:
        expected, why = None, exc
    inputs = [*case.args, *case.kwargs.values()]
    guard = Guard(inputs)
    result, error = call_recording_warnings(lambda: case.fn(*case.args, **case.kwargs), stats)

    if error is not None:
        stats["rejected"] += 1
        guard.assert_unchanged()
        assert why is not None, f"library raised {error!r}; the oracle accepts the arguments"
        return
    stats["accepted"] += 1
    assert why is None, f"library accepted arguments the oracle rejects: {why!r}"
    out = case.kwargs.get("out")
    guard.assert_unchanged(written=out)
    if out is not None:
        assert result is out, "out= given but not returned"
    else:
        for a in inputs:
            if isinstance(a, np.ndarray):
                assert not np.may_share_memory(result, a), "result aliases an input"
    assert_same(result, expected)


# --------------------------------------------------------------------------------------------
# strategies: values, dtypes and layouts

SWAPPED_DTYPES = [
    np.dtype(t).newbyteorder("S") for t in ("i2", "u4", "i8", "f2", "f4", "f8", "c16")
] + [STRUCT_DTYPE.newbyteorder("S")]
DATA_DTYPES = ALL_DTYPES + SWAPPED_DTYPES
NATIVE_DTYPES = ALL_DTYPES
LAYOUTS = ("contiguous", "strided", "transposed", "reversed", "readonly", "unaligned", "list")

rngs = st.integers(0, 2**32 - 1).map(np.random.default_rng)


# Extents 0-3, mostly non-zero: one zero extent empties the whole tensor.
extents = st.sampled_from((2, 1, 3, 2, 3, 1, 0))


def up_to(n: int):
    """An extent in [0, n], mostly non-zero."""
    return st.sampled_from((*range(1, n + 1), 0))


def shapes(min_rank: int = 0, max_rank: int = 4):
    return st.lists(extents, min_size=min_rank, max_size=max_rank).map(tuple)


def broken_args(names):
    """Which arguments to break: none for ~30% of the examples, else one to three."""
    return st.integers(0, 9).flatmap(
        lambda roll: (
            st.just(frozenset())
            if roll < 3
            else st.sets(st.sampled_from(names), min_size=1, max_size=3).map(frozenset)
        )
    )


def values_of(rng: np.random.Generator, dtype, shape) -> np.ndarray:
    """Random values (extremes, NaN, -0.0 included) of any dtype, byte-swapped ones too."""
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        return random_values(rng, np.int64, shape).astype(object)
    native = native_dtype(dtype)
    value = random_values(rng, native, shape)
    return value if native == dtype else value.astype(dtype)


def arranged(value: np.ndarray, layout: str):
    """An argument equal to `value`, in the given memory layout (or as a Python list)."""
    if layout == "list":
        return value.tolist()
    if layout == "readonly":
        copy = value.copy()
        copy.flags.writeable = False
        return copy
    if value.ndim == 0 or layout == "contiguous" or value.dtype.hasobject:
        return value.copy()
    if layout == "strided":  # every other element of a larger buffer
        pool = np.zeros(tuple(2 * d + 1 for d in value.shape), value.dtype)
        view = pool[tuple(slice(1, None, 2) for _ in value.shape)]
    elif layout == "transposed":
        view = np.zeros(value.shape[::-1], value.dtype).T
    elif layout == "reversed":
        view = np.zeros(value.shape, value.dtype)[tuple(slice(None, None, -1) for _ in value.shape)]
    else:  # unaligned: one byte into a byte buffer
        raw = np.zeros(value.nbytes + 1, np.uint8)
        view = raw[1:].view(value.dtype).reshape(value.shape)
    view[...] = value
    return view


def overlapping(source: np.ndarray, dtype, shape, rng: np.random.Generator, strided: bool):
    """(copy of `source`, array of dtype/shape) in one byte pool, the second starting inside
    the first: an out= buffer that overlaps an input."""
    dtype = np.dtype(dtype)
    step = 2 if strided else 1
    n_bytes = math.prod(shape) * step * dtype.itemsize
    start = int(rng.integers(0, max(source.nbytes // dtype.itemsize, 1))) * dtype.itemsize
    pool = np.zeros(max(source.nbytes, start + n_bytes), np.uint8)
    copy = pool[: source.nbytes].view(source.dtype).reshape(source.shape)
    copy[...] = source
    out = pool[start : start + n_bytes].view(dtype)[::step].reshape(shape)
    return copy, out


# --------------------------------------------------------------------------------------------
# strategies: data, indices, updates


@st.composite
def data_args(draw, rng, bad: bool, notes: dict):
    """(data argument, its values as an ndarray)."""
    if bad:
        form = draw(st.sampled_from(("rank0", "python_scalar", "object", "ragged", "none", "str")))
        notes["data"] = form
        if form == "ragged":
            return [[1, 2], [3]], np.zeros(1)
        if form == "none":
            return None, np.zeros(1)
        if form == "str":
            return "abc", np.zeros(1)
        dtype = np.dtype(object) if form == "object" else draw(st.sampled_from(DATA_DTYPES))
        value = values_of(rng, dtype, draw(shapes(1)) if form == "object" else ())
        return (value.tolist() if form == "python_scalar" else value), value
    value = values_of(rng, draw(st.sampled_from(DATA_DTYPES)), draw(shapes(1)))
    notes["data"] = layout = draw(st.sampled_from(LAYOUTS))
    return arranged(value, layout), value


def valid_indices(rng, shape, dims, dtype: np.dtype, allow_negative: bool) -> np.ndarray:
    """Indices of `shape`, each valid for its axis size in `dims` (broadcast to shape)."""
    dims = np.broadcast_to(np.asarray(dims, np.int64), shape)
    lo = -dims if allow_negative and dtype.kind == "i" else np.zeros_like(dims)
    span = dims - lo
    picks = lo + np.floor(rng.random(shape) * span).astype(np.int64)
    return np.where(span > 0, picks, 0).astype(dtype)


@st.composite
def fitted_indices(draw, rng, kind: str, shape: tuple, axis: int, dtype, allow_negative: bool):
    """Valid indices for data of `shape` (empty where an addressed axis has size 0)."""
    rank = len(shape)
    if kind == "update":
        ishape, dims = draw(shapes(0, 2)), shape[axis]
        if dims == 0 and math.prod(ishape):
            ishape = (0,)
    elif kind == "elements":
        ishape = [draw(up_to(d)) for d in shape]
        ishape[axis] = draw(up_to(3)) if shape[axis] else 0
        ishape, dims = tuple(ishape), shape[axis]
    else:  # nd: index tuples of length k over the first k axes
        k = draw(st.integers(0, rank))
        batch, dims = draw(shapes(0, 2)), shape[:k]
        if 0 in dims and math.prod(batch):
            batch = (0,)
        ishape = (*batch, k)
    return valid_indices(rng, ishape, dims, np.dtype(dtype), allow_negative)


def poison_values(dim: int, dtype: np.dtype) -> list[int]:
    """Index values at or beyond an axis of size `dim` and the dtype's limits."""
    info = np.iinfo(dtype)
    wanted = [dim, dim + 1, -1, -dim, -dim - 1, int(info.min), int(info.max)]
    wanted += [2**31 - 1, -(2**31), 2**32, 2**63 - 1, -(2**63)]
    return [v for v in wanted if info.min <= v <= info.max]


BAD_INDEX_FORMS = (
    "poison",
    "poison",
    "wrong_shape",
    "float",
    "float16",
    "bool",
    "complex",
    "object",
    "str",
    "huge_list",
    "mixed_sign_list",
    "ragged",
    "none",
)


@st.composite
def index_args(draw, rng, spec: OpSpec, shape: tuple, axis: int, bad: bool, notes: dict):
    """(indices argument, the integer array it stands for)."""
    dtype = np.dtype(draw(st.sampled_from(INDEX_DTYPES)))
    idx = draw(fitted_indices(rng, spec.kind, shape, axis, dtype, spec.allow_negative))
    if not bad:
        forms = (*LAYOUTS, "scalar") if idx.ndim == 0 else LAYOUTS
        notes["indices"] = form = draw(st.sampled_from(forms))
        if form == "scalar":
            return (idx.tolist() if draw(st.booleans()) else idx[()]), idx
        return arranged(idx, form), idx
    notes["indices"] = form = draw(st.sampled_from(BAD_INDEX_FORMS))
    if form == "poison":
        if idx.size:
            flat = idx.reshape(-1)  # the last position mostly: a write-then-fail shows
            at = flat.size - 1 if draw(st.booleans()) else draw(st.integers(0, flat.size - 1))
            axis_of = at % idx.shape[-1] if spec.kind == "nd" else axis
            dim = shape[axis_of] if shape else 1
            flat[at] = draw(st.sampled_from(poison_values(dim, dtype)))
        return arranged(idx, draw(st.sampled_from(LAYOUTS))), idx
    if form == "wrong_shape":
        idx = valid_indices(rng, draw(shapes()), shape[axis] if shape else 1, dtype, False)
        return idx, idx
    if form in ("float", "float16", "bool", "complex", "object", "str"):
        as_type = {"float": np.float64, "float16": np.float16, "complex": np.complex128}
        return idx.astype(as_type.get(form, form)), idx
    if form == "huge_list":
        return [*idx.reshape(-1).tolist(), 2**64], idx
    if form == "mixed_sign_list":
        return [-1, 2**63], idx
    if form == "ragged":
        return [[0], [0, 1]], idx
    return None, idx


def updates_shape(kind: str, shape: tuple, ishape: tuple, axis: int) -> tuple:
    """The updates shape the op expects for data `shape` and indices `ishape`."""
    if kind == "update":
        axis %= len(shape)
        return shape[:axis] + ishape + shape[axis + 1 :]
    if kind == "elements":
        return ishape
    k = ishape[-1] if ishape else 0
    return ishape[:-1] + shape[k:]


BAD_UPDATE_FORMS = (
    "wrong_shape",
    "wrong_shape",
    "other_dtype",
    "other_dtype",
    "python_out_of_range",
    "object",
    "none",
    "str",
    "complex_scalar",
    "ragged",
)


@st.composite
def updates_args(draw, rng, dtype: np.dtype, shape: tuple, bad: bool, notes: dict):
    """An updates argument for data of `dtype`, of `shape` unless broken."""
    dtype = native_dtype(dtype)
    if not bad:
        forms = ("same", "same", "safe_cast", "same_kind_cast", "swapped", "python")
        notes["updates"] = form = draw(st.sampled_from(forms))
        if form.endswith("_cast"):  # lossless, or (same_kind) possibly wrapping or overflowing
            rule = "safe" if form == "safe_cast" else "same_kind"
            sources = [d for d in NATIVE_DTYPES if np.can_cast(d, dtype, rule)]
            value = values_of(rng, draw(st.sampled_from(sources)), shape)
            return arranged(value, draw(st.sampled_from(LAYOUTS[:-1])))
        value = values_of(rng, dtype, shape)
        if form == "swapped" and dtype.newbyteorder("S") != dtype and not dtype.hasobject:
            return value.astype(dtype.newbyteorder("S"))
        if form == "python":  # a Python scalar or nested list, taking data's dtype
            return value.tolist()
        return arranged(value, draw(st.sampled_from(LAYOUTS[:-1])))
    notes["updates"] = form = draw(st.sampled_from(BAD_UPDATE_FORMS))
    if form == "wrong_shape":
        return values_of(rng, dtype, draw(shapes()))
    if form == "other_dtype":  # castable under same_kind or not
        return values_of(rng, draw(st.sampled_from(DATA_DTYPES)), shape)
    if form == "python_out_of_range":
        value = draw(st.sampled_from((2**70, -(2**70), 256, -1, 1e300, float("nan"), 70000)))
        return np.full(shape, value, dtype=object).tolist() if shape else value
    if form == "object":
        return values_of(rng, object, shape)
    if form == "complex_scalar":
        return 1 + 2j
    return {"none": None, "str": "abc", "ragged": [[1.0], [1.0, 2.0]]}[form]


# --------------------------------------------------------------------------------------------
# strategies: axis, slice parameters, keywords, out=

HUGE_INTS = (2**63, -(2**63) - 1, 2**64, 2**100, -(2**100))
BAD_AXES = (
    True,
    False,
    np.True_,
    0.0,
    np.float64(1),
    None,
    "0",
    1j,
    [],
    [[0]],
    np.array([0, 0]),
    np.array([], np.int64),
    np.array([1.0]),
    np.uint64(2**64 - 1),
    *HUGE_INTS,
)


def int_forms(value: int, scalar: bool):
    """`value` as an int, NumPy integer, 0-D or one-element array or list (if a dtype fits)."""
    fits = [d for d in INDEX_DTYPES if np.iinfo(d).min <= value <= np.iinfo(d).max]
    forms = [st.just(value), st.just([value])]
    if fits:
        dtype = st.sampled_from(fits)
        forms += [dtype.map(lambda d: d.type(value)), dtype.map(lambda d: np.array([value], d))]
        forms += [dtype.map(lambda d: np.array(value, d))]
    return st.one_of(forms[:1] + forms[2:] if scalar else forms)


@st.composite
def axis_args(draw, axis: int, rank: int, bad: bool):
    """An axis argument: `axis` in some integer form, or broken."""
    if not bad:
        return draw(int_forms(axis, scalar=False))
    if draw(st.booleans()):  # an integer out of range
        return draw(st.sampled_from((rank, -rank - 1, 2**63 - 1, -(2**63), 50)))
    return draw(st.sampled_from(BAD_AXES))


SLICE_EXTREMES = (-(2**63), 2**63 - 1, -(2**70), 2**70, 2**64)
BAD_SLICE_FORMS = (
    True,
    np.True_,
    [True],
    1.0,
    np.float64(1),
    np.array([1.0]),
    [],
    np.array([], np.int64),
    [[0]],
    np.zeros((1, 1), np.int64),
    None,
    "0",
    [np.array([0])],
    np.array([True]),
    [1.5],
)
SLICE_BREAKS = ("step0", "duplicate_axis", "axis_range", "length", "form", "form")


def slice_bound(dim: int, stop: bool):
    """A start or stop near the axis (either sign) mostly, else an extreme. The simplest
    start is 0 and the simplest stop is `dim`, so simple examples select something."""
    near = st.integers(-dim - 2, dim + 2)
    if stop:
        near = near.map(lambda v: dim - v if v >= 0 else v)
    return st.one_of(near, near, near, st.sampled_from(SLICE_EXTREMES))


forward, backward = st.integers(1, 3), st.integers(-3, -1)
steps = st.one_of(forward, forward, backward, st.sampled_from((2**63 - 1, -(2**63), 2**70)))


@st.composite
def slice_values(draw, shape: tuple):
    """Valid (starts, stops, steps, axes) lists for data of `shape` (rank >= 1)."""
    rank = len(shape)
    n = draw(st.integers(1, rank))
    axes = draw(st.permutations(range(rank)))[:n]
    starts = [draw(slice_bound(shape[a], stop=False)) for a in axes]
    stops = [draw(slice_bound(shape[a], stop=True)) for a in axes]
    steps_ = [draw(steps) for _ in axes]
    axes = [a - rank if draw(st.booleans()) else a for a in axes]  # negative aliases too
    return starts, stops, steps_, axes


def slice_shape(shape: tuple, starts, stops, steps_, axes) -> tuple:
    """The shape slice_scatter expects its updates to have."""
    extents = list(shape)
    for s0, s1, st_, a in zip(starts, stops, steps_, axes):
        extents[a % len(shape)] = len(slice_positions(s0, s1, st_, shape[a % len(shape)]))
    return tuple(extents)


@st.composite
def param_forms(draw, values: list[int]):
    """One slice parameter: a scalar form when it has one element, else a sequence form."""
    if len(values) == 1 and draw(st.booleans()):
        return draw(int_forms(values[0], scalar=True))
    fits = [d for d in INDEX_DTYPES if all(np.iinfo(d).min <= v <= np.iinfo(d).max for v in values)]
    form = draw(st.sampled_from(("list", "tuple", "array") if fits else ("list", "tuple")))
    if form == "array":
        return np.array(values, draw(st.sampled_from(fits)))
    return list(values) if form == "list" else tuple(values)


@st.composite
def slice_args(draw, params: tuple, rank: int, bad: bool, notes: dict):
    """(start, stop, step, axis) arguments for valid `params`, broken if asked."""
    starts, stops, steps_, axes = (list(p) for p in params)
    forms = {}
    for brk in draw(st.sets(st.sampled_from(SLICE_BREAKS), min_size=1, max_size=2)) if bad else ():
        notes.setdefault("slice", []).append(brk)
        j = draw(st.integers(0, min(map(len, (starts, stops, steps_, axes))) - 1))
        if brk == "step0":
            steps_[j] = 0
        elif brk == "axis_range":
            axes[j] = draw(st.sampled_from((rank, -rank - 1, *HUGE_INTS)))
        elif brk == "duplicate_axis":  # the same axis, or its negative alias, twice
            alias = axes[j] if draw(st.booleans()) else axes[j] % max(rank, 1) - rank
            for p in (starts, stops, steps_):
                p.append(p[j])
            axes.append(alias)
        elif brk == "length":
            draw(st.sampled_from((starts, stops, steps_, axes))).append(0)
        else:
            forms[draw(st.sampled_from(("start", "stop", "step", "axis")))] = draw(
                st.sampled_from(BAD_SLICE_FORMS)
            )
    named = {"start": starts, "stop": stops, "step": steps_, "axis": axes}
    return tuple(forms[k] if k in forms else draw(param_forms(v)) for k, v in named.items())


BAD_REDUCTIONS = (
    "",
    "SUM",
    "add",
    "mean",
    "sub",
    "none ",
    "sum\x00",
    "\ud800",
    "\uff53um",
    None,
    0,
    1.5,
    b"sum",
    ["sum"],
    np.array("sum"),
)
BAD_FLAGS = (0, 1, None, "True", np.array(True), 1.0, [True])


@st.composite
def reduction_args(draw, valid: tuple[str, ...], bad: bool):
    if bad:
        return draw(st.sampled_from(BAD_REDUCTIONS))
    name = draw(st.sampled_from(valid))
    return np.str_(name) if draw(st.booleans()) else name


@st.composite
def keyword_args(draw, spec: OpSpec, bad: bool) -> dict:
    """reduction/use_init_val where the callable takes them; unknown keywords if broken."""
    kwargs = {}
    if spec.reductions and draw(st.integers(0, 3)):
        kwargs["reduction"] = draw(reduction_args(spec.reductions, bad and draw(st.booleans())))
    if spec.has_init and draw(st.booleans()):
        bad_flag = bad and draw(st.booleans())
        flags = BAD_FLAGS if bad_flag else (True, False, np.True_, np.False_)
        kwargs["use_init_val"] = draw(st.sampled_from(flags))
    if bad and (not kwargs or draw(st.booleans())):  # keywords the callable does not take
        extra = {"reduction": "none", "use_init_val": True, "axis2": 0}
        key = draw(st.sampled_from(sorted(k for k in extra if k not in kwargs)))
        takes = {"reduction": bool(spec.reductions), "use_init_val": spec.has_init}
        if not takes.get(key, False):
            kwargs[key] = extra[key]
    return kwargs


GOOD_OUTS = (
    "omit",
    "none",
    "fresh",
    "fresh_layout",
    "in_place",
    "overlap_data",
    "overlap_indices",
    "overlap_updates",
)
BAD_OUTS = ("wrong_shape", "wrong_dtype", "swapped", "readonly", "list", "tuple")


@st.composite
def out_args(draw, rng, named: dict, bad: bool, notes: dict):
    """Picks out= (possibly overlapping an input, which it then replaces in `named`).

    Returns the out argument, or "omit" to leave the keyword out.
    """
    data = named["data"]
    try:
        target = norm_data(data)  # what out must look like
    except Rejected:
        target = np.zeros((1,))
    notes["out"] = mode = draw(st.sampled_from(BAD_OUTS if bad else GOOD_OUTS))
    if mode == "omit":
        return "omit"
    if mode == "none":
        return None
    dtype, shape = target.dtype, target.shape
    strided = draw(st.booleans())
    if mode == "in_place" and isinstance(data, np.ndarray):
        return data
    if mode.startswith("overlap_"):
        key = mode[len("overlap_") :]
        source = named.get(key)
        if isinstance(source, np.ndarray) and not source.dtype.hasobject:
            named[key], out = overlapping(source, dtype, shape, rng, strided)
            return out
    if mode == "wrong_shape":
        return values_of(rng, dtype, draw(shapes().filter(lambda s: s != shape)))
    if mode == "wrong_dtype":
        other = draw(st.sampled_from([d for d in NATIVE_DTYPES if d != dtype]))
        return values_of(rng, other, shape)
    if mode == "swapped" and dtype.newbyteorder("S") != dtype:
        return values_of(rng, dtype.newbyteorder("S"), shape)
    if mode == "readonly":
        return arranged(values_of(rng, dtype, shape), "readonly")
    if mode in ("list", "tuple"):
        return [] if mode == "list" else ()
    layout = "contiguous"
    if mode == "fresh_layout":
        layout = draw(st.sampled_from(("strided", "transposed", "reversed", "unaligned")))
    return arranged(values_of(rng, dtype, shape), layout)


# --------------------------------------------------------------------------------------------
# one call of any op


@st.composite
def op_cases(draw, name: str, fn: Callable, label: str):
    """A call of the op `name` (through `fn`) with mostly broken arguments."""
    spec = SPECS[name]
    rng = draw(rngs)
    arg_names = ("data", "indices", "updates", "axis", "kwargs", "out")
    if spec.kind == "slice":
        arg_names = ("data", "updates", "slice", "out")
    elif spec.kind == "nd":
        arg_names = ("data", "indices", "updates", "kwargs", "out")
    broken = draw(broken_args(arg_names))
    notes = {"broken": sorted(broken)}
    data, value = draw(data_args(rng, "data" in broken, notes))
    shape = value.shape if value.ndim else (1,)  # what the other arguments are made to fit
    named = {"data": data}
    if spec.kind == "slice":
        params = draw(slice_values(shape))
        ushape = slice_shape(shape, *params)
        slice_params = draw(slice_args(params, value.ndim, "slice" in broken, notes))
    else:
        axis = draw(st.integers(-len(shape), len(shape) - 1))
        axis_arg = draw(axis_args(axis, value.ndim, "axis" in broken))
        named["indices"], idx = draw(index_args(rng, spec, shape, axis, "indices" in broken, notes))
        ushape = updates_shape(spec.kind, shape, idx.shape, axis)
    named["updates"] = draw(updates_args(rng, value.dtype, ushape, "updates" in broken, notes))
    kwargs = draw(keyword_args(spec, "kwargs" in broken))
    out = draw(out_args(rng, named, "out" in broken, notes))
    if not isinstance(out, str):
        kwargs["out"] = out
    if spec.kind == "slice":
        args = (named["data"], named["updates"], *slice_params)
    elif spec.kind == "nd":
        args = (named["data"], named["indices"], named["updates"])
    else:
        args = (named["data"], named["indices"], named["updates"], axis_arg)
    return Case(label, name, args, kwargs, notes, fn)


@fuzz
@given(case=op_cases("ScatterUpdate-3", sk.scatter_update, "scatter_update"))
def test_fuzz_scatter_update(case):
    run_case(case)


@fuzz
@given(
    case=op_cases("ScatterElementsUpdate-12", sk.scatter_elements_update, "scatter_elements_update")
)
def test_fuzz_scatter_elements_update(case):
    run_case(case)


@fuzz
@given(case=op_cases("ScatterNDUpdate-15", sk.scatter_nd_update, "scatter_nd_update"))
def test_fuzz_scatter_nd_update(case):
    run_case(case)


@fuzz
@given(case=op_cases("SliceScatter-15", sk.slice_scatter, "slice_scatter"))
def test_fuzz_slice_scatter(case):
    run_case(case)


@fuzz
@given(
    case=st.sampled_from(sorted(SPECS)).flatmap(
        lambda name: op_cases(name, sk.get_op(name), "get_op")
    )
)
def test_fuzz_versioned_ops(case):
    run_case(case)


@fuzz
@given(
    name=st.one_of(
        st.sampled_from(sorted(SPECS)),
        st.text(max_size=30),
        st.sampled_from(
            ("scatterupdate-3", "ScatterUpdate-4", "ScatterUpdate", " SliceScatter-15")
        ),
        st.none(),
        st.integers(),
        st.lists(st.integers(), max_size=2),
        st.binary(max_size=5),
    )
)
def test_fuzz_get_op_names(name):
    stats = STATS["get_op names"]
    stats["inputs"] += 1
    if isinstance(name, str) and name in SPECS:
        assert callable(sk.get_op(name))
        stats["accepted"] += 1
        return
    with pytest.raises(ValueError, match="unknown operation"):
        sk.get_op(name)
    stats["rejected"] += 1


# --------------------------------------------------------------------------------------------
# run_batch: the expected outcome


@dataclass
class BatchCase:
    """One run_batch call; `notes` say how the inputs were made."""

    name: Any
    data: Ragged
    updates: Ragged
    indices: Ragged | None
    kwargs: dict
    notes: dict = field(default_factory=dict)


def int64_vector(value, what: str) -> np.ndarray:
    """A Ragged offsets/shapes field: a 1-D integer array whose values fit int64."""
    arr = np.asarray(value)
    if not isinstance(value, np.ndarray) and arr.size == 0:
        arr = arr.astype(np.int64)  # an empty Python list
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise Rejected(f"{what} must be a 1-D integer array, got {arr.dtype} {arr.shape}")
    if arr.size and (int(arr.max()) > 2**63 - 1):
        raise Rejected(f"{what} beyond int64")
    return arr.astype(np.int64)


def check_ragged(ragged: Ragged, values: np.ndarray, rows: int, what: str):
    """(offsets, shapes, shape_offsets) of a well-formed Ragged, else Rejected."""
    if values.ndim != 1:
        raise Rejected(f"{what} values must be 1-D")
    offsets = int64_vector(ragged.offsets, f"{what} offsets")
    shapes_ = int64_vector(ragged.shapes, f"{what} shapes")
    shape_offsets = int64_vector(ragged.shape_offsets, f"{what} shape offsets")
    for name, off, limit in (
        ("offsets", offsets, values.size),
        ("shape offsets", shape_offsets, shapes_.size),
    ):
        if off.size != rows + 1:
            raise Rejected(f"{what} {name}: {off.size} entries for {rows} rows")
        if off[0] < 0 or off[-1] > limit or np.any(np.diff(off) < 0):
            raise Rejected(f"{what} {name} {off} not non-decreasing within [0, {limit}]")
    return offsets, shapes_, shape_offsets


def ragged_row(values: np.ndarray, parts, r: int, itemsize: int) -> np.ndarray:
    """Row r, or Rejected when its shape is too big for elements of `itemsize` bytes (the
    kernels' element size; NumPy's rule, also for zero-size shapes) or does not match its
    number of values."""
    offsets, shapes_, shape_offsets = parts
    shape = [int(d) for d in shapes_[shape_offsets[r] : shape_offsets[r + 1]]]
    length = int(offsets[r + 1] - offsets[r])
    if any(d < 0 for d in shape):
        raise Rejected(f"row shape {shape} has a negative extent")
    if math.prod(d for d in shape if d) * itemsize > 2**63 - 1:
        raise Rejected(f"row shape {shape} is too big")
    if math.prod(shape) != length:
        raise Rejected(f"row shape {shape} for {length} values")
    return values[offsets[r] : offsets[r + 1]].reshape(shape)


def kernel_index_itemsize(indices: np.ndarray) -> int:
    """The size of the index type the kernels read `indices` as (see `as_indices`)."""
    small = indices.dtype.itemsize <= (4 if indices.dtype.kind == "i" else 2)
    return 4 if small else 8


@dataclass
class BatchModel:
    """What a run_batch call must do."""

    malformed: str | None = None  # must raise (a bad batch, or attributes wrong for every row)
    rows: list = field(default_factory=list)  # per row: expected array, or the Rejected reason
    data_values: np.ndarray | None = None
    data_parts: tuple = ()


def batch_model(case: BatchCase) -> BatchModel:
    model = BatchModel()
    try:
        spec, attrs = batch_attributes(case)
        values = np.asarray(case.data.values)
        if values.dtype.hasobject:
            raise Rejected("data values hold Python objects")
        values = values.astype(native_dtype(values.dtype))
        upd_values = norm_updates(case.updates.values, values.dtype)
        rows = len(case.data.offsets) - 1
        if rows < 0:
            raise Rejected("no data offsets")
        model.data_values = values
        model.data_parts = check_ragged(case.data, values, rows, "data")
        upd_parts = check_ragged(case.updates, upd_values, rows, "updates")
        idx_values = idx_parts = None
        if spec.kind != "slice":
            if case.indices is None:
                raise Rejected("indices are required")
            idx_values = norm_indices(case.indices.values)
            idx_parts = check_ragged(case.indices, idx_values, rows, "indices")
    except Rejected as exc:
        model.malformed = str(exc)
        return model
    for r in range(rows):
        try:
            size = values.dtype.itemsize
            data = norm_data(ragged_row(values, model.data_parts, r, size))
            upd = ragged_row(upd_values, upd_parts, r, size)
            idx = None
            if idx_parts:
                idx = ragged_row(idx_values, idx_parts, r, kernel_index_itemsize(idx_values))
            model.rows.append(batch_row(spec, attrs, data, idx, upd))
        except (Rejected, *ALLOWED_ERRORS) as exc:
            model.rows.append(exc)
    return model


def batch_attributes(case: BatchCase) -> tuple[OpSpec, dict]:
    """The op and its normalized attributes; raises Rejected for malformed ones, and for ones
    that are well formed but wrong for every row (an error of the call, not of each row)."""
    if not isinstance(case.name, str) or case.name not in SPECS:
        raise Rejected(f"unknown operation {case.name!r}")
    spec = SPECS[case.name]
    kw = case.kwargs
    reduction = check_str(kw.get("reduction", "none"), "reduction")
    check_flag(kw.get("use_init_val", True), "use_init_val")
    attrs = {"reduction": reduction, "init": bool(kw.get("use_init_val", True))}
    if reduction not in (spec.reductions or ("none",)):
        raise Rejected(f"reduction {reduction!r} for {case.name}")
    if spec.kind == "slice":
        params = norm_slice_params(kw.get("start"), kw.get("stop"), kw.get("step"), kw["axis"])
        attrs["slice"] = params
        if 0 in params[2] or len(set(params[3])) < len(params[3]):
            raise Rejected(f"slice parameters {params}")
        if any(not -(2**63) <= a < 2**63 for a in params[3]):
            raise Rejected(f"axes {params[3]}")
    elif spec.kind != "nd":
        attrs["axis"] = norm_int(kw.get("axis", 0), "axis")
        if not -(2**63) <= attrs["axis"] < 2**63:
            raise Rejected(f"axis {attrs['axis']}")
    return spec, attrs


def batch_row(spec: OpSpec, attrs: dict, data, idx, upd) -> np.ndarray:
    """The oracle's output for one row."""
    if spec.kind == "slice":
        return ref_slice_scatter(data, upd, *attrs["slice"])
    if spec.kind == "nd":
        return ref_scatter_nd_update(data, idx, upd, attrs["reduction"], spec.allow_negative)
    if spec.kind == "update":
        return ref_scatter_update(data, idx, upd, attrs["axis"], spec.allow_negative)
    return ref_scatter_elements_update(
        data, idx, upd, attrs["axis"], attrs["reduction"], attrs["init"], spec.allow_negative
    )


ROW_ERROR_PREFIXES = ("IndexError: ", "TypeError: ", "ValueError: ")


def check_batch(case: BatchCase, stats: Counter) -> None:
    model = batch_model(case)
    raggeds = [r for r in (case.data, case.updates, case.indices) if r is not None]
    fields = [getattr(r, f) for r in raggeds for f in ("values", "offsets", "shapes")]
    fields += [r.shape_offsets for r in raggeds]
    guard = Guard(fields)
    result, error = call_recording_warnings(
        lambda: run_batch(case.name, case.data, case.updates, case.indices, **case.kwargs), stats
    )
    guard.assert_unchanged()
    if error is not None:
        stats["rejected"] += 1
        assert model.malformed, f"raised {error!r} for a sound batch"
        return
    stats["accepted"] += 1
    assert not model.malformed, f"returned for a malformed batch: {model.malformed}"
    out, errors = result
    values = model.data_values
    assert isinstance(out, np.ndarray) and out.shape == values.shape
    assert out.dtype == values.dtype, (out.dtype, values.dtype)
    for a in fields:
        if isinstance(a, np.ndarray):
            assert not np.may_share_memory(out, a), "output aliases an input"
    assert len(errors) == len(model.rows), (len(errors), len(model.rows))
    offsets = model.data_parts[0]
    if len(offsets):  # values outside every row keep data's
        head, tail = int(offsets[0]), int(offsets[-1])
        assert out[:head].tobytes() == values[:head].tobytes(), "values before row 0 changed"
        assert out[tail:].tobytes() == values[tail:].tobytes(), "values after the last row changed"
    for r, (expected, message) in enumerate(zip(model.rows, errors)):
        got = out[offsets[r] : offsets[r + 1]]
        if not isinstance(expected, np.ndarray):
            assert message is not None, f"row {r} succeeded; expected it to fail: {expected!r}"
            assert message.startswith(ROW_ERROR_PREFIXES), message
            want = values[offsets[r] : offsets[r + 1]]
            assert got.tobytes() == want.tobytes(), f"failed row {r} is not its data row"
        else:
            assert message is None, f"row {r} failed ({message}); the oracle accepts it"
            assert_same(got.reshape(expected.shape), expected)


# --------------------------------------------------------------------------------------------
# run_batch: strategies


def pack(rows: list[np.ndarray], dtype) -> Ragged:
    """Rows stored back to back (a well-formed Ragged)."""
    values = np.concatenate([r.reshape(-1) for r in rows]) if rows else np.empty(0, dtype)
    sizes = [0] + [r.size for r in rows]
    ranks = [0] + [r.ndim for r in rows]
    shapes_ = np.array([d for r in rows for d in r.shape], np.int64)
    return Ragged(
        values, np.cumsum(sizes, dtype=np.int64), shapes_, np.cumsum(ranks, dtype=np.int64)
    )


RAGGED_BREAKS = (
    "decrease",
    "past_end",
    "negative",
    "extra_entry",
    "missing_entry",
    "two_dim",
)
ROW_BREAKS = ("poison", "updates_shape", "rank")


@st.composite
def broken_ragged(draw, ragged: Ragged, notes: dict) -> Ragged:
    """`ragged` with one structural field broken: offsets, shape offsets, shapes or values."""
    part = draw(st.sampled_from(("offsets", "shape_offsets", "shapes", "values")))
    if part in ("shapes", "values"):  # these are only malformed when not 1-D
        notes["ragged"] = f"{part} two_dim"
        return Ragged(**{**vars(ragged), part: np.asarray(getattr(ragged, part)).reshape(1, -1)})
    off = np.array(getattr(ragged, part), dtype=np.int64)  # a copy, whatever its spelling
    brk = draw(st.sampled_from(RAGGED_BREAKS))
    notes["ragged"] = f"{part} {brk}"
    limit = np.size(ragged.values if part == "offsets" else ragged.shapes)
    if brk == "decrease" and off.size >= 2:
        i = draw(st.integers(0, off.size - 2))
        off[i + 1] = off[i] - 1
    elif brk in ("decrease", "past_end"):
        off[-1] = draw(st.sampled_from((limit + 1, 2**62, 2**63 - 1)))
    elif brk == "negative":
        off[0] = draw(st.sampled_from((-1, -(2**63))))
    elif brk == "extra_entry":
        off = np.append(off, off[-1])
    elif brk == "missing_entry":
        off = off[:-1]
    else:
        off = off.reshape(1, -1)
    return Ragged(**{**vars(ragged), part: off})


@st.composite
def mismatched_shape(draw, ragged: Ragged, notes: dict) -> Ragged:
    """`ragged` with one row's shape no longer matching its values: a bad row, not a bad batch."""
    if not ragged.shapes.size:
        return ragged
    shapes_ = ragged.shapes.copy()
    at = draw(st.integers(0, shapes_.size - 1))
    shapes_[at] = draw(st.sampled_from((shapes_[at] + 1, -1, -(2**63), 2**62, 2**63 - 1)))
    notes.setdefault("rows", []).append(f"shape entry {at} = {shapes_[at]}")
    return Ragged(**{**vars(ragged), "shapes": shapes_})


@st.composite
def field_forms(draw, ragged: Ragged) -> Ragged:
    """Equivalent spellings of a well-formed Ragged: values no row covers before and after
    the rows, other integer dtypes or lists for the offsets and shapes, strided values."""
    fields = dict(vars(ragged))
    if draw(st.booleans()):
        values, pad = fields["values"], draw(st.integers(1, 3))
        filler = np.zeros(pad, values.dtype)
        fields["values"] = np.concatenate([filler, values, filler])
        fields["offsets"] = fields["offsets"] + pad
    for key in ("offsets", "shapes", "shape_offsets"):
        form = draw(st.sampled_from(("int64", "int64", "int32", "uint64", "list")))
        a = fields[key]
        if form == "list":
            fields[key] = a.tolist()
        elif form != "int64" and (form != "uint64" or not np.any(a < 0)):
            fields[key] = a.astype(form)
    layout = draw(st.sampled_from(("contiguous", "strided", "reversed", "readonly")))
    fields["values"] = arranged(fields["values"], layout)
    return Ragged(**fields)


@st.composite
def batch_row_args(draw, rng, spec, attrs, dtype, idx_dtype, bad: bool, notes: dict):
    """(data, indices, updates) of one row, fitting the attributes unless `bad`."""
    brk = draw(st.sampled_from(ROW_BREAKS)) if bad else None
    if brk:
        notes.setdefault("rows", []).append(brk)
    if spec.kind == "slice":
        axes = attrs["slice"][3]
        rank = max([a if a >= 0 else -a - 1 for a in axes] + [0]) + 1
    else:
        axis = attrs["axis"]
        rank = max(axis + 1 if axis >= 0 else -axis, 1)
    rank = draw(st.integers(0, 4)) if brk == "rank" else draw(st.integers(min(rank, 4), 4))
    shape = draw(shapes(rank, rank))
    data = values_of(rng, dtype, shape)
    fit = shape or (1,)
    idx = None
    if spec.kind == "slice":
        try:
            ushape = slice_shape(fit, *attrs["slice"])
        except (ValueError, IndexError):  # attributes that fit no row
            ushape = fit
    else:
        ax = attrs["axis"] if -len(fit) <= attrs["axis"] < len(fit) else 0
        idx = draw(fitted_indices(rng, spec.kind, fit, ax, idx_dtype, spec.allow_negative))
        if brk == "poison" and idx.size:
            dim = fit[ax] if spec.kind != "nd" else fit[idx.shape[-1] - 1]
            idx.reshape(-1)[-1] = draw(st.sampled_from(poison_values(dim, np.dtype(idx_dtype))))
        ushape = updates_shape(spec.kind, fit, idx.shape, ax)
    if brk == "updates_shape":
        ushape = draw(shapes())
    return data, idx, values_of(rng, dtype, ushape)


@st.composite
def batch_attribute_args(draw, spec: OpSpec, bad: bool, notes: dict) -> tuple[dict, dict]:
    """(run_batch keywords, the attributes rows are built to fit)."""
    kwargs, attrs = {}, {}
    if spec.kind == "slice":
        template = draw(shapes(1, 4))
        attrs["slice"] = draw(slice_values(template))
        start, stop, step, axis = draw(slice_args(attrs["slice"], len(template), bad, notes))
        kwargs.update(start=start, stop=stop, step=step, axis=axis)
    else:
        attrs["axis"] = draw(st.integers(-4, 3))
        if spec.kind != "nd" or draw(st.booleans()):  # nd ignores axis
            kwargs["axis"] = draw(axis_args(attrs["axis"], 4, bad and draw(st.booleans())))
    reductions = spec.reductions or ("none",)
    if draw(st.booleans()) or (spec.reductions and draw(st.booleans())):
        all_reductions = tuple(sorted({*ELEMENTS_REDUCTIONS, *ND_REDUCTIONS}))
        pool = all_reductions if bad and draw(st.booleans()) else reductions
        kwargs["reduction"] = draw(reduction_args(pool, bad and draw(st.booleans())))
    if draw(st.booleans()):
        flags = BAD_FLAGS if bad and draw(st.booleans()) else (True, False, np.True_)
        kwargs["use_init_val"] = draw(st.sampled_from(flags))
    return kwargs, attrs


@st.composite
def batch_cases(draw):
    rng = draw(rngs)
    broken = draw(broken_args(("name", "values", "attrs", "rows", "ragged", "indices")))
    notes = {"broken": sorted(broken)}
    name = draw(st.sampled_from(sorted(SPECS)))
    spec = SPECS[name]
    if "name" in broken:
        name = draw(st.sampled_from(("", "ScatterUpdate", "SliceScatter-8", name.lower(), None)))
    kwargs, attrs = draw(batch_attribute_args(spec, "attrs" in broken, notes))
    dtype = draw(st.sampled_from(DATA_DTYPES))
    idx_dtype = np.dtype(draw(st.sampled_from(INDEX_DTYPES)))
    rows = [
        draw(batch_row_args(rng, spec, attrs, dtype, idx_dtype, "rows" in broken, notes))
        for _ in range(draw(st.sampled_from((2, 1, 3, 4, 0))))
    ]
    data = pack([r[0] for r in rows], dtype)
    updates = pack([r[2] for r in rows], dtype)
    indices = pack([r[1] for r in rows], idx_dtype) if spec.kind != "slice" else None
    if "values" in broken:  # data the op cannot take, or updates that may not cast
        if draw(st.booleans()):
            data = Ragged(**{**vars(data), "values": data.values.astype(object)})
        else:
            other = draw(st.sampled_from(DATA_DTYPES))
            updates = pack([values_of(rng, other, r[2].shape) for r in rows], other)
    if "indices" in broken and spec.kind != "slice":
        if draw(st.booleans()):
            indices = None
        else:
            kind = draw(st.sampled_from((np.float64, np.bool_, object)))
            indices = Ragged(**{**vars(indices), "values": indices.values.astype(kind)})
    named = {"data": data, "updates": updates, "indices": indices}
    if "rows" in broken and draw(st.booleans()):
        key = draw(st.sampled_from([k for k, v in named.items() if v is not None]))
        named[key] = draw(mismatched_shape(named[key], notes))
    for key in named:
        if named[key] is not None:
            named[key] = draw(field_forms(named[key]))
    if "ragged" in broken:
        key = draw(st.sampled_from([k for k, v in named.items() if v is not None]))
        named[key] = draw(broken_ragged(named[key], notes))
    return BatchCase(name, named["data"], named["updates"], named["indices"], kwargs, notes)


@fuzz
@given(case=batch_cases())
def test_fuzz_run_batch(case):
    stats = STATS["run_batch"]
    stats["inputs"] += 1
    try:
        check_batch(case, stats)
    except BaseException:
        stats["failures"] += 1
        raise
