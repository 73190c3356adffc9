// terasim db: the results store from the command line.
//   terasim db runs [--db FILE] [--json]                 list the stored runs
//   terasim db query SQL [--db FILE] [--json | --csv]    run one read-only SQL statement
//                                                        (within ResultStore's query limits)
//   terasim db export RUN [--trace OUT.json] [--csv OUT.csv] [--db FILE]
//                                                        write a run's trace (Perfetto / CSV)
// Every action reads an existing store through a read-only connection (ResultStore::
// OpenReadOnly): it never creates, changes or needs write permission on the store.
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "models/errors.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "traces/run_record_json.h"
#include "traces/traces.h"

namespace terasim::cli {
namespace {

constexpr const char* kDbUsage =
    "usage: terasim db ACTION [options]   (terasim db ACTION --help for its options)\n\n"
    "  runs     list the stored runs\n"
    "  query    run one read-only SQL statement and print its rows\n"
    "  export   write a run's trace as Perfetto JSON and/or CSV\n";

void AddDbOption(po::options_description& options) {
  options.add_options()("db", po::value<std::string>()->default_value(kDefaultStorePath),
                        "results store (SQLite file)");
}

nlohmann::json RunJson(const StoredRun& run) {
  nlohmann::json out = {{"id", run.id}, {"created_at", run.created_at}};
  out.update(RunRecordJson(run.record));
  return out;
}

int RunDbRuns(const Args& args) {
  po::options_description options("terasim db runs");
  AddDbOption(options);
  options.add_options()("json", po::bool_switch(), "print JSON (every field and metric)");
  po::variables_map vm;
  if (!Parse("db runs", "[--db FILE] [--json]", options, {}, args, vm)) return 0;
  ResultStore store = ResultStore::OpenReadOnly(vm["db"].as<std::string>());
  std::vector<StoredRun> runs = store.ListRuns();
  if (vm["json"].as<bool>()) {
    nlohmann::json out = nlohmann::json::array();
    for (const StoredRun& run : runs) out.push_back(RunJson(run));
    PrintJson(out);
    return 0;
  }
  QueryResult table;
  table.columns = {
      "id",           "kind",         "created_at",       "model", "cluster", "strategy",
      "dp x pp x tp", "microbatches", "iteration_time_s", "label"};
  for (const StoredRun& run : runs) {
    const RunRecord& r = run.record;
    auto it = r.metrics.find("iteration_time_s");
    SqlValue time = it != r.metrics.end() ? SqlValue(it->second) : SqlValue();
    table.rows.push_back({run.id, r.kind, run.created_at, r.model, r.cluster, r.strategy,
                          fmt::format("{} x {} x {}", r.dp, r.pp, r.tp), int64_t{r.microbatches},
                          time, r.label});
  }
  std::cout << FormatQueryTable(table);
  return 0;
}

int RunDbQuery(const Args& args) {
  po::options_description options("terasim db query");
  AddDbOption(options);
  options.add_options()("sql", po::value<std::string>(), "the SQL statement (positional)")(
      "json", po::bool_switch(), "print a JSON array of row objects")(
      "csv", po::bool_switch(), "print CSV with a header line");
  po::positional_options_description positional;
  positional.add("sql", 1);
  po::variables_map vm;
  if (!Parse("db query", "SQL [--db FILE] [--json | --csv]", options, positional, args, vm)) {
    return 0;
  }
  if (!vm.count("sql")) ThrowInput("terasim db query: missing SQL (see terasim db query --help)");
  if (vm["json"].as<bool>() && vm["csv"].as<bool>()) {
    ThrowInput("terasim db query: --json and --csv exclude each other");
  }
  ResultStore store = ResultStore::OpenReadOnly(vm["db"].as<std::string>());
  QueryResult result = store.Query(vm["sql"].as<std::string>());
  if (vm["json"].as<bool>()) {
    std::cout << FormatQueryJson(result);
  } else if (vm["csv"].as<bool>()) {
    std::cout << FormatQueryCsv(result);
  } else {
    std::cout << FormatQueryTable(result);
  }
  return 0;
}

int RunDbExport(const Args& args) {
  po::options_description options("terasim db export");
  AddDbOption(options);
  options.add_options()("run", po::value<int64_t>(), "run id (positional)")(
      "trace", po::value<std::string>()->default_value(""), "write Perfetto / Chrome JSON here")(
      "csv", po::value<std::string>()->default_value(""), "write trace CSV here");
  po::positional_options_description positional;
  positional.add("run", 1);
  po::variables_map vm;
  if (!Parse("db export", "RUN [--trace OUT.json] [--csv OUT.csv] [--db FILE]", options, positional,
             args, vm)) {
    return 0;
  }
  if (!vm.count("run")) ThrowInput("terasim db export: missing RUN (see terasim db export --help)");
  const std::string& json_path = vm["trace"].as<std::string>();
  const std::string& csv_path = vm["csv"].as<std::string>();
  if (json_path.empty() && csv_path.empty()) {
    ThrowInput("terasim db export: give --trace OUT.json and/or --csv OUT.csv");
  }
  if (!json_path.empty()) RequireReplaceableOutput(json_path);
  if (!csv_path.empty()) RequireReplaceableOutput(csv_path);
  ResultStore store = ResultStore::OpenReadOnly(vm["db"].as<std::string>());
  int64_t run_id = vm["run"].as<int64_t>();
  Trace trace = store.ReadRunTrace(run_id);
  if (!json_path.empty()) WriteChromeTraceFile(json_path, trace);
  if (!csv_path.empty()) WriteTraceCsvFile(csv_path, trace, std::to_string(run_id));
  std::cerr << fmt::format("terasim db export: run {}: {} ops", run_id, trace.rows.size());
  if (!json_path.empty()) std::cerr << " -> " << json_path;
  if (!csv_path.empty()) std::cerr << " -> " << csv_path;
  std::cerr << "\n";
  return 0;
}

}  // namespace

int RunDb(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << kDbUsage;
    return args.empty() ? 2 : 0;
  }
  Args rest(args.begin() + 1, args.end());
  if (args[0] == "runs") return RunDbRuns(rest);
  if (args[0] == "query") return RunDbQuery(rest);
  if (args[0] == "export") return RunDbExport(rest);
  ThrowInput("terasim db: unknown action '{}' (expected runs, query or export)", args[0]);
}

}  // namespace terasim::cli
