// Shared helpers for the terasim subcommands: option parsing with one clear error, help text,
// and JSON output. Every subcommand is `int RunX(const std::vector<std::string>& args)`;
// main() dispatches on the first word and is the only place that catches errors.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

namespace terasim::cli {

namespace po = boost::program_options;

// Parses `args` (the words after the subcommand) against `options` and the positional
// names. Returns false after printing usage on --help (the command then returns 0).
// Throws InputError "terasim COMMAND: MESSAGE" on an unknown or malformed option.
bool Parse(const std::string& command, const std::string& usage,
           const po::options_description& options,
           const po::positional_options_description& positional,
           const std::vector<std::string>& args, po::variables_map& vm);

// Prints `value` as indented JSON followed by a newline on stdout.
void PrintJson(const nlohmann::json& value);

}  // namespace terasim::cli
