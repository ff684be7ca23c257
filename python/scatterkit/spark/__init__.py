"""scatterkit on Spark: tensor columns, column functions and the ``scatterkit-spark`` job.

>>> from scatterkit.spark import functions as skf, run_job, JobSpec, build_session
>>> spark = build_session()          # or build_session(remote="sc://host:15002")  # doctest: +SKIP
>>> df.withColumn("g", skf.scatter_nd_update("grid", "cells", "vals"))  # doctest: +SKIP

Every entry works on a classic session and on a Spark Connect session alike: nothing here
uses the SparkContext, RDDs or the JVM except the classic session's own set-up and its
progress display.

The package is in layers; a module imports only from its own layer and those below it
(`.importlinter` at the repository root, checked by tests/python/test_layers.py):

- entry points: `cli` (``scatterkit-spark``), `demo` and `demo_data`, `functions` (the
  column functions, imported as ``skf``), `reader` (`read_tensors`: tensor columns of
  Parquet files into NumPy, no Spark);
- `sessions`: `session` (classic or Connect), `pack` (the executors' environment),
  `artifacts` (the library shipped to a Connect server);
- `jobs` (driver): `run` (`run_job`, `transform`), `plan`, `engine_arrow`, `engine_spark`,
  `aggregate_job` (an aggregation on the Arrow engine), `output` (stage, write, commit or
  abort: every job's one way out), `failures` (why a job failed, in one line), `progress`,
  `summary`;
- `aggregation`: `api` (driver: `scatter_nd_agg`, `aggregate`), `scan` (a plain Parquet
  scan's events read with pyarrow by the map tasks), `group` and `tasks`
  (executor: the folds of ``groupBy().agg()``; the combiner and the finisher), `wire` (the
  shuffle rows both sides use), `states` (events folded into order-free states);
- `runtime` (executor; never imports the layers above): `steps`, `tensors`, `stats`,
  `threads`, `storage` (paths), `reading` (the input read as Spark reads it: files, pieces,
  types), `commit` (the crash-safe commit), `piece_task` (the Arrow engine's task), `faults`
  (test-only pauses);
- `specs`: `job_spec` (the job's JSON), `agg_spec`, `constant`;
- `core`: `errors`, `element_types` (the tensor column's types and both layouts),
  `options` (the names a user chooses), `connect`, `cluster` (one-task file work, the
  cluster's parallelism).

See docs/spark.md for the tensor column layout, the job specification and running on
local, standalone, YARN, Kubernetes and Spark Connect.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and IDEs
    from . import functions as functions
    from .core.errors import JobFailed as JobFailed
    from .core.errors import RowError as RowError
    from .core.errors import SpecError as SpecError
    from .jobs.run import run_job as run_job
    from .jobs.run import transform as transform
    from .jobs.summary import JobSummary as JobSummary
    from .reader import read_tensors as read_tensors
    from .sessions.pack import pack as pack
    from .sessions.session import build_session as build_session
    from .specs.job_spec import JobSpec as JobSpec

_EXPORTS = {
    "JobSpec": "specs.job_spec",
    "SpecError": "core.errors",
    "JobFailed": "core.errors",
    "RowError": "core.errors",
    "JobSummary": "jobs.summary",
    "run_job": "jobs.run",
    "transform": "jobs.run",
    "build_session": "sessions.session",
    "pack": "sessions.pack",
    "read_tensors": "reader",
    "functions": None,
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    # Lazy: `scatterkit-spark pack` or `--help` should not pay for importing pyspark.
    if name not in _EXPORTS:
        raise AttributeError(f"module 'scatterkit.spark' has no attribute {name!r}")
    module = _EXPORTS[name]
    if module is None:
        return importlib.import_module(f"{__name__}.{name}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
