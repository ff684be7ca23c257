"""Small driver-side questions answered by the cluster, through the DataFrame API only.

On Spark Connect the driver is a client: it has no SparkContext, and it may not even see
the cluster's file systems. The file work of a job (listing the input, committing the
output) therefore runs in a one-task Spark job, wherever the executors run; on a local master the
executors are this machine's, so it runs here, without a job's second or so.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pyarrow as pa

from .connect import is_connect

Result = TypeVar("Result")
_RESULT_SCHEMA = "result binary"


def _call(fn: Callable[..., Any], args: tuple, batches: Iterator[pa.RecordBatch]) -> Any:
    for _ in batches:  # the single row of spark.range(1)
        pass
    try:
        outcome: tuple[bool, Any] = (True, fn(*args))
    except Exception as exc:  # sent back as a value: the driver raises it with its own type
        outcome = (False, exc)
    yield pa.RecordBatch.from_pydict({"result": [pickle.dumps(outcome)]})


def on_cluster(spark: Any, fn: Callable[..., Result], *args: Any) -> Result:
    """``fn(*args)`` run in one Spark task; its exception is raised here with its type.

    A classic session on a local master (``local[...]``, ``local-cluster[...]``) runs it in
    this process: its executors share this machine's file systems."""
    if not is_connect(spark) and spark.sparkContext.master.startswith("local"):
        return fn(*args)
    frame = spark.range(1, numPartitions=1)
    row = frame.mapInArrow(functools.partial(_call, fn, args), _RESULT_SCHEMA).first()
    ok, value = pickle.loads(row["result"])
    if not ok:
        raise value
    return value


def parallelism(spark: Any) -> int:
    """How many tasks the cluster runs at once by default: the partitions ``spark.range``
    gets by default. A classic session knows it (``defaultParallelism``, which its
    ``spark.range`` uses); a Spark Connect client cannot ask, so a small job finds out."""
    from pyspark.sql import functions as F

    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)

    partitions = spark.range(1 << 16).select(F.spark_partition_id().alias("p"))
    last = partitions.agg(F.max("p")).first()[0]
    return int(last) + 1
