#include "tools/cli.h"

#include <iostream>
#include <set>

#include "models/errors.h"
#include "topologies/cluster_options.h"

namespace terasim::cli {

std::vector<std::string> ResolveAliases(const std::vector<std::string>& args,
                                        const po::options_description& known) {
  std::vector<std::string> out;
  out.reserve(args.size());
  bool options_ended = false;
  for (const std::string& word : args) {
    if (word == "--") options_ended = true;
    std::string resolved = word;
    if (!options_ended && word.size() > 2 && word.compare(0, 2, "--") == 0) {
      const size_t eq = word.find('=');
      const std::string name = word.substr(2, eq == std::string::npos ? eq : eq - 2);
      for (const FlagAlias& a : kFlagAliases) {
        if (name == a.alias && known.find_nothrow(a.canonical, false) != nullptr) {
          resolved =
              "--" + std::string(a.canonical) + (eq == std::string::npos ? "" : word.substr(eq));
        }
      }
    }
    out.push_back(resolved);
  }
  return out;
}

bool Parse(const std::string& command, const std::string& usage,
           const po::options_description& options,
           const po::positional_options_description& positional,
           const std::vector<std::string>& args, po::variables_map& vm,
           const po::options_description& hidden) {
  // The positional arguments show in the usage line, not as --names in the option list.
  std::set<std::string> positional_names;
  for (unsigned i = 0; i < positional.max_total_count() && i < 16; ++i) {
    positional_names.insert(positional.name_for_position(i));
  }
  po::options_description visible("terasim " + command);
  po::options_description all;
  for (const auto& option : options.options()) {
    (positional_names.count(option->long_name()) ? all : visible).add(option);
  }
  visible.add_options()("help,h", "show this help");
  all.add(visible).add(hidden);
  // Boost's unix style guesses a long option from any unambiguous prefix; terasim does not
  // (a later option would silently change what an old command line means).
  const int style = po::command_line_style::unix_style & ~po::command_line_style::allow_guessing;
  try {
    po::store(po::command_line_parser(ResolveAliases(args, all))
                  .options(all)
                  .positional(positional)
                  .style(style)
                  .run(),
              vm);
    if (vm.count("help")) {
      std::cout << "usage: terasim " << command << " " << usage << "\n\n" << visible << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::required_option& e) {
    // A required positional argument reads as its usage, not as a --name it never shows.
    for (const std::string& name : positional_names) {
      if ("--" + name == e.get_option_name()) {
        ThrowInput("terasim {}: missing argument (usage: terasim {} {})", command, command,
                   usage.substr(0, usage.find('\n')));
      }
    }
    ThrowInput("terasim {}: {} (see terasim {} --help)", command, e.what(), command);
  } catch (const po::error& e) {
    ThrowInput("terasim {}: {} (see terasim {} --help)", command, e.what(), command);
  }
  return true;
}

void RequireInstanceCount(const std::string& spec) {
  const ClusterSpec parsed = ParseClusterSpec(spec);
  if (!parsed.explicit_count) {
    ThrowInput("--cluster {}: give the instance count as INSTANCE:COUNT (e.g. {}:2)", spec,
               parsed.instance);
  }
}

int DataParallelDegree(const std::string& command, int dp, int gpus, int pp, int tp) {
  if (dp > 0) return dp;
  if (dp < 0) ThrowInput("--dp {}: must be >= 1", dp);
  if (pp < 1 || tp < 1 || gpus % (pp * tp) != 0) {
    ThrowInput(
        "--dp not given and --pp {} x --tp {} does not divide the cluster's {} GPUs: "
        "give --dp",
        pp, tp, gpus);
  }
  const int inferred = gpus / (pp * tp);
  std::cerr << "terasim " << command << ": --dp not given: dp = " << gpus << " GPUs / (pp " << pp
            << " x tp " << tp << ") = " << inferred << "\n";
  return inferred;
}

void PrintJson(const nlohmann::json& value) { std::cout << value.dump(2) << "\n"; }

}  // namespace terasim::cli
