"""groupBy().agg(scatter_nd_agg) on a group too large for a capped Python worker.

A tensor larger than BATCHED_TENSOR_BYTES ([64, 64] of double here) is folded by a
grouped-aggregate UDF, to which Spark hands its whole group; a smaller one ([24, 16] of
float) by a scalar UDF over Spark's ``collect_list`` of each group's events, which Spark
collects in its JVM first (a few hundred bytes an event: the driver gets 2g here, so that
the JVM holds what the worker cannot). Either way a group can exceed a Python worker's
memory, which ``spark.executor.pyspark.memory`` caps (PySpark sets it as the worker's
address-space limit, RLIMIT_AS). Where the fold of the group is what runs out, the user
must read a clear error: how many events the group holds, the cap, and to use
``skf.aggregate``, not a bare MemoryError from NumPy.

The cap is set relative to what a worker's address space holds once it has folded a small
group (measured first, in a session without a cap: it differs between machines), so that
PySpark itself can still receive the group (it keeps the group's Arrow batches and a
concatenated copy of them, 2 x 16 bytes an event here) and the fold (about 100 bytes an
event on the general way, which a null value in the group takes) cannot. Where PySpark's
own concatenation runs out first (a group above the cap / 32 bytes an event here), the
error is PyArrow's ``ArrowMemoryError`` from ``pa.concat_batches`` in PySpark's worker,
before scatterkit's code runs: see bench/spark/RESULTS.md, "Scale and skew".
"""

from __future__ import annotations

import json

import pytest
from spark_helpers import run_python

pytestmark = [pytest.mark.spark, pytest.mark.jvm]  # a driver in a process of its own

HEADROOM_MB = 64  # the cap above a worker's address space after a small fold
EVENTS = 1_800_000  # the large group: 29 MB of Arrow in PySpark, about 115 MB to fold
PROBE_CAP_MB = 1024  # the cap while the worker's own address space is measured

SCRIPT = r"""
import json
from pyspark.errors import PythonException
from pyspark.sql import functions as F
from scatterkit.spark import functions as skf
from scatterkit.spark.sessions.session import build_session

EVENTS, HEADROOM_MB, PROBE_CAP_MB, SHAPE = {events}, {headroom}, {probe}, {shape}
CONF = {{"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
         "spark.driver.memory": "{driver}", "spark.driver.host": "127.0.0.1"}}


def fold_small(batches):
    # In a worker: a small group through the grouped-aggregate UDF's fold (the general way,
    # as a null value takes it), then the worker's peak address space.
    import re
    import numpy as np
    import pyarrow as pa
    from scatterkit.spark.aggregation.group import fold_group
    from scatterkit.spark.specs.agg_spec import check_agg

    for _ in batches:
        pass
    n = np.arange(1000)
    spec = check_agg(["hour", "category"], "amount", [64, 64]).with_dtype("double")
    amount = pa.array(np.random.default_rng(7).random(1000), mask=n == 0)
    fold_group(spec, pa.array(n % 64, pa.int32()), pa.array(n % 64, pa.int32()), amount)
    status = open("/proc/self/status").read()
    peak = int(re.search(r"VmPeak:\s+(\d+) kB", status).group(1))
    yield pa.RecordBatch.from_pydict({{"mb": [peak // 1024]}})


# Allocators reserve address space freely without a cap and less under one: measure under one.
probe = {{**CONF, "spark.executor.pyspark.memory": f"{{PROBE_CAP_MB}}m"}}
spark = build_session(master="local[1]", conf=probe, app_name="large-group-probe")
base = spark.range(1, numPartitions=1).mapInArrow(fold_small, "mb long").first().mb
spark.stop()

cap = base + HEADROOM_MB
capped = {{**CONF, "spark.executor.pyspark.memory": f"{{cap}}m"}}
spark = build_session(master="local[1]", conf=capped, app_name="large-group")
ids = spark.range(EVENTS, numPartitions=1)
amount = F.when(F.col("id") == 0, F.lit(None)).otherwise(F.rand(7))  # one null: the general way
events = ids.select(F.lit(1).alias("g"), (F.col("id") % SHAPE[0]).cast("int").alias("hour"),
                    (F.col("id") % SHAPE[1]).cast("int").alias("category"),
                    amount.cast("float").alias("amount"))
agg = skf.scatter_nd_agg(["hour", "category"], "amount", SHAPE)
out = {{"base_mb": base, "cap_mb": cap}}
try:
    out["events"] = events.groupBy("g").agg(agg.alias("t")).first().t.events
    out["error"] = None
except PythonException as exc:
    out["error"] = str(exc)
spark.stop()
print("RESULT " + json.dumps(out))
"""


@pytest.mark.parametrize(
    "shape, driver",
    [([64, 64], "1g"), ([24, 16], "2g")],
    ids=["grouped-aggregate UDF", "batched collect_list"],
)
def test_group_too_large_for_the_worker_names_it_and_points_at_aggregate(shape, driver):
    from scatterkit.spark.aggregation.api import BATCHED_TENSOR_BYTES

    batched = shape[0] * shape[1] * 8 <= BATCHED_TENSOR_BYTES  # double, as a bare .agg() sums
    assert batched == (driver == "2g")
    code = SCRIPT.format(
        events=EVENTS, headroom=HEADROOM_MB, probe=PROBE_CAP_MB, shape=shape, driver=driver
    )
    stdout = run_python(code, timeout=240)
    result = json.loads(stdout.split("RESULT ", 1)[1])
    error = result["error"]
    assert error is not None, f"a {EVENTS:,}-event group folded under a cap of {result}"
    message = error[error.find("RowError: ") :]
    assert message.startswith(f"RowError: scatter_nd_agg: the group of {EVENTS:,} events"), error
    assert f"caps it at {result['cap_mb']:,} MB" in message, message
    assert "MemoryError" in message, message
    assert "skf.aggregate(df, by, name=skf.scatter_nd_agg(...))" in message, message
