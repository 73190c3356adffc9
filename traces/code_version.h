// The code version recorded with every stored run: `git describe --always --dirty` of the
// source tree this library was built from (CMake passes it in as TERASIM_GIT_VERSION), or
// "unknown" outside a git checkout.
#pragma once

#include <string>

namespace terasim {

// Returns the build's code version, e.g. "f31560c1a2b3-dirty". Never throws.
std::string CodeVersion();

}  // namespace terasim
