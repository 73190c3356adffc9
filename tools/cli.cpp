#include "tools/cli.h"

#include <iostream>

#include "models/errors.h"

namespace terasim::cli {

bool Parse(const std::string& command, const std::string& usage,
           const po::options_description& options,
           const po::positional_options_description& positional,
           const std::vector<std::string>& args, po::variables_map& vm) {
  po::options_description all(options);
  all.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: terasim " << command << " " << usage << "\n\n" << all << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    ThrowInput("terasim {}: {} (see terasim {} --help)", command, e.what(), command);
  }
  return true;
}

void PrintJson(const nlohmann::json& value) { std::cout << value.dump(2) << "\n"; }

}  // namespace terasim::cli
