// ScatterElementsUpdate's reductions on integer and bool data for int32 indices, compiled apart
// from the float kernels (CMakeLists.txt says how).
#include "scatterkit/ops/scatter_elements_update.hpp"

namespace scatterkit::detail {
template void fold_elements_integer<int32_t>(const ElementsFold<int32_t>&);
}  // namespace scatterkit::detail
