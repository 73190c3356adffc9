// The terasim subcommands. Each takes the words after its name and returns the exit code;
// errors are thrown (InputError for bad input) and reported by main().
#pragma once

#include <string>
#include <vector>

namespace terasim::cli {

using Args = std::vector<std::string>;

int RunModels(const Args& args);  // tools/cmd_models.cpp

}  // namespace terasim::cli
