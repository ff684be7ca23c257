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
    """An input file holds a column in a type the job's type cannot hold exactly."""


class JobFailed(RuntimeError):
    """The job stopped on a bad row (``on_error="fail"``) or on an input file holding a
    column in a type the job cannot read exactly; the message names the row or file.
    Nothing was committed: an old output stays as it was."""


def row_error_message(exc: BaseException) -> str | None:
    """The message of a `RowError` or `InputTypeError` that failed a Spark job, if that is
    why `exc` came.

    Where Spark's own writer commits (a file system pyarrow does not reach), and on the map
    side of an aggregation, a task must raise to stop the job; Spark then passes on a
    `PythonException` with the worker's traceback as text, and nothing else.
    """
    from pyspark.errors import PythonException

    if not isinstance(exc, PythonException):
        return None
    text = str(exc)
    for kind in (RowError, InputTypeError):
        marker = f"{kind.__module__}.{kind.__name__}: "
        at = text.rfind(marker)
        if at >= 0:
            return text[at + len(marker) :].strip().splitlines()[0]
    return None
