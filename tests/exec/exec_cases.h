// Shared by the executor tests: generator options for a global batch of kBatch sequences, and
// the comparison of gathered gradients against a reference run.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "exec/executor.h"
#include "schedule/generator.h"

namespace terasim::exec_cases {

inline constexpr int kBatch = 4;  // sequences per iteration, all replicas together

inline GenerateOptions Options(const std::string& model, Strategy strategy, int dp, int pp, int tp,
                               int microbatches) {
  GenerateOptions o;
  o.model = LoadModelCard(model);
  o.strategy = strategy;
  o.dp = dp;
  o.pp = pp;
  o.tp = tp;
  o.microbatches = microbatches;
  o.microbatch_size = kBatch / (dp * microbatches);
  return o;
}

// Every gathered gradient tensor within relative 1e-5 (in L2 norm) of the reference.
inline void CheckSameGradients(const ExecResult& got, const ExecResult& want) {
  REQUIRE(got.gradients.values.size() == want.gradients.values.size());
  for (const auto& [name, ref] : want.gradients.values) {
    INFO(name);
    REQUIRE(got.gradients.values.count(name) == 1);
    const auto& covered = got.gradients.covered.at(name);
    // Every element of every tensor was gathered from some device.
    CHECK(std::count(covered.begin(), covered.end(), 0) == 0);
    const auto& values = got.gradients.values.at(name);
    double diff = 0;
    double norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      diff += std::pow(static_cast<double>(values[i]) - ref[i], 2);
      norm += std::pow(static_cast<double>(ref[i]), 2);
    }
    // ||g - g_ref|| <= 1e-5 ||g_ref||
    CHECK(std::sqrt(diff) <= 1e-5 * std::sqrt(norm));
  }
}

}  // namespace terasim::exec_cases
