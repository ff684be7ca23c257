"""Counters the executors send back with their task results (a Spark accumulator)."""

from __future__ import annotations

from typing import Any

from pyspark.accumulators import AccumulatorParam

Stats = dict  # str -> int (summed) or set (united)


class StatsParam(AccumulatorParam):
    """Merges executor stats: numbers add up, sets unite.

    Sets (which scatterkit module and thread counts the executors used) are exact
    whatever happens; numbers count a retried task twice, so they describe the work
    done rather than the output (the job summary counts rows from the output itself).
    """

    def zero(self, value: Stats) -> Stats:
        return {}

    def addInPlace(self, value1: Stats, value2: Stats) -> Stats:
        for key, value in value2.items():
            if isinstance(value, (set, frozenset)):
                value1[key] = set(value1.get(key, set())) | set(value)
            else:
                value1[key] = value1.get(key, 0) + value
        return value1


def new_stats(spark: Any) -> Any:
    """A fresh stats accumulator on the session's SparkContext."""
    return spark.sparkContext.accumulator({}, StatsParam())
