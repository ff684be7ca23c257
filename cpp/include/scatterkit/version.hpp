// The one definition of the library version (CMake and the wheel read it).
#pragma once

#define SCATTERKIT_VERSION "0.1.0"
// The same as numbers, for preprocessor checks:
// #if SCATTERKIT_VERSION_NUMBER >= 100 (0.1.0) ...
#define SCATTERKIT_VERSION_MAJOR 0
#define SCATTERKIT_VERSION_MINOR 1
#define SCATTERKIT_VERSION_PATCH 0
#define SCATTERKIT_VERSION_NUMBER \
  (SCATTERKIT_VERSION_MAJOR * 10000 + SCATTERKIT_VERSION_MINOR * 100 + SCATTERKIT_VERSION_PATCH)
