#include "schedule/schedule_ir.h"

#include <algorithm>

namespace terasim {

bool DeclaredSymmetry::Present(int device) const { return PresentImage(device) == device; }

int DeclaredSymmetry::PresentImage(int device) const {
  if (!representatives_only) return device;
  if (replica_block > 0) device %= replica_block;
  if (tp > 1 && !tp_set.empty()) {
    // The largest present rank not above the device's (0 is present).
    const int rank = device % tp;
    return device - rank + *(std::upper_bound(tp_set.begin(), tp_set.end(), rank) - 1);
  }
  if (tp > 1 && tp_ranks > 0) device -= device % tp - device % tp % tp_ranks;
  return device;
}

bool AfterOps::Fits(const std::vector<Op>& ops) const {
  const size_t n = ops.size();
  if (begin.size() != n + 1 || begin[0] != 0 || static_cast<size_t>(begin[n]) != op.size()) {
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    if (static_cast<size_t>(begin[i + 1] - begin[i]) != ops[i].after.size()) return false;
  }
  for (int j : op) {
    if (j < 0 || static_cast<size_t>(j) >= n) return false;
  }
  return true;
}

int Schedule::FindGroup(const std::string& name) const {
  // Called per op (memory estimates, the executor) over hundreds of groups whose names differ
  // mostly in their last characters ("tp.d0.s1", "tp.d0.s2"): the length and the last
  // character rule out nearly every other group before a full comparison.
  const size_t size = name.size();
  const char last = size > 0 ? name.back() : '\0';
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string& other = groups[i].name;
    if (other.size() != size || (size > 0 && other.back() != last)) continue;
    if (other == name) return static_cast<int>(i);
  }
  return -1;
}

int Schedule::FindOp(const std::string& key) const {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].key == key) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::vector<int>> Schedule::OpsByDevice() const {
  std::vector<std::vector<int>> by_device(devices > 0 ? devices : 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    int d = ops[i].device;
    if (d >= 0 && d < devices) by_device[d].push_back(static_cast<int>(i));
  }
  return by_device;
}

std::map<std::string, int> KeyIndex(const Schedule& schedule) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    index.emplace(schedule.ops[i].key, static_cast<int>(i));
  }
  return index;
}

}  // namespace terasim
