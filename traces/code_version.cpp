// Kept apart so that a new git version recompiles only this file.
#include "traces/code_version.h"

#ifndef TERASIM_GIT_VERSION
#define TERASIM_GIT_VERSION "unknown"
#endif

namespace terasim {

std::string CodeVersion() { return TERASIM_GIT_VERSION; }

}  // namespace terasim
