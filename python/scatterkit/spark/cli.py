"""The ``scatterkit-spark`` command: the main job (run), a demo, and the environment packer."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from enum import IntEnum
from typing import Any

from .core.options import ENGINES, LAYOUTS, LOG_LEVELS, ON_ERROR

PROG = "scatterkit-spark"
DESCRIPTION = "Scatter operations on Parquet tensor columns with PySpark: the main job (run), "
DESCRIPTION += "a demo, and the executor environment packer (pack)."


class ExitCode(IntEnum):
    """What ``scatterkit-spark`` exits with: schedulers retry 1, not 2 or 3."""

    OK = 0  # the job did what it was asked (rows kept in error under --on-error keep too)
    FAILED = 1  # a row failed under --on-error fail, Spark failed, or rows went missing
    USAGE = 2  # bad arguments or spec, an input that is not there, Spark that did not start
    OUTPUT_EXISTS = 3  # the output is there and --overwrite was not given


EXIT_CODES_HELP = """exit codes:
  0  the job did what it was asked (rows kept in error under --on-error keep included)
  1  the job failed: a row under --on-error fail, Spark itself, or rows went missing;
     nothing was committed
  2  usage or spec error: bad arguments, a bad spec, a missing input, Spark did not start
  3  the output already exists (--overwrite replaces it)"""

# The master URLs Spark accepts; anything else makes the JVM exit with a stack trace.
_MASTER = re.compile(r"local(\[[^\]]+\])?|local-cluster\[.+\]|yarn|(spark|k8s)://.+")


def _conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"takes KEY=VALUE, got {text!r}")
    return key.strip(), value


def _master(text: str) -> str:
    if not _MASTER.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a Spark master URL (local, local[N], local[*], spark://HOST:PORT, "
            "yarn, k8s://URL)"
        )
    return text


def _at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its message
    return parse


def _remote(text: str) -> str:
    if not text.startswith("sc://"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Spark Connect URL (sc://HOST:PORT)")
    return text


def _spark_options(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--master", type=_master, help="Spark master URL (default local[*], or spark-submit's)"
    )
    where.add_argument(
        "--remote",
        type=_remote,
        metavar="sc://HOST:PORT",
        help="a Spark Connect server to run on (default: $SPARK_REMOTE if set)",
    )
    p.add_argument(
        "--ship-library",
        action="store_true",
        help="with --remote: send this scatterkit to the server's Python workers with the "
        "session (they need this Python's version; see docs/spark.md)",
    )
    p.add_argument(
        "--archive",
        help="executor environment from `scatterkit-spark pack`, shipped with spark.archives",
    )
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        type=_conf_pair,
        metavar="KEY=VALUE",
        help="a Spark setting",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=f"`{PROG} run --help` lists the exit codes.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run",
        help="apply a job spec to Parquet data, write Parquet",
        description="Apply a job spec (an optional aggregation, then steps) to Parquet data "
        "and write Parquet.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--spec", required=True, help="job specification (JSON file)")
    run.add_argument("--input", required=True, help="input Parquet file or directory")
    run.add_argument("--output", required=True, help="output Parquet directory")
    run.add_argument(
        "--on-error",
        choices=ON_ERROR,
        default="fail",
        help="fail: stop at the first bad row, naming it (default); "
        "keep: write it with a null result and its message in <output>.error",
    )
    run.add_argument("--overwrite", action="store_true", help="replace an existing output")
    run.add_argument(
        "--layout",
        choices=LAYOUTS,
        help="how the output's tensors are written (default: the spec's 'layout', else arrays): "
        "arrays (struct<values: array<T>, shape>, for Spark SQL) or binary (struct<data: "
        "binary, shape, dtype>: the tensor's bytes, fastest to write and to read into NumPy)",
    )
    run.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="who reads and writes Parquet: arrow (the executors, with pyarrow: fastest), "
        "spark (Spark SQL: any Hadoop file system, partition directories), or auto "
        "(default: arrow where it can)",
    )
    run.add_argument("--summary-json", help="also write the summary to this JSON file")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    run.add_argument(
        "--log-level",
        default="FATAL",
        choices=LOG_LEVELS,
        help="Spark's own log level (default FATAL: a failed job is reported in one line "
        "naming its row; ERROR adds Spark's stack traces)",
    )
    _spark_options(run)

    demo = sub.add_parser("demo", help="generate a dataset, run a job on it, check a sample")
    demo.add_argument("--rows", type=_at_least(1), default=10_000, help="users to generate (10000)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument(
        "--sample",
        type=_at_least(0),
        default=200,
        help="users checked against NumPy, besides the broken ones (200)",
    )
    demo.add_argument("--workdir", help="keep the input and output here (default: temporary)")
    _spark_options(demo)

    clean = sub.add_parser(
        "clean",
        help="remove what a crashed job left beside an output (no Spark needed)",
        description="Removes the hidden staging directories that crashed jobs left beside "
        "OUTPUT and puts back an old output that a crash left set aside. The next run "
        "writing OUTPUT does the same first. No job may be writing OUTPUT meanwhile.",
    )
    clean.add_argument("output", help="the output directory of the crashed job")

    pack = sub.add_parser("pack", help="build the executor environment archive")
    pack.add_argument("--output", default="scatterkit-env.tar.gz", help="archive path")
    origin = pack.add_mutually_exclusive_group()
    origin.add_argument("--wheel", help="scatterkit wheel to install (default: the installed one)")
    origin.add_argument("--source", help="build the wheel from this source tree")
    pack.add_argument(
        "--extra", action="append", default=[], help="another requirement (e.g. pandas)"
    )
    return parser


def _run(args: argparse.Namespace) -> int:
    from .specs.job_spec import JobSpec, SpecError

    try:
        spec = JobSpec.load(args.spec)
        if args.layout is not None:
            spec = spec.with_layout(args.layout)
    except (OSError, SpecError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if args.summary_json and not os.path.isdir(os.path.dirname(os.path.abspath(args.summary_json))):
        print(f"{PROG}: no directory for --summary-json {args.summary_json!r}", file=sys.stderr)
        return ExitCode.USAGE

    spark = _start_spark(args)
    if spark is None:
        return ExitCode.USAGE
    from .sessions.session import end_session

    try:
        return _run_on(spark, spec, args)
    finally:
        end_session(spark)


def _run_on(spark: Any, spec: Any, args: argparse.Namespace) -> int:
    from pyspark.errors import AnalysisException, PySparkException

    from .jobs.failures import analysis_message, explain, spark_message
    from .jobs.run import JobFailed, run_job
    from .sessions.session import where_it_runs
    from .specs.job_spec import SpecError

    print(f"{PROG} run: {_outline(spec)} on {where_it_runs(spark)}", flush=True)
    try:
        summary = run_job(
            spark,
            spec,
            args.input,
            args.output,
            on_error=args.on_error,
            mode="overwrite" if args.overwrite else "errorifexists",
            progress=not args.quiet,
            engine=args.engine,
        )
    except FileExistsError:
        print(
            f"{PROG}: output {args.output!r} already exists (--overwrite replaces it)",
            file=sys.stderr,
        )
        return ExitCode.OUTPUT_EXISTS
    except (SpecError, ValueError, FileNotFoundError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except AnalysisException as exc:  # a missing input, an existing output, ...
        message = analysis_message(exc, args.input)
        print(f"{PROG}: {message}", file=sys.stderr)
        return ExitCode.OUTPUT_EXISTS if "PATH_ALREADY_EXISTS" in message else ExitCode.USAGE
    except JobFailed as exc:
        print(f"{PROG}: job failed: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except Exception as exc:  # an input that is not Parquet, a lost JVM or server, ...
        cause = explain(exc, spark, args.input)  # as run_job's JobFailed says it
        if cause is None and not (isinstance(exc, PySparkException) or _is_java_error(exc)):
            raise
        message = cause.message if cause is not None else spark_message(exc)
        print(f"{PROG}: Spark failed: {message}", file=sys.stderr)
        return ExitCode.FAILED
    print("summary:")
    for line in summary.lines():
        print(f"  {line}")
    if args.summary_json:
        try:
            with open(args.summary_json, "w", encoding="utf-8") as f:
                f.write(summary.to_json())
        except OSError as exc:
            print(f"{PROG}: the output is written, but not the summary: {exc}", file=sys.stderr)
            return ExitCode.FAILED
    return ExitCode.OK if summary.complete else ExitCode.FAILED


def _clean(output: str) -> int:
    from .core.errors import EngineUnavailable
    from .runtime.commit import clean_leftovers
    from .runtime.storage import locate

    try:
        done = clean_leftovers(locate(output))
    except (EngineUnavailable, OSError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    for line in done:
        print(line)
    print(f"{PROG} clean: {len(done)} leftover(s) of crashed jobs beside {output!r}")
    return ExitCode.OK


def _outline(spec: Any) -> str:
    """What the job does, in a few words: "aggregate by user_id (3 aggregates), 2 step(s)"."""
    parts = []
    if spec.aggregate is not None:
        count = len(spec.aggregate.aggregates)
        parts.append(f"aggregate by {', '.join(spec.aggregate.by)} ({count} aggregate(s))")
    if spec.steps or not parts:
        parts.append(f"{len(spec.steps)} step(s)")
    return ", then ".join(parts)


def _start_spark(args: argparse.Namespace) -> Any:
    """The job's SparkSession, or None after saying on one line why Spark did not start."""
    from .jobs.failures import spark_message
    from .sessions.session import build_session

    try:
        return build_session(
            master=args.master,
            remote=args.remote,
            archive=args.archive,
            ship_library=args.ship_library,
            conf=dict(args.conf),
            log_level=getattr(args, "log_level", "ERROR"),
        )
    except (FileNotFoundError, ValueError) as exc:  # --archive, or options that do not mix
        print(f"{PROG}: {exc}", file=sys.stderr)
    except Exception as exc:  # the JVM did not start, or the master is unreachable
        message = spark_message(exc)
        if "stopped SparkContext" in message:  # Spark gave up; its log says why
            message += (
                f" (is the master {args.master or 'of spark-submit'} reachable? "
                "--log-level ERROR shows Spark's log)"
            )
        print(f"{PROG}: Spark did not start: {message}", file=sys.stderr)
    return None


def _is_java_error(exc: Exception) -> bool:
    return type(exc).__name__ == "Py4JJavaError"  # a classic session's, without importing py4j


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``scatterkit-spark`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "clean":
        return _clean(args.output)
    try:
        if args.command == "demo":
            from .demo import run_demo

            return run_demo(
                args.rows,
                master=args.master,
                remote=args.remote,
                ship_library=args.ship_library,
                workdir=args.workdir,
                seed=args.seed,
                sample=args.sample,
                archive=args.archive,
                conf=dict(args.conf),
            )
        from .sessions.pack import pack

        pack(args.output, wheel=args.wheel, source=args.source, extra=args.extra)
    except (FileNotFoundError, ValueError) as exc:  # a missing archive, wheel or source
        print(f"{PROG}: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except RuntimeError as exc:  # pip failed to build the environment
        print(f"{PROG}: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
