"""The Arrow engine's tasks count what they write (`runtime.written`): the counts the job
summary would otherwise read back from the output, in either tensor layout."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from scatterkit.spark.runtime.tensors import tensor_array
from scatterkit.spark.runtime.written import Counted, count_batch

pytestmark = pytest.mark.spark


def _aggregate_column(layout: str) -> pa.StructArray:
    """Three groups' [2, 3] float tensors, the second kept in error (a null tensor)."""
    from scatterkit._batch import Ragged

    values = np.arange(18, dtype=np.float32)
    like = Ragged(values, np.arange(4) * 6, np.tile([2, 3], 3), np.arange(4) * 2)
    ok = np.array([True, False, True])
    errors = [None, "coordinate h=4 is out of range", None]
    tensors = tensor_array(values, like, ok, errors, layout)
    fields = [*tensors.flatten(), pa.array([5, 0, 7]), pa.array([0, 2, 1])]
    names = [*(f.name for f in tensors.type), "events", "dropped"]
    return pa.StructArray.from_arrays(fields, names=names)


@pytest.mark.parametrize("layout", ["arrays", "binary"])
def test_a_batch_is_counted_as_the_summary_reads_it(layout):
    step = pa.StructArray.from_arrays(
        [pa.array([None, "bad", "worse"]), pa.array([1, 2, 3])], names=["error", "n"]
    )
    step = pa.StructArray.from_arrays(
        step.flatten(), names=["error", "n"], mask=pa.array([False, False, True])
    )  # the third row's struct is null: its error does not count
    batch = pa.RecordBatch.from_arrays(
        [pa.array([1, 2, 3]), _aggregate_column(layout), step], names=["user", "spend", "out"]
    )
    counts = count_batch(Counted(steps=("out",), aggregates=("spend",)), batch)
    assert counts == {
        "rows": 3,
        "error:out": 1,
        "error_rows": 1,
        "events:spend": 12,
        "dropped:spend": 3,
        "error_groups:spend": 1,
        "bytes:spend": 2 * 6 * 4,  # the two tensors written
    }
