"""The registry of versioned operations agrees with the compiled kernels and with every
place that reads it (get_op, run_batch, the Spark spec, the test oracle)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import reference

import scatterkit as sk
from scatterkit import _core
from scatterkit._batch import Ragged, run_batch
from scatterkit._registry import ELEMENTS_REDUCTIONS, ND_REDUCTIONS, OPS

ALL_REDUCTIONS = sorted(set(ELEMENTS_REDUCTIONS) | set(ND_REDUCTIONS))


def _call_kernel(kernel: str, reduction: str) -> None:
    """One tiny float32 call of a compiled kernel with `reduction`."""
    data = np.zeros(4, np.float32)
    out = np.empty_like(data)
    idx = np.array([[1]]) if kernel == "scatter_nd_update" else np.array([1])
    upd = np.ones(1, np.float32)
    if kernel == "scatter_elements_update":
        _core.scatter_elements_update(
            data, idx, upd, 0, out, "float32", reduction, True, True, False, False, "t"
        )
    else:
        _core.scatter_nd_update(data, idx, upd, out, "float32", reduction, True, False, "t")


@pytest.mark.parametrize("kernel", ["scatter_elements_update", "scatter_nd_update"])
@pytest.mark.parametrize("reduction", ALL_REDUCTIONS)
def test_the_kernels_take_exactly_the_registrys_reductions(kernel, reduction):
    newest = [v for v in OPS.values() if v.kernel == kernel and v.reductions]
    assert len(newest) == 1
    if reduction in newest[0].reductions:
        _call_kernel(kernel, reduction)
    else:
        with pytest.raises(ValueError, match="not supported"):
            _call_kernel(kernel, reduction)


@pytest.mark.parametrize("name", sorted(OPS))
def test_run_batch_knows_every_kernel_and_version(name):
    version = OPS[name]
    empty = Ragged.from_arrays([], np.float32)
    indices = None if version.kernel == "slice_scatter" else Ragged.from_arrays([], np.int64)
    extra = {"start": 0, "stop": 1, "step": 1} if version.kernel == "slice_scatter" else {}
    out, errors = run_batch(name, empty, empty, indices, **extra)
    assert out.size == 0 and errors == []


@pytest.mark.parametrize("name", sorted(OPS))
def test_get_op_takes_the_registrys_attributes_with_its_defaults(name):
    version = OPS[name]
    params = inspect.signature(sk.get_op(name)).parameters
    keywords = {
        p.name: p.default for p in params.values() if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    keywords.pop("out")
    assert keywords == version.defaults
    positional = [p.name for p in params.values() if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert set(positional) == set(version.inputs) | version.required


@pytest.mark.parametrize("name", sorted(OPS))
def test_negative_indices_follow_the_registry(name):
    version = OPS[name]
    if version.kernel == "slice_scatter":
        return  # no indices
    op = sk.get_op(name)
    data = np.zeros(3, np.float32)
    if version.kernel == "scatter_nd_update":
        args = (data, [[-1]], [1.0])
    else:
        args = (data, [-1], [1.0], 0)
    if version.negative_indices:
        assert op(*args)[2] == 1.0
    else:
        with pytest.raises(IndexError):
            op(*args)


def test_the_oracle_and_the_spark_spec_use_the_registrys_lists():
    assert reference.ELEMENTS_REDUCTIONS == ELEMENTS_REDUCTIONS
    assert reference.ND_REDUCTIONS == ND_REDUCTIONS
    spark_spec = pytest.importorskip("scatterkit.spark.specs.job_spec")
    assert spark_spec.OPS is OPS
