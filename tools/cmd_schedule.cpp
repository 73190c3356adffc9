// terasim schedule: generates a strategy's schedule (schedule/generator.h) and writes it as .pir.
#include <iostream>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/model_card.h"
#include "schedule/generator.h"
#include "schedule/pir_format.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/schedule_flags.h"
#include "traces/traces.h"

namespace terasim::cli {

int RunSchedule(const Args& args) {
  po::options_description options("terasim schedule");
  // clang-format off
  options.add_options()
      ("model", po::value<std::string>()->default_value("tiny"), "model card name or path")
      ("strategy", po::value<std::string>()->default_value("1f1b"),
       "gpipe | 1f1b | interleaved | terapipe | zb-h1 | zb-h2 | looped-bfs | interleaved-zb | "
       "zb-v | dualpipe-v")
      ("dp", po::value<int>()->default_value(1), "data-parallel degree D")
      ("pp", po::value<int>()->default_value(1),
       "pipeline-parallel degree P (alias --pipeline-model-parallel-size)")
      ("tp", po::value<int>()->default_value(1),
       "tensor (operator) parallel degree T (alias --tensor-model-parallel-size)")
      ("microbatches", po::value<int>()->default_value(0, "P"),
       "micro-batches per data-parallel replica")
      ("microbatch-size", po::value<int>()->default_value(1),
       "sequences per micro-batch (alias --micro-batch-size)")
      ("batch", po::value<int>()->default_value(0, "D x M x B"),
       "global batch (sequences; alias --global-batch-size): sets --microbatches from "
       "--microbatch-size, or the reverse")
      ("virtual-stages", po::value<int>()->default_value(1),
       "model chunks per device (interleaved, interleaved-zb, looped-bfs; zb-v and dualpipe-v: "
       "2, their V)")
      ("slicing", po::value<std::string>()->default_value("", "none"),
       "terapipe: micro-batches and token slices, e.g. 1:[704,688,656]x32+2:[1024,1024]")
      ("slices", po::value<int>()->default_value(0),
       "terapipe: N equal token slices per micro-batch (0: one)")
      ("order", po::value<std::string>()->default_value("flush"), "terapipe: flush | 1f1b")
      ("boundary", po::value<std::string>()->default_value("p2p"),
       "stage boundary with --tp > 1: p2p | broadcast")
      ("no-optimizer", po::bool_switch(), "leave out the OPTIMIZER ops")
      ("recompute", po::value<std::string>()->default_value("none"),
       "activation recomputation: none | selective | full")
      ("sequence-parallel", po::bool_switch(), "sequence parallelism (--tp >= 2, p2p boundary)")
      ("zero", po::value<int>()->default_value(0), "ZeRO stage 0-3 over --dp >= 2")
      ("backward-order", po::value<std::string>()->default_value("reverse"),
       "gpipe: backwards in reverse | forward (PyTorch's) micro-batch order")
      ("output,o", po::value<std::string>()->default_value(""),
       "output .pir file (required; - for stdout)")
      ("json", po::bool_switch(), "print a JSON summary instead of a line");
  // clang-format on
  AddDpStepOptions(options);
  po::variables_map vm;
  if (!Parse("schedule", "[options] -o FILE.pir", options, {}, args, vm)) return 0;

  const std::string output = vm["output"].as<std::string>();
  if (output.empty()) ThrowInput("terasim schedule: -o/--output FILE is required (- for stdout)");
  GenerateOptions o =
      ScheduleOptionsFromFlags(vm, LoadModelCard(vm["model"].as<std::string>()), "schedule");
  Schedule schedule = Generate(o);
  if (output == "-") {
    std::cout << WritePir(schedule);
    return 0;
  }
  WriteFileAtomically(output, WritePir(schedule));
  if (vm["json"].as<bool>()) {
    PrintJson({{"output", output},
               {"strategy", schedule.shape.strategy},
               {"devices", schedule.devices},
               {"batch", schedule.batch},
               {"ops", schedule.ops.size()},
               {"groups", schedule.groups.size()}});
  } else {
    std::cout << fmt::format("{}: {} ops on {} devices ({} {}x{}x{}, batch {})\n", output,
                             schedule.ops.size(), schedule.devices, schedule.shape.strategy,
                             schedule.shape.dp, schedule.shape.pp, schedule.shape.tp,
                             schedule.batch);
  }
  return 0;
}

}  // namespace terasim::cli
