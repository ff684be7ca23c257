"""The Spark session of the job: local by default, a cluster with a shipped environment, or
a Spark Connect server (``sc://host:port``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from ..core.connect import is_connect
from ..runtime.reading import ARROW_BATCH_CONF

DEFAULT_MASTER = "local[*]"
ENV_ALIAS = "environment"  # the archive unpacks as ./environment in each executor's directory

DEFAULT_CONF: dict[str, str] = {**ARROW_BATCH_CONF, "spark.ui.showConsoleProgress": "false"}


def launched_by_spark_submit() -> bool:
    """True when this Python process is a driver started by ``spark-submit``."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def archive_conf(archive: str) -> dict[str, str]:
    """The settings that ship a packed environment (``scatterkit-spark pack``) to executors."""
    return {
        "spark.archives": f"{os.path.abspath(archive)}#{ENV_ALIAS}",
        "spark.executorEnv.PYSPARK_PYTHON": f"./{ENV_ALIAS}/bin/python",
    }


_JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
_LOG4J_OPTION = "-Dlog4j2.configurationFile="


def _quiet_start(settings: Mapping[str, str], log_level: str) -> dict[str, str]:
    """Driver JVM options that log at `log_level` from its start (Spark's own start-up
    lines included) with scatterkit's log4j2.properties; none when the user configured
    log4j (in `settings` or in ``$SPARK_CONF_DIR``)."""
    options = settings.get(_JAVA_OPTIONS_KEY, "")
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if _LOG4J_OPTION in options or (
        conf_dir and os.path.isfile(os.path.join(conf_dir, "log4j2.properties"))
    ):
        return {}
    config = Path(__file__).resolve().with_name("log4j2.properties").as_uri()  # no spaces
    ours = f"{_LOG4J_OPTION}{config} -Dscatterkit.log.level={log_level}"
    return {_JAVA_OPTIONS_KEY: f"{options} {ours}".strip()}


# What a Connect client can set: the settings of its SQL session, not the server's.
_CONNECT_DEFAULTS = (
    "spark.sql.execution.arrow.maxRecordsPerBatch",
    "spark.sql.execution.arrow.maxBytesPerBatch",
)


def remote_url(remote: str | None = None) -> str | None:
    """The Spark Connect URL to use: `remote`, else ``$SPARK_REMOTE`` (as pyspark reads it),
    else None (a classic session)."""
    url = remote if remote is not None else os.environ.get("SPARK_REMOTE") or None
    if url is not None and not url.startswith("sc://"):
        raise ValueError(f"a Spark Connect URL starts with sc://, got {url!r}")
    return url


def build_session(
    *,
    master: str | None = None,
    remote: str | None = None,
    archive: str | None = None,
    ship_library: bool = False,
    conf: Mapping[str, str] | None = None,
    app_name: str = "scatterkit",
    log_level: str = "ERROR",
) -> SparkSession:
    """A SparkSession for the job: classic, or Spark Connect with `remote`.

    `master` defaults to ``local[*]`` (nothing to start), except under ``spark-submit``,
    whose settings are kept. `remote` (``sc://host:port``, default ``$SPARK_REMOTE``)
    connects to a Spark Connect server instead; `conf` then holds settings of the SQL
    session only. Its executors import scatterkit from their own Python, or with
    `ship_library` from a copy of this one sent with the session (``addArtifacts``; the
    workers' Python must be this one's version, see `scatterkit.spark.sessions.artifacts`). With
    `archive` (from ``scatterkit-spark pack``) the executors of a classic session run
    ``./environment/bin/python`` from that archive, unpacked through ``spark.archives``.
    `conf` entries win over the defaults. Spark logs at `log_level`, from the driver's
    start on when this call starts it (unless `conf` or ``$SPARK_CONF_DIR`` configure
    log4j).
    """
    url = remote_url(remote)
    if url is not None:
        if master is not None:
            raise ValueError("give a master URL or a Spark Connect URL (remote), not both")
        if archive is not None:
            raise ValueError(
                "an environment archive is shipped when the server starts (spark.archives "
                "in its configuration), not by a Spark Connect client; see docs/spark.md"
            )
        spark = _connect(url, conf or {}, app_name)
        if ship_library:
            from .artifacts import ship_library as ship

            ship(spark)
        return spark
    if ship_library:
        raise ValueError(
            "ship_library sends scatterkit to a Spark Connect session; a classic session "
            "ships an environment archive (archive=, from `scatterkit-spark pack`)"
        )
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
    if not launched_by_spark_submit():
        settings.update(_quiet_start(settings, log_level))
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
    if (sc.master or "").startswith("local"):
        if archive is not None:
            # Local mode unpacks archives under SparkFiles' root, not in the workers' directory.
            from pyspark import SparkFiles

            sc.pythonExec = os.path.join(SparkFiles.getRootDirectory(), ENV_ALIAS, "bin", "python")
        elif "PYSPARK_PYTHON" not in os.environ:
            sc.pythonExec = sys.executable  # not whatever `python3` is first on the PATH
    return spark


def _connect(url: str, conf: Mapping[str, str], app_name: str) -> SparkSession:
    settings = {key: DEFAULT_CONF[key] for key in _CONNECT_DEFAULTS}
    settings.update(conf)
    builder = SparkSession.builder.remote(url).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    # A new session: getOrCreate would return any earlier Connect session of this process,
    # whatever server it talks to.
    spark = builder.create()
    spark.client.set_retry_policies([connect_retry_policy()])
    return spark


# pyspark's own policy retries a server it cannot reach for 10 minutes or more, so a job
# whose server went away would say so only then. Ours backs off the same way (50 ms, x4,
# with jitter, a server's own retry delay honoured) but gives up after about 10 s: time
# enough for a blip of the network, not for a server that is gone.
CONNECT_RETRIES = 6
CONNECT_MAX_BACKOFF_MS = 3000


def connect_retry_policy() -> Any:
    """The retry policy of scatterkit's Spark Connect sessions: pyspark's `DefaultPolicy`,
    giving up on a server it cannot reach after about 10 s (waits of 0.05, 0.2, 0.8, then
    3 s three times, plus up to 0.5 s of jitter each)."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    return DefaultPolicy(max_retries=CONNECT_RETRIES, max_backoff=CONNECT_MAX_BACKOFF_MS)


def where_it_runs(spark: SparkSession) -> str:
    """The master, and whether the session reaches it through Spark Connect."""

    if is_connect(spark):
        return f"{spark.conf.get('spark.master', '?')} (through Spark Connect)"
    return str(spark.sparkContext.master)


def end_session(spark: SparkSession | None) -> None:
    """Releases a Spark Connect session on its server (a classic session is left running:
    getOrCreate shares it with the rest of the process, and it ends with the process)."""

    if spark is not None and is_connect(spark):
        # One attempt: releasing is a courtesy (a server drops idle sessions itself), and
        # retrying a server that went away would keep the command from exiting.
        spark.client.set_retry_policies([])
        spark.stop()
