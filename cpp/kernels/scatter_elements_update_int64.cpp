// ScatterElementsUpdate's kernels for int64 and uint64 indices, compiled once for the targets that
// link scatterkit_kernels (CMakeLists.txt). One unit: the two share their kernels.
#include "scatterkit/ops/scatter_elements_update.hpp"

namespace scatterkit::detail {
template void scatter_elements_update_for_index<int64_t>(const TensorRef&, const int64_t*,
                                                         const Shape&, const TensorRef&, int64_t,
                                                         void*, Reduction, bool, const OpOptions&);
template void scatter_elements_update_for_index<uint64_t>(const TensorRef&, const uint64_t*,
                                                          const Shape&, const TensorRef&, int64_t,
                                                          void*, Reduction, bool, const OpOptions&);
}  // namespace scatterkit::detail
