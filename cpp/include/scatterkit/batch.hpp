// Batched entry point: one operation applied to many independent rows (the
// machinery, and the row layout, are in batch_rows.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scatterkit/batch_rows.hpp"
#include "scatterkit/config.hpp"
#include "scatterkit/ops/scatter_elements_update.hpp"
#include "scatterkit/ops/scatter_nd_update.hpp"
#include "scatterkit/ops/scatter_update.hpp"
#include "scatterkit/ops/slice_scatter.hpp"

namespace scatterkit {
inline namespace SCATTERKIT_KERNELS {

// The ops as their headers define them.
inline BatchKernels header_kernels() {
  return {&scatter_update, &scatter_elements_update, &scatter_nd_update, &slice_scatter};
}

// Applies `op` to every row; returns one message per row ("" when it succeeded).
// `out_values` has data.size elements. Throws only for a malformed batch
// (offsets outside buffers, wrong item sizes), never for a bad row.
inline std::vector<std::string> run_batch(const BatchOp& op, int64_t rows, const RaggedRef& data,
                                          const RaggedRef* indices, const RaggedRef& updates,
                                          void* out_values) {
  return run_batch(header_kernels(), op, rows, data, indices, updates, out_values);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace scatterkit
