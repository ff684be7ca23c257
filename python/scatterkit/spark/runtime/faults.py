"""Test-only pauses, so that a fault lands where a test says, whatever the machine's speed.

A process holds at a named point of the code until the test that asked for it releases it
or kills it. Nothing happens unless the environment asks: `PAUSE_ENV` holds
``POINT[,POINT...]:DIR`` (set in the executors' environment with
``spark.executorEnv.SCATTERKIT_TEST_PAUSE``). The points (`pause_point` calls):

- ``map``: a map task of the aggregation (`aggregation.tasks.combine_events`) that has read
  all its events and sent them on, all but its task-wide states;
- ``reduce``: a reduce task of the aggregation (`aggregation.tasks.finish_groups`) that has
  folded all its groups and emitted all but the last (the writer's file is open), in
  partition 0 only: Spark's writer opens the file of partition 0 as the task starts, that of
  any other only once the first rows reach the JVM, which PySpark's buffered output may not
  have sent yet (a held attempt would then open its file only when released: after the job's
  commit, where a speculative copy finished, recreating its ``_temporary`` directory);
- ``write``: a task of the Arrow engine (`piece_task.write_task_file`) with its file open,
  before its last rows and its footer; a task of the Spark engine's job
  (`steps.report_failures`) that has sent all its rows to Spark's writer, whose file is
  open and whose footer waits for the task's end.

At each point, in each Spark stage, the first task attempt to arrive (of the partition the
point names, if it names one) holds; every other one (its retry, a speculative copy of it)
goes on. The one that holds writes
``DIR/POINT-STAGE.paused``: its pid, then a JSON line naming the task (stage, partition,
attempt, tid); it waits until ``DIR/POINT-STAGE.release`` exists, or until it is killed.
One that goes on leaves ``DIR/POINT-STAGE.passed-PARTITION.ATTEMPT``.

The driver's commit has pauses of its own (`commit.PAUSE_ENV`) that hold through `hold`.
"""

from __future__ import annotations

import json
import os
import time

PAUSE_ENV = "SCATTERKIT_TEST_PAUSE"


def requested(env: str, point: str) -> str | None:
    """The path after the first colon of the variable `env` (``POINT[,POINT...]:PATH``)
    where it names `point`, else None."""
    points, _, path = os.environ.get(env, "").partition(":")
    return path if path and point in points.split(",") else None


def hold(signal: str, release: str | None = None, note: str = "") -> None:
    """Writes this process's pid, then `note`, to the file `signal` (whole: a test that sees
    it reads the pid), then waits until the file `release` exists (forever without one)."""
    partial = f"{signal}.{os.getpid()}.partial"
    with open(partial, "w") as f:
        f.write(f"{os.getpid()}\n{note}")
    os.replace(partial, signal)
    while release is None or not os.path.exists(release):
        time.sleep(0.05)


def pause_point(point: str, partition: int | None = None) -> None:
    """Holds the first task attempt of a stage that reaches `point` (of `partition` only,
    if given), if `PAUSE_ENV` asks."""
    folder = requested(PAUSE_ENV, point)
    if folder is None:
        return
    from pyspark import TaskContext

    context = TaskContext.get()
    task = {"stage": -1, "partition": 0, "attempt": 0, "tid": -1}
    if context is not None:
        task = {
            "stage": context.stageId(),
            "partition": context.partitionId(),
            "attempt": context.attemptNumber(),
            "tid": context.taskAttemptId(),
        }
    base = os.path.join(folder, f"{point}-{task['stage']}")
    if partition is not None and task["partition"] != partition:
        open(f"{base}.passed-{task['partition']}.{task['attempt']}", "w").close()
        return
    try:  # the first attempt to arrive claims the pause
        os.close(os.open(f"{base}.claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        open(f"{base}.passed-{task['partition']}.{task['attempt']}", "w").close()
        return
    hold(f"{base}.paused", f"{base}.release", json.dumps(task))
