// terasim cost: FLOPs, time and activation memory of one layer of a token slice on one device;
// with --breakdown, the operator model's per-operator table of every pass.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/calibrated_cost.h"
#include "models/device_spec.h"
#include "models/errors.h"
#include "models/layer_flops.h"
#include "models/memory_model.h"
#include "models/model_card.h"
#include "models/operator_cost.h"
#include "models/roofline_cost.h"
#include "tools/cli.h"
#include "tools/commands.h"

namespace terasim::cli {
namespace {

constexpr OperatorPass kAllPasses[] = {OperatorPass::kForward, OperatorPass::kBackwardInput,
                                       OperatorPass::kBackwardWeight, OperatorPass::kRecompute,
                                       OperatorPass::kRecomputeSelective};

std::vector<OperatorPass> ParsePasses(const std::string& text) {
  if (text == "all") return {std::begin(kAllPasses), std::end(kAllPasses)};
  for (OperatorPass pass : kAllPasses) {
    if (text == OperatorPassName(pass)) return {pass};
  }
  ThrowInput(
      "--pass {}: must be all, forward, backward_input, backward_weight, recompute or "
      "recompute_selective",
      text);
}

nlohmann::json BreakdownJson(const OperatorCostModel& model, const SliceWork& work,
                             const std::vector<OperatorPass>& passes) {
  nlohmann::json out = nlohmann::json::object();
  for (OperatorPass pass : passes) {
    nlohmann::json rows = nlohmann::json::array();
    Flops flops = 0;
    Bytes bytes = 0;
    int kernels = 0;
    for (const OperatorTiming& t : model.Breakdown(work, pass)) {
      rows.push_back({{"operator", t.op.name},
                      {"kind", OperatorKindName(t.op.kind)},
                      {"shape", {t.op.batch, t.op.m, t.op.n, t.op.k}},
                      {"flops", t.op.flops},
                      {"bytes", t.op.bytes},
                      {"kernels", t.op.kernels},
                      {"waves", t.waves},
                      {"tile", {t.tile_m, t.tile_n}},
                      {"gpu_time_ns", std::llround(t.gpu_s * 1e9)},
                      {"overhead_ns", std::llround(t.overhead_s * 1e9)},
                      {"bound", t.bound}});
      flops += t.op.flops;
      bytes += t.op.bytes;
      kernels += t.op.kernels;
    }
    out[OperatorPassName(pass)] = {
        {"time_ns", std::llround(model.QueueSeconds(work, {pass}, 1) * 1e9)},
        {"flops", flops},
        {"bytes", bytes},
        {"kernels", kernels},
        {"operators", rows}};
  }
  return out;
}

void PrintBreakdown(const OperatorCostModel& model, const SliceWork& work,
                    const std::vector<OperatorPass>& passes) {
  for (OperatorPass pass : passes) {
    std::cout << fmt::format("\n{} ({} per layer as one kernel queue)\n", OperatorPassName(pass),
                             fmt::format("{:.3f} ms", model.QueueSeconds(work, {pass}, 1) * 1e3));
    std::cout << fmt::format("  {:<24} {:>10} {:>10} {:>11} {:>11} {:>6} {:>8}  {}\n", "operator",
                             "gpu_us", "launch_us", "GFLOP", "MB", "waves", "tile", "bound");
    for (const OperatorTiming& t : model.Breakdown(work, pass)) {
      std::cout << fmt::format(
          "  {:<24} {:>10.1f} {:>10.1f} {:>11.3f} {:>11.3f} {:>6} {:>8}  {}\n", t.op.name,
          t.gpu_s * 1e6, t.overhead_s * 1e6, t.op.flops / 1e9,
          static_cast<double>(t.op.bytes) / 1e6,
          t.op.kind == OperatorKind::kGemm ? fmt::format("{}", t.waves) : "-",
          t.op.kind == OperatorKind::kGemm ? fmt::format("{}x{}", t.tile_m, t.tile_n) : "-",
          t.bound);
    }
  }
}

}  // namespace

int RunCost(const Args& args) {
  po::options_description options("terasim cost");
  options.add_options()                                                                         //
      ("model", po::value<std::string>()->default_value("gpt3-1b"), "model card name or path")  //
      ("device", po::value<std::string>()->default_value("v100-sxm2-16gb"),
       "device spec name or path")                                                  //
      ("rows", po::value<int>()->default_value(1), "sequences in the micro-batch")  //
      ("tokens", po::value<int64_t>()->default_value(0),
       "slice length in tokens (0: the model's whole sequence)")                      //
      ("context", po::value<int64_t>()->default_value(0), "tokens before the slice")  //
      ("tp", po::value<int>()->default_value(1), "tensor-parallel degree")            //
      ("calib", po::value<std::string>()->default_value(""),
       "calibration table (models/data/calibration/README.md); the roofline answers what it "
       "lacks")  //
      ("cost-model", po::value<std::string>()->default_value("device"),
       "device (what the device spec selects), layer (the per-layer roofline) or operator")     //
      ("breakdown", po::bool_switch(), "the operator model's per-operator table of each pass")  //
      ("pass", po::value<std::string>()->default_value("all"),
       "with --breakdown: all, forward, backward_input, backward_weight, recompute or "
       "recompute_selective")  //
      ("sequence-parallel", po::bool_switch(),
       "the operator model (implied) with LayerNorm, dropout and residual tensors split over the "
       "tp "
       "ranks")  //
      ("no-kv-cache", po::bool_switch(),
       "the operator model (implied) with an eager layer run without its key/value cache, as "
       "TeraPipe's single-device latency script times one (context 0)")  //
      ("synchronized", po::bool_switch(),
       "the operator model (implied) timed between two synchronize calls, as a single-layer "
       "benchmark measures it: every kernel queue starts empty (without it, on a device with "
       "host_runs_ahead, the op runs inside a training loop whose host runs ahead of the GPU)")  //
      ("json", po::bool_switch(), "print JSON");
  po::variables_map vm;
  if (!Parse("cost",
             "[--model M] [--device D] [--rows B] [--tokens L] [--context C] [--tp T] "
             "[--cost-model device|layer|operator] [--synchronized] [--breakdown [--pass P]]",
             options, {}, args, vm)) {
    return 0;
  }
  const ModelCard model = LoadModelCard(vm["model"].as<std::string>());
  const DeviceSpec device = LoadDeviceSpec(vm["device"].as<std::string>());
  SliceWork work;
  work.rows = vm["rows"].as<int>();
  work.tokens = vm["tokens"].as<int64_t>();
  if (work.tokens == 0) work.tokens = model.sequence;
  work.context = vm["context"].as<int64_t>();
  work.tp = vm["tp"].as<int>();
  if (work.rows < 1) ThrowInput("--rows {}: must be >= 1", work.rows);
  if (work.tokens < 1) ThrowInput("--tokens {}: must be >= 1", work.tokens);
  if (work.context < 0) ThrowInput("--context {}: must be >= 0", work.context);
  if (work.context + work.tokens > model.sequence) {
    ThrowInput("--context {} + --tokens {} exceed {}'s sequence of {} tokens", work.context,
               work.tokens, model.name, model.sequence);
  }
  if (work.tp < 1 || model.heads % work.tp != 0) {
    ThrowInput("--tp {} does not divide {} heads", work.tp, model.heads);
  }

  const std::string which = vm["cost-model"].as<std::string>();
  if (which != "device" && which != "layer" && which != "operator") {
    ThrowInput("--cost-model {}: must be device, layer or operator", which);
  }
  const bool sequence_parallel = vm["sequence-parallel"].as<bool>();
  const bool no_kv_cache = vm["no-kv-cache"].as<bool>();
  const bool synchronized = vm["synchronized"].as<bool>();
  if (no_kv_cache && work.context != 0) {
    ThrowInput("--no-kv-cache with --context {}: a layer without its cache has no context",
               work.context);
  }
  // The flags that only the operator model answers: naming the layer roofline with any of them
  // is a contradiction, not a request to switch models.
  std::vector<std::string> operator_flags;
  if (sequence_parallel) operator_flags.push_back("--sequence-parallel");
  if (no_kv_cache) operator_flags.push_back("--no-kv-cache");
  if (synchronized) operator_flags.push_back("--synchronized");
  if (which == "layer" && !operator_flags.empty()) {
    ThrowInput(
        "--cost-model layer with {}: only the operator model answers {} (use --cost-model "
        "operator or device)",
        fmt::join(operator_flags, " "), operator_flags.size() == 1 ? "it" : "them");
  }
  DeviceSpec layer_device = device;
  if (which == "layer" && layer_device.operator_model)
    layer_device.operator_model->is_default = false;
  const RooflineCostModel roofline(model, layer_device);
  std::optional<OperatorCostModel> operators;
  const bool operators_answer =
      which == "operator" ||
      (which == "device" && device.operator_model && device.operator_model->is_default) ||
      sequence_parallel || no_kv_cache || synchronized;
  if (operators_answer || vm["breakdown"].as<bool>()) {
    operators.emplace(model, device, sequence_parallel, !no_kv_cache, synchronized);
  }
  const ComputeCostModel* base = &roofline;
  if (operators_answer) base = &*operators;
  std::unique_ptr<CalibratedCostModel> calibrated;
  if (const std::string path = vm["calib"].as<std::string>(); !path.empty()) {
    calibrated = std::make_unique<CalibratedCostModel>(LoadCalibrationTable(path), base);
  }
  const ComputeCostModel& cost =
      calibrated ? static_cast<const ComputeCostModel&>(*calibrated) : *base;
  const std::vector<OperatorPass> passes = ParsePasses(vm["pass"].as<std::string>());

  SliceWork fwd = work;
  fwd.pass = Pass::kForward;
  SliceWork bwd = work;
  bwd.pass = Pass::kBackward;
  const Flops fwd_flops = WorkFlops(model, fwd);
  const Flops bwd_flops = WorkFlops(model, bwd);
  const TimeNs fwd_ns = cost.Time(fwd);
  const TimeNs bwd_ns = cost.Time(bwd);
  const Bytes activations =
      LayerActivationBytes(model, work.rows, work.tokens, work.context, work.tp, Block::kWhole);
  const Bytes kv_cache = LayerKvCacheBytes(model, work.rows, work.tokens, work.tp, Block::kWhole);
  const int64_t params = LayerShardParams(model, work.tp, Block::kWhole);

  // The label names the operator model's options, so that two outputs that differ by a flag
  // say so ("operator v100-sxm2-16gb gpt3-1b, synchronized").
  std::string label = cost.Name();
  if (sequence_parallel) label += ", sequence parallel";
  if (no_kv_cache) label += ", no kv cache";
  if (synchronized) label += ", synchronized";

  if (vm["json"].as<bool>()) {
    nlohmann::json out = {{"model", model.name},
                          {"device", device.name},
                          {"cost_model", label},
                          {"rows", work.rows},
                          {"tokens", work.tokens},
                          {"context", work.context},
                          {"tp", work.tp},
                          {"fwd_flops", fwd_flops},
                          {"bwd_flops", bwd_flops},
                          {"fwd_time_ns", fwd_ns},
                          {"bwd_time_ns", bwd_ns},
                          {"fwd_tflops_per_s", fwd_flops / static_cast<double>(fwd_ns) / 1e3},
                          {"activation_bytes", activations},
                          {"kv_cache_bytes", kv_cache},
                          {"params", params}};
    if (vm["breakdown"].as<bool>()) out["breakdown"] = BreakdownJson(*operators, work, passes);
    PrintJson(out);
    return 0;
  }
  std::cout << fmt::format("one layer of {} on {} ({})\n", model.name, device.name, label);
  std::cout << fmt::format("  slice             {} rows x {} tokens after {} of context, tp {}\n",
                           work.rows, work.tokens, work.context, work.tp);
  std::cout << fmt::format("  fwd_flops         {:.4g}\n", fwd_flops);
  std::cout << fmt::format("  bwd_flops         {:.4g}\n", bwd_flops);
  std::cout << fmt::format("  fwd_time_ns       {} ({:.3f} ms, {:.1f} TFLOP/s)\n", fwd_ns,
                           static_cast<double>(fwd_ns) / 1e6,
                           fwd_flops / static_cast<double>(fwd_ns) / 1e3);
  std::cout << fmt::format("  bwd_time_ns       {} ({:.3f} ms)\n", bwd_ns,
                           static_cast<double>(bwd_ns) / 1e6);
  std::cout << fmt::format("  activation_bytes  {} ({:.1f} MiB)\n", activations,
                           static_cast<double>(activations) / (1 << 20));
  std::cout << fmt::format("  kv_cache_bytes    {} (kept when the sequence is cut into slices)\n",
                           kv_cache);
  std::cout << fmt::format("  params            {} per rank\n", params);
  if (vm["breakdown"].as<bool>()) PrintBreakdown(*operators, work, passes);
  return 0;
}

}  // namespace terasim::cli
