"""Job specifications: parsing, and checking against the input schema before any task runs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import spark_helpers  # noqa: F401 - skips the module without pyarrow / pyspark
from pyspark.sql import types as T

from scatterkit.spark.jobs.plan import plan_job
from scatterkit.spark.specs.constant import Constant, check_constant
from scatterkit.spark.specs.job_spec import JobSpec, SpecError, TensorInput

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
        # names are checked when the spec is read, not left to fail later in the plan
        ({"row_id": 5, "steps": [STEP]}, "job: 'row_id' must be a column name"),
        ({"passthrough": "id", "steps": [STEP]}, "job: 'passthrough' must be a list of column"),
        (
            {"passthrough": ["a", "b", "a"], "steps": [STEP]},
            "job: 'passthrough' names column 'a' twice",
        ),
        (
            _spec(inputs={**STEP["inputs"], "indices": {"values": "idx", "shape": 3}}),
            "steps\\[0\\].inputs.indices: 'values' and 'shape' must be column names",
        ),
        (_spec(output=""), "steps\\[0\\]: 'output' must be a column name"),
    ],
)
def test_malformed_specs_are_rejected_with_the_place_named(spec, message):
    with pytest.raises(SpecError, match=message):
        JobSpec.from_dict(spec)


def test_invalid_json_is_a_spec_error():
    with pytest.raises(SpecError, match="not valid JSON"):
        JobSpec.from_json("{")


def _constant(fill, dtype: str) -> dict:
    return _spec(inputs={**STEP["inputs"], "data": {"fill": fill, "shape": [2], "dtype": dtype}})


@pytest.mark.parametrize(
    ("fill", "dtype", "message"),
    [
        (300, "tinyint", "'fill' 300 is out of range for tinyint \\(-128 to 127\\)"),
        (-(2**63) - 1, "bigint", "'fill' -9223372036854775809 is out of range for bigint"),
        (40000, "smallint", "'fill' 40000 is out of range for smallint \\(-32768 to 32767\\)"),
        (0.5, "int", "'fill' 0.5 is not an integer"),
        (float("nan"), "smallint", "'fill' nan is not an integer"),
        (True, "float", "'fill' True is a boolean; dtype float takes numbers"),
        (2, "boolean", "'fill' 2 is not a boolean"),
        (1e39, "float", "'fill' 1e\\+39 is out of range for float"),
        (10**400, "double", "'fill' 10+ is out of range for double"),
        ("0", "double", "'fill' must be a number or a boolean"),
    ],
)
def test_constant_fill_must_be_a_value_of_its_dtype(fill, dtype, message):
    # Before, these passed the check and failed (or truncated) in every task.
    with pytest.raises(SpecError, match=f"^steps\\[0\\].inputs.data: {message}"):
        JobSpec.from_dict(_constant(fill, dtype))


@pytest.mark.parametrize(
    ("fill", "dtype", "want"),
    [
        (-128, "tinyint", -128),
        (2**63 - 1, "long", 2**63 - 1),
        (3.0, "int", 3),
        (0, "boolean", False),
        (True, "bool", True),
        (0.1, "float", 0.1),
        (float("-inf"), "double", float("-inf")),
    ],
)
def test_constant_fill_that_fits_is_kept_as_a_python_value(fill, dtype, want):
    spec = JobSpec.from_dict(_constant(fill, dtype))
    got = spec.steps[0].inputs["data"].constant.fill
    assert got == want and type(got) is type(want)


def test_an_empty_passthrough_round_trips():
    # [] writes no input column; left out of to_dict it would come back as "every column"
    spec = JobSpec.from_dict({"passthrough": [], **_spec()})
    assert spec.to_dict()["passthrough"] == []
    assert JobSpec.from_dict(spec.to_dict()) == spec


def test_element_type_names_are_aliases_in_any_case():
    assert check_constant([1], 0, "float64").dtype == "double"
    assert check_constant([1], 0, " DOUBLE ").dtype == "double"
    assert check_constant([1], 0, "Int16").dtype == "smallint"


def test_check_constant_takes_numpy_shapes_and_values():
    assert check_constant(np.array([2, 3]), np.float32(1.5), "double") == Constant(
        (2, 3), "double", 1.5
    )
    with pytest.raises(ValueError, match="non-negative integers, got \\[2, -1\\]"):
        check_constant([2, -1], 0, "float")
    # a zero extent is an empty tensor, not an error
    assert check_constant([0, 3], 0, "float") == Constant((0, 3), "float", 0)


def test_load_names_the_file_for_bad_encoding_and_bad_json(tmp_path):
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('{"steps": [], "row_id": "caf\u00e9"}'.encode("latin-1"))
    with pytest.raises(SpecError, match=r"latin1.json: not UTF-8 text \(byte 0xe9 at offset 28\)"):
        JobSpec.load(latin1)
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "steps": [\n    {"op": 1},\n  ]\n}\n', encoding="utf-8")
    with pytest.raises(SpecError, match=r"broken.json: job: not valid JSON: .* line 4 column 3"):
        JobSpec.load(broken)
    with_bom = tmp_path / "bom.json"
    with_bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(_spec()).encode())
    assert JobSpec.load(with_bom) == JobSpec.from_dict(_spec())


def test_plan_output_schema_keeps_passthrough_and_adds_tensor_columns_with_their_errors():
    spec = JobSpec.from_dict({"row_id": "id", "passthrough": ["name"], **_spec()})
    plan, schema = plan_job(SCHEMA, spec, keep_errors=True)
    assert schema.names == ["id", "name", "out"]  # the row id is always kept
    # on_error="keep": the one error layout, a third field of the tensor struct
    assert schema["out"].dataType == T.StructType(
        [*TENSOR_F32.fields, T.StructField("error", T.StringType(), True)]
    )
    assert plan.input_columns == {"id", "name", "grid", "idx", "upd", "out"}
    _, schema = plan_job(SCHEMA, spec, keep_errors=False)
    assert schema.names == ["id", "name", "out"]
    assert schema["out"].dataType == TENSOR_F32


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


def test_plan_result_takes_datas_element_type_not_the_updates():
    # float updates scatter into double data: the output is double, as the executors write it
    inputs = {"data": {"values": "vals", "shape": "dims"}, "indices": "idx", "updates": "upd"}
    _, schema = plan_job(SCHEMA, JobSpec.from_dict(_spec(inputs=inputs)), keep_errors=False)
    assert schema["out"].dataType["values"].dataType == T.ArrayType(T.DoubleType())


def test_plan_rejects_half_structs_and_float_shapes():
    half = T.StructType([T.StructField("values", T.ArrayType(T.FloatType()))])
    schema = T.StructType([*SCHEMA.fields, T.StructField("half", half)])
    for change, message in (
        ({"inputs": {**STEP["inputs"], "data": "half"}}, "needs fields 'values' and 'shape'"),
        (
            {"inputs": {**STEP["inputs"], "data": {"values": "vals", "shape": "upd"}}},
            "a shape must be an array of integers, got array<float>",
        ),
    ):
        with pytest.raises(SpecError, match=message):
            plan_job(schema, JobSpec.from_dict(_spec(**change)), keep_errors=True)
