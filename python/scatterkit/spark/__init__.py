"""scatterkit on Spark: tensor columns, column functions and the ``scatterkit-spark`` job.

>>> from scatterkit.spark import functions as skf, run_job, JobSpec, build_session
>>> spark = build_session()                                       # doctest: +SKIP
>>> df.withColumn("g", skf.scatter_nd_update("grid", "cells", "vals"))  # doctest: +SKIP

See docs/spark.md for the tensor column layout, the job specification and running on
standalone, YARN and Kubernetes clusters.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and IDEs
    from . import functions as functions
    from .job import JobFailed as JobFailed
    from .job import run_job as run_job
    from .job import transform as transform
    from .pack import pack as pack
    from .session import build_session as build_session
    from .spec import JobSpec as JobSpec
    from .spec import SpecError as SpecError
    from .summary import JobSummary as JobSummary

_EXPORTS = {
    "JobSpec": "spec",
    "SpecError": "spec",
    "JobFailed": "job",
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
