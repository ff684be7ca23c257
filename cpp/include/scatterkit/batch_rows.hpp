// Batched entry point: one operation applied to many independent rows.
//
// A row's tensors are stored back to back, as Arrow list arrays store them:
// `values` holds every row's elements, row r spans [offsets[r], offsets[r+1]),
// and its shape is shapes[shape_offsets[r] .. shape_offsets[r+1]). The output
// rows have data's offsets and shapes.
//
// Rows are split between threads (each row runs single-threaded, so there is
// no nested team). A bad row does not stop the batch: its error message is
// returned, and its output row is a copy of its data row.
//
// This header runs rows through a table of the type-erased ops (BatchKernels)
// and includes none of them, so that a program compiling each op in a
// translation unit of its own does not compile them again here; batch.hpp
// adds the entry that takes the ops from their headers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/tensor.hpp"

namespace scatterkit {

// Rows of tensors stored back to back (see the file comment).
struct RaggedRef {
  const void* values = nullptr;
  int64_t size = 0;  // elements in values
  size_t itemsize = 0;
  const int64_t* offsets = nullptr;        // rows + 1, non-decreasing, within [0, size]
  const int64_t* shapes = nullptr;         // every row's shape, concatenated
  int64_t shapes_size = 0;                 // entries in shapes
  const int64_t* shape_offsets = nullptr;  // rows + 1, non-decreasing, within [0, shapes_size]
};

enum class BatchKind { kScatterUpdate, kScatterElementsUpdate, kScatterNDUpdate, kSliceScatter };

// The type-erased ops a batch calls.
struct BatchKernels {
  void (*scatter_update)(const TensorRef& data, const IndexRef& indices, const TensorRef& updates,
                         int64_t axis, void* out, const OpOptions& options);
  void (*scatter_elements_update)(const TensorRef& data, const IndexRef& indices,
                                  const TensorRef& updates, int64_t axis, void* out,
                                  Reduction reduction, bool use_init_val, const OpOptions& options);
  void (*scatter_nd_update)(const TensorRef& data, const IndexRef& indices,
                            const TensorRef& updates, void* out, Reduction reduction,
                            const OpOptions& options);
  void (*slice_scatter)(const TensorRef& data, const TensorRef& updates,
                        const std::vector<int64_t>& starts, const std::vector<int64_t>& stops,
                        const std::vector<int64_t>& steps, const std::vector<int64_t>& axes,
                        void* out, const OpOptions& options);
};

// The operation and its attributes, the same for every row.
struct BatchOp {
  BatchKind kind = BatchKind::kScatterUpdate;
  DType dtype = DType::kOpaque;
  IndexType index_type = IndexType::kInt64;
  int64_t axis = 0;
  Reduction reduction = Reduction::kNone;
  bool use_init_val = true;
  OpOptions options;
  std::vector<int64_t> starts, stops, steps, axes;  // slice_scatter
};

namespace detail {
inline namespace SCATTERKIT_KERNELS {

inline void check_ragged(const char* op, const char* name, const RaggedRef& r, int64_t rows) {
  auto check_offsets = [&](const int64_t* off, int64_t limit, const char* what) {
    if (off == nullptr) throw_value_error(op, std::string(name) + " " + what + " are missing");
    if (off[0] < 0 || off[rows] > limit)
      throw_value_error(op, std::string(name) + " " + what + " point outside their buffer");
    for (int64_t i = 0; i < rows; ++i)
      if (off[i + 1] < off[i])
        throw_value_error(op,
                          std::string(name) + " " + what + " decrease at row " + std::to_string(i));
  };
  check_offsets(r.offsets, r.size, "offsets");
  check_offsets(r.shape_offsets, r.shapes_size, "shape offsets");
  if (r.size > 0 && r.values == nullptr)
    throw_value_error(op, std::string(name) + " values are missing");
  if (r.shapes_size > 0 && r.shapes == nullptr)
    throw_value_error(op, std::string(name) + " shapes are missing");
}

// Row r of a ragged tensor; throws ValueError if its shape is not a valid one
// (see check_shape) or does not match its length.
inline TensorRef ragged_row(const char* op, const char* name, const RaggedRef& r, int64_t row,
                            DType dtype) {
  TensorRef t;
  if (r.shape_offsets[row + 1] > r.shape_offsets[row])  // else rank 0 (shapes may be null)
    t.shape.assign(r.shapes + r.shape_offsets[row], r.shapes + r.shape_offsets[row + 1]);
  t.dtype = dtype;
  t.itemsize = r.itemsize;
  t.data = static_cast<const char*>(r.values) + r.offsets[row] * int64_t(r.itemsize);
  const int64_t length = r.offsets[row + 1] - r.offsets[row];
  check_shape(op, name, t.shape, int64_t(r.itemsize));
  if (numel(t.shape) != length)
    throw_value_error(op, std::string(name) + " shape " + format_shape(t.shape) +
                              " does not match its " + std::to_string(length) + " values");
  return t;
}

inline void run_row(const BatchKernels& k, const BatchOp& op, int64_t row, const RaggedRef& data,
                    const RaggedRef* indices, const RaggedRef& updates, char* out_values) {
  const char* name = op_name(op.options, "batch");
  const TensorRef d = ragged_row(name, "data", data, row, op.dtype);
  const TensorRef u = ragged_row(name, "updates", updates, row, op.dtype);
  void* out = out_values + data.offsets[row] * int64_t(data.itemsize);
  IndexRef idx;
  if (op.kind != BatchKind::kSliceScatter) {
    const TensorRef i = ragged_row(name, "indices", *indices, row, DType::kOpaque);
    idx = IndexRef{i.data, i.shape, op.index_type};
  }
  switch (op.kind) {
    case BatchKind::kScatterUpdate: k.scatter_update(d, idx, u, op.axis, out, op.options); break;
    case BatchKind::kScatterElementsUpdate:
      k.scatter_elements_update(d, idx, u, op.axis, out, op.reduction, op.use_init_val, op.options);
      break;
    case BatchKind::kScatterNDUpdate:
      k.scatter_nd_update(d, idx, u, out, op.reduction, op.options);
      break;
    case BatchKind::kSliceScatter:
      k.slice_scatter(d, u, op.starts, op.stops, op.steps, op.axes, out, op.options);
      break;
  }
}

inline std::string describe(const std::exception& e) {
  if (dynamic_cast<const IndexError*>(&e) || dynamic_cast<const std::out_of_range*>(&e))
    return std::string("IndexError: ") + e.what();
  if (dynamic_cast<const TypeError*>(&e)) return std::string("TypeError: ") + e.what();
  if (dynamic_cast<const std::invalid_argument*>(&e)) return std::string("ValueError: ") + e.what();
  return std::string("Error: ") + e.what();
}

// `r` with every buffer that shares memory with out read from a copy (its values kept in
// place when `values_in_place`).
inline RaggedRef apart_rows(ApartFromOut& apart, const RaggedRef& r, int64_t rows,
                            bool values_in_place) {
  RaggedRef in = r;
  if (!values_in_place) in.values = apart.read_from(r.values, r.size * int64_t(r.itemsize));
  in.offsets = apart.read_from(r.offsets, rows + 1);
  in.shapes = apart.read_from(r.shapes, r.shapes_size);
  in.shape_offsets = apart.read_from(r.shape_offsets, rows + 1);
  return in;
}

// run_batch once the batch is checked and its inputs are apart from out.
inline std::vector<std::string> run_rows(const BatchKernels& k, const BatchOp& op, int64_t rows,
                                         const RaggedRef& data, const RaggedRef* indices,
                                         const RaggedRef& updates, char* out) {
  std::vector<std::string> errors(static_cast<size_t>(rows));
  const int64_t bytes = (data.size * 2 + updates.size) * int64_t(data.itemsize);
  parallel_for(rows, bytes, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      try {
        run_row(k, op, r, data, indices, updates, out);
      } catch (const std::exception& e) {
        errors[size_t(r)] = describe(e);
        // The kernel wrote nothing; keep the row defined.
        const int64_t begin = data.offsets[r] * int64_t(data.itemsize);
        const int64_t length = (data.offsets[r + 1] - data.offsets[r]) * int64_t(data.itemsize);
        if (out + begin != static_cast<const char*>(data.values) + begin)
          std::memmove(out + begin, static_cast<const char*>(data.values) + begin, size_t(length));
      }
    }
  });
  return errors;
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail

inline namespace SCATTERKIT_KERNELS {

// Applies `op` to every row, through `kernels`; returns one message per row ("" when
// it succeeded). `out_values` has data.size elements. Throws only for a malformed
// batch (offsets outside buffers, wrong item sizes), never for a bad row.
inline std::vector<std::string> run_batch(const BatchKernels& kernels, const BatchOp& op,
                                          int64_t rows, const RaggedRef& data,
                                          const RaggedRef* indices, const RaggedRef& updates,
                                          void* out_values) {
  using namespace detail;
  const char* name = op_name(op.options, "batch");
  if (rows < 0) throw_value_error(name, "rows must be >= 0");
  check_ragged(name, "data", data, rows);
  check_ragged(name, "updates", updates, rows);
  if (updates.itemsize != data.itemsize)
    throw_type_error(name, "updates and data have different item sizes");
  if (op.kind != BatchKind::kSliceScatter) {
    if (indices == nullptr) throw_value_error(name, "indices are missing");
    check_ragged(name, "indices", *indices, rows);
    if (int64_t(indices->itemsize) != index_size(op.index_type))
      throw_type_error(name, "indices item size does not match");
  }
  if (data.size > 0 && out_values == nullptr) throw_value_error(name, "out is missing");

  // Rows run in parallel, so a row's writes could reach another row's inputs: every input
  // buffer sharing memory with out is read from a copy made first (data being out, the
  // in-place batch, excepted: each row reads only its own part).
  ApartFromOut apart(out_values, data.size * int64_t(data.itemsize));
  const RaggedRef in_data = apart_rows(apart, data, rows, data.values == out_values);
  const RaggedRef in_updates = apart_rows(apart, updates, rows, false);
  RaggedRef in_indices;
  if (op.kind != BatchKind::kSliceScatter) in_indices = apart_rows(apart, *indices, rows, false);
  return run_rows(kernels, op, rows, in_data, &in_indices, in_updates,
                  static_cast<char*>(out_values));
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace scatterkit
