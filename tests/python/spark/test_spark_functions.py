"""Column functions in select/withColumn: every op, constants, bad rows kept or failing."""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F
from spark_helpers import list_array, pa, spark, tensor_column, write_parquet  # noqa: F401

import scatterkit as sk
from scatterkit.spark import functions as skf


@pytest.fixture(scope="module")
def frame(spark, tmp_path_factory):  # noqa: F811
    """Ten rows of float32 grids (4, 6) with inputs for every op; row 3 is broken."""
    rng = np.random.default_rng(5)
    n = 10
    cols = {
        "grid": [rng.random((4, 6)).astype(np.float32) for _ in range(n)],
        "rows": [rng.integers(0, 4, 2) for _ in range(n)],
        "slabs": [rng.random((2, 6)).astype(np.float32) for _ in range(n)],
        "eidx": [rng.integers(0, 4, (3, 6)).astype(np.int32) for _ in range(n)],
        "evals": [rng.random((3, 6)).astype(np.float32) for _ in range(n)],
        "cells": [rng.integers(0, 4, (2, 2)) for _ in range(n)],
        "cvals": [rng.random(2).astype(np.float32) for _ in range(n)],
        "win": [rng.random((4, 3)).astype(np.float32) for _ in range(n)],
    }
    cols["rows"][3] = np.array([0, 9])
    table = pa.table(
        {
            "id": pa.array(np.arange(n) + 100, pa.int64()),
            "grid": tensor_column(cols["grid"], np.float32),
            "grid_values": list_array(cols["grid"], np.float32),
            "grid_shape": list_array([np.array(g.shape) for g in cols["grid"]], np.int64),
            "rows": list_array(cols["rows"], np.int64),
            "slabs": tensor_column(cols["slabs"], np.float32),
            "eidx": tensor_column(cols["eidx"], np.int32),
            "evals": tensor_column(cols["evals"], np.float32),
            "cells": tensor_column(cols["cells"], np.int64),
            "cvals": list_array(cols["cvals"], np.float32),
            "win": tensor_column(cols["win"], np.float32),
        }
    )
    path = write_parquet(tmp_path_factory.mktemp("functions") / "in", table, files=1)
    return cols, spark.read.parquet(str(path))


def _array(item) -> np.ndarray:
    return np.array(item["values"], np.float32).reshape(item["shape"])


def test_every_column_function_matches_the_numpy_api(frame):
    cols, df = frame
    good = df.where("id != 103")
    out = good.select(
        "id",
        skf.scatter_update("grid", "rows", "slabs", 0).alias("su"),
        skf.scatter_elements_update("grid", "eidx", "evals", 0, reduction="sum").alias("seu"),
        skf.scatter_nd_update(skf.tensor("grid_values", "grid_shape"), "cells", "cvals").alias(
            "snd"
        ),
        skf.slice_scatter("grid", "win", 0, 6, 2, 1).alias("ss"),
        skf.apply_op("ScatterNDUpdate-3", "grid", "cells", "cvals").alias("v3"),
    ).collect()
    assert len(out) == 9
    for row in out:
        r = row.id - 100
        g = cols["grid"][r]
        assert np.array_equal(
            _array(row.su), sk.scatter_update(g, cols["rows"][r], cols["slabs"][r], 0)
        )
        want = sk.scatter_elements_update(g, cols["eidx"][r], cols["evals"][r], 0, reduction="sum")
        assert np.array_equal(_array(row.seu), want)
        want = sk.scatter_nd_update(g, cols["cells"][r], cols["cvals"][r])
        assert np.array_equal(_array(row.snd), want) and np.array_equal(_array(row.v3), want)
        assert np.array_equal(_array(row.ss), sk.slice_scatter(g, cols["win"][r], 0, 6, 2, 1))


def test_scatter_elements_update_defaults_to_no_reduction(frame):
    # as scatterkit.scatter_elements_update does: the updates replace, they do not add up
    cols, df = frame
    hist = skf.scatter_elements_update("grid", "eidx", "evals", 0)
    row = df.where("id = 100").select(hist.alias("o")).first()
    want = sk.scatter_elements_update(cols["grid"][0], cols["eidx"][0], cols["evals"][0], 0)
    assert np.array_equal(_array(row.o), want)


def test_keep_puts_the_message_in_the_result_struct(frame):
    _, df = frame
    result = skf.scatter_update("grid", "rows", "slabs", 0, on_error="keep")
    rows = {r.id: r.su for r in df.select("id", result.alias("su")).collect()}
    assert len(rows) == 10
    assert rows[103].values is None and rows[103].shape is None
    assert rows[103].error.startswith("IndexError: ScatterUpdate-3: index 9 is out of bounds")
    assert all(rows[i].error is None and rows[i].values is not None for i in rows if i != 103)


def test_fail_names_the_row_by_row_id(frame):
    _, df = frame
    with pytest.raises(
        Exception, match=r"RowError: ScatterUpdate-3 failed for row_id=103: IndexError"
    ):
        df.select(skf.scatter_update("grid", "rows", "slabs", 0, row_id="id")).collect()


def test_fail_names_the_first_bad_row_of_a_batch(spark, tmp_path):  # noqa: F811
    # Rows 1 and 3 are bad and arrive in one Arrow batch: the error names row 1.
    rows = [np.array([0]), np.array([7]), np.array([1]), np.array([8])]
    table = pa.table(
        {
            "id": pa.array([10, 11, 12, 13], pa.int64()),
            "grid": tensor_column([np.zeros((2, 3), np.float32)] * 4, np.float32),
            "rows": list_array(rows, np.int64),
            "slabs": tensor_column([np.ones((1, 3), np.float32)] * 4, np.float32),
        }
    )
    df = spark.read.parquet(str(write_parquet(tmp_path / "in", table, files=1)))
    with pytest.raises(Exception, match=r"failed for row_id=11: IndexError") as caught:
        df.select(skf.scatter_update("grid", "rows", "slabs", 0, row_id="id")).collect()
    assert "row_id=13" not in str(caught.value)


def test_full_builds_constant_tensors_for_aggregations(frame):
    cols, df = frame
    hist = skf.scatter_elements_update(
        skf.full([4], 0, "double"),
        F.col("eidx.values"),
        F.col("evals.values"),
        0,
        reduction="max",
        use_init_val=False,
        dtype="double",
    )
    row = df.where("id = 100").select(hist.alias("h")).first()
    want = sk.scatter_elements_update(
        np.zeros(4),
        cols["eidx"][0].ravel(),
        cols["evals"][0].ravel().astype(np.float64),
        0,
        reduction="max",
        use_init_val=False,
    )
    assert row.h.shape == [4] and np.array_equal(np.array(row.h.values), want)


@pytest.mark.parametrize(
    ("shape", "fill", "dtype", "message"),
    [
        ([-2], 3.0, "float", r"'shape' must be a list of non-negative integers, got \[-2\]"),
        ([2], 0.5, "int", r"'fill' 0.5 is not an integer; dtype int holds integers only"),
        ([2], 300, "tinyint", r"'fill' 300 is out of range for tinyint \(-128 to 127\)"),
        ([2], True, "double", "'fill' True is a boolean"),
    ],
)
def test_full_rejects_what_its_dtype_cannot_hold(shape, fill, dtype, message):
    # Before, [-2] gave an empty tensor of shape [-2] and 0.5 silently became 0.
    with pytest.raises(ValueError, match=message):
        skf.full(shape, fill, dtype=dtype)


def test_full_casts_an_integral_fill(frame):
    _, df = frame
    row = df.limit(1).select(skf.full([2, 1], 3.0, "int").alias("c")).first()
    assert row.c.values == [3, 3] and row.c.shape == [2, 1]


def test_declared_dtype_must_be_datas(frame):
    _, df = frame
    with pytest.raises(Exception, match="declared with dtype='double'; pass dtype='float'"):
        df.select(skf.scatter_update("grid", "rows", "slabs", 0, dtype="double")).collect()


def test_bad_attributes_fail_when_the_column_is_built():
    with pytest.raises(ValueError, match="reduction"):
        skf.scatter_elements_update("a", "b", "c", 0, reduction="median")
    with pytest.raises(ValueError, match="step"):
        skf.slice_scatter("a", "b", 0, 1, 0, 0)
    with pytest.raises(ValueError, match="missing \\['axis'\\]"):
        skf.apply_op("ScatterUpdate-3", "a", "b", "c")
    with pytest.raises(ValueError, match="unknown attribute\\(s\\) \\['colour'\\], missing \\[\\]"):
        skf.apply_op("ScatterUpdate-3", "a", "b", "c", axis=0, colour=1)
    with pytest.raises(TypeError, match="takes the columns data, indices, updates; got 2"):
        skf.apply_op("ScatterUpdate-3", "a", "b", axis=0)
    with pytest.raises(TypeError, match="takes the columns data, updates; got 3"):
        skf.apply_op("SliceScatter-15", "a", "b", "c", start=0, stop=1, step=1, axis=0)
    with pytest.raises(ValueError, match="on_error"):
        skf.scatter_nd_update("a", "b", "c", on_error="ignore")


def test_exact_column_functions_match_the_numpy_api_and_refuse_prod(frame):
    cols, df = frame
    good = df.where("id != 103")
    out = good.select(
        "id",
        skf.scatter_elements_update("grid", "eidx", "evals", 0, reduction="mean", exact=True).alias(
            "seu"
        ),
        skf.scatter_nd_update("grid", "cells", "cvals", reduction="sub", exact=True).alias("snd"),
    ).collect()
    assert len(out) == 9
    for row in out:
        r = row.id - 100
        g = cols["grid"][r]
        want = sk.scatter_elements_update(
            g, cols["eidx"][r], cols["evals"][r], 0, reduction="mean", exact=True
        )
        assert np.array_equal(_array(row.seu).view(np.uint32), want.view(np.uint32))
        want = sk.scatter_nd_update(
            g, cols["cells"][r], cols["cvals"][r], reduction="sub", exact=True
        )
        assert np.array_equal(_array(row.snd).view(np.uint32), want.view(np.uint32))
    # what fails in every task fails when the column is built
    with pytest.raises(ValueError, match="exact=True is not defined for reduction 'prod'"):
        skf.scatter_nd_update("grid", "cells", "cvals", reduction="prod", exact=True)
