// terasim calibrate: profiles the forward and backward of one layer of a model with an
// executor back end over a grid of (rows, slice length, context) (exec/profiler.h), fits the
// calibration table (models/calibration_fit.h) and writes it (models/data/calibration/README.md)
// with its fit quality. The table feeds `terasim simulate --calib` and `terasim validate`.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "exec/executor.h"
#include "exec/profiler.h"
#include "models/calibration_fit.h"
#include "models/errors.h"
#include "models/model_card.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/progress_line.h"
#include "traces/code_version.h"
#include "traces/traces.h"

namespace terasim::cli {
namespace {

// "1,2,4" -> {1, 2, 4}. Throws InputError "--FLAG: 'TEXT': ..." on anything else.
std::vector<int64_t> ParseList(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size()) {
      ThrowInput("--{}: '{}': expected integers separated by commas", flag, text);
    }
    out.push_back(value);
    pos = comma + 1;
  }
  return out;
}

// Default slice lengths: 1 and powers of two up to the sequence, plus the sequence.
std::vector<int64_t> DefaultTokens(int sequence) {
  std::vector<int64_t> out = {1};
  for (int64_t l = 8; l < sequence; l *= 2) out.push_back(l);
  out.push_back(sequence);
  return out;
}

// Default contexts: 0 (the base curve) and a quarter, a half and three quarters of the sequence.
std::vector<int64_t> DefaultContexts(int sequence) {
  std::vector<int64_t> out = {0};
  for (int64_t c : {sequence / 4, sequence / 2, 3 * sequence / 4}) {
    if (c > out.back()) out.push_back(c);
  }
  return out;
}

}  // namespace

int RunCalibrate(const Args& args) {
  po::options_description options("terasim calibrate");
  // clang-format off
  options.add_options()
      ("model", po::value<std::string>()->default_value(""), "model card name or path (required)")
      ("backend", po::value<std::string>()->default_value("cpu"), "executor back end: cpu | cuda")
      ("output,o", po::value<std::string>()->default_value(""),
       "write the calibration table (JSON) here (required)")
      ("device", po::value<std::string>()->default_value("local-cpu"),
       "the device spec name recorded in the table")
      ("rows", po::value<std::string>()->default_value("1"), "micro-batch sizes, e.g. 1,2")
      ("tokens", po::value<std::string>()->default_value("", "1,8,16,...,sequence"),
       "slice lengths")
      ("contexts", po::value<std::string>()->default_value("", "0,s/4,s/2,3s/4"),
       "contexts (0 gives the base curve)")
      ("layers", po::value<int>()->default_value(1),
       "layers of the profiled stack (a stage's count: its caches hold what the stage's do)")
      ("in-flight", po::value<int>()->default_value(2),
       "slices whose activations the profiled stage holds at once (the point's and others, "
       "forwarded between its forward and backward), as a pipeline stage holds its in-flight "
       "micro-batches")
      ("repetitions", po::value<int>()->default_value(5), "timed runs per point (median)")
      ("warmup", po::value<int>()->default_value(1), "untimed runs per point")
      ("threads", po::value<int>()->default_value(1),
       "profile on this many threads at once (each its own device), so that cores are shared "
       "as in a run of that many devices; every thread's measurements are fitted")
      ("blas-threads", po::value<int>()->default_value(1),
       "OpenBLAS threads per call (1: a device is one core)")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of the weights")
      ("json", po::bool_switch(), "print the fit quality as JSON");
  // clang-format on
  po::positional_options_description positional;
  po::variables_map vm;
  if (!Parse("calibrate",
             "--model M -o CALIB.json [--backend cpu] [--rows 1,2] [--tokens ...] "
             "[--contexts ...] [--json]",
             options, positional, args, vm)) {
    return 0;
  }
  const std::string model_name = vm["model"].as<std::string>();
  const std::string output = vm["output"].as<std::string>();
  if (model_name.empty()) ThrowInput("terasim calibrate: --model is required");
  if (output.empty()) ThrowInput("terasim calibrate: -o/--output is required");
  RequireReplaceableOutput(output);  // before the profiling, not after
  const std::string backend = vm["backend"].as<std::string>();
  const uint64_t seed = vm["seed"].as<uint64_t>();
  const ModelCard card = LoadModelCard(model_name);
  const BackendFactory factory = MakeBackendFactory(backend, card, seed);

  ProfileGrid grid;
  grid.rows.clear();
  for (int64_t r : ParseList("rows", vm["rows"].as<std::string>())) {
    grid.rows.push_back(static_cast<int>(r));
  }
  grid.tokens = vm["tokens"].as<std::string>().empty()
                    ? DefaultTokens(card.sequence)
                    : ParseList("tokens", vm["tokens"].as<std::string>());
  grid.contexts = vm["contexts"].as<std::string>().empty()
                      ? DefaultContexts(card.sequence)
                      : ParseList("contexts", vm["contexts"].as<std::string>());
  if (std::find(grid.contexts.begin(), grid.contexts.end(), 0) == grid.contexts.end()) {
    ThrowInput("--contexts: must include 0 (the base curve)");
  }
  grid.layers = vm["layers"].as<int>();
  grid.in_flight = vm["in-flight"].as<int>();
  grid.repetitions = vm["repetitions"].as<int>();
  grid.warmup = vm["warmup"].as<int>();
  if (grid.warmup < 0) ThrowInput("--warmup: must be >= 0");
  const int blas_threads = vm["blas-threads"].as<int>();
  if (blas_threads < 1) ThrowInput("--blas-threads: must be >= 1");
  if (backend == "cpu") SetBlasThreads(blas_threads);

  const int threads = vm["threads"].as<int>();
  if (threads < 1) ThrowInput("--threads: must be >= 1");
  std::optional<ProgressLine> progress;
  const std::vector<ProfilePoint> points =
      ProfileLayerOnThreads(card, grid, factory, threads, [&progress](int done, int all) {
        if (!progress)
          progress.emplace("calibrate", "measurements", all, std::cerr, StderrIsTerminal());
        progress->Update(done);
      });
  if (progress) progress->Finish();
  const std::string source = fmt::format(
      "terasim calibrate --backend {} --model {} --rows {} --layers {} --threads {} (blas "
      "threads {}), {} repetitions after {} warm-up, median; code {}",
      backend, card.name, vm["rows"].as<std::string>(), grid.layers, threads, blas_threads,
      grid.repetitions, grid.warmup, CodeVersion());
  CalibrationTable table =
      FitCalibration(points, vm["device"].as<std::string>(), card.name, source);
  const std::string text = CalibrationJson(table);
  ParseCalibrationTable(text, output);  // what we write must read back
  WriteFileAtomically(output, text);

  nlohmann::json fits = nlohmann::json::array();
  for (const PassTable& t : table.tables) {
    if (t.pass == Pass::kOptimizer) {
      fits.push_back({{"pass", PassName(t.pass)}, {"time_ns_per_layer", t.optimizer_ns_per_layer}});
      continue;
    }
    for (const RowsCurve& c : t.curves) {
      fits.push_back({{"pass", PassName(t.pass)},
                      {"rows", c.rows},
                      {"lengths", c.tokens.size()},
                      {"r2", c.context.r2},
                      {"max_rel_error", c.context.max_rel_error},
                      {"points", c.context.points}});
    }
  }
  if (vm["json"].as<bool>()) {
    PrintJson({{"output", output},
               {"model", card.name},
               {"backend", backend},
               {"measurements", points.size()},
               {"fits", fits}});
    return 0;
  }
  std::cout << fmt::format("{}: {} measurements of {} on {}\n", output, points.size(), card.name,
                           backend);
  for (const nlohmann::json& f : fits) {
    if (f.contains("r2")) {
      std::cout << fmt::format(
          "  {:<9} rows {:<3} {} lengths, context fit r2 {:.4f}, max rel error {:.1f} % ({} "
          "points)\n",
          f["pass"].get<std::string>(), f["rows"].get<int>(), f["lengths"].get<int>(),
          f["r2"].get<double>(), 100 * f["max_rel_error"].get<double>(), f["points"].get<int>());
    } else {
      std::cout << fmt::format("  {:<9} {:.0f} ns per layer\n", f["pass"].get<std::string>(),
                               f["time_ns_per_layer"].get<double>());
    }
  }
  return 0;
}

}  // namespace terasim::cli
