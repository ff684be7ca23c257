"""ONNX Runtime: a one-node opset-18 model (ScatterElements, or ScatterND as exporters write
ScatterUpdate and SliceScatter), one session per workload and thread count."""

from __future__ import annotations

import numpy as np

from ..implementations import NotAvailable
from ..workloads import Case, Workload


def nd_indices_for(w: Workload, c: Case) -> np.ndarray:
    """ScatterND index tuples addressing what ScatterUpdate / a strided slice addresses."""
    axis = c.axis
    if w.op == "update":
        last = c.index_array.astype(np.int64)
    else:
        start, stop, step = c.slice_bounds
        last = np.arange(start, stop, step, dtype=np.int64)
    lead = c.data.shape[:axis]
    grids = [
        np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (len(lead) - d - 1 + last.ndim))
        for d, n in enumerate(lead)
    ]
    parts = np.broadcast_arrays(*grids, last.reshape((1,) * len(lead) + last.shape))
    return np.stack(parts, axis=-1)


def setup_ort(w: Workload, c: Case, threads: int):
    import onnx
    import onnxruntime as ort
    from onnx import helper

    if w.in_place:
        return NotAvailable("no in-place API")
    if w.reduction == "mean":
        return NotAvailable("ScatterElements has no mean")
    if w.op == "elements":
        node = helper.make_node(
            "ScatterElements",
            ["data", "indices", "updates"],
            ["out"],
            axis=c.axis,
            reduction={"none": "none", "sum": "add", "max": "max"}[w.reduction],
        )
        indices, updates = c.index_array, c.updates
    else:  # ScatterND; ScatterUpdate and SliceScatter as exporters write them
        node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["out"])
        indices = c.index_array if w.op == "nd" else nd_indices_for(w, c)
        updates = c.updates
    elem = helper.np_dtype_to_tensor_dtype
    graph = helper.make_graph(
        [node],
        w.name,
        [
            helper.make_tensor_value_info("data", elem(c.data.dtype), c.data.shape),
            helper.make_tensor_value_info("indices", elem(indices.dtype), indices.shape),
            helper.make_tensor_value_info("updates", elem(updates.dtype), updates.shape),
        ],
        [helper.make_tensor_value_info("out", elem(c.data.dtype), c.data.shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    onnx.checker.check_model(model)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 4
    # Spinning workers would steal the core from whatever is timed next in the round robin.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feeds = {"data": c.data, "indices": indices, "updates": updates}
    if w.preallocated:  # the output bound once, written by every run
        dst = np.empty_like(c.data)
        binding = sess.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        binding.bind_output("out", "cpu", 0, dst.dtype, list(dst.shape), dst.ctypes.data)

        def run_into():
            sess.run_with_iobinding(binding)
            return dst

        return run_into
    return lambda: sess.run(None, feeds)[0]
