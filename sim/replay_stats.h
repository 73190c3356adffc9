// ReplayStats: per-device busy / communication / idle time and per-link bytes of a replay.
//
// Per device: compute = time with at least one compute op running; communication = time with
// data of one of its communication ops moving and no compute running (exposed
// communication); idle = the rest of the iteration (the pipeline bubble, plus waiting). The
// three add up to the iteration time.
//
// Counted as the replay runs (calls come in simulated-time order): per device, how many
// compute ops run and how many ops compute or move data; a count leaving 0 opens a busy span,
// returning to 0 closes it. That is the length of the union of the ops' intervals, without
// keeping one interval per op. The replay feeds it directly (Replay::SetStats), not through
// the ReplayObserver loop: each call carries the op's device and whether it computes, which the
// replay has in hand, so the stats keep nothing per op. Not thread-safe.
//
// Link bytes are sums of doubles, added per link in the order the lists are sent. Two ways keep
// that exact without a pass over a repeated list's links at every send: while every count is
// a whole number (the sums exact, their order free), repeated lists are only counted; after
// that, a numbered list whose links no other list has touched since it was first sent (a
// collective group's own links) is only counted too, and its count's adds are made in a row on
// each of its links when another list first touches one of them, or when LinkBytes is read:
// on each link the same adds in the same order as at each send.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/units.h"

namespace terasim {

class ReplayStats {
 public:
  struct DeviceTimes {
    TimeNs compute_ns = 0;
    TimeNs comm_ns = 0;  // exposed: communicating while not computing
    TimeNs idle_ns = 0;
  };

  // `num_devices` schedule devices; `num_links` sizes the per-link byte counters.
  ReplayStats(int num_devices, int num_links);

  // A compute op of `device` starts (its work runs from now).
  void OnComputeStart(int device, TimeNs now_ns) {
    Device& d = devices_[device];
    d.compute.Enter(now_ns);
    d.any.Enter(now_ns);
  }
  // The data of a communication op of `device` begins to move.
  void OnCommStart(int device, TimeNs now_ns) { devices_[device].any.Enter(now_ns); }
  // An op of `device` ends: a compute op, or a communication op whose data moved.
  void OnOpEnd(int device, bool compute, TimeNs end_ns) {
    Device& d = devices_[device];
    if (compute) d.compute.Leave(end_ns);
    d.any.Leave(end_ns);
  }
  // (link, bytes) pairs sent together: each link's counter grows by its bytes, in order.
  void OnLinkBytesList(const std::vector<std::pair<int, double>>& list) {
    if (exact_) {
      AddWhileExact(list);
      return;
    }
    AddShared(-1, list);
  }
  // OnLinkBytesList(list) for a list that is sent many times, numbered `number` (0, 1, ...; the
  // same number always with the same list). While every byte count added is a whole number and
  // their sum stays below 2^53, each add is exact and the order of adds does not matter: the
  // list is then only counted (once per call instead of once per link), its sums added when
  // LinkBytes() is read, or earlier, when a count that is not whole would end that.
  void OnLinkBytesRepeat(int number, const std::vector<std::pair<int, double>>& list) {
    if (!exact_) {
      if (static_cast<std::size_t>(number) < sends_.size()) {
        int64_t& sends = sends_[number];
        if (sends > 0) {  // its links are its own: counted
          ++sends;
          return;
        }
        if (sends == kShared) {  // its links are kSharedLink: added now
          double* const bytes = link_bytes_.data();
          for (const auto& [link, b] : list) bytes[link] += b;
          return;
        }
      }
      FirstSend(number, list);
      return;
    }
    if (static_cast<std::size_t>(number) < repeated_.size()) {
      Repeated& r = repeated_[number];
      if (r.times > 0 && bound_ + r.total < kExactBelow) {
        bound_ += r.total;
        ++r.times;
        return;
      }
    }
    RepeatSlow(number, list);
  }

  // Times of each schedule device over an iteration of `iteration_ns` (every op ended).
  std::vector<DeviceTimes> Devices(TimeNs iteration_ns) const;
  // Bytes sent over each link (adds the counted lists' bytes first).
  const std::vector<double>& LinkBytes();

 private:
  // Integers below this are doubles exactly, and so are sums of them that stay below it.
  static constexpr double kExactBelow = 9007199254740992.0;  // 2^53
  static bool Whole(double b) {
    return b >= 0 && b < kExactBelow && b == static_cast<double>(static_cast<int64_t>(b));
  }
  // A list counted while exact_: its pairs, the sum of its bytes, and how many times it was sent
  // since its bytes were last added to link_bytes_.
  struct Repeated {
    std::vector<std::pair<int, double>> list;
    double total = 0;
    int64_t times = 0;
  };
  void RepeatSlow(int number, const std::vector<std::pair<int, double>>& list);
  // After counting whole numbers (exact_ false): the first send of list `number` (or any send of
  // an unnumbered one, number < 0). Counted when no other list touched its links, else added
  // now, as shared.
  void FirstSend(int number, const std::vector<std::pair<int, double>>& list);
  // Adds `list` now, its links shared from here on: first the counted adds of each list that
  // holds one of them (Flush). `number`: the list's own number (its links may name it), or -1.
  void AddShared(int number, const std::vector<std::pair<int, double>>& list);
  // Adds the counted sends of list `number`, each link's in a row, and shares its links.
  void Flush(int number);
  // `sum` plus the n pairs' bytes in order, `times` times over, one add at a time.
  static double AddInOrder(double sum, const std::pair<int, double>* pairs, int n, int64_t times);
  // OnLinkBytesList while exact_ (which it may end).
  void AddWhileExact(const std::vector<std::pair<int, double>>& list);
  // Whether each of `list`'s byte counts is Whole; `total`: their sum.
  static bool AllWhole(const std::vector<std::pair<int, double>>& list, double* total);
  // Adds the counted lists' bytes to link_bytes_ (exact: whole numbers below 2^53).
  void AddRepeated();
  // From here on every list is added link by link, in order.
  void LeaveExact();
  // A count of running things and the union of the time it was above 0.
  struct Busy {
    int running = 0;
    TimeNs since_ns = 0;
    TimeNs total_ns = 0;
    void Enter(TimeNs now_ns) {
      if (running++ == 0) since_ns = now_ns;
    }
    void Leave(TimeNs now_ns) {
      if (--running == 0) total_ns += now_ns - since_ns;
    }
  };
  struct Device {
    Busy compute;  // compute ops
    Busy any;      // compute ops and communication ops whose data moves
  };
  std::vector<Device> devices_;
  std::vector<double> link_bytes_;
  // Whether every byte count added so far is a whole number and bound_, their sum (so a bound
  // on every link's sum), is below 2^53.
  bool exact_ = true;
  double bound_ = 0;
  std::vector<Repeated> repeated_;  // by list number, while exact_
  // After exact_: per list number, its counted sends (> 0), kShared (added at each send) or 0
  // (not sent yet); the counted lists' pairs; per link, the counted list that holds it,
  // kNoOwner or kSharedLink (added to at once, by lists or by unnumbered sends).
  static constexpr int64_t kShared = -1;
  static constexpr int kNoOwner = -1;
  static constexpr int kSharedLink = -2;
  std::vector<int64_t> sends_;
  std::vector<std::vector<std::pair<int, double>>> counted_;
  std::vector<int> owner_;
};

}  // namespace terasim
