// Shared by the executor tests: generator options for a global batch of kBatch sequences, the
// comparison of gathered gradients against a reference run, and the one-device reference.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "exec/executor.h"
#include "schedule/checker.h"
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

inline constexpr int kIterations = 2;  // Run's: the second after an optimizer step

// kIterations iterations of `s` on the CPU back end with the in-process transport (seed 3).
inline ExecResult Run(const Schedule& s, const ModelCard& card) {
  ExecOptions options;
  options.iterations = kIterations;
  options.seed = 3;
  options.stall_timeout_s = 60;
  return ExecuteInProcess(s, card, options);
}

// One device, one micro-batch of the whole batch: the reference of every case.
inline const ExecResult& Reference(const std::string& model) {
  static std::map<std::string, ExecResult> references;
  if (references.count(model) == 0) {
    const GenerateOptions o = Options(model, Strategy::kGpipe, 1, 1, 1, 1);
    references[model] = Run(Generate(o), o.model);
  }
  return references.at(model);
}

// `o`'s schedule is valid and gives the reference's losses, gradient norm and gradients.
inline void CheckSameAsReference(const GenerateOptions& o) {
  const Schedule s = Generate(o);
  RequireValidSchedule(s);
  const ExecResult got = Run(s, o.model);
  const ExecResult& ref = Reference(o.model.name);
  REQUIRE(got.losses.size() == kIterations);
  for (int i = 0; i < kIterations; ++i) {
    INFO("iteration " << i);
    // The same model on the same data: equal up to fp32 rounding.
    CHECK(got.losses[i] == Approx(ref.losses[i]).epsilon(1e-5));
  }
  CHECK(got.grad_norm == Approx(ref.grad_norm).epsilon(1e-5));
  CheckSameGradients(got, ref);
}

}  // namespace terasim::exec_cases
