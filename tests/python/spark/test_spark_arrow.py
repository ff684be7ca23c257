"""Arrow tensor columns <-> Ragged rows: zero-copy views, slices, nulls, and back."""

from __future__ import annotations

import numpy as np
import pytest
from spark_helpers import list_array, pa, tensor_column, tensor_rows

from scatterkit.spark.runtime.tensors import constant_rows, read_split, read_tensor, tensor_array


def _rows(arrays):
    return [np.asarray(a) for a in arrays]


def test_read_tensor_values_are_a_zero_copy_view_of_the_arrow_buffer(rng):
    rows = [rng.random((3, 4)).astype(np.float32) for _ in range(5)]
    column = tensor_column(rows, np.float32)
    got = read_tensor(column, "data")
    child = column.field("values").values
    buffer = np.frombuffer(child.buffers()[1], np.float32)
    assert np.shares_memory(got.ragged.values, buffer)
    assert got.problems == {}
    for r, want in enumerate(rows):
        assert np.array_equal(got.ragged.row(r), want)


def test_read_tensor_of_a_sliced_column_rebases_offsets(rng):
    rows = [rng.random((2, int(rng.integers(1, 4)))) for _ in range(9)]
    column = tensor_column(rows, np.float64).slice(3, 4)
    got = read_tensor(column, "data")
    assert got.rows == 4
    assert got.ragged.offsets[0] == 0
    assert got.ragged.values.size == sum(r.size for r in rows[3:7])  # no unused values
    for r in range(4):
        assert np.array_equal(got.ragged.row(r), rows[3 + r])


def test_read_tensor_of_a_sliced_record_batch_column(rng):
    rows = [rng.integers(0, 9, (2, 2)).astype(np.int32) for _ in range(6)]
    batch = pa.RecordBatch.from_arrays([tensor_column(rows, np.int32)], names=["t"]).slice(2, 3)
    got = read_tensor(batch.column(0), "t")
    assert [got.ragged.row(r).tolist() for r in range(3)] == [r.tolist() for r in rows[2:5]]


def test_plain_list_column_is_a_1d_tensor_per_row():
    column = list_array([np.array([1, 2, 3]), np.array([]), np.array([4])], np.int64)
    got = read_tensor(column, "indices")
    assert [got.ragged.row(r).tolist() for r in range(3)] == [[1, 2, 3], [], [4]]


def test_chunked_and_large_list_columns_are_read():
    chunked = pa.chunked_array([list_array([np.array([1.0])], np.float64)] * 2)
    assert read_tensor(chunked, "x").rows == 2
    large = pa.array([[1.0, 2.0], [3.0]], pa.large_list(pa.float64()))
    got = read_tensor(large, "x")
    assert got.ragged.row(0).tolist() == [1.0, 2.0]


def test_boolean_values_are_read_bytewise():
    column = pa.array([[True, False], [None, True]], pa.list_(pa.bool_()))
    got = read_tensor(column, "mask")
    assert got.ragged.values.dtype == np.bool_
    assert got.ragged.row(0).tolist() == [True, False]
    assert got.problems == {1: "mask holds 1 null element(s)"}


@pytest.mark.parametrize(
    ("column", "problem"),
    [
        (lambda: tensor_column([np.zeros(2), None], np.float64), "data is null"),
        (lambda: pa.array([[1.0], None], pa.list_(pa.float64())), "data is null"),
        (lambda: pa.array([[1.0], [2.0, None]], pa.list_(pa.float64())), "null element"),
    ],
    ids=["null-struct", "null-list", "null-element"],
)
def test_unusable_rows_are_problems_not_exceptions(column, problem):
    got = read_tensor(column(), "data")
    assert list(got.problems) == [1]
    assert problem in got.problems[1]


def test_null_shape_is_a_problem_for_its_row():
    values = list_array([np.zeros(4), np.zeros(4)], np.float32)
    shapes = pa.array([[2, 2], None], pa.list_(pa.int32()))
    got = read_split(values, shapes, "data")
    assert got.problems == {1: "data shape is null"}


def test_non_numeric_values_or_shapes_are_type_errors():
    with pytest.raises(TypeError, match="numbers or booleans"):
        read_tensor(pa.array([["a"]], pa.list_(pa.string())), "data")
    with pytest.raises(TypeError, match="array of integers"):
        read_split(list_array([np.zeros(1)], np.float32), pa.array([[1.0]]), "data")
    with pytest.raises(TypeError, match="'values' and 'shape'"):
        read_tensor(pa.array([{"v": [1.0]}]), "data")
    with pytest.raises(TypeError, match="expected an array column"):
        read_tensor(pa.array([1.0]), "data")


def test_constant_rows_repeat_one_tensor():
    got = constant_rows(3, (2, 2), np.dtype(np.float32), 1.5)
    assert got.rows == 3 and got.problems == {}
    assert all(np.array_equal(got.ragged.row(r), np.full((2, 2), 1.5)) for r in range(3))


def test_tensor_array_round_trips_and_nulls_invalid_rows(rng):
    rows = [rng.random((2, 3)).astype(np.float32) for _ in range(4)]
    layout = read_tensor(tensor_column(rows, np.float32), "data").ragged
    valid = np.array([True, False, True, True])
    out = tensor_array(layout.values, layout, valid)
    assert out.type.field("values").type == pa.list_(pa.float32())
    assert out.type.field("shape").type == pa.list_(pa.int32())
    got = tensor_rows(out)
    assert got[1] is None and out.is_null().to_pylist() == [False, True, False, False]
    for r in (0, 2, 3):
        assert np.array_equal(got[r], rows[r])


@pytest.mark.parametrize("errors", [None, [None, "bad", None]])
def test_tensor_array_null_rows_hold_no_elements(errors):
    # The Parquet writers of pyarrow 16-23 refuse a null list of non-zero length, so a failed
    # row's values and shape are empty, not data's row under a null.
    rows = [np.arange(4.0).reshape(2, 2), np.ones((3,)), np.full((1, 2), 7.0)]
    layout = read_tensor(tensor_column(rows, np.float64), "d").ragged
    out = tensor_array(layout.values, layout, np.array([True, False, True]), errors)
    assert out.field("values").offsets.to_pylist() == [0, 4, 4, 6]
    assert out.field("values").values.to_pylist() == [0.0, 1.0, 2.0, 3.0, 7.0, 7.0]
    assert out.field("shape").offsets.to_pylist() == [0, 2, 2, 4]
    got = tensor_rows(out)
    assert got[1] is None
    assert np.array_equal(got[0], rows[0]) and np.array_equal(got[2], rows[2])


def test_tensor_array_with_errors_keeps_the_message_in_a_non_null_struct(rng):
    layout = read_tensor(tensor_column([np.zeros(2), np.ones(2)], np.float64), "d").ragged
    out = tensor_array(layout.values, layout, np.array([True, False]), [None, "boom"])
    assert out.null_count == 0
    items = out.to_pylist()
    assert items[0] == {"values": [0.0, 0.0], "shape": [2], "error": None}
    assert items[1] == {"values": None, "shape": None, "error": "boom"}


def test_binary_rows_of_any_rank_and_a_wrong_dtype_name_per_row():
    # 0-D rows (one element) between ranked ones, an empty tensor, a sliced column; a row
    # naming another dtype is that row's problem, a null name takes the column's.
    rows = [np.arange(6.0).reshape(2, 3), np.float64(7), np.arange(4.0), np.zeros((0, 5)),
            np.float64(-1), np.arange(3.0), np.arange(2.0).reshape(1, 2)]  # fmt: skip
    names = ["float64", "float64", None, "float64", "float32", "float64", "float64"]
    data = pa.array([np.asarray(r).tobytes() for r in rows], pa.binary())
    shapes = pa.array([list(np.shape(r)) for r in rows], pa.list_(pa.int32()))
    column = pa.StructArray.from_arrays(
        [data, shapes, pa.array(names, pa.string())], names=["data", "shape", "dtype"]
    )
    got = read_tensor(column, "t")
    assert got.problems == {4: "t holds float32 values, not float64"}
    for r in (0, 1, 2, 3, 5, 6):
        assert np.array_equal(got.ragged.row(r), rows[r]), r
    sliced = read_tensor(column.slice(1, 5), "t")
    assert sliced.problems == {3: "t holds float32 values, not float64"}
    assert [sliced.ragged.row(r).size for r in (0, 1, 2, 4)] == [1, 4, 0, 3]
