"""What runs on the executors: one operation over one Arrow record batch in one C++ call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

import scatterkit as sk

from .._batch import Ragged, run_batch
from ._arrow import TensorRows, constant_rows, read_split, read_tensor
from ._types import numpy_dtype
from .spec import TensorInput


class RowError(RuntimeError):
    """A row failed under ``on_error="fail"``; the message names the row and the reason."""


@dataclass(frozen=True)
class OpResult:
    """Output values laid out as data's rows, and one message per row (None: success)."""

    values: np.ndarray
    layout: Ragged
    messages: list  # list[str | None]
    failed: list  # list[int]: the rows whose message is not None, in order

    @property
    def valid(self) -> np.ndarray:
        valid = np.ones(len(self.messages), np.bool_)
        valid[self.failed] = False
        return valid

    @property
    def error_count(self) -> int:
        return len(self.failed)


def configure_threads() -> int:
    """One OpenMP thread per task core: ``sk.set_num_threads(spark.task.cpus)``.

    Outside a Spark task nothing changes. Returns the thread count the kernels will use
    (1 in a worker forked after the OpenMP pool started, whatever was asked).
    """
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - executors always have pyspark
        return sk.get_num_threads()
    context = TaskContext.get()
    if context is not None:
        sk.set_num_threads(max(1, int(context.cpus() or 1)))
    return sk.get_num_threads()


def read_input(
    source: TensorInput, columns: Mapping[str, pa.Array], rows: int, name: str
) -> TensorRows:
    """The tensors of one step input for every row of the batch."""
    what = f"{name} ({source.describe()})"
    if source.constant is not None:
        c = source.constant
        return constant_rows(rows, c.shape, numpy_dtype(c.dtype), c.fill)
    if source.column is not None:
        return read_tensor(columns[source.column], what)
    values, shape = source.split_columns()
    return read_split(columns[values], columns[shape], what)


def _empty_input(dtype: np.dtype) -> TensorRows:
    ragged = Ragged(
        np.empty(0, dtype), np.zeros(1, np.int64), np.empty(0, np.int64), np.zeros(1, np.int64)
    )
    return TensorRows(ragged, {})


def dry_run(op: str, attributes: Mapping[str, Any], dtypes: Mapping[str, np.dtype]) -> None:
    """Runs `op` on zero rows of the given input dtypes: what would fail in every task
    (bad attributes, impossible casts, non-integer indices) raises here, in the driver.
    """
    run_op(op, attributes, {name: _empty_input(np.dtype(d)) for name, d in dtypes.items()})
    steps = np.atleast_1d(np.asarray(attributes.get("step", 1), dtype=object))
    if any(s == 0 for s in steps):
        raise ValueError(f"{op}: step must not be 0")


def run_op(op: str, attributes: Mapping[str, Any], tensors: Mapping[str, TensorRows]) -> OpResult:
    """Runs `op` on every row: one `run_batch` call, threads over rows.

    A row whose inputs cannot be used (a null tensor, a null element) gets that
    problem as its message; a row the kernel rejects gets the kernel's message.
    """
    data = tensors["data"]
    indices = tensors.get("indices")
    updates = tensors["updates"]
    out, errors = run_batch(
        op,
        data.ragged,
        updates.ragged,
        indices.ragged if indices is not None else None,
        **dict(attributes),
    )
    messages: list[str | None] = errors
    sources = [data.problems, updates.problems]
    if indices is not None:
        sources.append(indices.problems)
    for source in reversed(sources):  # data's problem wins, then updates', then indices'
        for r, problem in source.items():
            messages[r] = f"ValueError: {op}: {problem}"
    failed = [r for r, m in enumerate(messages) if m is not None]
    return OpResult(out, data.ragged, messages, failed)
