// Kept apart so that a new git version recompiles only this file.
#include "traces/code_version.h"

#include "terasim_git_version.h"  // generated at build time: cmake/GitVersion.cmake

namespace terasim {

std::string CodeVersion() { return TERASIM_GIT_VERSION; }

}  // namespace terasim
