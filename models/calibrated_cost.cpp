#include "models/calibrated_cost.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/limits.h"

namespace terasim {
namespace {

Pass ParsePass(const JsonReader& r) {
  const std::string text = r.RequireString("pass");
  for (Pass p : {Pass::kForward, Pass::kBackward, Pass::kBackwardInput, Pass::kBackwardWeight,
                 Pass::kOptimizer}) {
    if (text == PassName(p)) return p;
  }
  ThrowInput(
      "{}: pass: '{}' must be one of forward, backward, backward_input, backward_weight, "
      "optimizer",
      r.where(), text);
}

Block ParseBlock(const JsonReader& r) {
  const std::string text = r.OptionalString("block", "whole");
  for (Block b : {Block::kWhole, Block::kAttention, Block::kMlp}) {
    if (text == BlockName(b)) return b;
  }
  ThrowInput("{}: block: '{}' must be one of whole, attn, mlp", r.where(), text);
}

std::vector<double> NumberArray(const JsonReader& r, const std::string& key) {
  const nlohmann::json& array = r.RequireArray(key);
  std::vector<double> out;
  for (size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_number()) ThrowInput("{}: {}[{}]: must be a number", r.where(), key, i);
    out.push_back(array[i].get<double>());
  }
  return out;
}

ContextFit ParseContextFit(const JsonReader& r) {
  r.RejectUnknown({"a0", "a1", "a2", "a3", "r2", "max_rel_error", "points"});
  ContextFit fit;
  // Nanosecond coefficients: bounded so that the fitted term stays a representable duration.
  const double max_ns = static_cast<double>(limits::kMaxDurationNs);
  fit.a0 = r.RequireDoubleIn("a0", -max_ns, max_ns);
  fit.a1 = r.RequireDoubleIn("a1", -max_ns, max_ns);
  fit.a2 = r.RequireDoubleIn("a2", -max_ns, max_ns);
  fit.a3 = r.RequireDoubleIn("a3", -max_ns, max_ns);
  fit.r2 = r.RequireDouble("r2");
  if (fit.r2 > 1) ThrowInput("{}: r2: must be <= 1 (got {})", r.where(), fit.r2);
  fit.max_rel_error = r.RequireDouble("max_rel_error");
  if (fit.max_rel_error < 0) {
    ThrowInput("{}: max_rel_error: must be >= 0 (got {})", r.where(), fit.max_rel_error);
  }
  fit.points = static_cast<int>(r.RequireInt("points", 0, INT32_MAX));
  return fit;
}

RowsCurve ParseCurve(const JsonReader& r) {
  r.RejectUnknown({"rows", "tokens", "time_ns", "context"});
  RowsCurve curve;
  curve.rows = static_cast<int>(r.RequireInt("rows", 1, limits::kMaxBatch, "kMaxBatch"));
  curve.tokens = NumberArray(r, "tokens");
  curve.time_ns = NumberArray(r, "time_ns");
  if (curve.tokens.size() < 2) {
    ThrowInput("{}: tokens: needs at least 2 lengths (got {})", r.where(), curve.tokens.size());
  }
  if (curve.time_ns.size() != curve.tokens.size()) {
    ThrowInput("{}: time_ns: has {} entries, tokens has {}", r.where(), curve.time_ns.size(),
               curve.tokens.size());
  }
  for (size_t i = 0; i < curve.tokens.size(); ++i) {
    if (curve.tokens[i] < 1) ThrowInput("{}: tokens[{}]: must be >= 1", r.where(), i);
    if (i > 0 && curve.tokens[i] <= curve.tokens[i - 1]) {
      ThrowInput("{}: tokens[{}]: must be greater than tokens[{}]", r.where(), i, i - 1);
    }
    if (!(curve.time_ns[i] > 0 &&
          curve.time_ns[i] <= static_cast<double>(limits::kMaxDurationNs))) {
      ThrowInput("{}: time_ns[{}]: must be in (0, {}] (kMaxDurationNs, models/limits.h) (got {})",
                 r.where(), i, limits::kMaxDurationNs, curve.time_ns[i]);
    }
  }
  curve.context = ParseContextFit(r.Child("context"));
  return curve;
}

PassTable ParsePassTable(const JsonReader& r) {
  PassTable t;
  t.pass = ParsePass(r);
  t.block = ParseBlock(r);
  t.tp = static_cast<int>(r.OptionalInt("tp", 1, 1, limits::kMaxDevices, "kMaxDevices"));
  if (t.pass == Pass::kOptimizer) {
    r.RejectUnknown({"pass", "block", "tp", "time_ns_per_layer"});
    t.optimizer_ns_per_layer =
        r.RequireDoubleIn("time_ns_per_layer", 1e-9, static_cast<double>(limits::kMaxDurationNs));
    return t;
  }
  r.RejectUnknown({"pass", "block", "tp", "rows"});
  const nlohmann::json& rows = r.RequireArray("rows");
  if (rows.empty()) ThrowInput("{}: rows: must not be empty", r.where());
  for (size_t j = 0; j < rows.size(); ++j) {
    t.curves.push_back(ParseCurve(JsonReader::Element(rows, j, r.where(), "rows")));
    if (j > 0 && t.curves[j].rows <= t.curves[j - 1].rows) {
      ThrowInput("{}: rows[{}]: rows: must be greater than rows[{}]'s", r.where(), j, j - 1);
    }
  }
  return t;
}

// Linear interpolation in tokens, linear extrapolation along the end segments.
double CurveBaseNs(const RowsCurve& curve, double tokens) {
  const auto& x = curve.tokens;
  const auto& y = curve.time_ns;
  size_t i = std::upper_bound(x.begin(), x.end(), tokens) - x.begin();
  i = std::clamp<size_t>(i, 1, x.size() - 1);  // segment [i-1, i]
  const double slope = (y[i] - y[i - 1]) / (x[i] - x[i - 1]);
  return y[i - 1] + slope * (tokens - x[i - 1]);
}

double CurveNs(const RowsCurve& curve, double tokens, double context) {
  double ns = CurveBaseNs(curve, tokens);
  if (context > 0) ns += curve.context.Ns(tokens, context);
  return ns;
}

}  // namespace

const char* PassName(Pass pass) {
  switch (pass) {
    case Pass::kForward:
      return "forward";
    case Pass::kBackward:
      return "backward";
    case Pass::kBackwardInput:
      return "backward_input";
    case Pass::kBackwardWeight:
      return "backward_weight";
    case Pass::kOptimizer:
      return "optimizer";
  }
  return "?";
}

const char* BlockName(Block block) {
  switch (block) {
    case Block::kWhole:
      return "whole";
    case Block::kAttention:
      return "attn";
    case Block::kMlp:
      return "mlp";
  }
  return "?";
}

CalibrationTable ParseCalibrationTable(const std::string& json_text, const std::string& origin) {
  nlohmann::json doc = ParseJson(json_text, origin);
  JsonReader r(doc, origin);
  r.RejectUnknown({"format", "version", "device", "model", "source", "tables", "speed_factors"});
  if (r.RequireString("format") != "terasim-calibration") {
    ThrowInput("{}: format: must be \"terasim-calibration\"", origin);
  }
  if (const int64_t version = r.RequireInt("version"); version != 1) {
    ThrowInput("{}: version: {} is not supported (this build reads version 1)", origin, version);
  }
  CalibrationTable table;
  table.device = r.RequireString("device");
  table.model = r.RequireString("model");
  table.source = r.RequireString("source");
  table.origin = origin;
  const nlohmann::json& tables = r.RequireArray("tables");
  for (size_t i = 0; i < tables.size(); ++i) {
    JsonReader entry = JsonReader::Element(tables, i, origin, "tables");
    PassTable t = ParsePassTable(entry);
    for (const PassTable& earlier : table.tables) {
      if (earlier.pass == t.pass && earlier.block == t.block && earlier.tp == t.tp) {
        ThrowInput("{}: pass: a second table for pass {} block {} tp {}", entry.where(),
                   PassName(t.pass), BlockName(t.block), t.tp);
      }
    }
    table.tables.push_back(std::move(t));
  }
  if (r.Has("speed_factors")) {
    const nlohmann::json& rounds = r.RequireArray("speed_factors");
    for (size_t i = 0; i < rounds.size(); ++i) {
      const std::string where = fmt::format("{}: speed_factors[{}]", origin, i);
      if (!rounds[i].is_array() || rounds[i].empty()) {
        ThrowInput("{}: must be a non-empty array (one factor per thread)", where);
      }
      std::vector<double> row;
      for (size_t t = 0; t < rounds[i].size(); ++t) {
        if (!rounds[i][t].is_number() || !std::isfinite(rounds[i][t].get<double>()) ||
            !(rounds[i][t].get<double>() > 0)) {
          ThrowInput("{}[{}]: must be a number > 0", where, t);
        }
        row.push_back(rounds[i][t].get<double>());
      }
      if (i > 0 && row.size() != table.speed_factors[0].size()) {
        ThrowInput("{}: has {} factors, speed_factors[0] {}", where, row.size(),
                   table.speed_factors[0].size());
      }
      table.speed_factors.push_back(std::move(row));
    }
  }
  return table;
}

CalibrationTable LoadCalibrationTable(const std::string& path) {
  return ParseCalibrationTable(ReadTextFile(path), path);
}

CalibratedCostModel::CalibratedCostModel(CalibrationTable table, const ComputeCostModel* fallback)
    : table_(std::move(table)), fallback_(fallback) {}

std::string CalibratedCostModel::Name() const { return "calib " + table_.origin; }

const PassTable* CalibratedCostModel::Find(Pass pass, Block block, int tp) const {
  for (const PassTable& t : table_.tables) {
    if (t.pass == pass && t.block == block && t.tp == tp) return &t;
  }
  return nullptr;
}

double CalibratedCostModel::LayerNs(const PassTable& table, const SliceWork& work) const {
  if (table.pass == Pass::kOptimizer) return table.optimizer_ns_per_layer;
  const auto& curves = table.curves;
  const double tokens = static_cast<double>(work.tokens);
  const double context = static_cast<double>(work.context);
  const int rows = work.rows;
  if (rows <= curves.front().rows || rows >= curves.back().rows) {
    const RowsCurve& nearest = rows <= curves.front().rows ? curves.front() : curves.back();
    const double equivalent = tokens * rows / nearest.rows;
    return CurveNs(nearest, equivalent, context);
  }
  size_t i = 1;
  while (curves[i].rows < rows) ++i;  // curves[i-1].rows < rows <= curves[i].rows
  const RowsCurve& lo = curves[i - 1];
  const RowsCurve& hi = curves[i];
  const double w = static_cast<double>(rows - lo.rows) / (hi.rows - lo.rows);
  return (1 - w) * CurveNs(lo, tokens, context) + w * CurveNs(hi, tokens, context);
}

TimeNs CalibratedCostModel::Time(const SliceWork& work) const {
  TERASIM_CHECK(
      work.layers >= 1 && work.rows >= 1 && work.tokens >= 0 && work.context >= 0 && work.tp >= 1,
      "bad SliceWork: layers {} rows {} tokens {} context {} tp {}", work.layers, work.rows,
      work.tokens, work.context, work.tp);
  double layer_ns = 0;
  if (const PassTable* t = Find(work.pass, work.block, work.tp)) {
    layer_ns = std::max(1.0, LayerNs(*t, work));
  } else if (const PassTable* input = Find(Pass::kBackwardInput, work.block, work.tp),
             *weight = Find(Pass::kBackwardWeight, work.block, work.tp);
             work.pass == Pass::kBackward && input != nullptr && weight != nullptr) {
    layer_ns = std::max(1.0, LayerNs(*input, work)) + std::max(1.0, LayerNs(*weight, work));
  } else if (fallback_ != nullptr) {
    return fallback_->Time(work);
  } else {
    ThrowInput("{}: no table for pass {} block {} tp {}", table_.origin, PassName(work.pass),
               BlockName(work.block), work.tp);
  }
  const double total_ns = layer_ns * work.layers;
  // A table whose numbers are each in range can still extrapolate past any real duration
  // (huge coefficients times a long context): refuse it rather than wrap or clamp.
  if (!(total_ns <= static_cast<double>(limits::kMaxDurationNs))) {
    ThrowInput(
        "{}: pass {} block {} tp {}: {} layers of {} rows x {} tokens after {} give {} ns, "
        "beyond the limit {} (kMaxDurationNs, models/limits.h)",
        table_.origin, PassName(work.pass), BlockName(work.block), work.tp, work.layers, work.rows,
        work.tokens, work.context, total_ns, limits::kMaxDurationNs);
  }
  return std::max<TimeNs>(1, std::llround(total_ns));
}

}  // namespace terasim
