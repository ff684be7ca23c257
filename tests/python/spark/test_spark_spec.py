"""Job specifications: parsing, and checking against the input schema before any task runs."""

from __future__ import annotations

import json

import pytest
import spark_helpers  # noqa: F401 - skips the module without pyarrow / pyspark
from pyspark.sql import types as T

from scatterkit.spark._plan import plan_job
from scatterkit.spark.spec import Constant, JobSpec, SpecError, TensorInput

STEP = {
    "op": "ScatterElementsUpdate-12",
    "attributes": {"axis": 0, "reduction": "sum"},
    "inputs": {"data": "grid", "indices": "idx", "updates": "upd"},
    "output": "out",
}
TENSOR_F32 = T.StructType(
    [
        T.StructField("values", T.ArrayType(T.FloatType())),
        T.StructField("shape", T.ArrayType(T.IntegerType())),
    ]
)
SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType()),
        T.StructField("grid", TENSOR_F32),
        T.StructField("idx", T.ArrayType(T.IntegerType())),
        T.StructField("upd", T.ArrayType(T.FloatType())),
        T.StructField("vals", T.ArrayType(T.DoubleType())),
        T.StructField("dims", T.ArrayType(T.LongType())),
        T.StructField("name", T.StringType()),
    ]
)


def _spec(**changes) -> dict:
    step = {**STEP, **changes}
    return {"steps": [step]}


def test_spec_round_trips_through_json():
    spec = JobSpec.from_dict(
        {
            "row_id": "id",
            "passthrough": ["id"],
            "steps": [
                {
                    **STEP,
                    "inputs": {
                        "data": {"fill": 0, "shape": [4, 2], "dtype": "float32"},
                        "indices": {"values": "idx", "shape": "dims"},
                        "updates": {"column": "upd"},
                    },
                }
            ],
        }
    )
    step = spec.steps[0]
    assert step.inputs["data"] == TensorInput(constant=Constant((4, 2), "float", 0))
    assert step.inputs["indices"] == TensorInput(values="idx", shape="dims")
    assert step.error_column == "out_error"
    assert JobSpec.from_json(json.dumps(spec.to_dict())) == spec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "missing \\['steps'\\]"),
        ({"steps": []}, "non-empty list"),
        (_spec(op="Scatter-1"), "unknown op 'Scatter-1'"),
        (_spec(attributes={"axis": 0, "colour": 1}), "unknown key\\(s\\) \\['colour'\\]"),
        (_spec(attributes={}), "missing \\['axis'\\]"),
        (_spec(inputs={"data": "grid", "updates": "upd"}), "missing \\['indices'\\]"),
        (_spec(inputs={**STEP["inputs"], "data": 3}), "expected a column name"),
        (
            _spec(inputs={**STEP["inputs"], "data": {"fill": 0, "shape": [-1], "dtype": "f"}}),
            "non-negative",
        ),
        (
            _spec(inputs={**STEP["inputs"], "data": {"fill": 0, "shape": [1], "dtype": "str"}}),
            "unsupported tensor element type",
        ),
        ({"steps": [STEP, STEP]}, "written twice"),
        ({"steps": [STEP], "extra": 1}, "unknown key"),
    ],
)
def test_malformed_specs_are_rejected_with_the_place_named(spec, message):
    with pytest.raises(SpecError, match=message):
        JobSpec.from_dict(spec)


def test_invalid_json_is_a_spec_error():
    with pytest.raises(SpecError, match="not valid JSON"):
        JobSpec.from_json("{")


def test_plan_output_schema_keeps_passthrough_and_adds_tensor_and_error_columns():
    spec = JobSpec.from_dict({"row_id": "id", "passthrough": ["name"], **_spec()})
    plan, schema = plan_job(SCHEMA, spec, keep_errors=True)
    assert schema.names == ["id", "name", "out", "out_error"]  # the row id is always kept
    assert schema["out"].dataType == TENSOR_F32
    assert plan.input_columns == {"id", "name", "grid", "idx", "upd", "out", "out_error"}
    _, schema = plan_job(SCHEMA, spec, keep_errors=False)
    assert schema.names == ["id", "name", "out"]


def test_plan_takes_separate_columns_constants_and_earlier_outputs():
    second = {**STEP, "inputs": {"data": "out", "indices": "idx", "updates": "upd"}, "output": "o2"}
    double = {
        **STEP,
        "inputs": {
            "data": {"values": "vals", "shape": "dims"},
            "indices": "idx",
            "updates": "vals",
        },
        "output": "o3",
    }
    spec = JobSpec.from_dict({"steps": [STEP, second, double]})
    _, schema = plan_job(SCHEMA, spec, keep_errors=False)
    assert schema["o2"].dataType == TENSOR_F32
    assert schema["o3"].dataType["values"].dataType == T.ArrayType(T.DoubleType())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"inputs": {**STEP["inputs"], "data": "nope"}}, "no column 'nope'"),
        ({"inputs": {**STEP["inputs"], "data": "name"}}, "expected an array column"),
        ({"inputs": {**STEP["inputs"], "indices": "upd"}}, "indices must be an integer array"),
        ({"inputs": {**STEP["inputs"], "data": "idx"}}, "cast"),
        ({"attributes": {"axis": 0, "reduction": "median"}}, "reduction"),
        ({"output": "grid"}, "already exists"),
    ],
)
def test_plan_rejects_what_would_fail_in_every_task(change, message):
    spec = JobSpec.from_dict(_spec(**change))
    with pytest.raises(SpecError, match=message):
        plan_job(SCHEMA, spec, keep_errors=False)


def test_plan_rejects_unknown_row_id_and_passthrough():
    with pytest.raises(SpecError, match="row_id column 'uid'"):
        plan_job(SCHEMA, JobSpec.from_dict({"row_id": "uid", **_spec()}), keep_errors=False)
    with pytest.raises(SpecError, match="passthrough column 'x'"):
        plan_job(SCHEMA, JobSpec.from_dict({"passthrough": ["x"], **_spec()}), keep_errors=False)
