#include "sim/replay_stats.h"

#include <algorithm>

namespace terasim {

ReplayStats::ReplayStats(int num_devices, int num_links)
    : devices_(num_devices), link_bytes_(num_links, 0.0), owner_(num_links, kNoOwner) {}

std::vector<ReplayStats::DeviceTimes> ReplayStats::Devices(TimeNs iteration_ns) const {
  std::vector<DeviceTimes> times(devices_.size());
  for (size_t d = 0; d < devices_.size(); ++d) {
    times[d].compute_ns = devices_[d].compute.total_ns;
    times[d].comm_ns = devices_[d].any.total_ns - times[d].compute_ns;
    times[d].idle_ns = std::max<TimeNs>(0, iteration_ns - times[d].compute_ns - times[d].comm_ns);
  }
  return times;
}

bool ReplayStats::AllWhole(const std::vector<std::pair<int, double>>& list, double* total) {
  bool whole = true;
  *total = 0;
  for (const auto& [link, b] : list) {
    whole = whole && Whole(b);
    *total += b;  // exact while whole: whole numbers below 2^53
  }
  return whole;
}

void ReplayStats::AddWhileExact(const std::vector<std::pair<int, double>>& list) {
  double total = 0;
  if (!AllWhole(list, &total) || bound_ + total >= kExactBelow) LeaveExact();
  bound_ += total;
  double* const bytes = link_bytes_.data();
  for (const auto& [link, b] : list) bytes[link] += b;
}

void ReplayStats::RepeatSlow(int number, const std::vector<std::pair<int, double>>& list) {
  if (number < 0) {
    // Not a numbered list (a route whose list was never built: its first transfer's size was
    // the "none yet" mark): added as it is, never counted.
    OnLinkBytesList(list);
    return;
  }
  double total = 0;
  if (exact_ && AllWhole(list, &total) && bound_ + total < kExactBelow) {
    if (static_cast<size_t>(number) >= repeated_.size()) repeated_.resize(number + 1);
    Repeated& r = repeated_[number];
    if (r.times == 0) {
      r.list = list;
      r.total = total;
    }
    bound_ += total;
    ++r.times;
    return;
  }
  if (exact_) LeaveExact();
  OnLinkBytesRepeat(number, list);
}

void ReplayStats::FirstSend(int number, const std::vector<std::pair<int, double>>& list) {
  if (number < 0) {
    AddShared(-1, list);
    return;
  }
  if (static_cast<size_t>(number) >= sends_.size()) {
    sends_.resize(number + 1, 0);
    counted_.resize(number + 1);
  }
  // Its own while no other list holds one of its links (a link may repeat in it).
  bool own = true;
  for (const auto& [link, b] : list) {
    if (owner_[link] != kNoOwner && owner_[link] != number) {
      own = false;
      break;
    }
    owner_[link] = number;
  }
  if (own) {
    sends_[number] = 1;
    // Each link's pairs together, in their order in the list (Flush adds them per link).
    std::vector<std::pair<int, double>>& counted = counted_[number];
    counted = list;
    std::stable_sort(counted.begin(), counted.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    return;
  }
  sends_[number] = kShared;
  AddShared(number, list);
}

void ReplayStats::AddShared(int number, const std::vector<std::pair<int, double>>& list) {
  for (const auto& [link, b] : list) {
    const int owner = owner_[link];
    if (owner >= 0 && owner != number) Flush(owner);
    owner_[link] = kSharedLink;
  }
  double* const bytes = link_bytes_.data();
  for (const auto& [link, b] : list) bytes[link] += b;
}

double ReplayStats::AddInOrder(double sum, const std::pair<int, double>* pairs, int n,
                               int64_t times) {
  // One add at a time, in order (never reassociated): a link's pairs are one or two (a folded
  // link's images) nearly always, whose loops are unrolled.
  int64_t k = 0;
  if (n == 1) {
    const double b = pairs[0].second;
    for (; k + 4 <= times; k += 4) {
      sum += b;
      sum += b;
      sum += b;
      sum += b;
    }
    for (; k < times; ++k) sum += b;
  } else if (n == 2) {
    const double b0 = pairs[0].second;
    const double b1 = pairs[1].second;
    for (; k + 2 <= times; k += 2) {
      sum += b0;
      sum += b1;
      sum += b0;
      sum += b1;
    }
    for (; k < times; ++k) {
      sum += b0;
      sum += b1;
    }
  } else {
    for (; k < times; ++k) {
      for (int j = 0; j < n; ++j) sum += pairs[j].second;
    }
  }
  return sum;
}

void ReplayStats::Flush(int number) {
  const int64_t sends = sends_[number];
  sends_[number] = kShared;
  double* const bytes = link_bytes_.data();
  const std::vector<std::pair<int, double>>& counted = counted_[number];
  for (size_t begin = 0, end = 0; begin < counted.size(); begin = end) {
    // The sends' adds on this link in a row (nothing else added to it since the first): each
    // send adds the link's counts in their order in the list.
    const int link = counted[begin].first;
    while (end < counted.size() && counted[end].first == link) ++end;
    bytes[link] = AddInOrder(bytes[link], &counted[begin], static_cast<int>(end - begin), sends);
    owner_[link] = kSharedLink;
  }
  counted_[number] = {};
}

void ReplayStats::AddRepeated() {
  double* const bytes = link_bytes_.data();
  for (Repeated& r : repeated_) {
    if (r.times == 0) continue;
    const auto times = static_cast<double>(r.times);
    for (const auto& [link, b] : r.list) bytes[link] += b * times;
    r.times = 0;
  }
}

void ReplayStats::LeaveExact() {
  AddRepeated();
  repeated_.clear();
  exact_ = false;
}

const std::vector<double>& ReplayStats::LinkBytes() {
  AddRepeated();
  for (size_t number = 0; number < sends_.size(); ++number) {
    if (sends_[number] > 0) Flush(static_cast<int>(number));
  }
  return link_bytes_;
}

}  // namespace terasim
