"""The Spark Connect test server: a client runs a query, and stop() leaves no process behind."""

from __future__ import annotations

import os
import time

import pytest
from connect_server import connect_server  # noqa: F401  (the fixture)

pytestmark = pytest.mark.spark


def test_a_client_runs_a_query(connect_server):  # noqa: F811
    from pyspark.sql import SparkSession

    assert connect_server.url.startswith("sc://127.0.0.1:")
    spark = SparkSession.builder.remote(connect_server.url).getOrCreate()
    try:
        assert spark.range(10).count() == 10
    finally:
        spark.stop()


def test_stop_ends_the_whole_process_group(connect_server):  # noqa: F811
    connect_server.stop()  # the fixture's own stop() is then a no-op
    assert connect_server.process.poll() is not None
    deadline = time.monotonic() + 10
    while True:  # the group's other members (Python workers) may take a moment
        try:
            os.killpg(connect_server.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "processes of the server's group are still alive"
        time.sleep(0.1)
