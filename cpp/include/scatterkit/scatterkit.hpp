// scatterkit: exact, threaded scatter operations from the OpenVINO opset.
//
// Umbrella header. Two ways in, same semantics and errors:
// - typed.hpp: templates over TensorView<T> (pointer + shape) for callers that
//   know their types at compile time;
// - ops/*.hpp: type-erased entries over TensorRef/IndexRef with a DType tag,
//   for callers that only know types at run time.
// Errors: ValueError (std::invalid_argument), IndexError (std::out_of_range),
// TypeError (std::invalid_argument). See ops/*.hpp for each formula.
#pragma once

#include "scatterkit/batch.hpp"
#include "scatterkit/dtype.hpp"
#include "scatterkit/errors.hpp"
#include "scatterkit/exact/state.hpp"
#include "scatterkit/exact/superaccumulator.hpp"
#include "scatterkit/half.hpp"
#include "scatterkit/ops/scatter_elements_update.hpp"
#include "scatterkit/ops/scatter_nd_update.hpp"
#include "scatterkit/ops/scatter_update.hpp"
#include "scatterkit/ops/slice_scatter.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/reduction.hpp"
#include "scatterkit/scratch.hpp"
#include "scatterkit/shape.hpp"
#include "scatterkit/tensor.hpp"
#include "scatterkit/typed.hpp"
#include "scatterkit/version.hpp"
