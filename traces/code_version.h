// The code version recorded with every stored run: `git describe --always --dirty` of the
// source tree at the time this library was built (cmake/GitVersion.cmake, run at every build),
// or "unknown" outside a git checkout.
#pragma once

#include <string>

namespace terasim {

// Returns the build's code version, e.g. "f31560c1a2b3-dirty". Never throws.
std::string CodeVersion();

}  // namespace terasim
