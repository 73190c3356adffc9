// terasim_differential: the long run of the differential fuzz harness (tests/fuzz/differential.h),
// for tools/fuzz/differential.sh.
//
//   terasim_differential [--cases N] [--first I] [--seed S] [--failures DIR] [--stall-timeout
//   SECONDS] [-v]
//
// Prints "cases N accepted A rejected R unmutated U failures F" and one line per failure; exits
// 1 when any case failed.
#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/fuzz/differential.h"

int main(int argc, char** argv) {
  terasim::fuzz::DifferentialOptions options;
  options.cases = 10000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "terasim_differential: " << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (arg == "--first") {
        options.first_case = std::stoi(value());
      } else if (arg == "--cases") {
        options.cases = std::stoi(value());
      } else if (arg == "--seed") {
        options.seed = std::stoull(value());
      } else if (arg == "--failures") {
        options.failure_dir = value();
      } else if (arg == "--stall-timeout") {
        options.stall_timeout_s = std::stod(value());
      } else if (arg == "--progress") {
        options.progress = true;
      } else if (arg == "-v" || arg == "--verbose") {
        options.verbose = true;
      } else {
        std::cerr << "terasim_differential: unknown option " << arg << "\n";
        return 2;
      }
    } catch (const std::logic_error&) {
      std::cerr << "terasim_differential: " << arg << ": not a number\n";
      return 2;
    }
  }
  try {
    const terasim::fuzz::DifferentialCounts c = terasim::fuzz::RunDifferential(options);
    std::cout << "seed " << options.seed << " cases " << c.cases << " accepted " << c.accepted
              << " rejected " << c.rejected << " unmutated " << c.unmutated << " failures "
              << c.failures.size() << "\n";
    for (const auto& f : c.failures) {
      std::cout << "case " << f.case_index << ": " << f.what << "\n  mutation: " << f.mutation
                << "\n";
    }
    return c.failures.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "terasim_differential: " << e.what() << "\n";
    return 3;
  }
}
