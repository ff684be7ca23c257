// The one definition of the library version (CMake and the wheel read it).
#pragma once

#define SCATTERKIT_VERSION "0.1.0"
