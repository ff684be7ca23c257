"""Progress while a job runs: one line whenever the running stages' task counts change.

The counts come from Spark Connect's progress handler on a Connect session, and from the
status tracker, polled by a thread, on a classic one; both feed the same display.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TextIO

from ..core.connect import is_connect


@dataclass(frozen=True)
class StageCounts:
    """One stage's tasks, as either source reports them."""

    stage_id: int
    tasks: int
    completed: int
    running: int = 0
    failed: int = 0


class Display:
    """Prints the stages' counts when they change (finished stages once)."""

    def __init__(self, out: TextIO, label: str) -> None:
        self._out = out
        self._label = label
        self._start = time.perf_counter()
        self._last = ""
        self._running: set[int] = set()
        self._lock = threading.Lock()

    def line(self, stages: Iterable[StageCounts]) -> str:
        """The line for these running stages (and those finished since the last line)."""
        active = {s.stage_id: s for s in stages}
        done = sorted(self._running - set(active))
        self._running = set(active)
        parts = [f"stage {s}: finished" for s in done]
        for stage_id in sorted(active):
            s = active[stage_id]
            part = f"stage {stage_id}: {s.completed}/{s.tasks} tasks done"
            if s.running:
                part += f", {s.running} running"
            if s.failed:
                part += f", {s.failed} failed"
            parts.append(part)
        return "; ".join(parts)

    def show(self, stages: Iterable[StageCounts]) -> None:
        with self._lock:
            text = self.line(stages)
            if text and text != self._last:
                elapsed = time.perf_counter() - self._start
                print(f"[{self._label} {elapsed:6.1f}s] {text}", file=self._out, flush=True)
                self._last = text


class Progress:
    """Shows the job's progress while the ``with`` block runs::

    with Progress(spark):
        df.write.parquet(path)
    """

    def __init__(
        self, spark: Any, *, out: TextIO | None = None, interval: float = 0.5, label: str = "run"
    ) -> None:
        self._spark = spark
        self._display = Display(out if out is not None else sys.stdout, label)
        self._interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._connect = is_connect(spark)

    def __enter__(self) -> Progress:
        if self._connect:
            self._spark.registerProgressHandler(self._on_connect_progress)
        else:
            tracker = self._spark.sparkContext.statusTracker()
            self._thread = threading.Thread(
                target=self._poll, args=(tracker,), name="scatterkit-progress", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._connect:
            self._spark.removeProgressHandler(self._on_connect_progress)
        else:
            self._stop.set()
            assert self._thread is not None
            self._thread.join(timeout=5)
        self._display.show([])  # whatever still runs has finished

    def _on_connect_progress(self, stages: Any, inflight_tasks: int, *args: Any, **kw: Any) -> None:
        """Spark Connect's handler: (stages, inflight tasks, operation id, done)."""
        stages = list(stages or [])
        running = [s for s in stages if not s.done]
        counts = [
            StageCounts(
                s.stage_id,
                s.num_tasks,
                s.num_completed_tasks,
                inflight_tasks if len(running) == 1 else 0,
            )
            for s in running
        ]
        self._display.show(counts)

    def _poll(self, tracker: Any) -> None:
        while not self._stop.wait(self._interval):
            try:
                counts = []
                for stage_id in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(stage_id)
                    if info is not None:
                        counts.append(
                            StageCounts(
                                stage_id,
                                info.numTasks,
                                info.numCompletedTasks,
                                info.numActiveTasks,
                                info.numFailedTasks,
                            )
                        )
            except Exception:  # the context is stopping; progress is best effort
                return
            self._display.show(counts)
