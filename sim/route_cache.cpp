#include "sim/route_cache.h"

#include "models/errors.h"

namespace terasim {
namespace {

size_t SlotOf(int64_t pair, size_t mask) {
  auto h = static_cast<uint64_t>(pair) * 0x9E3779B97F4A7C15ULL;
  return static_cast<size_t>(h >> 32) & mask;
}

}  // namespace

RouteCache::RouteCache(const NetworkTopology& topology)
    : topology_(topology), num_gpus_(topology.NumGpus()), slots_(64) {}

const RouteCache::Entry& RouteCache::Get(int src_gpu, int dst_gpu) {
  TERASIM_CHECK(src_gpu >= 0 && src_gpu < num_gpus_ && dst_gpu >= 0 && dst_gpu < num_gpus_,
                "route {} -> {} outside {} GPUs", src_gpu, dst_gpu, num_gpus_);
  const int64_t pair = static_cast<int64_t>(src_gpu) * num_gpus_ + dst_gpu;
  const size_t mask = slots_.size() - 1;
  for (size_t i = SlotOf(pair, mask);; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.pair == pair) return entries_[slot.entry];
    if (slot.pair < 0) break;
  }
  return Fill(pair, src_gpu, dst_gpu);
}

const RouteCache::Entry& RouteCache::Fill(int64_t pair, int src_gpu, int dst_gpu) {
  if (2 * (entries_.size() + 1) > slots_.size()) Grow();
  Entry& entry = entries_.emplace_back();
  entry.links = topology_.Route(src_gpu, dst_gpu);
  const std::vector<NetLink>& links = topology_.Links();
  for (int link : entry.links) {
    TERASIM_CHECK(link >= 0 && link < static_cast<int>(links.size()), "route uses link {}", link);
    entry.latency_ns += links[link].latency_ns;
    const double bw = links[link].bw_bytes_per_s;
    if (entry.bottleneck_bw == 0 || bw < entry.bottleneck_bw) entry.bottleneck_bw = bw;
  }
  entry.filled = true;
  const size_t mask = slots_.size() - 1;
  size_t i = SlotOf(pair, mask);
  while (slots_[i].pair >= 0) i = (i + 1) & mask;
  slots_[i] = Slot{pair, static_cast<int32_t>(entries_.size() - 1)};
  return entry;
}

void RouteCache::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.pair < 0) continue;
    size_t i = SlotOf(slot.pair, mask);
    while (slots_[i].pair >= 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

}  // namespace terasim
