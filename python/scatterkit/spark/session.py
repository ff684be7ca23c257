"""The Spark session of the job: local by default, or a cluster with a shipped environment."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
ENV_ALIAS = "environment"  # the archive unpacks as ./environment in each executor's directory

# Arrow batches sent to the Python workers: bounded in rows and in bytes, so that large
# tensors (millions of elements per row) still make batches of a few tens of megabytes
# and the int32 list offsets Spark uses cannot overflow.
DEFAULT_CONF: dict[str, str] = {
    "spark.sql.execution.arrow.maxRecordsPerBatch": "4096",
    "spark.sql.execution.arrow.maxBytesPerBatch": str(64 * 1024 * 1024),
    "spark.ui.showConsoleProgress": "false",
}


def launched_by_spark_submit() -> bool:
    """True when this Python process is a driver started by ``spark-submit``."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def archive_conf(archive: str) -> dict[str, str]:
    """The settings that ship a packed environment (``scatterkit-spark pack``) to executors."""
    return {
        "spark.archives": f"{os.path.abspath(archive)}#{ENV_ALIAS}",
        "spark.executorEnv.PYSPARK_PYTHON": f"./{ENV_ALIAS}/bin/python",
    }


def build_session(
    *,
    master: str | None = None,
    archive: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "scatterkit",
    log_level: str = "ERROR",
) -> SparkSession:
    """A SparkSession for the job.

    `master` defaults to ``local[*]`` (nothing to start), except under ``spark-submit``,
    whose settings are kept. With `archive` (from ``scatterkit-spark pack``) the executors
    run ``./environment/bin/python`` from that archive, unpacked through ``spark.archives``.
    `conf` entries win over the defaults.
    """
    settings = dict(DEFAULT_CONF)
    if launched_by_spark_submit():  # spark-submit's own settings win over our defaults
        from pyspark import SparkConf

        submitted = SparkConf()
        settings = {k: v for k, v in settings.items() if not submitted.contains(k)}
    if archive is not None:
        if not os.path.isfile(archive):
            raise FileNotFoundError(f"no environment archive at {archive!r}")
        settings.update(archive_conf(archive))
        # The Python the executors start is fixed when the SparkContext is created.
        os.environ["PYSPARK_PYTHON"] = f"./{ENV_ALIAS}/bin/python"
    settings.update(conf or {})
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif not launched_by_spark_submit():
        builder = builder.master(DEFAULT_MASTER)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    sc = spark.sparkContext
    if sc.master.startswith("local"):
        if archive is not None:
            # Local mode unpacks archives under SparkFiles' root, not in the workers' directory.
            from pyspark import SparkFiles

            sc.pythonExec = os.path.join(SparkFiles.getRootDirectory(), ENV_ALIAS, "bin", "python")
        elif "PYSPARK_PYTHON" not in os.environ:
            sc.pythonExec = sys.executable  # not whatever `python3` is first on the PATH
    return spark
