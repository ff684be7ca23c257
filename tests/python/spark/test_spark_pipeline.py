"""The executor side of the job on record batches (no Spark needed): results and bad rows."""

from __future__ import annotations

import numpy as np
import pytest
from spark_helpers import list_array, pa, tensor_column, tensor_rows

import scatterkit as sk
from scatterkit.spark._executor import RowError, configure_threads
from scatterkit.spark._pipeline import BatchPlan, apply_steps, process_batches
from scatterkit.spark.spec import JobSpec


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
    if keep:
        outputs = [c for s in spec.steps for c in (s.output, s.error_column)]
    return BatchPlan(spec.steps, ("id", *outputs), keep_errors=keep, row_id=row_id)


def test_every_op_on_a_batch_equals_single_calls_of_the_numpy_api(rng):
    cols, batch = _batch(rng)
    out, counts = apply_steps(_plan(keep=False), batch)
    assert out.schema.names == ["id", "su", "seu", "snd", "ss", "hist"]
    assert counts["errors"] == 0 and counts["bytes_out"] > 0
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
    out, counts = apply_steps(_plan(keep=True), batch)
    assert out.num_rows == batch.num_rows
    assert out.column("id").to_pylist() == batch.column("id").to_pylist()
    su = out.column("su_error").to_pylist()
    assert su[0] is None and su[5] is None
    assert su[1].startswith("IndexError: ScatterUpdate-3: index 4 is out of bounds for axis 0")
    assert su[2].startswith("ValueError:") and "does not match its 32 values" in su[2]
    assert su[3] == "ValueError: ScatterUpdate-3: data (column 'grid') is null"
    assert out.column("su").is_null().to_pylist() == [False, True, True, True, False, False]
    hist = out.column("hist_error").to_pylist()
    assert hist[4] == (
        "ValueError: ScatterElementsUpdate-3: updates (column 'evals1') holds 6 null element(s)"
    )
    errors = [c for c in out.schema.names if c.endswith("_error")]
    assert counts["errors"] == sum(len(out) - out.column(c).null_count for c in errors)


def test_fail_names_the_row_by_its_id_and_gives_the_reason(rng):
    batch = _broken_batch(rng)
    with pytest.raises(RowError) as info:
        apply_steps(_plan(keep=False), batch)
    message = str(info.value)
    assert message.startswith("step 1 (ScatterUpdate-3 -> 'su') failed for id=1001: IndexError:")
    assert "index 4 is out of bounds" in message and "(and 2 more row(s) in this batch)" in message


def test_fail_without_row_id_names_the_row_by_position(rng):
    batch = _broken_batch(rng).slice(2)
    with pytest.raises(RowError, match=r"failed for row 7 of input partition 0: ValueError"):
        apply_steps(_plan(keep=False, row_id=None), batch, first_row=7)


ELEMENTS = {
    "op": "ScatterElementsUpdate-12",
    "attributes": {"axis": 0},
    "inputs": {"data": "d", "indices": "i", "updates": "u"},
    "output": "o",
}


def _elements_plan(keep: bool = False) -> BatchPlan:
    spec = JobSpec.from_dict({"steps": [ELEMENTS]})
    return BatchPlan(spec.steps, ("o", "o_error") if keep else ("o",), keep_errors=keep)


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
    out, _ = apply_steps(_elements_plan(keep=True), batch)
    assert out.column("o_error").to_pylist() == [
        None,
        "ValueError: ScatterElementsUpdate-12: data (column 'd') is null",
        "ValueError: ScatterElementsUpdate-12: updates (column 'u') is null",
    ]


def test_fail_numbers_rows_from_the_start_of_the_partition_not_of_the_batch():
    # The second batch's row 1 is the partition's row 4.
    batches = iter([_small_batch(), _small_batch(bad={1})])
    with pytest.raises(RowError, match=r"failed for row 4 of input partition 0: IndexError"):
        list(process_batches(_elements_plan(), None, batches))


def test_fail_with_one_bad_row_mentions_no_other_rows():
    with pytest.raises(RowError) as info:
        apply_steps(_elements_plan(), _small_batch(bad={2}))
    assert "failed for row 2 of input partition 0: IndexError" in str(info.value)
    assert "more row(s)" not in str(info.value)


def test_bytes_in_count_the_column_inputs_not_the_constants(rng):
    # The summary's "tensors ... in" is what the kernels read from the input columns.
    _, batch = _batch(rng)
    spec = JobSpec.from_dict({"steps": [_steps()[4]]})  # constant data, list indices/updates
    _, counts = apply_steps(BatchPlan(spec.steps, ("hist",), keep_errors=False), batch)
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
    out, _ = apply_steps(BatchPlan(spec.steps, ("o",), keep_errors=False), batch)
    assert (
        out.schema.field("o").type.field("values").type.value_type
        == batch.schema.field("d").type.field("values").type.value_type
    )
    for got, d, i, u in zip(tensor_rows(out.column("o")), datas, idxs, upds):
        want = sk.scatter_elements_update(d, i, u, 0, reduction="max")
        assert got.dtype == want.dtype and np.array_equal(got, want)
