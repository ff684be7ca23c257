"""Every error the Spark layer raises, in one place.

Failures inside a task do not travel as Spark's exception text: the executors of a job
report them as values (a row of the task's result, or an observed metric), which the
driver turns into `JobFailed`. Only work the user runs directly (a column function or
`transform` in their own query) raises `RowError` inside the task.
"""

from __future__ import annotations


class SpecError(ValueError):
    """The job specification is malformed; the message names the offending entry."""


class EngineUnavailable(ValueError):
    """The Arrow engine cannot serve these paths; ``engine="spark"`` can."""


class RowError(RuntimeError):
    """A row failed under ``on_error="fail"``; the message names the row and the reason."""


class InputTypeError(RuntimeError):
    """An input file holds a column in a type the job's type cannot hold exactly; the
    message (`input_types_message`) names the file, and another file where one is found."""


class InputFileError(RuntimeError):
    """An input file cannot be read (truncated, corrupt, not Parquet); the message
    (`input_file_message`) names it."""


# Why a job failed (`JobFailed.cause`): a bad row, then the causes `jobs.failures` finds.
CAUSES = (
    "row",  # a row (or an event) failed under on_error="fail"
    "schemas",  # input files hold a column in types the job cannot read alike
    "unreadable_file",  # an input file is truncated, corrupt, not Parquet, or unreadable
    "memory",  # a JVM (an executor, or a local master's driver) ran out of memory
    "python_memory",  # a Python worker ran out of memory, or died without a Python error
    "no_space",  # no space left on a device while writing
    "connect_lost",  # the Spark Connect server went away
    "spark_lost",  # the classic session's JVM went away
)


class JobFailed(RuntimeError):
    """The job failed; the message names the cause (a row, a file, a setting to raise)
    and `cause` says which of `CAUSES` it is. Nothing was committed: an old output stays
    as it was (but see docs/spark.md, "When a job fails", for a lost Connect server)."""

    def __init__(self, message: str, cause: str = "row") -> None:
        super().__init__(message)
        self.cause = cause

    def __reduce__(self) -> tuple:
        return type(self), (str(self), self.cause)


def input_file_message(path: str, detail: str, corrupt: bool) -> str:
    """The message of an input file that cannot be read: `corrupt` if the bytes are at
    fault (rather than the file system: a missing file, a permission)."""
    what = "is truncated, corrupt or not Parquet" if corrupt else "cannot be read"
    return f"input file {path!r} {what} ({detail})"


def input_types_message(
    file: str, column: str, found: object, other: tuple[str, object] | None, wanted: object
) -> str:
    """The message of input files that disagree on `column`'s type: `file` holds it as
    `found`, `other` (a file and its type, if one was found) and the job as `wanted`."""
    if other is None:
        return (
            f"file {file!r} holds column {column!r} as {found} but the job reads it as "
            f"{wanted}, the type Spark took from another file: write every file with one type"
        )
    return (
        f"file {file!r} holds column {column!r} as {found} but file {other[0]!r} as "
        f"{other[1]}: the job reads every file with one schema; write every file with one type"
    )


def message_cause(message: str) -> str:
    """Which of `CAUSES` a task's failure message (`input_file_message`,
    `input_types_message`, or a row's) reports."""
    if message.startswith("input file "):
        return "unreadable_file"
    if message.startswith("file ") and " holds column " in message:
        return "schemas"
    return "row"


def row_error_message(exc: BaseException) -> str | None:
    """The message of a `RowError`, `InputTypeError` or `InputFileError` that failed a
    Spark job, if that is why `exc` came.

    Where Spark's own writer commits (a file system pyarrow does not reach), and on the map
    side of an aggregation, a task must raise to stop the job; Spark then passes on a
    `PythonException` with the worker's traceback as text, and nothing else.
    """
    from pyspark.errors import PythonException

    if not isinstance(exc, PythonException):
        return None
    text = str(exc)
    for kind in (RowError, InputTypeError, InputFileError):
        marker = f"{kind.__module__}.{kind.__name__}: "
        at = text.rfind(marker)
        if at >= 0:
            return text[at + len(marker) :].strip().splitlines()[0]
    return None
