#include "tools/sweep/sweep_spec.h"

#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "models/json_reader.h"
#include "schedule/generator.h"
#include "sim/replay.h"

namespace terasim {

namespace {

const nlohmann::json* ArrayOf(const JsonReader& r, const std::string& key, bool required) {
  if (!r.Has(key)) {
    if (required) ThrowInput("{}: {}: missing", r.where(), key);
    return nullptr;
  }
  const nlohmann::json& array = r.RequireArray(key);
  if (array.empty()) ThrowInput("{}: {}: must not be empty", r.where(), key);
  return &array;
}

std::vector<std::string> Strings(const JsonReader& r, const std::string& key) {
  std::vector<std::string> out;
  const nlohmann::json& array = *ArrayOf(r, key, true);
  for (size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_string()) {
      ThrowInput("{}: {}[{}]: wrong type ({})", r.where(), key, i, array[i].dump());
    }
    out.push_back(array[i].get<std::string>());
  }
  return out;
}

// Whole numbers in [min, max]: 1.9 and 4294967297 are refused, not cut to 1.
std::vector<int> Ints(const JsonReader& r, const std::string& key, int64_t min, int64_t max) {
  std::vector<int> out;
  const nlohmann::json& array = *ArrayOf(r, key, true);
  for (size_t i = 0; i < array.size(); ++i) {
    const nlohmann::json& v = array[i];
    if (!v.is_number_integer()) {
      ThrowInput("{}: {}[{}]: {} is not a whole number", r.where(), key, i, v.dump());
    }
    const bool too_big =
        v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
    const int64_t value = too_big ? INT64_MAX : v.get<int64_t>();
    if (value < min || value > max) {
      ThrowInput("{}: {}[{}]: {} is out of range [{}, {}]", r.where(), key, i, v.dump(), min, max);
    }
    out.push_back(static_cast<int>(value));
  }
  return out;
}

std::vector<double> Doubles(const JsonReader& r, const std::string& key,
                            std::vector<double> fallback, bool latency) {
  const nlohmann::json* array = ArrayOf(r, key, false);
  if (array == nullptr) return fallback;
  std::vector<double> out;
  for (size_t i = 0; i < array->size(); ++i) {
    const nlohmann::json& v = (*array)[i];
    if (!v.is_number()) ThrowInput("{}: {}[{}]: wrong type ({})", r.where(), key, i, v.dump());
    const double d = v.get<double>();
    const bool ok = std::isfinite(d) && (d >= 0 || (latency && d == -1));
    if (!ok) {
      ThrowInput("{}: {}[{}]: {} must be finite and >= 0{}", r.where(), key, i, v.dump(),
                 latency ? " (or -1: the instance's own)" : " (0: the instance's own)");
    }
    out.push_back(d);
  }
  return out;
}

int Degree(const JsonReader& e, const std::string& key, int64_t fallback, int64_t min) {
  const int64_t v = e.OptionalInt(key, fallback, min);
  if (v > kMaxSweepDegree) {
    ThrowInput("{}: {}: {} is above the limit {}", e.where(), key, v, kMaxSweepDegree);
  }
  return static_cast<int>(v);
}

}  // namespace

int64_t SweepSpec::Points() const {
  int64_t n = 1;
  for (size_t size : {models.size(), instances.size(), counts.size(), nic_gbps.size(),
                      nic_latency_us.size(), batches.size(), strategies.size()}) {
    n *= static_cast<int64_t>(size);
    if (n > kMaxSweepPoints) return kMaxSweepPoints + 1;  // no overflow
  }
  return n;
}

SweepSpec ParseSweepSpecText(const std::string& text, const std::string& path) {
  const nlohmann::json doc = ParseJson(text, path);
  JsonReader r(doc, path);
  r.RejectUnknown({"models", "instances", "counts", "nic_gbps", "nic_latency_us", "batches",
                   "strategies", "network", "calib", "note"});
  SweepSpec s;
  s.models = Strings(r, "models");
  s.instances = Strings(r, "instances");
  s.counts = Ints(r, "counts", 1, kMaxSweepInstanceCount);
  s.batches = Ints(r, "batches", 1, kMaxSweepBatch);
  s.nic_gbps = Doubles(r, "nic_gbps", {0.0}, false);
  s.nic_latency_us = Doubles(r, "nic_latency_us", {-1.0}, true);
  s.network = r.OptionalString("network", "analytic");
  ParseNetworkMode(s.network);
  s.calib = r.OptionalString("calib", "");
  const nlohmann::json& strategies = r.RequireArray("strategies");
  if (strategies.empty()) ThrowInput("{}: strategies: must not be empty", path);
  for (size_t i = 0; i < strategies.size(); ++i) {
    JsonReader e = JsonReader::Element(strategies, i, path, "strategies");
    e.RejectUnknown({"strategy", "dp", "pp", "tp", "microbatch_size", "virtual_stages", "slices",
                     "order", "boundary"});
    StrategyPoint p;
    p.strategy = e.RequireString("strategy");
    ParseStrategy(p.strategy, e.where() + ": strategy");
    p.dp = Degree(e, "dp", 1, 1);
    p.pp = Degree(e, "pp", 1, 1);
    p.tp = Degree(e, "tp", 1, 1);
    p.microbatch_size = Degree(e, "microbatch_size", 1, 1);
    p.virtual_stages = Degree(e, "virtual_stages", 1, 1);
    p.slices = Degree(e, "slices", 0, 0);
    p.order = e.OptionalString("order", "flush");
    ParseSliceOrder(p.order, e.where() + ": order");
    p.boundary = e.OptionalString("boundary", "p2p");
    ParseBoundary(p.boundary, e.where() + ": boundary");
    s.strategies.push_back(p);
  }
  if (s.Points() > kMaxSweepPoints) {
    ThrowInput("{}: the grid has more than {} points; split the spec", path, kMaxSweepPoints);
  }
  return s;
}

SweepSpec ParseSweepSpec(const std::string& path) {
  return ParseSweepSpecText(ReadTextFile(path), path);
}

}  // namespace terasim
