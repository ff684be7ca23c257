"""OpenVINO's CPU plugin: a one-op model compiled per workload and thread count, run zero-copy."""

from __future__ import annotations

import numpy as np

from ..implementations import NotAvailable
from ..workloads import Case, Workload


def setup_openvino(w: Workload, c: Case, threads: int):
    import openvino as ov
    import openvino.opset3 as ops3
    import openvino.opset12 as ops12
    import openvino.opset15 as ops15

    if w.in_place:
        return NotAvailable("no in-place API")
    types = {"float32": ov.Type.f32, "float16": ov.Type.f16, "int32": ov.Type.i32}
    types["int64"] = ov.Type.i64
    data = ops15.parameter(list(c.data.shape), types[str(c.data.dtype)], name="data")
    upd = ops15.parameter(list(c.updates.shape), types[str(c.updates.dtype)], name="updates")
    params, feeds = [data], [c.data]
    if c.indices is not None:
        idx = ops15.parameter(list(c.indices.shape), types[str(c.indices.dtype)], name="indices")
        params.append(idx)
        feeds.append(c.indices)
    params.append(upd)
    feeds.append(c.updates)
    axis = ops15.constant(np.int64(c.axis))
    if w.op == "update":
        node = ops3.scatter_update(data, idx, upd, axis)
    elif w.op == "elements":
        node = ops12.scatter_elements_update(data, idx, upd, axis, w.reduction, True)
    elif w.op == "nd":
        node = ops15.scatter_nd_update(data, idx, upd, "none")
    else:
        start, stop, step = (np.array([v], np.int64) for v in c.slice_bounds)
        node = ops15.slice_scatter(data, upd, start, stop, step, np.array([c.axis], np.int64))
    model = ov.Model([node.output(0)], params, w.name)
    config = {
        "INFERENCE_NUM_THREADS": threads,
        "NUM_STREAMS": 1,
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32",
        # Pinned plugin threads would skew every other implementation timed in this process.
        "ENABLE_CPU_PINNING": False,
    }
    compiled = ov.Core().compile_model(model, "CPU", config)
    request = compiled.create_infer_request()

    def run():
        # Zero-copy in and out: OpenVINO's fastest path. Its output buffer is reused.
        return request.infer(feeds, share_inputs=True, share_outputs=True)[0]

    return run
