"""The one way every job writes its output: stage, write, commit or abort (see
`runtime.commit`), for both engines and the aggregation job.

A job's failure, whatever its kind, comes back in its `TaskStats` (``failure``): the
commit then never runs, and the staging directory goes. An exception (Spark's own
failure, an interrupt) takes the same way out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ..core.cluster import on_cluster
from ..runtime.commit import Staging, abort, commit, stage
from ..runtime.stats import TaskStats
from ..runtime.storage import Location
from .failures import connect_lost

# A job's writing: given the staging directory, the tasks' stats and the files to commit
# (None where Spark's writer wrote the directory itself).
Write = Callable[[Staging], tuple[TaskStats, "list[str] | None"]]


def write_output(
    spark: Any,
    target: Location,
    overwrite: bool,
    empty_schema: pa.Schema,
    write: Write,
    *,
    staging: Staging | None = None,
) -> TaskStats:
    """Runs `write` into a staging directory (`staging`, or a new one made here) and
    commits it as the output unless the stats hold a failure; returns the stats.

    Raises FileExistsError if the output exists and not `overwrite`."""
    if staging is None:
        staging = on_cluster(spark, stage, target, overwrite)
    committed, reachable = False, True
    try:
        stats, written = write(staging)
        if stats.failure is None:
            on_cluster(spark, commit, staging, written, empty_schema)
            committed = True
    except BaseException as exc:
        # A Connect server that went away cannot abort: trying would only hold the message
        # back by another round of retries; the next run cleans up (`commit.clean_leftovers`).
        reachable = not connect_lost(exc, spark)
        raise
    finally:
        if not committed and reachable:
            on_cluster(spark, abort, staging)
    return stats
