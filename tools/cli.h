// Shared helpers for the terasim subcommands: option parsing with one clear error, help text,
// and JSON output. Every subcommand is `int RunX(const std::vector<std::string>& args)`;
// main() dispatches on the first word and is the only place that catches errors.
//
// Conventions every command gets from Parse:
//   * long names only as written: no prefix guessing (`--mod` is not `--model`);
//   * `--help` lists the visible options; test-only options go in the hidden group;
//   * aliases (kFlagAliases): `--calibration` for `--calib` and Megatron-LM's names
//     (`--tensor-model-parallel-size` for `--tp`, ...), each accepted where the command has
//     the canonical flag;
//   * a missing positional argument is reported with the command's usage line.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

namespace terasim::cli {

namespace po = boost::program_options;

// Alias -> canonical long name (without the leading --).
struct FlagAlias {
  const char* alias;
  const char* canonical;
};
inline constexpr FlagAlias kFlagAliases[] = {
    {"calibration", "calib"},
    {"tensor-model-parallel-size", "tp"},
    {"pipeline-model-parallel-size", "pp"},
    {"micro-batch-size", "microbatch-size"},
    {"global-batch-size", "batch"},
};

// Parses `args` (the words after the subcommand) against `options` (shown by --help),
// `hidden` (accepted, never shown) and the positional names. Returns false after printing
// usage on --help (the command then returns 0). Throws InputError "terasim COMMAND: MESSAGE"
// on an unknown, ambiguous or malformed option or a missing positional argument.
bool Parse(const std::string& command, const std::string& usage,
           const po::options_description& options,
           const po::positional_options_description& positional,
           const std::vector<std::string>& args, po::variables_map& vm,
           const po::options_description& hidden = po::options_description());

// `args` with every alias of kFlagAliases ("--alias" or "--alias=VALUE") replaced by its
// canonical name where `known` has the canonical option; words after "--" are left alone.
std::vector<std::string> ResolveAliases(const std::vector<std::string>& args,
                                        const po::options_description& known);

// Throws InputError unless `spec` (a --cluster value) names its instance count, e.g.
// "p3.16xlarge:2": a bare instance name would silently mean one instance.
void RequireInstanceCount(const std::string& spec);

// The data-parallel degree: `dp` when given (> 0), else inferred as gpus / (pp x tp) as
// Megatron-LM does; throws InputError when pp x tp does not divide the GPUs. When inferred,
// prints one line saying so on stderr, prefixed with "terasim COMMAND: ".
int DataParallelDegree(const std::string& command, int dp, int gpus, int pp, int tp);

// Prints `value` as indented JSON followed by a newline on stdout.
void PrintJson(const nlohmann::json& value);

}  // namespace terasim::cli
