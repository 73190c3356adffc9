// terasim plot: pictures of stored or written runs.
//   terasim plot gantt TRACE.json|TRACE.csv -o F.svg [--pir SCHEDULE.pir] [--iteration N]
//   terasim plot gantt --db FILE --run N -o F.svg
// A gantt is a pipeline timeline (traces/gantt_svg.h): one row per device, ops coloured by kind
// and labelled by micro-batch and slice, idle time hatched, the critical path outlined. With
// --pir (the schedule the trace ran) the critical path follows the schedule's dependencies and
// each RECV is split into its wait and its transfer; without it the path is the chain of ops
// that ended as the next began (CriticalPathFromChains).
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "models/errors.h"
#include "schedule/pir_format.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "traces/gantt_svg.h"
#include "traces/trace_links.h"
#include "traces/traces.h"
#include "traces/validation.h"

namespace terasim::cli {
namespace {

constexpr const char* kPlotUsage =
    "usage: terasim plot KIND [options]   (terasim plot KIND --help for its options)\n\n"
    "  gantt    a pipeline timeline of one iteration of a trace or a stored run (SVG)\n";

int RunPlotGantt(const Args& args) {
  po::options_description options("terasim plot gantt");
  // clang-format off
  options.add_options()
      ("trace", po::value<std::string>(), "trace file, .json (Perfetto) or .csv (positional)")
      ("db", po::value<std::string>(), "results store to read a run from (with --run)")
      ("run", po::value<int64_t>(), "stored run id (with --db)")
      ("out,o", po::value<std::string>(), "SVG file to write")
      ("pir", po::value<std::string>()->default_value(""),
       "the schedule the trace ran: exact critical path, RECV wait and transfer")
      ("iteration", po::value<int>()->default_value(0), "iteration to draw")
      ("per-stream", po::bool_switch(), "one row per device and stream")
      ("no-merge", po::bool_switch(), "draw devices with identical rows separately")
      ("max-rows", po::value<int>()->default_value(128), "rows drawn at most")
      ("title", po::value<std::string>()->default_value(""), "title (default: the run)");
  // clang-format on
  po::positional_options_description positional;
  positional.add("trace", 1);
  po::variables_map vm;
  if (!Parse("plot gantt", "(TRACE.json | --db FILE --run N) -o F.svg [--pir SCHEDULE.pir]",
             options, positional, args, vm)) {
    return 0;
  }
  if (!vm.count("out")) ThrowInput("terasim plot gantt: missing -o F.svg");
  if (vm.count("trace") == vm.count("db")) {
    ThrowInput("terasim plot gantt: give a trace file or --db FILE --run N (one of the two)");
  }
  if (vm.count("db") != vm.count("run")) {
    ThrowInput("terasim plot gantt: --db and --run go together");
  }
  Trace trace;
  std::string source;
  if (vm.count("trace")) {
    source = vm["trace"].as<std::string>();
    trace = ReadTraceFile(source);
  } else {
    ResultStore store = ResultStore::OpenExisting(vm["db"].as<std::string>());
    const int64_t run = vm["run"].as<int64_t>();
    trace = store.ReadRunTrace(run);
    source = fmt::format("{} run {}", vm["db"].as<std::string>(), run);
    if (trace.rows.empty()) {
      ThrowInput("{}: run {} has no stored ops (it was stored with --store-ops none)",
                 vm["db"].as<std::string>(), run);
    }
  }
  GanttOptions gantt;
  gantt.iteration = vm["iteration"].as<int>();
  gantt.per_stream = vm["per-stream"].as<bool>();
  gantt.merge_identical = !vm["no-merge"].as<bool>();
  gantt.max_rows = vm["max-rows"].as<int>();
  gantt.title = vm["title"].as<std::string>();
  if (gantt.title.empty()) gantt.title = "pipeline timeline: " + source;
  std::vector<std::string> facts;
  for (const char* key : {"model", "cluster", "strategy", "network", "cost_model"}) {
    auto it = trace.metadata.find(key);
    if (it != trace.metadata.end() && !it->second.empty()) facts.push_back(it->second);
  }
  gantt.subtitle = fmt::format("{}", fmt::join(facts, ", "));
  const std::string pir = vm["pir"].as<std::string>();
  if (!pir.empty()) {
    const Schedule schedule = ReadPirFile(pir);
    gantt.critical_path = SummarizeTrace(schedule, trace, gantt.iteration).critical_path;
    const TraceLinks links = LinkTrace(schedule, trace);
    for (const auto& [row, start] : RecvTransferStarts(trace, links)) {
      gantt.recv_transfer_start[trace.rows[row].key] = start;
    }
  }
  const std::string out_path = vm["out"].as<std::string>();
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  if (!out || !(out << GanttSvg(trace, gantt)) || !out.flush()) {
    ThrowInput("{}: cannot write", out_path);
  }
  std::cerr << fmt::format("terasim plot gantt: {} ops -> {}\n", trace.rows.size(), out_path);
  return 0;
}

}  // namespace

int RunPlot(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << kPlotUsage;
    return args.empty() ? 2 : 0;
  }
  Args rest(args.begin() + 1, args.end());
  if (args[0] == "gantt") return RunPlotGantt(rest);
  ThrowInput("terasim plot: unknown kind '{}' (expected gantt)", args[0]);
}

}  // namespace terasim::cli
