"""Progress while a job runs: a thread polling Spark's status tracker."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO


class Progress:
    """Prints a line whenever the running stages' task counts change (at most every second).

    Use as a context manager around the action that runs the job::

        with Progress(spark.sparkContext):
            df.write.parquet(path)
    """

    def __init__(
        self, sc: Any, *, out: TextIO | None = None, interval: float = 0.5, label: str = "run"
    ) -> None:
        self._tracker = sc.statusTracker()
        self._out = out if out is not None else sys.stdout
        self._interval = interval
        self._label = label
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="scatterkit-progress", daemon=True)
        self._last = ""
        self._start = 0.0
        self._running: dict[int, int] = {}  # active stage -> its task count

    def __enter__(self) -> Progress:
        self._start = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._print(self._finished(set()))

    def _finished(self, active: set[int]) -> str:
        done = sorted(set(self._running) - active)
        for stage_id in done:
            self._running.pop(stage_id)
        return "; ".join(f"stage {s}: finished" for s in done)

    def snapshot(self) -> str:
        """One line describing the active stages, and those finished since the last call."""
        parts = []
        active = set(self._tracker.getActiveStageIds())
        finished = self._finished(active)
        if finished:
            parts.append(finished)
        for stage_id in sorted(active):
            info = self._tracker.getStageInfo(stage_id)
            if info is None:
                continue
            self._running[stage_id] = info.numTasks
            part = f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks done"
            if info.numActiveTasks:
                part += f", {info.numActiveTasks} running"
            if info.numFailedTasks:
                part += f", {info.numFailedTasks} failed"
            parts.append(part)
        return "; ".join(parts)

    def _print(self, line: str) -> None:
        if line and line != self._last:
            elapsed = time.perf_counter() - self._start
            print(f"[{self._label} {elapsed:6.1f}s] {line}", file=self._out, flush=True)
            self._last = line

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                line = self.snapshot()
            except Exception:  # the context is stopping; progress is best effort
                return
            self._print(line)
