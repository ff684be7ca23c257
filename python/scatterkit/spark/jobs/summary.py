"""What a job did: rows, bytes, time, errors and where the executors found scatterkit."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


def _mb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e6:,.1f} MB"


def _paths(paths: list[str], shown: int = 2) -> str:
    if not paths:
        return "?"
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


@dataclass
class JobSummary:
    """The outcome of one run (rows are counted from the input and output themselves)."""

    rows_in: int
    rows_out: int
    seconds: float
    # Step output -> rows kept in error: one entry per step with on_error="keep", none with
    # "fail" (a failed row fails the job, so no error is ever kept).
    errors: dict[str, int] = field(default_factory=dict)
    error_rows: int = 0  # rows with at least one error
    tensor_bytes_in: int = 0  # tensor values read by the kernels
    tensor_bytes_out: int = 0  # tensor values written by the kernels
    input_bytes: int | None = None  # Parquet on storage
    output_bytes: int | None = None
    batches: int = 0
    executor_python_seconds: float = 0.0  # summed over tasks: Arrow to tensors, kernels, back
    fold_seconds: float = 0.0  # summed over tasks: the aggregation's folds, map and reduce side
    executor_modules: list[str] = field(default_factory=list)  # sk.__file__ on executors
    executor_threads: list[int] = field(default_factory=list)  # kernel threads per task
    engine: str = "spark"  # who read and wrote the Parquet: "arrow" or "spark"
    # With an aggregation step (rows in are events, rows out groups): per aggregate, the
    # events folded, the events dropped (on_error "drop") and the groups kept in error.
    aggregated: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def rows_per_second(self) -> float:
        return self.rows_in / self.seconds if self.seconds > 0 else 0.0

    @property
    def tensor_mb_per_second(self) -> float:
        total = self.tensor_bytes_in + self.tensor_bytes_out
        return total / 1e6 / self.seconds if self.seconds > 0 else 0.0

    @property
    def complete(self) -> bool:
        """Whether every input row reached the output: a row per row for a job of steps
        (rows kept in error included). An aggregation writes a row per group, each with the
        counts of its events (`aggregated`)."""
        return bool(self.aggregated) or self.rows_in == self.rows_out

    def lines(self) -> list[str]:
        """The human-readable summary."""
        errors = ", ".join(f"{k}: {v}" for k, v in self.errors.items() if v) or "none"
        kept = f"errors    {self.error_rows:,} row(s) kept with errors (per step: {errors})"
        if self.aggregated:
            rows = [f"rows      {self.rows_in:,} events in, {self.rows_out:,} groups out"]
            rows.append(
                f"folds     {self.fold_seconds:,.2f} s of task time in scatterkit's "
                "aggregation folds"
            )
            rows += [
                f"events    {name}: {a['events']:,} folded, {a['dropped']:,} dropped, "
                f"{a['error_groups']:,} group(s) kept in error"
                for name, a in self.aggregated.items()
            ]
        else:
            rows = [
                f"rows      {self.rows_in:,} in, {self.rows_out:,} out"
                + ("" if self.complete else "  << ROW COUNT MISMATCH")
            ]
        return [
            *rows,
            *([kept] if self.errors else []),
            f"bytes     tensors {_mb(self.tensor_bytes_in)} in, {_mb(self.tensor_bytes_out)} out;"
            f" Parquet {_mb(self.input_bytes)} in, {_mb(self.output_bytes)} out",
            f"time      {self.seconds:,.2f} s: {self.rows_per_second:,.0f} rows/s, "
            f"{self.tensor_mb_per_second:,.1f} MB/s of tensors; {self.batches:,} Arrow batches, "
            f"{self.executor_python_seconds:,.2f} s of task time in scatterkit "
            f"({self.engine} engine)",
            f"executors scatterkit from {_paths(self.executor_modules)}; "
            f"kernel threads per task {self.executor_threads or '?'}",
        ]

    def to_json(self) -> str:
        data: dict[str, Any] = asdict(self)
        data.update(rows_per_second=self.rows_per_second)
        return json.dumps(data, indent=2, sort_keys=True)
