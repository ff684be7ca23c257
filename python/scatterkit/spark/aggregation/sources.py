"""Where the map side's events come from: Spark's rows (`event_columns`), or the input's
Parquet files read with pyarrow by the map tasks (`EventReader`).

Spark hands a ``mapInArrow`` its input a row at a time, converted to Arrow; for tens of
millions of small events that alone costs more than the aggregation (bench/spark/RESULTS.md).
The job's Arrow engine therefore reads its input files itself, and so does `aggregate`
where its events are a plain Parquet scan (`scan_reader`): all the rows of the files as
Spark reads them, ``spark.read.parquet(path)`` with perhaps some of its columns selected.
Anything else (a filter, a computed column, an option of the reader, partition
directories, a column pyarrow would read in another type) goes through Spark's reader.
"""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..core.cluster import on_cluster, parallelism
from ..core.connect import is_connect
from ..core.element_types import cast_as_spark, numpy_dtype
from ..core.errors import EngineUnavailable
from ..runtime.reading import BatchLimits, Piece, read_as_spark, split_pieces
from ..runtime.storage import Location, locate
from .tasks import combine_events
from .wire import AggPlan, coord_name, order_name, value_name

# The Spark types whose Arrow form pyarrow reads from Parquet as Spark's Arrow conversion
# gives it (after `reading.read_as_spark`'s widening): timestamps and decimals, for one, differ.
_SAME_ARROW = (T.IntegralType, T.FloatType, T.DoubleType, T.BooleanType, T.StringType)

# The session's switch for `scan_reader` ("false": Spark's reader always).
READ_FILES_CONF = "spark.scatterkit.aggregate.readFiles"

# Settings under which Spark's reader reads files otherwise than pyarrow does.
_SPARK_READER_CONFS = (
    "spark.sql.files.ignoreCorruptFiles",
    "spark.sql.files.ignoreMissingFiles",
    "spark.sql.parquet.binaryAsString",
)


def event_columns(df: DataFrame, plan: AggPlan) -> DataFrame:
    """The columns the combiner reads, under `AggPlan`'s names, values cast to their
    aggregates' types."""
    columns = [F.col(c).alias(k) for c, k in zip(plan.key_names, plan.keys)]
    columns += [F.col(c).alias(coord_name(m)) for m, c in enumerate(plan.coordinates)]
    tensors = {f.name for f in df.schema.fields if isinstance(f.dataType, T.StructType)}
    for v, value in enumerate(plan.values):
        column = F.col(value.updates)
        if value.updates not in tensors:  # a tensor's bytes are decoded by the combiner
            column = column.cast(value.spark_type())
        columns.append(column.alias(value_name(v)))
    columns += [F.col(c).alias(order_name(o)) for o, c in enumerate(plan.orders)]
    return df.select(*columns)


@dataclass(frozen=True)
class EventReader:
    """What a map task needs to read its events (pickled into the tasks)."""

    source: Location
    pieces: tuple[Piece, ...]
    types: pa.Schema  # the columns to read, in the types Spark reads them
    renamed: tuple[tuple[str, str, pa.DataType], ...]  # (column, plan's name, type)
    limits: BatchLimits

    def events(self, number: int) -> Iterator[pa.RecordBatch]:
        """Piece `number`'s events under the plan's names, values cast to their types.

        Raises `InputTypeError` for a file holding a column in a wider type than Spark
        reads it as, `InputFileError` for one that cannot be read (both name the file)."""
        names = [n for _, n, _ in self.renamed]
        batches = read_as_spark(
            self.source, self.pieces, number, self.types, self.types.names, self.limits
        )
        for batch in batches:
            columns = [batch.column(c).cast(t, safe=False) for c, _, t in self.renamed]
            yield pa.RecordBatch.from_arrays(columns, names=names)


def combine_pieces(
    reader: EventReader, plan: AggPlan, numbers: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The map task: the events of its pieces, packed (one task per piece)."""
    pieces = (n for batch in numbers for n in batch.column(0).to_pylist())
    events = itertools.chain.from_iterable(reader.events(n) for n in pieces)
    yield from combine_events(plan, events)


@dataclass(frozen=True)
class ReadTypes:
    """The columns a map task reads and what it makes of them (`EventReader`'s fields)."""

    types: pa.Schema
    renamed: tuple[tuple[str, str, pa.DataType], ...]

    def reader(self, source: Location, pieces: Sequence[Piece], limits: BatchLimits) -> EventReader:
        return EventReader(source, tuple(pieces), self.types, self.renamed, limits)


def read_types(events: DataFrame, plan: AggPlan) -> ReadTypes | None:
    """The map side's columns read with pyarrow, or None where Spark's reader must read the
    events: a column that pyarrow would read in another type, or a value cast Spark would
    do otherwise."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = {f.name: f for f in events.schema.fields}
    named = event_columns(events, plan).schema.fields
    sources = [*plan.key_names, *plan.coordinates, *(v.updates for v in plan.values), *plan.orders]
    renamed = []
    for column, target in zip(sources, named):
        element, wanted = fields[column].dataType, target.dataType
        if isinstance(element, T.StructType) and element == wanted and _reads_alike(element):
            renamed.append((column, target.name, to_arrow_type(wanted)))  # a tensor, as is
            continue
        if isinstance(element, T.ArrayType) and isinstance(wanted, T.ArrayType):
            element, wanted = element.elementType, wanted.elementType
        if not (isinstance(element, _SAME_ARROW) and _same_cast(element, wanted)):
            return None
        renamed.append((column, target.name, to_arrow_type(target.dataType)))
    types = pa.schema(
        [pa.field(c, to_arrow_type(fields[c].dataType)) for c in dict.fromkeys(sources)]
    )
    return ReadTypes(types, tuple(renamed))


def _reads_alike(kind: T.DataType) -> bool:
    """Whether pyarrow reads a (nested) column as Spark's Arrow conversion gives it."""
    if isinstance(kind, T.StructType):
        return all(_reads_alike(f.dataType) for f in kind.fields)
    if isinstance(kind, T.ArrayType):
        return _reads_alike(kind.elementType)
    return isinstance(kind, (*_SAME_ARROW, T.BinaryType))


def _same_cast(source: T.DataType, target: T.DataType) -> bool:
    """Whether pyarrow's cast (unchecked) gives Spark's bits (`cast_as_spark`)."""
    if source == target:
        return True
    try:
        return cast_as_spark(numpy_dtype(source.simpleString()), numpy_dtype(target.simpleString()))
    except ValueError:  # not an element type
        return False


# -- aggregate over a plain Parquet scan -------------------------------------------------------


def scan_reader(df: DataFrame, plan: AggPlan) -> EventReader | None:
    """The map side's reader of `df`'s files where `df` is a plain Parquet scan that
    pyarrow reads as Spark does, else None.

    The files are Spark's own list (``inputFiles``), split into about as many pieces as the
    cluster runs tasks; a file whose footer cannot be read raises `InputFileError` here."""
    spark = df.sparkSession
    if not _setting(spark, READ_FILES_CONF, True):
        return None
    if any(_setting(spark, key, False) for key in _SPARK_READER_CONFS):
        return None
    columns = read_types(df, plan) if _plain_parquet_scan(df) else None
    found = _located(df.inputFiles(), df.columns) if columns is not None else None
    if columns is None or found is None:
        return None
    source, paths = found
    pieces = on_cluster(spark, _split, source, paths, parallelism(spark))
    return columns.reader(source, pieces, BatchLimits.from_conf(spark.conf))


def _setting(spark: Any, key: str, default: bool) -> bool:
    """A boolean setting of the session, as Spark reads one ("true"/"false", any case)."""
    return str(spark.conf.get(key, str(default))).strip().lower() == "true"


def _split(source: Location, paths: tuple[str, ...], tasks: int) -> tuple[Piece, ...]:
    return tuple(split_pieces(source.filesystem(), list(paths), tasks))


def _located(
    files: Sequence[str], columns: Sequence[str]
) -> tuple[Location, tuple[str, ...]] | None:
    """Spark's input files (URIs) as pyarrow's paths under their common directory, or None
    where pyarrow does not reach them all through one file system, or where a directory
    name may be a partition column's value (``name=value``: Spark adds such a column)."""
    schemes = {f.split(":", 1)[0].lower() for f in files}
    if not files or len(schemes) != 1:
        return None
    try:
        located = [locate(unquote(f)) for f in files]
    except EngineUnavailable:
        return None
    lowered = {c.lower() for c in columns}
    for place in located:
        folders = posixpath.dirname(place.path).split("/")
        if any(f.split("=", 1)[0].lower() in lowered for f in folders if "=" in f):
            return None
    paths = tuple(p.path for p in located)
    root = posixpath.commonpath(paths) if len(paths) > 1 else posixpath.dirname(paths[0])
    local = located[0].uri == located[0].path
    return Location(root if local else f"{schemes.pop()}://{root}", root), paths


def _plain_parquet_scan(df: DataFrame) -> bool:
    """Whether `df` is all the rows of a Parquet scan with no reader options (some of its
    columns, perhaps), as Spark has planned it; False where that cannot be told."""
    try:
        return _plain_connect(df) if is_connect(df.sparkSession) else _plain_classic(df)
    except Exception:  # an internal API changed: Spark's reader does the reading
        return False


def _plain_classic(df: Any) -> bool:  # a classic DataFrame, through its JVM object
    node = df._jdf.queryExecution().optimizedPlan()
    if node.nodeName() == "Project":
        items = node.projectList()
        if not all(_is_class(items.apply(i), "AttributeReference") for i in range(items.size())):
            return False
        node = node.child()
    if not _is_class(node, "LogicalRelation") or node.isStreaming():
        return False
    relation = node.relation()
    return (
        _is_class(relation, "HadoopFsRelation")
        and _is_class(relation.fileFormat(), "ParquetFileFormat")
        and relation.partitionSchema().isEmpty()
        and relation.bucketSpec().isEmpty()
        and set(_scala_keys(relation.options())) <= {"path"}
    )


def _is_class(obj: Any, name: str) -> bool:
    return obj.getClass().getSimpleName() == name


def _scala_keys(options: Any) -> list[str]:
    keys = options.keySet().iterator()
    found = []
    while keys.hasNext():
        found.append(str(keys.next()).lower())
    return found


def _plain_connect(df: Any) -> bool:  # a Connect DataFrame, which the stubs do not know
    relation = df._plan.plan(df.sparkSession.client)  # the plan's protocol message
    if relation.WhichOneof("rel_type") == "project":
        for item in relation.project.expressions:
            if item.WhichOneof("expr_type") != "unresolved_attribute":
                return False
            name = item.unresolved_attribute.unparsed_identifier
            if any(c in name for c in ".`*"):  # a field of a struct, or quoting
                return False
        relation = relation.project.input
    if relation.WhichOneof("rel_type") != "read":
        return False
    read = relation.read
    if read.WhichOneof("read_type") != "data_source" or read.is_streaming:
        return False
    source = read.data_source
    return (
        source.format.lower() == "parquet"
        and not source.options
        and not source.schema
        and not source.predicates
    )
