#include "sim/fold_permutations.h"

#include <functional>
#include <set>

namespace terasim {
namespace {

// The cycle lengths of p are all equal (and p is not the identity).
bool Semiregular(const Permutation& p) {
  const int n = static_cast<int>(p.size());
  int length = 0;
  std::vector<bool> seen(n, false);
  for (int i = 0; i < n; ++i) {
    if (seen[i]) continue;
    int len = 0;
    for (int j = i; !seen[j]; j = p[j]) {
      seen[j] = true;
      ++len;
    }
    if (length == 0) length = len;
    if (len != length) return false;
  }
  return length > 1;
}

}  // namespace

std::vector<Permutation> SemiregularAutomorphisms(const std::vector<int>& color,
                                                  const std::vector<std::vector<int>>& pair,
                                                  size_t limit, size_t max_visits) {
  const int n = static_cast<int>(color.size());
  std::vector<Permutation> found;
  Permutation tau(n, -1);
  std::vector<bool> used(n, false);
  size_t visits = 0;
  // Assigns tau[i] for i = 0, 1, ...; a fixed point is never semiregular (n > 1).
  std::function<void(int)> assign = [&](int i) {
    if (found.size() >= limit || visits >= max_visits) return;
    ++visits;
    if (i == n) {
      if (Semiregular(tau)) found.push_back(tau);
      return;
    }
    for (int v = 0; v < n; ++v) {
      if (used[v] || v == i || color[v] != color[i]) continue;
      bool keeps = pair[i][i] == pair[v][v];
      for (int j = 0; j < i && keeps; ++j) {
        keeps = pair[i][j] == pair[v][tau[j]] && pair[j][i] == pair[tau[j]][v];
      }
      if (!keeps) continue;
      tau[i] = v;
      used[v] = true;
      assign(i + 1);
      used[v] = false;
      tau[i] = -1;
    }
  };
  if (n > 1) assign(0);
  return found;
}

std::vector<Permutation> GeneratedGroup(const std::vector<Permutation>& generators,
                                        size_t max_order) {
  if (generators.empty()) return {};
  const int n = static_cast<int>(generators.front().size());
  Permutation identity(n);
  for (int i = 0; i < n; ++i) identity[i] = i;
  std::vector<Permutation> group{identity};
  std::set<Permutation> seen{identity};
  for (size_t e = 0; e < group.size(); ++e) {
    for (const Permutation& gen : generators) {
      Permutation next(n);
      for (int i = 0; i < n; ++i) next[i] = gen[group[e][i]];
      if (!seen.insert(next).second) continue;
      group.push_back(std::move(next));
      if (group.size() > max_order) return {};
    }
  }
  return group;
}

bool ActsFreely(const std::vector<Permutation>& group) {
  for (const Permutation& p : group) {
    int fixed = 0;
    for (size_t i = 0; i < p.size(); ++i) fixed += p[i] == static_cast<int>(i) ? 1 : 0;
    if (fixed != 0 && fixed != static_cast<int>(p.size())) return false;
  }
  return true;
}

std::vector<int> LargestFreeGroup(const std::vector<Permutation>& candidates, size_t max_order) {
  std::vector<int> best;
  size_t best_order = 1;
  const int count = static_cast<int>(candidates.size());
  for (int first = 0; first < count; ++first) {
    std::vector<int> chosen{first};
    std::vector<Permutation> gens{candidates[first]};
    std::vector<Permutation> group = GeneratedGroup(gens, max_order);
    if (group.size() < 2 || !ActsFreely(group)) continue;
    for (int next = first + 1; next < count; ++next) {
      gens.push_back(candidates[next]);
      std::vector<Permutation> grown = GeneratedGroup(gens, max_order);
      if (grown.size() > group.size() && ActsFreely(grown)) {
        chosen.push_back(next);
        group = std::move(grown);
      } else {
        gens.pop_back();
      }
    }
    if (group.size() > best_order) {
      best_order = group.size();
      best = chosen;
    }
  }
  return best;
}

}  // namespace terasim
