// ScatterElementsUpdate's folds of bool and integer elements for int32 indices, beside
// the kernels' unit (scatter_elements_update_int32.cpp) so that the two compile in parallel.
#include "elements_instances.hpp"

#define SCATTERKIT_DECL template
#define SCATTERKIT_KI int32_t

namespace scatterkit::detail {
SCATTERKIT_INTEGER_FOLDS
}  // namespace scatterkit::detail
