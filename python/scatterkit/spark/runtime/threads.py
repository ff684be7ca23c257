"""Kernel threads in a Spark task: one per core the task was given."""

from __future__ import annotations

from typing import Any

import scatterkit as sk


def configure_threads() -> int:
    """One OpenMP thread per task core: ``sk.set_num_threads(spark.task.cpus)``.

    Outside a Spark task nothing changes. Returns the thread count the kernels will use
    (1 in a worker forked after the OpenMP pool started, whatever was asked).
    """
    context = task_context()
    if context is not None:
        sk.set_num_threads(max(1, int(context.cpus() or 1)))
    return sk.get_num_threads()


def task_context() -> Any:
    """The running Spark task's context (None outside a task)."""
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - executors always have pyspark
        return None
    return TaskContext.get()
