"""The job specification: a JSON list of steps, each one versioned operation.

Example (``JOB.json``)::

    {
      "row_id": "user_id",
      "passthrough": ["user_id"],
      "steps": [
        {"op": "ScatterElementsUpdate-12",
         "attributes": {"axis": 0, "reduction": "sum"},
         "inputs": {"data": {"fill": 0, "shape": [96], "dtype": "float"},
                    "indices": "event_bucket", "updates": "event_amount"},
         "output": "spend_sum"}
      ]
    }

An input is a column name (a tensor struct ``<values, shape>`` or a plain array, a 1-D
tensor), ``{"values": COL, "shape": COL}`` (two columns), or a constant
``{"fill": X, "shape": [...], "dtype": "float"}`` (X a value of that type: no 300 in a
tinyint, no 0.5 in an int). A step may read an earlier step's output.

An event table is first grouped by an ``aggregate`` step (see `agg_spec`): the per-row
steps then run on one row per group, holding the ``by`` columns and each aggregate::

    "aggregate": {"by": ["user_id"],
                  "aggregates": {"spend": {"indices": ["hour", "category"],
                                           "updates": "amount", "shape": [24, 16],
                                           "reduction": "sum"}}}
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..._registry import OPS as REGISTRY
from ..core.errors import SpecError
from ..core.options import LAYOUTS
from .agg_spec import AggregateStep, aggregate_from_dict
from .constant import Constant, check_constant

# The versioned operations a step may name, with their inputs and attributes.
OPS = REGISTRY


@dataclass(frozen=True)
class TensorInput:
    """Where a step reads a tensor: one column, two columns, or a constant."""

    column: str | None = None  # struct<values, shape> or a plain array (1-D rows)
    values: str | None = None  # with `shape`: two separate columns
    shape: str | None = None
    constant: Constant | None = None

    def columns(self) -> tuple[str, ...]:
        """The input columns this tensor is read from."""
        return tuple(c for c in (self.column, self.values, self.shape) if c)

    def split_columns(self) -> tuple[str, str]:
        """The (values, shape) columns of a tensor read from two columns."""
        if self.values is None or self.shape is None:
            raise SpecError(f"{self.describe()} is not read from a values and a shape column")
        return self.values, self.shape

    def describe(self) -> str:
        if self.constant is not None:
            c = self.constant
            return f"constant {c.dtype}{list(c.shape)} = {c.fill!r}"
        if self.column is not None:
            return f"column {self.column!r}"
        return f"columns {self.values!r} (values) and {self.shape!r} (shape)"


@dataclass(frozen=True)
class Step:
    """One operation: its versioned name, attributes, tensor inputs and output column."""

    op: str
    inputs: Mapping[str, TensorInput]
    output: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobSpec:
    """A whole job: steps applied in order to every row."""

    steps: tuple[Step, ...]
    row_id: str | None = None  # a column naming rows in error messages
    passthrough: tuple[str, ...] | None = None  # input columns written out (None: all)
    aggregate: AggregateStep | None = None  # events grouped first, one row per group
    layout: str = "arrays"  # of every tensor the job writes: "arrays" or "binary"

    @property
    def row_name(self) -> str | None:
        """The column naming rows in messages: `row_id`, else an aggregation's single key."""
        if self.row_id is None and self.aggregate is not None and len(self.aggregate.by) == 1:
            return self.aggregate.by[0]
        return self.row_id

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> JobSpec:
        """Parses and checks a decoded JSON specification."""
        # An aggregation alone is a job; without one, steps are required.
        required = {"steps"} if not (isinstance(spec, Mapping) and "aggregate" in spec) else set()
        optional = {"steps", "row_id", "passthrough", "aggregate", "layout"} - required
        _check_keys(spec, "job", required, optional)
        aggregate = None
        if "aggregate" in spec:
            aggregate = aggregate_from_dict(spec["aggregate"], "aggregate")
        steps = spec.get("steps", [])
        if not isinstance(steps, list) or not (steps or aggregate):
            raise SpecError("job: 'steps' must be a non-empty list (or give an 'aggregate')")
        parsed = tuple(_parse_step(s, f"steps[{i}]") for i, s in enumerate(steps))
        row_id = spec.get("row_id")
        if row_id is not None and not _is_name(row_id):
            raise SpecError("job: 'row_id' must be a column name")
        passthrough = spec.get("passthrough")
        if passthrough is not None:
            if not isinstance(passthrough, list) or not all(_is_name(c) for c in passthrough):
                raise SpecError("job: 'passthrough' must be a list of column names")
            twice = sorted({c for c in passthrough if passthrough.count(c) > 1})
            if twice:
                raise SpecError(f"job: 'passthrough' names column {twice[0]!r} twice")
            passthrough = tuple(passthrough)
        outputs: set[str] = set(aggregate.aggregates) if aggregate else set()
        for i, step in enumerate(parsed):
            if step.output in outputs:
                raise SpecError(f"steps[{i}]: output column {step.output!r} is written twice")
            outputs.add(step.output)
        layout = spec.get("layout", "arrays")
        if layout not in LAYOUTS:
            raise SpecError(f"job: 'layout' must be one of {list(LAYOUTS)}, got {layout!r}")
        own = set()  # the aggregates that name their own layout keep it
        if aggregate is not None:
            own = {n for n, a in spec["aggregate"]["aggregates"].items() if "layout" in a}
        return cls(parsed, row_id, passthrough, aggregate).with_layout(layout, keep=own)

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        """Parses a JSON document."""
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"job: not valid JSON: {exc}") from None
        if not isinstance(decoded, Mapping):
            raise SpecError("job: the specification must be a JSON object")
        return cls.from_dict(decoded)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> JobSpec:
        """Reads a JSON file (UTF-8, with or without a BOM); a SpecError names the file."""
        name = os.fspath(path)
        with open(path, "rb") as f:
            data = f.read()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise SpecError(
                f"{name}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                "save the job specification as UTF-8"
            ) from None
        try:
            return cls.from_json(text)
        except SpecError as exc:
            raise SpecError(f"{name}: {exc}") from None

    def with_layout(self, layout: str, keep: set[str] | frozenset[str] = frozenset()) -> JobSpec:
        """The spec writing every tensor (steps' and aggregates', but those in `keep`) in
        `layout` ("arrays" or "binary")."""
        if layout not in LAYOUTS:
            raise SpecError(f"job: 'layout' must be one of {list(LAYOUTS)}, got {layout!r}")
        aggregate = self.aggregate
        if aggregate is not None:
            specs = {
                name: a if name in keep else replace(a, layout=layout)
                for name, a in aggregate.aggregates.items()
            }
            aggregate = AggregateStep(aggregate.by, specs)
        return replace(self, aggregate=aggregate, layout=layout)

    def to_dict(self) -> dict[str, Any]:
        """The specification as JSON-ready data (round-trips through `from_dict`)."""
        out: dict[str, Any] = {"steps": [_step_dict(s) for s in self.steps]}
        if self.aggregate is not None:
            out["aggregate"] = self.aggregate.to_dict()
        if self.row_id is not None:
            out["row_id"] = self.row_id
        if self.passthrough is not None:
            out["passthrough"] = list(self.passthrough)
        if self.layout != "arrays":
            out["layout"] = self.layout
        return out


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _check_keys(obj: Any, where: str, required: set[str], optional: set[str]) -> None:
    if not isinstance(obj, Mapping):
        raise SpecError(f"{where}: expected an object, got {type(obj).__name__}")
    missing = sorted(required - set(obj))
    if missing:
        raise SpecError(f"{where}: missing {missing}")
    unknown = sorted(set(obj) - required - optional)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {unknown}; allowed {sorted(required | optional)}")


def _parse_input(raw: Any, where: str) -> TensorInput:
    if _is_name(raw):
        return TensorInput(column=raw)
    if isinstance(raw, Mapping) and "fill" in raw:
        _check_keys(raw, where, {"fill", "shape", "dtype"}, set())
        try:
            return TensorInput(constant=check_constant(raw["shape"], raw["fill"], raw["dtype"]))
        except ValueError as exc:
            raise SpecError(f"{where}: {exc}") from None
    if isinstance(raw, Mapping) and "values" in raw:
        _check_keys(raw, where, {"values", "shape"}, set())
        if not (_is_name(raw["values"]) and _is_name(raw["shape"])):
            raise SpecError(f"{where}: 'values' and 'shape' must be column names")
        return TensorInput(values=raw["values"], shape=raw["shape"])
    if isinstance(raw, Mapping) and "column" in raw:
        _check_keys(raw, where, {"column"}, set())
        if not _is_name(raw["column"]):
            raise SpecError(f"{where}: 'column' must be a column name")
        return TensorInput(column=raw["column"])
    raise SpecError(
        f"{where}: expected a column name, {{'values': COL, 'shape': COL}} "
        "or {'fill': X, 'shape': [...], 'dtype': T}"
    )


def _parse_step(raw: Any, where: str) -> Step:
    _check_keys(raw, where, {"op", "inputs", "output"}, {"attributes"})
    op = raw["op"]
    if op not in OPS:
        raise SpecError(f"{where}: unknown op {op!r}; expected one of {sorted(OPS)}")
    info = OPS[op]
    attributes = raw.get("attributes", {})
    _check_keys(attributes, f"{where}.attributes", set(info.required), set(info.defaults))
    inputs = raw["inputs"]
    _check_keys(inputs, f"{where}.inputs", set(info.inputs), set())
    parsed = {k: _parse_input(v, f"{where}.inputs.{k}") for k, v in inputs.items()}
    if not _is_name(raw["output"]):
        raise SpecError(f"{where}: 'output' must be a column name")
    return Step(op, parsed, raw["output"], dict(attributes))


def _input_dict(t: TensorInput) -> Any:
    if t.constant is not None:
        c = t.constant
        return {"fill": c.fill, "shape": list(c.shape), "dtype": c.dtype}
    if t.column is not None:
        return t.column
    return {"values": t.values, "shape": t.shape}


def _step_dict(step: Step) -> dict[str, Any]:
    return {
        "op": step.op,
        "attributes": dict(step.attributes),
        "inputs": {k: _input_dict(v) for k, v in step.inputs.items()},
        "output": step.output,
    }
