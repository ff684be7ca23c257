"""scatterkit on Spark: tensor columns, column functions and the ``scatterkit-spark`` job.

>>> from scatterkit.spark import functions as skf, run_job, JobSpec, build_session
>>> spark = build_session()          # or build_session(remote="sc://host:15002")  # doctest: +SKIP
>>> df.withColumn("g", skf.scatter_nd_update("grid", "cells", "vals"))  # doctest: +SKIP

Every entry works on a classic session and on a Spark Connect session alike: nothing here
uses the SparkContext, RDDs or the JVM except the classic session's own set-up and its
progress display. The modules, top-down:

- driver side: `session` (classic or Connect), `spec` (the job's JSON), `plan` (a spec
  checked against the input's schema), `job` (`run_job`: engine choice, progress, summary),
  `engine_arrow` and `engine_spark` (the two ways to run a job), `storage` (paths, the
  input's pieces, the commit), `cluster` (the file work: one-task jobs, or the driver on a
  local master), `progress`, `summary`, `functions` (column functions), `aggregate` (event
  tables to tensors: `scatter_nd_agg`, `aggregate`);
- executor side: `steps` (the one step runner: fail/keep, row naming, the error layout),
  `tensors` (Arrow columns <-> tensors), `piece_task` (the Arrow engine's task), `stats`
  (counts and failures sent back as data), `agg_tasks` (the aggregation's combiner and
  finisher), `agg_states` (events checked and folded into order-free states);
- shared: `errors`, `element_types`, `agg_spec`; tools: `cli`, `demo`, `demo_data`, `pack`.

See docs/spark.md for the tensor column layout, the job specification and running on
local, standalone, YARN, Kubernetes and Spark Connect.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and IDEs
    from . import functions as functions
    from .errors import JobFailed as JobFailed
    from .errors import RowError as RowError
    from .errors import SpecError as SpecError
    from .job import run_job as run_job
    from .job import transform as transform
    from .pack import pack as pack
    from .session import build_session as build_session
    from .spec import JobSpec as JobSpec
    from .summary import JobSummary as JobSummary

_EXPORTS = {
    "JobSpec": "spec",
    "SpecError": "errors",
    "JobFailed": "errors",
    "RowError": "errors",
    "JobSummary": "summary",
    "run_job": "job",
    "transform": "job",
    "build_session": "session",
    "pack": "pack",
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
