// ScatterElementsUpdate's kernels for int32 indices (scatter_elements_update.cpp has the
// others): half of the op's instantiations, built in parallel with the other half.
#include "scatterkit/ops/scatter_elements_update.hpp"

namespace scatterkit::detail {
template void scatter_elements_update_for_index<int32_t>(const TensorRef&, const int32_t*,
                                                         const Shape&, const TensorRef&, int64_t,
                                                         void*, Reduction, bool, const OpOptions&);
}  // namespace scatterkit::detail
