// terasim import torch-csv: a PyTorch pipelining action table (schedule/torch_csv.h) becomes a
// checked .pir for the given model, degrees and recipe, to simulate or execute like any other.
#include <iostream>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/model_card.h"
#include "schedule/checker.h"
#include "schedule/generator.h"
#include "schedule/pir_format.h"
#include "schedule/torch_csv.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/schedule_flags.h"

namespace terasim::cli {

int RunImport(const Args& args) {
  po::options_description options("terasim import");
  // clang-format off
  options.add_options()
      ("format", po::value<std::string>()->default_value(""), "torch-csv (the first argument)")
      ("input", po::value<std::string>()->default_value(""), "the table (the second argument)")
      ("model", po::value<std::string>()->default_value("tiny"), "model card name or path")
      ("dp", po::value<int>()->default_value(1), "data-parallel degree D")
      ("tp", po::value<int>()->default_value(1), "tensor (operator) parallel degree T")
      ("microbatch-size", po::value<int>()->default_value(1), "sequences per micro-batch")
      ("boundary", po::value<std::string>()->default_value("p2p"),
       "stage boundary with --tp > 1: p2p | broadcast")
      ("no-optimizer", po::bool_switch(), "leave out the OPTIMIZER ops")
      ("recompute", po::value<std::string>()->default_value("none"),
       "activation recomputation: none | selective | full")
      ("sequence-parallel", po::bool_switch(), "sequence parallelism (--tp >= 2, p2p boundary)")
      ("zero", po::value<int>()->default_value(0), "ZeRO stage 0-3 over --dp >= 2")
      ("output,o", po::value<std::string>()->default_value(""),
       "output .pir file (required; - for stdout)")
      ("json", po::bool_switch(), "print a JSON summary instead of a line");
  // clang-format on
  po::positional_options_description positional;
  positional.add("format", 1).add("input", 1);
  po::variables_map vm;
  if (!Parse("import", "torch-csv FILE.csv [--model M] [--dp D] [--tp T] ... -o FILE.pir", options,
             positional, args, vm)) {
    return 0;
  }
  const std::string format = vm["format"].as<std::string>();
  if (format != "torch-csv") {
    ThrowInput("terasim import: format '{}' must be torch-csv", format);
  }
  const std::string input = vm["input"].as<std::string>();
  if (input.empty()) ThrowInput("terasim import torch-csv: the CSV file is required");
  const std::string output = vm["output"].as<std::string>();
  if (output.empty()) ThrowInput("terasim import: -o/--output FILE is required (- for stdout)");

  GenerateOptions base;
  base.model = LoadModelCard(vm["model"].as<std::string>());
  base.dp = vm["dp"].as<int>();
  base.tp = vm["tp"].as<int>();
  base.microbatch_size = vm["microbatch-size"].as<int>();
  base.boundary = ParseBoundary(vm["boundary"].as<std::string>());
  base.optimizer = !vm["no-optimizer"].as<bool>();
  ReadRecipeFlags(vm, base);
  const TorchActionTable table = ParseTorchCsv(ReadTextFile(input), input);
  Schedule schedule = Generate(ImportedOptions(table, base, input));
  schedule.source = input;
  RequireValidSchedule(schedule);
  if (output == "-") {
    std::cout << WritePir(schedule);
    return 0;
  }
  WritePirFile(schedule, output);
  if (vm["json"].as<bool>()) {
    PrintJson({{"output", output},
               {"input", input},
               {"ranks", table.ranks.size()},
               {"stages", table.stages},
               {"microbatches", table.microbatches},
               {"devices", schedule.devices},
               {"ops", schedule.ops.size()}});
  } else {
    std::cout << fmt::format(
        "{}: {} ops on {} devices ({} ranks, {} stages, {} micro-batches from {}), checked\n",
        output, schedule.ops.size(), schedule.devices, table.ranks.size(), table.stages,
        table.microbatches, input);
  }
  return 0;
}

}  // namespace terasim::cli
