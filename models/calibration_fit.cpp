#include "models/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "models/errors.h"

namespace terasim {
namespace {

double Median(std::vector<double> values) {
  TERASIM_CHECK(!values.empty(), "median of nothing");
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Solves the normal equations of the columns in `active` (scaled to unit max); returns false
// and the column to drop when the system is singular.
bool SolveActive(const std::vector<std::vector<double>>& columns, const std::vector<double>& y,
                 const std::vector<int>& active, std::vector<double>& coefficients, int& drop) {
  const size_t k = active.size();
  std::vector<double> scale(k, 1);
  for (size_t a = 0; a < k; ++a) {
    double m = 0;
    for (double v : columns[active[a]]) m = std::max(m, std::abs(v));
    scale[a] = m > 0 ? m : 1;
  }
  // Augmented matrix [X^T X | X^T y] of the scaled columns.
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0));
  for (size_t i = 0; i < y.size(); ++i) {
    for (size_t a = 0; a < k; ++a) {
      const double xa = columns[active[a]][i] / scale[a];
      for (size_t b = 0; b < k; ++b) m[a][b] += xa * columns[active[b]][i] / scale[b];
      m[a][k] += xa * y[i];
    }
  }
  double max_diag = 0;
  for (size_t a = 0; a < k; ++a) max_diag = std::max(max_diag, m[a][a]);
  std::vector<int> order(k);
  for (size_t a = 0; a < k; ++a) order[a] = static_cast<int>(a);
  for (size_t p = 0; p < k; ++p) {
    size_t best = p;
    for (size_t r = p + 1; r < k; ++r) {
      if (std::abs(m[r][p]) > std::abs(m[best][p])) best = r;
    }
    if (std::abs(m[best][p]) <= 1e-10 * std::max(max_diag, 1e-300)) {
      drop = active[p];
      return false;
    }
    std::swap(m[p], m[best]);
    for (size_t r = 0; r < k; ++r) {
      if (r == p) continue;
      const double f = m[r][p] / m[p][p];
      for (size_t c = p; c <= k; ++c) m[r][c] -= f * m[p][c];
    }
  }
  coefficients.assign(4, 0);
  for (size_t a = 0; a < k; ++a) coefficients[active[a]] = m[a][k] / m[a][a] / scale[a];
  return true;
}

nlohmann::json ContextJson(const ContextFit& f) {
  return {{"a0", f.a0},        {"a1", f.a1}, {"a2", f.a2},
          {"a3", f.a3},        {"r2", f.r2}, {"max_rel_error", f.max_rel_error},
          {"points", f.points}};
}

}  // namespace

ContextFit FitContextTerm(const std::vector<double>& tokens, const std::vector<double>& context,
                          const std::vector<double>& extra_ns) {
  TERASIM_CHECK(tokens.size() == context.size() && tokens.size() == extra_ns.size(),
                "FitContextTerm: {} tokens, {} contexts, {} times", tokens.size(), context.size(),
                extra_ns.size());
  ContextFit fit;
  fit.points = static_cast<int>(extra_ns.size());
  if (extra_ns.empty()) return fit;
  std::vector<std::vector<double>> columns(4);
  for (size_t i = 0; i < extra_ns.size(); ++i) {
    columns[0].push_back(1);
    columns[1].push_back(tokens[i]);
    columns[2].push_back(context[i]);
    columns[3].push_back(tokens[i] * context[i]);
  }
  std::vector<int> active = {0, 1, 2, 3};
  // Fewer points than columns: keep the first ones (constant, then l, c, l c).
  while (active.size() > extra_ns.size()) active.pop_back();
  std::vector<double> a;
  int drop = -1;
  while (!active.empty() && !SolveActive(columns, extra_ns, active, a, drop)) {
    active.erase(std::find(active.begin(), active.end(), drop));
  }
  if (active.empty()) a.assign(4, 0);
  fit.a0 = a[0];
  fit.a1 = a[1];
  fit.a2 = a[2];
  fit.a3 = a[3];
  double mean = 0;
  for (double v : extra_ns) mean += v / extra_ns.size();
  double ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < extra_ns.size(); ++i) {
    const double r = extra_ns[i] - fit.Ns(tokens[i], context[i]);
    ss_res += r * r;
    ss_tot += (extra_ns[i] - mean) * (extra_ns[i] - mean);
  }
  fit.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : (ss_res == 0 ? 1 : 0);
  return fit;
}

CalibrationTable FitCalibration(const std::vector<ProfilePoint>& points, const std::string& device,
                                const std::string& model, const std::string& source) {
  if (points.empty()) ThrowInput("calibrate: no measurements");
  CalibrationTable table;
  table.device = device;
  table.model = model;
  table.source = source;
  // pass -> rows -> (tokens, context) -> times.
  std::map<Pass, std::map<int, std::map<std::pair<int64_t, int64_t>, std::vector<double>>>> grid;
  std::vector<double> optimizer;
  for (const ProfilePoint& p : points) {
    TERASIM_CHECK(p.time_ns > 0, "a measured time must be > 0 (got {})", p.time_ns);
    if (p.pass == Pass::kOptimizer) {
      optimizer.push_back(p.time_ns);
    } else {
      grid[p.pass][p.rows][{p.tokens, p.context}].push_back(p.time_ns);
    }
  }
  for (const auto& [pass, by_rows] : grid) {
    PassTable t;
    t.pass = pass;
    for (const auto& [rows, cells] : by_rows) {
      RowsCurve curve;
      curve.rows = rows;
      for (const auto& [lc, times] : cells) {
        if (lc.second != 0) continue;
        curve.tokens.push_back(static_cast<double>(lc.first));
        curve.time_ns.push_back(Median(times));
      }
      if (curve.tokens.size() < 2) {
        ThrowInput(
            "calibrate: pass {} rows {}: needs at least 2 slice lengths measured with "
            "context 0 (got {})",
            PassName(pass), rows, curve.tokens.size());
      }
      // The base curve as CalibratedCostModel evaluates it (no context term yet).
      PassTable probe;
      probe.pass = pass;
      RowsCurve base = curve;
      base.context = ContextFit{};
      probe.curves = {base};
      CalibrationTable probe_table;
      probe_table.tables = {probe};
      const CalibratedCostModel base_model(probe_table);
      auto base_ns = [&](double tokens) {
        SliceWork w;
        w.pass = probe.pass;  // not the bindings: clang before 16 cannot capture those
        w.rows = base.rows;
        w.tokens = static_cast<int64_t>(tokens);
        return static_cast<double>(base_model.Time(w));
      };
      std::vector<double> ls, cs, extra, totals;
      for (const auto& [lc, times] : cells) {
        if (lc.second == 0) continue;
        const double total = Median(times);
        ls.push_back(static_cast<double>(lc.first));
        cs.push_back(static_cast<double>(lc.second));
        extra.push_back(total - base_ns(static_cast<double>(lc.first)));
        totals.push_back(total);
      }
      curve.context = FitContextTerm(ls, cs, extra);
      for (size_t i = 0; i < totals.size(); ++i) {
        const double fitted = base_ns(ls[i]) + curve.context.Ns(ls[i], cs[i]);
        curve.context.max_rel_error =
            std::max(curve.context.max_rel_error, std::abs(fitted - totals[i]) / totals[i]);
      }
      t.curves.push_back(std::move(curve));
    }
    table.tables.push_back(std::move(t));
  }
  if (!optimizer.empty()) {
    PassTable t;
    t.pass = Pass::kOptimizer;
    t.optimizer_ns_per_layer = Median(optimizer);
    table.tables.push_back(std::move(t));
  }
  table.speed_factors = SpeedFactors(points);
  return table;
}

std::vector<std::vector<double>> SpeedFactors(const std::vector<ProfilePoint>& points) {
  using Cell = std::tuple<Pass, int, int64_t, int64_t>;
  std::map<Cell, std::vector<double>> cells;
  std::map<std::pair<int, int>, std::vector<const ProfilePoint*>> groups;
  for (const ProfilePoint& p : points) {
    TERASIM_CHECK(p.round >= 0 && p.thread >= 0, "profile point of round {} thread {}", p.round,
                  p.thread);
    cells[{p.pass, p.rows, p.tokens, p.context}].push_back(p.time_ns);
    groups[{p.round, p.thread}].push_back(&p);
  }
  if (groups.size() < 2) return {};
  std::map<Cell, double> typical;
  for (const auto& [cell, times] : cells) typical[cell] = Median(times);
  int threads = 0;
  for (const auto& [group, members] : groups) threads = std::max(threads, group.second + 1);
  std::map<int, std::vector<double>> rounds;  // round -> factor per thread (0: not measured)
  for (const auto& [group, members] : groups) {
    std::vector<double> ratios;
    for (const ProfilePoint* p : members) {
      ratios.push_back(p->time_ns / typical.at({p->pass, p->rows, p->tokens, p->context}));
    }
    std::vector<double>& row = rounds[group.first];
    row.resize(threads, 0);
    row[group.second] = Median(ratios);
  }
  std::vector<std::vector<double>> factors;
  for (auto& [round, row] : rounds) {
    if (std::count(row.begin(), row.end(), 0.0) == 0) factors.push_back(std::move(row));
  }
  return factors;
}

std::string CalibrationJson(const CalibrationTable& table) {
  nlohmann::json tables = nlohmann::json::array();
  for (const PassTable& t : table.tables) {
    if (t.pass == Pass::kOptimizer) {
      tables.push_back({{"pass", PassName(t.pass)},
                        {"tp", t.tp},
                        {"time_ns_per_layer", t.optimizer_ns_per_layer}});
      continue;
    }
    nlohmann::json rows = nlohmann::json::array();
    for (const RowsCurve& c : t.curves) {
      rows.push_back({{"rows", c.rows},
                      {"tokens", c.tokens},
                      {"time_ns", c.time_ns},
                      {"context", ContextJson(c.context)}});
    }
    tables.push_back(
        {{"pass", PassName(t.pass)}, {"block", BlockName(t.block)}, {"tp", t.tp}, {"rows", rows}});
  }
  nlohmann::json doc = {{"format", "terasim-calibration"}, {"version", 1},
                        {"device", table.device},          {"model", table.model},
                        {"source", table.source},          {"tables", tables}};
  if (!table.speed_factors.empty()) doc["speed_factors"] = table.speed_factors;
  return doc.dump(2) + "\n";
}

}  // namespace terasim
