// scatterkit: exact, threaded scatter operations from the OpenVINO opset.
//
// Umbrella header. The type-erased entry points take TensorRef/IndexRef views
// of C-contiguous buffers; see ops/*.hpp for each operation's formula.
#pragma once

#include "scatterkit/dtype.hpp"
#include "scatterkit/errors.hpp"
#include "scatterkit/half.hpp"
#include "scatterkit/ops/scatter_elements_update.hpp"
#include "scatterkit/ops/scatter_nd_update.hpp"
#include "scatterkit/ops/scatter_update.hpp"
#include "scatterkit/ops/slice_scatter.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/reduction.hpp"
#include "scatterkit/shape.hpp"
#include "scatterkit/tensor.hpp"
#include "scatterkit/version.hpp"
