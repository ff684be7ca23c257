// ScatterElementsUpdate's kernels for int32 indices, compiled once for the targets that link
// scatterkit_kernels (CMakeLists.txt); their folds compile beside this unit
// (scatter_elements_update_int32_*.cpp).
#include "elements_instances.hpp"

#define SCATTERKIT_DECL extern template
#define SCATTERKIT_KI int32_t

namespace scatterkit::detail {
SCATTERKIT_INTEGER_FOLDS
SCATTERKIT_FLOATING_FOLDS

template void scatter_elements_update_for_index<int32_t>(const TensorRef&, const int32_t*,
                                                         const Shape&, const TensorRef&, int64_t,
                                                         void*, Reduction, bool, const OpOptions&);
}  // namespace scatterkit::detail
