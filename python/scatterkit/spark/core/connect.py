"""Which kind of session: the one fact every layer may ask of a session."""

from __future__ import annotations

from typing import Any


def is_connect(spark: Any) -> bool:
    """Whether `spark` is a Spark Connect session (no SparkContext, no JVM here)."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # the Connect client's requirements are not installed
        return False
    return isinstance(spark, ConnectSession)
