// ScatterElementsUpdate's kernels for int32 indices, compiled once for the targets that link
// scatterkit_kernels (CMakeLists.txt).
#include "scatterkit/ops/scatter_elements_update.hpp"

namespace scatterkit::detail {
template void scatter_elements_update_for_index<int32_t>(const TensorRef&, const int32_t*,
                                                         const Shape&, const TensorRef&, int64_t,
                                                         void*, Reduction, bool, const OpOptions&);
}  // namespace scatterkit::detail
