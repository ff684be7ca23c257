// ScatterElementsUpdate's reductions on integer and bool data for int64 indices, compiled apart
// from the float kernels (CMakeLists.txt says how).
#include "scatterkit/ops/scatter_elements_update.hpp"

namespace scatterkit::detail {
template void fold_elements_integer<int64_t>(const ElementsFold<int64_t>&);
}  // namespace scatterkit::detail
