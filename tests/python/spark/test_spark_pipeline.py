"""The executor side of the job on record batches (no Spark needed): results and bad rows."""

from __future__ import annotations

import re

import numpy as np
import pytest
from spark_helpers import list_array, pa, tensor_column, tensor_rows

import scatterkit as sk
from scatterkit.spark.core.errors import RowError
from scatterkit.spark.runtime.stats import NAMES, TaskStats, total
from scatterkit.spark.runtime.steps import (
    BatchPlan,
    configure_threads,
    raise_failures,
    report_failures,
    run_steps,
)
from scatterkit.spark.specs.job_spec import JobSpec


def _steps() -> list[dict]:
    def step(op, inputs, output, **attributes):
        return {"op": op, "attributes": attributes, "inputs": inputs, "output": output}

    grid = {"data": "grid", "indices": "rows", "updates": "slabs"}
    return [
        step("ScatterUpdate-3", grid, "su", axis=0),
        step(
            "ScatterElementsUpdate-12",
            {"data": "grid", "indices": "eidx", "updates": "evals"},
            "seu",
            axis=1,
            reduction="max",
            use_init_val=False,
        ),
        step(
            "ScatterNDUpdate-15",
            {"data": "grid", "indices": "cells", "updates": "cvals"},
            "snd",
            reduction="sum",
        ),
        step(
            "SliceScatter-15",
            {"data": "grid", "updates": "win"},
            "ss",
            start=[3, 0],
            stop=[-100, 8],
            step=[-2, 4],
            axis=[0, 1],
        ),
        step(
            "ScatterElementsUpdate-3",
            {
                "data": {"fill": 1.0, "shape": [8], "dtype": "double"},
                "indices": "eidx1",
                "updates": "evals1",
            },
            "hist",
            axis=0,
        ),
    ]


def _batch(rng, n: int = 12):
    cols = {
        "id": [1000 + r for r in range(n)],
        "grid": [rng.random((4, 8)).astype(np.float32) for _ in range(n)],
        "rows": [rng.integers(0, 4, 3) for _ in range(n)],
        "eidx": [rng.integers(-8, 8, (2, 5)).astype(np.int32) for _ in range(n)],
        "cells": [rng.integers(0, 4, (5, 1)) for _ in range(n)],
        "cvals": [rng.random((5, 8)).astype(np.float32) for _ in range(n)],
        "eidx1": [rng.integers(0, 8, 6) for _ in range(n)],
        "evals1": [rng.random(6) for _ in range(n)],
    }
    cols["slabs"] = [rng.random((3, 8)).astype(np.float32) for _ in range(n)]
    cols["evals"] = [rng.random((2, 5)).astype(np.float32) for _ in range(n)]
    cols["win"] = [rng.random((2, 2)).astype(np.float32) for _ in range(n)]
    arrays = {
        "id": pa.array(cols["id"], pa.int64()),
        "grid": tensor_column(cols["grid"], np.float32),
        "rows": list_array(cols["rows"], np.int64),
        "slabs": tensor_column(cols["slabs"], np.float32),
        "eidx": tensor_column(cols["eidx"], np.int32),
        "evals": tensor_column(cols["evals"], np.float32),
        "cells": tensor_column(cols["cells"], np.int64),
        "cvals": tensor_column(cols["cvals"], np.float32),
        "win": tensor_column(cols["win"], np.float32),
        "eidx1": list_array(cols["eidx1"], np.int64),
        "evals1": list_array(cols["evals1"], np.float64),
    }
    return cols, pa.RecordBatch.from_arrays(list(arrays.values()), names=list(arrays))


def _expected(cols, r):
    grid = cols["grid"][r]
    return {
        "su": sk.scatter_update(grid, cols["rows"][r], cols["slabs"][r], 0),
        "seu": sk.scatter_elements_update(
            grid, cols["eidx"][r], cols["evals"][r], 1, reduction="max", use_init_val=False
        ),
        "snd": sk.scatter_nd_update(grid, cols["cells"][r], cols["cvals"][r], reduction="sum"),
        "ss": sk.slice_scatter(grid, cols["win"][r], [3, 0], [-100, 8], [-2, 4], [0, 1]),
        "hist": sk.get_op("ScatterElementsUpdate-3")(
            np.ones(8), cols["eidx1"][r], cols["evals1"][r], 0
        ),
    }


def _plan(keep: bool, row_id: str | None = "id") -> BatchPlan:
    spec = JobSpec.from_dict({"steps": _steps()})
    outputs = [s.output for s in spec.steps]
    return BatchPlan(spec.steps, ("id", *outputs), keep_errors=keep, row_id=row_id)


def test_every_op_on_a_batch_equals_single_calls_of_the_numpy_api(rng):
    cols, batch = _batch(rng)
    output = run_steps(_plan(keep=False), batch)
    out = output.batch
    assert output.failure is None and output.stats.counts["bytes_out"] > 0
    assert out.schema.names == ["id", "su", "seu", "snd", "ss", "hist"]
    results = {name: tensor_rows(out.column(name)) for name in out.schema.names[1:]}
    for r in range(batch.num_rows):
        for name, want in _expected(cols, r).items():
            got = results[name][r]
            assert got.dtype == want.dtype and np.array_equal(got, want), (name, r)


def _broken_batch(rng):
    cols, batch = _batch(rng, n=6)
    arrays = dict(zip(batch.schema.names, batch.columns))
    rows = cols["rows"]
    rows[1] = np.array([0, 4, 1])  # out of range for ScatterUpdate (axis size 4)
    arrays["rows"] = list_array(rows, np.int64)
    shapes = [g.shape for g in cols["grid"]]
    shapes[2] = (4, 7)  # 28 claimed for 32 values
    grids = list(cols["grid"])
    grids[3] = None  # a null tensor
    arrays["grid"] = tensor_column(grids, np.float32, shapes=[*shapes[:3], (), *shapes[4:]])
    evals = list(cols["evals1"])
    arrays["evals1"] = pa.array(
        [list(v) if r != 4 else [None] * 6 for r, v in enumerate(evals)], pa.list_(pa.float64())
    )  # nulls inside a tensor
    return pa.RecordBatch.from_arrays(list(arrays.values()), names=list(arrays))


def test_keep_writes_null_results_with_messages_and_keeps_every_row(rng):
    batch = _broken_batch(rng)
    out = run_steps(_plan(keep=True), batch).batch
    assert out.num_rows == batch.num_rows
    assert out.column("id").to_pylist() == batch.column("id").to_pylist()
    su = out.column("su").field("error").to_pylist()
    assert su[0] is None and su[5] is None
    assert su[1].startswith("IndexError: ScatterUpdate-3: index 4 is out of bounds for axis 0")
    assert su[2].startswith("ValueError:") and "does not match its 32 values" in su[2]
    assert su[3] == "ValueError: ScatterUpdate-3: data (column 'grid') is null"
    # One error layout: the struct stays, its values and shape are null, its error is set.
    values = out.column("su").field("values")
    assert values.is_null().to_pylist() == [False, True, True, True, False, False]
    assert out.column("su").field("shape").is_null().to_pylist() == values.is_null().to_pylist()
    assert out.column("su").null_count == 0
    hist = out.column("hist").field("error").to_pylist()
    assert hist[4] == (
        "ValueError: ScatterElementsUpdate-3: updates (column 'evals1') holds 6 null element(s)"
    )
    for name in out.schema.names[1:]:  # a row's result is null exactly where it has an error
        column = out.column(name)
        assert (
            column.field("error").is_valid().to_pylist()
            == column.field("values").is_null().to_pylist()
        ), name


def test_fail_names_the_row_by_its_id_and_gives_the_reason(rng):
    batch = _broken_batch(rng)
    output = run_steps(_plan(keep=False), batch)
    assert output.batch is None
    message = output.failure
    assert message.startswith("step 1 (ScatterUpdate-3 -> 'su') failed for id=1001: IndexError:")
    assert "index 4 is out of bounds" in message and "(and 2 more row(s) in this batch)" in message


def test_fail_without_row_id_names_the_row_by_position(rng):
    batch = _broken_batch(rng).slice(2)
    failure = run_steps(_plan(keep=False, row_id=None), batch, first_row=7).failure
    assert re.search(r"failed for row 7 of input partition 0: ValueError", failure)


ELEMENTS = {
    "op": "ScatterElementsUpdate-12",
    "attributes": {"axis": 0},
    "inputs": {"data": "d", "indices": "i", "updates": "u"},
    "output": "o",
}


def _elements_plan(keep: bool = False) -> BatchPlan:
    spec = JobSpec.from_dict({"steps": [ELEMENTS]})
    return BatchPlan(spec.steps, ("o",), keep_errors=keep)


def _small_batch(bad: set[int] = frozenset(), n: int = 3):
    """n rows scattering one value into zeros(3); rows in `bad` index out of bounds."""
    return pa.RecordBatch.from_arrays(
        [
            tensor_column([np.zeros(3, np.float32)] * n, np.float32),
            list_array([np.array([5 if r in bad else 0]) for r in range(n)], np.int64),
            list_array([np.ones(1, np.float32)] * n, np.float32),
        ],
        names=["d", "i", "u"],
    )


def test_a_row_with_several_unusable_inputs_reports_datas_problem_first():
    batch = pa.RecordBatch.from_arrays(
        [
            tensor_column([np.zeros(3, np.float32), None, np.zeros(3, np.float32)], np.float32),
            list_array([np.array([0]), None, None], np.int64),
            list_array([np.ones(1, np.float32), None, None], np.float32),
        ],
        names=["d", "i", "u"],
    )
    out = run_steps(_elements_plan(keep=True), batch).batch
    assert out.column("o").field("error").to_pylist() == [
        None,
        "ValueError: ScatterElementsUpdate-12: data (column 'd') is null",
        "ValueError: ScatterElementsUpdate-12: updates (column 'u') is null",
    ]


def test_fail_numbers_rows_from_the_start_of_the_partition_not_of_the_batch():
    # The second batch's row 1 is the partition's row 4.
    batches = iter([_small_batch(), _small_batch(bad={1})])
    with pytest.raises(RowError, match=r"failed for row 4 of input partition 0: IndexError"):
        list(raise_failures(_elements_plan(), batches))


def test_fail_with_one_bad_row_mentions_no_other_rows():
    failure = run_steps(_elements_plan(), _small_batch(bad={2})).failure
    assert "failed for row 2 of input partition 0: IndexError" in failure
    assert "more row(s)" not in failure


def test_bytes_in_count_the_column_inputs_not_the_constants(rng):
    # The summary's "tensors ... in" is what the kernels read from the input columns.
    _, batch = _batch(rng)
    spec = JobSpec.from_dict({"steps": [_steps()[4]]})  # constant data, list indices/updates
    counts = run_steps(BatchPlan(spec.steps, ("hist",), keep_errors=False), batch).stats.counts
    rows = batch.num_rows
    assert counts["bytes_in"] == rows * 6 * 8 * 2  # eidx1 (int64) and evals1 (double)
    assert counts["bytes_out"] == rows * 8 * 8


def test_configure_threads_outside_spark_changes_nothing():
    sk.set_num_threads(2)
    assert configure_threads() == sk.get_num_threads() == 2


@pytest.mark.parametrize(
    "dtype", [np.bool_, np.int8, np.int16, np.int32, np.int64, np.float32, np.float64]
)
def test_every_spark_element_type_goes_through_unchanged(rng, dtype):
    datas = [rng.integers(0, 2, (3, 4)).astype(dtype) for _ in range(5)]
    idxs = [rng.integers(-3, 3, (2, 4)) for _ in range(5)]
    upds = [rng.integers(0, 2, (2, 4)).astype(dtype) for _ in range(5)]
    batch = pa.RecordBatch.from_arrays(
        [tensor_column(datas, dtype), tensor_column(idxs, np.int64), tensor_column(upds, dtype)],
        names=["d", "i", "u"],
    )
    step = {
        "op": "ScatterElementsUpdate-12",
        "attributes": {"axis": 0, "reduction": "max"},
        "inputs": {"data": "d", "indices": "i", "updates": "u"},
        "output": "o",
    }
    spec = JobSpec.from_dict({"steps": [step]})
    out = run_steps(BatchPlan(spec.steps, ("o",), keep_errors=False), batch).batch
    assert (
        out.schema.field("o").type.field("values").type.value_type
        == batch.schema.field("d").type.field("values").type.value_type
    )
    for got, d, i, u in zip(tensor_rows(out.column("o")), datas, idxs, upds):
        want = sk.scatter_elements_update(d, i, u, 0, reduction="max")
        assert got.dtype == want.dtype and np.array_equal(got, want)


def _out_schema() -> pa.Schema:
    return pa.schema(
        [pa.field("o", run_steps(_elements_plan(), _small_batch()).batch.schema[0].type)]
    )


def test_the_job_gets_each_batchs_counts_in_the_hidden_columns_of_its_first_row():
    batches = iter([_small_batch(n=3), _small_batch().slice(0, 0), _small_batch(n=2)])
    out = list(report_failures(_elements_plan(), _out_schema(), batches))
    assert [b.num_rows for b in out] == [3, 2]  # no row added when nothing failed
    assert out[0].schema.names == ["o", *NAMES]
    for batch in out:
        rows = batch.to_pylist()
        assert all(r[name] is None for r in rows[1:] for name in NAMES)
    found = total(b.to_pylist()[0] for b in out)
    assert found.counts["batches"] == 3  # the empty batch is counted with the next one
    assert found.counts["bytes_out"] == 5 * 3 * 4 and found.failure is None
    assert found.modules == {sk.__file__} and len(found.threads) == 1


def test_the_jobs_failure_comes_as_one_more_row_holding_it():
    batches = iter([_small_batch(), _small_batch(bad={1})])
    out = list(report_failures(_elements_plan(), _out_schema(), batches))
    last = out[-1].to_pylist()
    assert len(last) == 1 and last[0]["o"] is None
    assert "failed for row 4 of input partition 0: IndexError" in last[0][NAMES[-1]]
    assert total(b.to_pylist()[0] for b in out).failure == last[0][NAMES[-1]]


def test_where_spark_commits_a_failure_raises_in_the_task():
    batches = iter([_small_batch(bad={0})])
    with pytest.raises(RowError, match="failed for row 0 of input partition 0"):
        list(report_failures(_elements_plan(), _out_schema(), batches, raising=True))


def test_the_failure_reported_is_the_same_whatever_order_tasks_finish_in():
    first, second = TaskStats(failure="b: later"), TaskStats(failure="a: earlier")
    one, two = TaskStats(), TaskStats()
    one.add(first)
    one.add(second)
    two.add(second)
    two.add(first)
    assert one.failure == two.failure == "a: earlier"
