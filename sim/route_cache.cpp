#include "sim/route_cache.h"

#include "models/errors.h"

namespace terasim {

RouteCache::RouteCache(const NetworkTopology& topology)
    : topology_(topology), num_gpus_(topology.NumGpus()) {}

const RouteCache::Entry& RouteCache::Get(int src_gpu, int dst_gpu) {
  TERASIM_CHECK(src_gpu >= 0 && src_gpu < num_gpus_ && dst_gpu >= 0 && dst_gpu < num_gpus_,
                "route {} -> {} outside {} GPUs", src_gpu, dst_gpu, num_gpus_);
  Entry& entry = entries_[static_cast<int64_t>(src_gpu) * num_gpus_ + dst_gpu];
  if (!entry.filled) {
    entry.links = topology_.Route(src_gpu, dst_gpu);
    const std::vector<NetLink>& links = topology_.Links();
    for (int link : entry.links) {
      TERASIM_CHECK(link >= 0 && link < static_cast<int>(links.size()), "route uses link {}", link);
      entry.latency_ns += links[link].latency_ns;
      const double bw = links[link].bw_bytes_per_s;
      if (entry.bottleneck_bw == 0 || bw < entry.bottleneck_bw) entry.bottleneck_bw = bw;
    }
    entry.filled = true;
  }
  return entry;
}

}  // namespace terasim
