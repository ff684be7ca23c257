"""Why a job failed, in one line that names the cause and what to do about it.

Spark says why a job failed in its own words, which seldom say what to do: a classic
session raises the JVM's exception (a chain of causes), a Spark Connect client an error
holding Spark's message, a Python worker's error arrives as its traceback's text, and a JVM
or a server that went away as a lost connection. `explain` reads all of them for the
causes a user can act on (`core.errors.CAUSES`); `job_failed` makes the `JobFailed` that
`run_job` raises, and the ``scatterkit-spark`` command prints the same messages.

- memory: an executor's JVM (``java.lang.OutOfMemoryError``, with the file it was reading)
  or a Python worker (``MemoryError``, or a worker that died without a Python error), with
  the setting to raise;
- an input file that is truncated or corrupt, named (the Arrow engine names it itself, in
  its tasks and as its driver splits the input: `runtime.reading.unreadable`);
- input files that disagree on a column's type: both files and both types (a footer read
  from each of the input's files, on the cluster, until two differ);
- no space left on a device, while the job wrote: nothing was committed;
- a Spark Connect server, or a classic session's JVM, that went away.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..core.cluster import on_cluster
from ..core.connect import is_connect
from ..core.errors import (
    EngineUnavailable,
    InputFileError,
    InputTypeError,
    JobFailed,
    input_file_message,
    input_types_message,
    message_cause,
    row_error_message,
)
from ..runtime.reading import disagreeing_files, file_name
from ..runtime.storage import locate

# The exit code of a JVM that Spark stopped because it ran out of memory (SparkExitCode.OOM).
JVM_OOM_EXIT = 52
_JVM_EXIT_WAIT = 10.0  # seconds for a JVM whose connection broke to finish exiting

_SPARK_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z][A-Z0-9_]*)?)\]")
_READING_FILE = re.compile(r"while reading file (\S+?)\.?(?:\s|$)")
_JAVA_OOM = re.compile(r"java\.lang\.OutOfMemoryError[^\n]*|\S*SparkOutOfMemoryError[^\n]*")
_CONTAINER_OOM = re.compile(r"exceeding (?:physical )?memory limits|OOMKilled")
# A Python exception's last line: MemoryError, numpy's _ArrayMemoryError, ArrowMemoryError.
_PYTHON_OOM = re.compile(r"^(?:[\w.]+\.)?(?!\w*OutOfMemory)\w*MemoryError\b(?::[^\n]*)?$", re.M)
_WORKER_DIED = "Python worker exited unexpectedly"
_NO_SPACE = re.compile(r"[^\n]*(?:No space left on device|\[Errno 28\])[^\n]*")
_TYPE_MISMATCH = re.compile(
    r"reading file (?P<file>\S+?)\.?\s+Data type mismatches when reading Parquet column "
    r"\[(?P<column>[^\],]*)[^\]]*\]\. Expected Spark type (?P<wanted>.+?), "
    r"actual Parquet type (?P<found>\S+?)\."
)
_MERGE = ("CANNOT_MERGE_SCHEMAS", "CANNOT_MERGE_INCOMPATIBLE_DATA_TYPE")
# What Spark's Parquet reader says of a file's bytes (as opposed to its file system's errors).
_CORRUPT = re.compile(
    r"not a Parquet file|footer|magic number|can not read class org\.apache\.parquet|"
    r"ParquetDecodingException|EOFException|TProtocolException|TTransportException|"
    r"corrupt|decompress|snappy|zstd",
    re.IGNORECASE,
)
# Spark's own message for a footer it cannot read names the file and says what to check.
_SPARK_SAYS_IT = "FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER"
_BATCH_ROWS = (
    "spark.sql.execution.arrow.maxRecordsPerBatch (4096 by default) or "
    "spark.sql.execution.arrow.maxBytesPerBatch"
)
# What py4j and Spark say while the JVM goes away (Spark stops it after an OutOfMemoryError).
_STOPPING = re.compile(
    r"does not exist in the JVM|SparkContext (?:was|has been) shut ?down|stopped SparkContext|"
    r"\[INTERNAL_ERROR\]"
)
_CONNECT_LOST = re.compile(r"StatusCode\.UNAVAILABLE|RETRIES_EXCEEDED|Socket closed")
_GRPC_DETAILS = re.compile(r'details = "([^"]*)"')


@dataclass(frozen=True)
class Cause:
    """Why a job failed: one of `core.errors.CAUSES`, and the message that says so."""

    kind: str
    message: str


def job_failed(exc: BaseException, spark: Any, input_path: str) -> JobFailed | None:
    """What `run_job` raises for `exc`, which stopped a job reading `input_path`: a row's or
    a file's error from a task, a file's error from the driver's own file work (splitting
    the input), or a cause `explain` names. None: `exc` goes on as it is."""
    message = row_error_message(exc)
    if isinstance(exc, (InputFileError, InputTypeError)):  # the driver's own file work
        message = str(exc)
    if message is not None:
        return JobFailed(message, message_cause(message))
    cause = explain(exc, spark, input_path)
    if cause is None:
        return None
    message = cause.message
    if cause.kind == "connect_lost":  # the commit runs on the server: say what it leaves
        message += (
            "; the commit is all or nothing: the output is as it was, unless the server "
            "went away after committing the new one whole"
        )
    return JobFailed(message, cause.kind)


def explain(exc: BaseException, spark: Any = None, input_path: str | None = None) -> Cause | None:
    """The cause of `exc`, a failure of a job on `spark` reading `input_path`, or None if
    it is none of `core.errors.CAUSES` (Spark's own message is then the best there is)."""
    text = "\n".join(_texts(exc))
    return (
        _connect_lost(exc, spark, text)
        or _jvm_memory(text)
        or _python_memory(exc, text)
        or _no_space(exc, text)
        or _schemas(text, spark, input_path)
        or _unreadable_file(exc, text)
        or _jvm_lost(exc, spark, text)  # last: it may wait for the JVM to exit
    )


def spark_message(exc: BaseException) -> str:
    """The first line of Spark's own message, not py4j's "An error occurred while calling".

    The first message in the cause chain that carries a Spark error class ("[FAILED_READ_FILE
    ...]") wins: Spark 4.1 wraps it in "Job aborted due to stage failure" and "Exception
    thrown in awaitResult", which say nothing about the cause.
    """
    messages = [message for _, message in _java_chain(exc)]
    if not messages and hasattr(exc, "getMessage"):  # a Spark Connect client's exception
        messages.append(str(exc.getMessage() or ""))
    classified = [m for m in messages if m.startswith("[")]
    message = classified[0] if classified else (messages[0] if messages else "")
    lines = [line.strip() for line in (message or _safe_str(exc)).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    raised = _python_error(lines)
    return f"{lines[0].removesuffix(_TRACEBACK).strip()} {raised}" if raised else lines[0]


_TRACEBACK = "Traceback (most recent call last):"


_AFTER_TRACEBACK = re.compile(r"SQLSTATE|at [\w$.<>]+\(")  # Spark's state, a JVM frame


def _python_error(lines: list[str]) -> str | None:
    """A Python worker's error as its traceback ends ("TypeError: ..."), where `lines` (a
    Spark message's) hold a traceback: Spark's first line says only that there was one."""
    if not lines[0].endswith(_TRACEBACK):
        return None
    end = next((i for i, line in enumerate(lines) if _AFTER_TRACEBACK.match(line)), len(lines))
    return lines[end - 1] if end > 1 else None


def analysis_message(exc: BaseException, input_path: str) -> str:
    """The first line of an AnalysisException (a missing input, an existing output), with
    Spark's words for "no Parquet files there" said plainly."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    if "UNABLE_TO_INFER_SCHEMA" in first:
        return f"input {input_path!r} holds no Parquet files ({first})"
    return first


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a py4j error whose JVM is gone cannot fetch its own text
        return type(exc).__name__


def _python_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen) and len(seen) < 20:
        seen.append(current)
        yield current
        current = current.__cause__ or current.__context__


def _java_chain(exc: BaseException) -> list[tuple[str, str]]:
    """(class, message) of the Java exception behind `exc` and of its causes, outermost
    first: a classic session's error (none for a Spark Connect client's)."""
    found: list[tuple[str, str]] = []
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    try:
        while java is not None and len(found) < 20:
            found.append((str(java.getClass().getName()), str(java.getMessage() or "")))
            java = java.getCause()
    except Exception:  # not a Java exception after all, or the JVM is gone
        pass
    return found


def _texts(exc: BaseException) -> Iterator[str]:
    """Everything `exc` says: the Java causes' classes and messages, and the text of each
    Python exception in its chain (a Python worker's traceback, a Connect error's message)."""
    for error in _python_chain(exc):
        for name, message in _java_chain(error):
            yield f"{name}: {message}"
        yield f"{type(error).__module__}.{type(error).__name__}: {_safe_str(error)}"


def _spark_class(text: str) -> str:
    """`` [CLASS]``: the first Spark error class in `text`, to close a message with ('' if none)."""
    found = _SPARK_CLASS.search(text)
    return f" [{found.group(1)}]" if found else ""


def _reading(text: str) -> str | None:
    found = _READING_FILE.search(text)
    return found.group(1) if found else None


def connect_lost(exc: BaseException, spark: Any) -> bool:
    """Whether `exc` says that the Spark Connect server of `spark` went away."""
    return _connect_lost(exc, spark, "\n".join(_texts(exc))) is not None


def _connect_lost(exc: BaseException, spark: Any, text: str) -> Cause | None:
    connect = is_connect(spark) or any(
        type(e).__module__.startswith(("pyspark.errors.exceptions.connect", "grpc"))
        for e in _python_chain(exc)
    )
    if not connect or not _CONNECT_LOST.search(text):
        return None
    details = _GRPC_DETAILS.search(text)
    said = details.group(1) if details else text.strip().splitlines()[0]
    return Cause(
        "connect_lost",
        f"the Spark Connect server went away ({said}): it stopped, crashed or cannot be "
        "reached, and the job did not finish (the server's log says why)",
    )


def _jvm_lost(exc: BaseException, spark: Any, text: str) -> Cause | None:
    """A classic session's JVM that exited: out of memory (exit code 52), or otherwise.

    Its errors come from py4j, in the shape the JVM's going left them: a lost connection,
    an error whose text it could no longer fetch, a class "that does not exist", or Spark's
    own error for a job its stopping context cancelled. Another error of the JVM's gets a
    second for it to exit (Spark stops it after an OutOfMemoryError: exit code 52)."""
    if is_connect(spark):
        return None
    errors = [e for e in _python_chain(exc) if type(e).__module__.startswith("py4j")]
    errors += [e for e in _python_chain(exc) if isinstance(e, ConnectionError) and _in_py4j(e)]
    if not errors:
        return None
    broken = _STOPPING.search(text) is not None or any(
        isinstance(e, ConnectionError) or type(e).__name__ == "Py4JNetworkError" for e in errors
    )
    code = _jvm_exit_code(_JVM_EXIT_WAIT if broken else 1.0)
    if code is None:
        return None
    if code == JVM_OOM_EXIT:
        return Cause(
            "memory",
            f"Spark's JVM ran out of memory and exited (exit code {code}): raise "
            "spark.driver.memory (on a local master the executors run in the driver's JVM); "
            "rows holding large tensors also need fewer rows per batch from Spark's Parquet "
            "reader: spark.sql.parquet.columnarReaderBatchSize (4096 by default)",
        )
    return Cause(
        "spark_lost",
        f"Spark's JVM exited (exit code {code}) and the job did not finish "
        "(--log-level ERROR shows Spark's log)",
    )


def _in_py4j(error: BaseException) -> bool:
    """Whether `error` came from py4j's connection to the JVM."""
    frame = error.__traceback__
    while frame is not None:
        if "py4j" in frame.tb_frame.f_code.co_filename:
            return True
        frame = frame.tb_next
    return False


def _jvm_exit_code(wait: float) -> int | None:
    """The exit code of the JVM this process started for its classic session, waiting up
    to `wait` seconds for it to exit (None if it runs, or spark-submit started it)."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is None:
        return None
    try:
        return int(process.wait(timeout=wait))
    except subprocess.TimeoutExpired:
        return None


def _jvm_memory(text: str) -> Cause | None:
    killed = _CONTAINER_OOM.search(text)
    if killed is not None:
        return Cause(
            "memory",
            "the cluster killed an executor for using more memory than its container holds "
            f"({killed.group(0)}): raise spark.executor.memoryOverhead (the Python workers "
            "and Arrow buffers live there), "
            "or spark.executor.pyspark.memory to give the Python workers their own share",
        )
    found = _JAVA_OOM.search(text)
    if found is None:
        return None
    path = _reading(text)
    where = f" while reading {path!r}" if path else ""
    reader = (
        "; rows holding large tensors need fewer rows per batch from Spark's Parquet reader: "
        "spark.sql.parquet.columnarReaderBatchSize (4096 by default)"
        if path or "vectorized reader" in text
        else ""
    )
    return Cause(
        "memory",
        f"an executor ran out of memory ({found.group(0).strip()}){where}: raise "
        "spark.executor.memory (on a local master the executors run in the driver's JVM: "
        f"spark.driver.memory){reader}{_spark_class(text)}",
    )


def _python_memory(exc: BaseException, text: str) -> Cause | None:
    found = _PYTHON_OOM.search(text)
    in_worker = found is not None and any(
        type(e).__name__ == "PythonException" for e in _python_chain(exc)
    )
    if in_worker:
        assert found is not None
        return Cause(
            "python_memory",
            f"a Python worker ran out of memory ({found.group(0).strip()}): raise "
            "spark.executor.pyspark.memory (the Python workers' limit, where it is set; "
            "else spark.executor.memoryOverhead holds them), or send fewer rows per batch: "
            f"{_BATCH_ROWS}",
        )
    if _WORKER_DIED in text:
        return Cause(
            "python_memory",
            f"a Python worker died without a Python error ({_WORKER_DIED}): most often the "
            "system killed it for its memory; give the Python workers more "
            "(spark.executor.memoryOverhead, or spark.executor.pyspark.memory) or send fewer "
            f"rows per batch: {_BATCH_ROWS}",
        )
    errors = [e for e in _python_chain(exc) if isinstance(e, MemoryError)]
    if errors:  # the driver's own Python (a local master's file work runs there)
        return Cause(
            "python_memory",
            f"the driver's Python ran out of memory ({type(errors[0]).__name__}: {errors[0]})",
        )
    return None


def _no_space(exc: BaseException, text: str) -> Cause | None:
    found = _NO_SPACE.search(text)
    by_errno = any(isinstance(e, OSError) and e.errno == 28 for e in _python_chain(exc))
    if found is None and not by_errno:
        return None
    said = " ".join(found.group(0).split()) if found else _safe_str(exc)
    return Cause(
        "no_space",
        f"no space left on device while the job wrote ({said[:300]}): nothing was committed, "
        "an old output is intact; free space where the output is written (or in Spark's "
        "scratch directories, spark.local.dir, where the shuffle goes)",
    )


def _schemas(text: str, spark: Any, input_path: str | None) -> Cause | None:
    """Input files that disagree on a column's type: Spark's reader refusing a file's type
    (it names that file), or merging schemas (``mergeSchema``: it names none)."""
    mismatch = _TYPE_MISMATCH.search(text)
    merge = any(name in text for name in _MERGE)
    if mismatch is None and not merge:
        return None
    column = mismatch.group("column").strip() if mismatch else None
    bad = mismatch.group("file") if mismatch else None
    both = _disagreeing(spark, input_path, bad, column)
    if both is not None:
        column, first, first_type, other, other_type = both
        message = input_types_message(first, column, first_type, (other, other_type), None)
    elif mismatch is not None:
        name = _input_name(input_path, mismatch.group("file"))
        found, wanted = f"Parquet {mismatch.group('found')}", mismatch.group("wanted")
        message = input_types_message(name, str(column), found, None, wanted)
    else:
        merged = next((line for line in text.splitlines() if "CANNOT_MERGE" in line), "")
        message = f"input files disagree on a column's type ({merged.strip()[:300]})"
        message += ": write every file with one type"
    return Cause("schemas", message + _spark_class(text))


def _disagreeing(
    spark: Any, input_path: str | None, bad: str | None, column: str | None
) -> tuple[str, str, str, str, str] | None:
    """Two input files and their types for a column (`runtime.reading.disagreeing_files`,
    on the cluster), or None where pyarrow does not reach the input."""
    if spark is None or input_path is None:
        return None
    try:
        source = locate(input_path)
        path = locate(bad).path if bad is not None else None
        return on_cluster(spark, disagreeing_files, source, path, column)
    except EngineUnavailable:
        return None
    except Exception:  # naming the second file is a courtesy; the first message stands
        return None


def _input_name(input_path: str | None, path: str) -> str:
    try:
        root = locate(input_path).path if input_path is not None else None
        return file_name(root, locate(path).path) if root is not None else path
    except EngineUnavailable:
        return path


def _unreadable_file(exc: BaseException, text: str) -> Cause | None:
    """An input file Spark's reader could not read: named, with the deepest cause's word."""
    path = _reading(text)
    if path is None or "FAILED_READ_FILE" not in text or _SPARK_SAYS_IT in text:
        return None
    causes = [cause for error in _python_chain(exc) for cause in _java_chain(error)]
    deepest = next((m for _, m in reversed(causes) if m.strip()), "")
    detail = " ".join(deepest.split())[:300] or "Spark gives no reason"
    # the causes' classes and messages (a Connect client has only Spark's message)
    said = "\n".join(f"{name}: {m}" for name, m in causes) or text
    corrupt = bool(_CORRUPT.search(said))
    return Cause("unreadable_file", input_file_message(path, detail, corrupt) + _spark_class(text))
