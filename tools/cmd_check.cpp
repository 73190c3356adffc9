// terasim check: proves a .pir schedule well formed (schedule/checker.h).
// terasim show: prints a .pir schedule as a per-device grid (schedule/schedule_grid.h).
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "models/errors.h"
#include "schedule/checker.h"
#include "schedule/compact_check.h"
#include "schedule/pir_format.h"
#include "schedule/schedule_grid.h"
#include "tools/cli.h"
#include "tools/commands.h"

namespace terasim::cli {

int RunCheck(const Args& args) {
  po::options_description options("terasim check");
  options.add_options()("file", po::value<std::string>()->required(), "the .pir schedule")(
      "json", po::bool_switch(), "print the result as JSON on stdout");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map vm;
  if (!Parse("check", "FILE.pir [--json]", options, positional, args, vm)) return 0;
  const std::string path = vm["file"].as<std::string>();
  // Read and checked in the compact form: no string per op (schedule/compact_schedule.h).
  const CompactSchedule schedule = ReadCompactPirFile(path);
  const std::vector<Diagnostic> diagnostics = CheckSchedule(schedule);
  for (const Diagnostic& d : diagnostics) std::cerr << FormatDiagnostic(schedule, d) << "\n";
  if (vm["json"].as<bool>()) {
    nlohmann::json found = nlohmann::json::array();
    for (const Diagnostic& d : diagnostics) {
      found.push_back({{"line", d.line},
                       {"key", d.key},
                       {"message", d.message},
                       {"text", FormatDiagnostic(schedule, d)}});
    }
    PrintJson({{"file", path},
               {"ok", diagnostics.empty()},
               {"ops", schedule.ops.size()},
               {"devices", schedule.devices},
               {"diagnostics", found}});
  } else if (diagnostics.empty()) {
    std::cout << fmt::format("{}: ok ({} ops on {} devices)\n", path, schedule.ops.size(),
                             schedule.devices);
  }
  return diagnostics.empty() ? 0 : 1;
}

int RunShow(const Args& args) {
  po::options_description options("terasim show");
  options.add_options()("file", po::value<std::string>()->required(), "the .pir schedule")(
      "width", po::value<int>()->default_value(120), "characters per line; longer rows wrap")(
      "comm", po::bool_switch(), "add a row per device with SEND (>p) and RECV (<p) marks");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map vm;
  if (!Parse("show", "FILE.pir [--width N] [--comm]", options, positional, args, vm)) return 0;
  const std::string path = vm["file"].as<std::string>();
  const Schedule schedule = ReadPirFile(path);
  GridOptions grid;
  grid.width_chars = vm["width"].as<int>();
  grid.show_comm = vm["comm"].as<bool>();
  if (grid.width_chars < 20) {
    ThrowInput("terasim show: --width {} is too narrow (at least 20)", grid.width_chars);
  }
  const std::string rendered = RenderScheduleGrid(schedule, grid);  // throws when invalid
  std::set<int> microbatches;
  for (const Op& op : schedule.ops) {
    if (op.microbatch >= 0) microbatches.insert(op.microbatch);
  }
  std::cout << fmt::format("{}: {}{} ops on {} devices, {} micro-batch{}\n\n", path,
                           schedule.shape.strategy.empty() ? "" : schedule.shape.strategy + ", ",
                           schedule.ops.size(), schedule.devices, microbatches.size(),
                           microbatches.size() == 1 ? "" : "es");
  std::cout << rendered;
  return 0;
}

}  // namespace terasim::cli
