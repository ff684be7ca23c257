// ScatterElementsUpdate's reductions on the element types no benchmark measures (integers,
// bool, bfloat16) for int64 indices, compiled apart from the others (CMakeLists.txt says how).
#include "scatterkit/ops/scatter_elements_update.hpp"

namespace scatterkit::detail {
template void fold_elements_other<int64_t>(const ElementsFold<int64_t>&);
}  // namespace scatterkit::detail
