"""The public API surface: get_op, threads, packaging helpers, argument forms, out=, stubs."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import BFLOAT16, assert_same
from reference import (
    ref_scatter_elements_update,
    ref_scatter_nd_update,
    ref_scatter_update,
    ref_slice_scatter,
)

import scatterkit as sk
import scatterkit._core as core

OP_NAMES = [
    "ScatterUpdate-3",
    "ScatterElementsUpdate-3",
    "ScatterNDUpdate-3",
    "ScatterElementsUpdate-12",
    "SliceScatter-15",
    "ScatterNDUpdate-15",
]


# --- get_op ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", OP_NAMES)
def test_get_op_returns_a_callable_for_each_version(name):
    op = sk.get_op(name)
    assert callable(op)
    data = np.zeros((2, 3), np.float32)
    upd2 = np.array([[1, 2, 3]], np.float32)
    if name.startswith("ScatterUpdate"):
        out = op(data, np.array([1]), upd2, 0)
    elif name.startswith("ScatterElements"):
        out = op(data, np.array([[1, 1, 1]]), upd2, 0)
    elif name.startswith("ScatterND"):
        out = op(data, np.array([[1]]), upd2)
    else:
        out = op(data, upd2, 1, 2, 1, 0)
    assert out.tolist() == [[0, 0, 0], [1, 2, 3]]


@pytest.mark.parametrize(
    "name",
    [
        "ScatterUpdate-4",
        "scatterupdate-3",
        "ScatterUpdate",
        "",
        "SliceScatter-8",
        "ScatterNDUpdate-12",
    ],
)
def test_get_op_unknown_name_is_value_error(name):
    with pytest.raises(ValueError):
        sk.get_op(name)


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("ScatterUpdate-3", lambda op, d: op(d, np.array([0, -1]), np.ones(2), 0)),
        ("ScatterElementsUpdate-3", lambda op, d: op(d, np.array([0, -1]), np.ones(2), 0)),
        ("ScatterNDUpdate-3", lambda op, d: op(d, np.array([[0], [-1]]), np.ones(2))),
    ],
)
def test_v3_callables_reject_negative_indices(name, call):
    data = np.zeros(4)
    with pytest.raises(IndexError, match="index -1 is out of bounds for axis 0 with size 4"):
        call(sk.get_op(name), data)
    assert not data.any()


def test_v12_and_v15_callables_wrap_negative_indices():
    data = np.zeros(4)
    out = sk.get_op("ScatterElementsUpdate-12")(data, np.array([-1, -4]), np.array([1.0, 2.0]), 0)
    assert out.tolist() == [2, 0, 0, 1]
    out = sk.get_op("ScatterNDUpdate-15")(
        data, np.array([[-1], [-4]]), np.array([1.0, 2.0]), reduction="sum"
    )
    assert out.tolist() == [2, 0, 0, 1]


def test_v12_callable_takes_reduction_and_use_init_val():
    op = sk.get_op("ScatterElementsUpdate-12")
    out = op(
        np.array([2, 3, 4, 6]),
        np.array([1, 0, 0, 2, 3, 2]),
        np.array([10, 20, 30, 40, 70, 60]),
        0,
        reduction="sum",
        use_init_val=False,
    )
    assert out.tolist() == [50, 10, 100, 70]


def test_get_op_callables_take_out():
    data = np.zeros(3, np.int16)
    out = np.full(3, 5, np.int16)
    res = sk.get_op("ScatterUpdate-3")(data, np.array([2]), np.array([7], np.int16), 0, out=out)
    assert res is out
    assert out.tolist() == [0, 0, 7]
    res = sk.get_op("SliceScatter-15")(data, np.array([9], np.int16), 0, 1, 1, 0, out=data)
    assert res is data
    assert data.tolist() == [9, 0, 0]


# --- threads and packaging helpers ---------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_set_num_threads_round_trips(n):
    sk.set_num_threads(n)
    assert sk.get_num_threads() == n
    assert isinstance(sk.get_num_threads(), int)
    assert sk.scatter_update(np.zeros(2), np.array([1]), np.ones(1), 0).tolist() == [0, 1]


def test_set_num_threads_caps_at_eight_per_processor():
    cap = 8 * len(os.sched_getaffinity(0))
    sk.set_num_threads(10**6)
    assert sk.get_num_threads() == cap
    data = np.zeros((64, 1 << 16), np.float32)  # 16 MiB: work for many threads
    out = sk.scatter_update(data, np.array([3]), np.ones((1, 1 << 16), np.float32), 0)
    assert out[3].all() and out.sum() == 1 << 16


def test_omp_num_threads_beyond_the_cap_is_capped():
    code = "import os, scatterkit as sk; print(sk.get_num_threads(), len(os.sched_getaffinity(0)))"
    env = dict(os.environ, OMP_NUM_THREADS="100000")
    got, procs = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert int(got) == 8 * int(procs)


def test_get_num_threads_default_is_positive():
    assert sk.get_num_threads() >= 1


def test_get_include_holds_the_header():
    include = Path(sk.get_include())
    header = include / "scatterkit" / "scatterkit.hpp"
    assert header.is_file(), header
    assert "#pragma once" in header.read_text()


def test_get_cmake_dir_holds_the_config():
    cmake_dir = Path(sk.get_cmake_dir())
    assert (cmake_dir / "scatterkitConfig.cmake").is_file(), cmake_dir


def test_module_cmakedir_prints_the_same_dir():
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "scatterkit", "--cmakedir"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
        env=env,
        timeout=120,
    )
    printed = proc.stdout.strip()
    assert Path(printed).resolve() == Path(sk.get_cmake_dir()).resolve()


# --- the stub of the compiled module ---------------------------------------------------------


def _stub_tree():
    stub = Path(sk.__file__).with_name("_core.pyi")
    assert stub.is_file(), stub
    return ast.parse(stub.read_text())


def _stub_public_names(tree) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_")}


def test_core_stub_lists_exactly_the_public_names():
    public = {n for n in dir(core) if not n.startswith("_")}
    assert _stub_public_names(_stub_tree()) == public


def test_core_stub_parameter_names_match_the_bindings():
    tree = _stub_tree()
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        doc = getattr(core, node.name).__doc__ or ""
        signature = doc.strip().splitlines()[0]
        assert signature.startswith(f"{node.name}("), signature
        compiled = re.findall(r"(\w+): ", signature[len(node.name) + 1 :])
        assert compiled == [a.arg for a in node.args.args], (node.name, signature)


# --- out= ------------------------------------------------------------------------------------


def test_out_is_returned_and_data_untouched():
    data = np.arange(6, dtype=np.float64).reshape(2, 3)
    out = np.empty_like(data)
    res = sk.scatter_nd_update(data, np.array([[1, 2]]), np.array([-1.0]), out=out)
    assert res is out
    assert out.tolist() == [[0, 1, 2], [3, 4, -1]]
    assert data.tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize(
    "op", ["scatter_update", "scatter_elements_update", "scatter_nd_update", "slice_scatter"]
)
def test_non_contiguous_out_is_written_correctly(op):
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    base = np.full((6, 9), -7, np.int32)
    out = base[::2, 1::2]  # (3, 4) strided view
    call = {
        "scatter_update": lambda: sk.scatter_update(
            data, np.array([2]), np.array([[100], [101], [102]]), 1, out=out
        ),
        "scatter_elements_update": lambda: sk.scatter_elements_update(
            data, np.array([[2], [2], [2]]), np.array([[100], [101], [102]]), 1, out=out
        ),
        "scatter_nd_update": lambda: sk.scatter_nd_update(
            data, np.array([[0, 2], [1, 2], [2, 2]]), np.array([100, 101, 102]), out=out
        ),
        "slice_scatter": lambda: sk.slice_scatter(
            data, np.array([[100], [101], [102]]), 2, 3, 1, 1, out=out
        ),
    }[op]
    res = call()
    assert res is out
    expected = data.copy()
    expected[:, 2] = [100, 101, 102]
    assert out.tolist() == expected.tolist()
    mask = np.ones(base.shape, bool)
    mask[::2, 1::2] = False
    assert (base[mask] == -7).all(), "wrote outside the view"


def test_transposed_out_is_written_correctly():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros((3, 2), np.float32).T
    res = sk.scatter_update(data, np.array(0), np.array([9.0, 8.0], np.float32), 1, out=out)
    assert res is out
    assert out.tolist() == [[9, 1, 2], [8, 4, 5]]


# --- argument forms -------------------------------------------------------------------------


def test_updates_python_scalar_takes_data_dtype():
    data = np.zeros(3, np.float16)
    out = sk.scatter_update(data, np.array(1), 0.1, 0)
    assert out.dtype == np.float16
    assert out[1] == np.float16(0.1)
    out = sk.scatter_nd_update(np.zeros(3, BFLOAT16), np.array([2]), 0.1)
    assert out.dtype == BFLOAT16
    assert out.view(np.uint16)[2] == np.array(0.1, BFLOAT16).view(np.uint16)


def test_updates_python_list_takes_data_dtype():
    out = sk.scatter_elements_update(np.zeros(3, np.int8), np.array([0, 2]), [-128, 127], 0)
    assert out.dtype == np.int8
    assert out.tolist() == [-128, 0, 127]
    big = 2**64 - 1
    out = sk.scatter_nd_update(np.zeros(2, np.uint64), np.array([[1]]), [big])
    assert out.dtype == np.uint64
    assert out.tolist() == [0, big]
    out = sk.slice_scatter(np.zeros(4, np.float32), [1.5, 2.5], 0, 4, 2, 0)
    assert out.dtype == np.float32
    assert out.tolist() == [1.5, 0, 2.5, 0]


def test_updates_ndarray_same_kind_cast():
    # int64 into int8 is same_kind: NumPy's cast, values wrap as astype does.
    out = sk.scatter_update(np.zeros(2, np.int8), np.array([1]), np.array([300], np.int64), 0)
    assert out.dtype == np.int8
    assert out.tolist() == [0, np.array(300).astype(np.int8)]
    out = sk.scatter_update(np.zeros(2, np.float32), np.array([0]), np.array([3], np.int16), 0)
    assert out.tolist() == [3.0, 0.0]
    out = sk.scatter_update(np.zeros(2, np.float16), np.array([0]), np.array([0.1]), 0)
    assert out[0] == np.float16(0.1)


def test_updates_ndarray_cast_that_overflows_gives_inf_without_a_warning():
    # float64 into float32 is same_kind: NumPy's cast, 1e300 becomes inf; the cast is the
    # documented behaviour, so NumPy's "overflow encountered in cast" warning is not raised.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = sk.scatter_update(np.zeros(2, np.float32), [0], np.array([1e300]), 0)
    assert out.tolist() == [np.inf, 0.0]


def test_data_indices_updates_as_python_lists():
    out = sk.scatter_update([1, 2, 3], [0], [9], 0)
    assert isinstance(out, np.ndarray)
    assert out.tolist() == [9, 2, 3]
    out = sk.scatter_elements_update([[1.0, 2.0]], [[1, 0]], [[5.0, 6.0]], 1, reduction="sum")
    assert out.tolist() == [[7.0, 7.0]]


def test_empty_python_list_indices():
    data = np.arange(3, dtype=np.float32)
    out = sk.scatter_update(data, [], np.zeros(0, np.float32), 0)
    assert out.tolist() == [0, 1, 2]
    out = sk.scatter_update(data, [], [], 0)
    assert out.tolist() == [0, 1, 2]
    out = sk.scatter_elements_update(data, [], [], 0, reduction="sum")
    assert out.tolist() == [0, 1, 2]
    # ScatterND: [] has shape (0,), so k = 0 and the single update is the whole tensor.
    out = sk.scatter_nd_update(data, [], [7.0, 8.0, 9.0])
    assert out.tolist() == [7, 8, 9]
    out = sk.scatter_nd_update(data, np.empty((0, 1), np.int64), [])
    assert out.tolist() == [0, 1, 2]


SCALAR_FORMS = {
    "int": lambda v: v,
    "np.int16": np.int16,
    "np.uint8": lambda v: np.uint8(v) if v >= 0 else np.int8(v),
    "0-d": lambda v: np.array(v, np.int64),
    "1-elem": lambda v: np.array([v], np.int32),
    "list": lambda v: [v],
}


@pytest.mark.parametrize("form", sorted(SCALAR_FORMS))
def test_axis_forms(form):
    f = SCALAR_FORMS[form]
    data = np.zeros((2, 3), np.int64)
    for axis in (1, -1):
        out = sk.scatter_update(data, np.array([2]), np.array([[4], [5]]), f(axis))
        assert out.tolist() == [[0, 0, 4], [0, 0, 5]]
        out = sk.scatter_elements_update(data, np.array([[2]]), np.array([[4]]), f(axis))
        assert out.tolist() == [[0, 0, 4], [0, 0, 0]]
        out = sk.slice_scatter(data, np.array([[4], [5]]), f(2), f(3), f(1), f(axis))
        assert out.tolist() == [[0, 0, 4], [0, 0, 5]]


@pytest.mark.parametrize("form", sorted(SCALAR_FORMS))
def test_slice_parameter_forms(form):
    f = SCALAR_FORMS[form]
    data = np.arange(6, dtype=np.float64)
    out = sk.slice_scatter(data, np.array([-1.0, -2.0]), f(-1), f(-5), f(-2), f(0))
    assert out.tolist() == [0, 1, 2, -2, 4, -1]


def test_slice_scatter_multi_axis_sequences():
    data = np.zeros((3, 4), np.int32)
    upd = np.array([[1, 2], [3, 4]], np.int32)
    for args in (
        ([0, 3], [3, 0], [2, -2], [0, 1]),
        (np.array([0, 3]), np.array([3, 0]), np.array([2, -2]), np.array([0, -1])),
    ):
        out = sk.slice_scatter(data, upd, *args)
        expected = np.zeros((3, 4), np.int32)
        expected[0:3:2, 3:0:-2] = upd
        assert out.tolist() == expected.tolist()


def test_big_endian_data_gives_native_result():
    data = np.arange(4, dtype=">i4")
    for out in (
        sk.scatter_update(data, np.array([0]), np.array([9], ">i4"), 0),
        sk.scatter_elements_update(data, np.array([0]), np.array([9], ">i4"), 0),
        sk.scatter_nd_update(data, np.array([[0]]), np.array([9], ">i4")),
        sk.slice_scatter(data, np.array([9], ">i4"), 0, 1, 1, 0),
    ):
        assert out.dtype == np.dtype("=i4")
        assert out.dtype.isnative
        assert out.tolist() == [9, 1, 2, 3]
    assert data.tolist() == [0, 1, 2, 3]


def test_big_endian_indices_and_updates_with_reduction():
    data = np.arange(4, dtype=np.float64)
    idx = np.array([[3], [3], [0]], ">i8")
    upd = np.array([1.0, 2.0, 3.0], ">f8")
    expected = ref_scatter_nd_update(data, idx, upd, reduction="sum")
    assert_same(sk.scatter_nd_update(data, idx, upd, reduction="sum"), expected)
    idx = np.array([3, 3, 0], ">u2")
    expected = ref_scatter_elements_update(data, idx, upd, 0, reduction="prod")
    assert_same(sk.scatter_elements_update(data, idx, upd, 0, reduction="prod"), expected)


def test_read_only_inputs_are_accepted():
    data = np.arange(4.0)
    idx = np.array([1])
    upd = np.array([9.0])
    for a in (data, idx, upd):
        a.flags.writeable = False
    assert sk.scatter_update(data, idx, upd, 0).tolist() == [0, 9, 2, 3]


def test_result_is_a_new_array():
    data = np.arange(4.0)
    out = sk.scatter_update(data, np.array([1]), np.array([9.0]), 0)
    assert out is not data
    assert not np.shares_memory(out, data)
    assert out.flags.writeable
    assert data.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "fn", [sk.scatter_update, sk.scatter_elements_update, sk.scatter_nd_update, sk.slice_scatter]
)
def test_public_functions_have_numpy_style_docstrings(fn):
    doc = fn.__doc__ or ""
    for section in ("Parameters", "Returns", "Raises"):
        assert section in doc, (fn.__name__, section)
    assert ">>>" in doc or "Example" in doc


def test_package_exports():
    for name in (
        "scatter_update",
        "scatter_elements_update",
        "scatter_nd_update",
        "slice_scatter",
        "get_op",
        "set_num_threads",
        "get_num_threads",
        "get_include",
        "get_cmake_dir",
    ):
        assert callable(getattr(sk, name)), name


def test_namespace_holds_only_the_public_api():
    # helpers the package imports for itself (os, Path, ...) stay private
    public = {n for n in dir(sk) if not n.startswith("_")}
    assert public - {"spark"} == set(sk.__all__) - {"__version__"}


# --- slice parameters beyond int64 ----------------------------------------------------------

# (start, stop, step) on an axis of size 5 and the positions they select: the spec clamps
# start and stop whatever their magnitude, and a step beyond the axis selects one position.
BEYOND_INT64 = [
    (2**64 - 1, 3, -1, [4]),
    (2**70, -(2**70), -2, [4, 2, 0]),
    (-(2**70), 2**70, 2, [0, 2, 4]),
    (0, 5, 2**64 - 1, [0]),
    (4, 0, -(2**70), [4]),
]


def _one_element(v, form):
    if form == "int":
        return v
    if form == "list" or not -(2**63) <= v < 2**64:  # no NumPy integer array holds 2**70
        return [v]
    return np.array([v], np.uint64 if v >= 2**63 else np.int64)


@pytest.mark.parametrize("form", ["int", "list", "array"])
@pytest.mark.parametrize(("start", "stop", "step", "positions"), BEYOND_INT64)
def test_slice_parameters_beyond_int64_are_clamped_in_every_form(
    start, stop, step, positions, form
):
    data = np.arange(5, dtype=np.float64)
    updates = -1.0 - np.arange(len(positions))
    expected = data.copy()
    expected[positions] = updates
    assert_same(ref_slice_scatter(data, updates, start, stop, step, 0), expected)
    args = [_one_element(v, form) for v in (start, stop, step, 0)]
    assert_same(sk.slice_scatter(data, updates, *args), expected)


def test_slice_parameter_sequences_mixing_int64_and_uint64_ranges():
    # [2**64 - 1, 0] is a list of Python ints (NumPy alone would promote it to float64).
    data = np.zeros((3, 4))
    upd = np.ones((1, 1))
    expected = data.copy()
    expected[2, 0] = 1.0
    assert_same(ref_slice_scatter(data, upd, [2**64 - 1, 0], [1, 1], [-1, 1], [0, 1]), expected)
    assert_same(sk.slice_scatter(data, upd, [2**64 - 1, 0], [1, 1], [-1, 1], [0, 1]), expected)


# --- overlapping arguments --------------------------------------------------------------------


ORACLES = {
    "scatter_update": ref_scatter_update,
    "scatter_elements_update": ref_scatter_elements_update,
    "scatter_nd_update": ref_scatter_nd_update,
    "slice_scatter": ref_slice_scatter,
}
# name: d -> (function name, positional args, keyword args), updates being views of d
ALIAS_CASES = {
    "slice_scatter-updates-reversed-view": lambda d: (
        "slice_scatter",
        (d, d[::-1][:4], 0, 4, 1, 0),
        {},
    ),
    "slice_scatter-updates-shifted-view": lambda d: ("slice_scatter", (d, d[0:4], 2, 6, 1, 0), {}),
    "scatter_update-updates-view": lambda d: (
        "scatter_update",
        (d, np.array([1, 2, 3, 4]), d[0:4], 0),
        {},
    ),
    "scatter_elements-sum-updates-view": lambda d: (
        "scatter_elements_update",
        (d, np.array([1, 2, 3, 4]), d[0:4], 0),
        {"reduction": "sum"},
    ),
    "scatter_nd-updates-view": lambda d: (
        "scatter_nd_update",
        (d, np.array([[1], [2], [3], [4]]), d[0:4]),
        {},
    ),
    "scatter_nd-prod-updates-view": lambda d: (
        "scatter_nd_update",
        (d, np.array([[7], [7], [0]]), d[5:8]),
        {"reduction": "prod"},
    ),
}


@pytest.mark.parametrize("name", sorted(ALIAS_CASES))
def test_in_place_with_updates_viewing_data(name):
    # out=data while updates is a view of data: the result is as if updates were read first.
    pristine = np.arange(8.0) + 1
    fn, args, kwargs = ALIAS_CASES[name](pristine)
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    expected = ORACLES[fn](*copies, **kwargs)
    data = pristine.copy()
    fn, args, kwargs = ALIAS_CASES[name](data)
    assert getattr(sk, fn)(*args, **kwargs, out=data) is data
    assert_same(data, expected)


@pytest.mark.parametrize("op", ["slice_scatter", "scatter_elements_update"])
def test_out_overlapping_data_in_reverse(op):
    data = np.arange(8.0)
    out = data[::-1]
    if op == "slice_scatter":
        res = sk.slice_scatter(data, [100.0], 0, 1, 1, 0, out=out)
        expected = [100.0, 1, 2, 3, 4, 5, 6, 7]
    else:
        res = sk.scatter_elements_update(data, [0, 7], [100.0, 200.0], 0, reduction="sum", out=out)
        expected = [100.0, 1, 2, 3, 4, 5, 6, 207]
    assert res is out
    assert out.tolist() == expected


def test_out_is_the_indices_array():
    indices = np.array([3, 2, 1, 0])
    res = sk.scatter_elements_update(np.zeros(4, np.int64), indices, indices, 0, out=indices)
    assert res is indices
    assert indices.tolist() == [0, 1, 2, 3]


# --- unusual but valid inputs ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        (np.int32, 1.5),
        (np.uint8, 255),
        (np.int64, -(2**63)),
        (np.float32, 7),
        (np.float16, 0.1),
        (np.complex64, 2 - 1j),
        (np.bool_, True),
        (BFLOAT16, 1.0 / 3.0),
    ],
)
def test_python_scalar_updates_follow_numpy_assignment(dtype, value):
    data = np.zeros(3, dtype)
    expected = data.copy()
    expected[1] = value
    assert_same(sk.scatter_update(data, np.array(1), value, 0), expected)
    expected_list = data.copy()
    expected_list[[0, 2]] = [value, value]
    assert_same(sk.scatter_nd_update(data, np.array([[0], [2]]), [value, value]), expected_list)


def test_broadcast_view_data_is_read_correctly():
    data = np.broadcast_to(np.arange(3.0), (4, 3))  # zero stride along axis 0, read-only
    out = sk.scatter_update(data, np.array([1]), np.full((1, 3), 9.0), 0)
    assert out.tolist() == [[0, 1, 2], [9, 9, 9], [0, 1, 2], [0, 1, 2]]
    assert out.flags.writeable


@pytest.mark.parametrize("rank", [8, 20, 32, 64])
def test_high_rank_tensors(rank):
    shape = (1,) * (rank - 1) + (2,)
    data = np.zeros(shape)
    last = (*shape[:-1], 1)
    out = sk.scatter_elements_update(data, np.ones(last, np.int64), np.ones(last), -1)
    assert out.ravel().tolist() == [0, 1]
    out = sk.scatter_nd_update(data, np.zeros((2, rank), np.int64), np.ones(2), reduction="sum")
    assert out.ravel().tolist() == [2, 0]
    out = sk.scatter_update(data, np.array([1]), np.full(last, 3.0), rank - 1)
    assert out.ravel().tolist() == [0, 3]
    out = sk.slice_scatter(data, np.full(last, 4.0), -1, 2**62, 1, -1)
    assert out.ravel().tolist() == [0, 4]


def test_numpy_1_is_refused_at_import(tmp_path):
    # Under NumPy 1.x some bad updates would pass the checks (it wraps 300 into int8), so the
    # import stops with a message naming the versions. A stand-in numpy package plays 1.26.
    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text('__version__ = "1.26.4"\n')
    package_parent = str(Path(sk.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), package_parent]))
    proc = subprocess.run(
        [sys.executable, "-c", "import scatterkit"],
        capture_output=True,
        text=True,
        cwd="/",
        env=env,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "ImportError: scatterkit needs NumPy >= 2.0; NumPy 1.26.4 is installed" in proc.stderr
