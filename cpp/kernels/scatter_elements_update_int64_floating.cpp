// ScatterElementsUpdate's folds of float elements for int64 indices (and uint64), beside
// the kernels' unit (scatter_elements_update_int64.cpp) so that the two compile in parallel.
#include "elements_instances.hpp"

#define SCATTERKIT_DECL template
#define SCATTERKIT_KI int64_t

namespace scatterkit::detail {
SCATTERKIT_FLOATING_FOLDS
}  // namespace scatterkit::detail
