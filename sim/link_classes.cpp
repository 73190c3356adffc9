#include "sim/link_classes.h"

#include <algorithm>

#include <fmt/format.h>

namespace terasim {

std::string FoldLinkClasses(const NetworkTopology& topology, RouteCache& routes,
                            const std::vector<std::pair<int, int>>& transfers,
                            const std::vector<const std::vector<int>*>& gpus,
                            std::vector<int>* link_rep_out, std::vector<int>* link_mult_out) {
  std::vector<int>& link_rep = *link_rep_out;
  std::vector<int>& link_mult = *link_mult_out;
  const std::vector<NetLink>& links = topology.Links();
  const int num_links = static_cast<int>(links.size());
  const int order = static_cast<int>(gpus.size());
  // Union-find, the lowest link of a class at its root.
  std::vector<int> parent(num_links);
  for (int l = 0; l < num_links; ++l) parent[l] = l;
  const auto root = [&](int l) {
    while (parent[l] != l) l = parent[l] = parent[parent[l]];
    return l;
  };
  // One transfer per orbit: `gpus` is a group, so the images of an image g(t) of transfer t
  // are t's images; their routes join the same links and load them alike. Transfers that are
  // images of an earlier one (`transfers` is sorted) are skipped.
  const int num_transfers = static_cast<int>(transfers.size());
  // Per GPU a: the transfers from a are transfers[first[a], first[a + 1]) (sorted by their
  // destination), where an image is looked up.
  const int num_gpus = topology.NumGpus();
  std::vector<int> first(num_gpus + 1, 0);
  for (const auto& [a, b] : transfers) ++first[a + 1];
  for (int a = 0; a < num_gpus; ++a) first[a + 1] += first[a];
  std::vector<char> covered(num_transfers, 0);
  std::vector<int> orbit_reps;
  std::vector<const std::vector<int>*> images;  // per orbit representative, its order routes
  for (int t = 0; t < num_transfers; ++t) {
    if (covered[t]) continue;
    orbit_reps.push_back(t);
    const auto [a, b] = transfers[t];
    const std::vector<int>& from = routes.Get(a, b).links;
    for (const std::vector<int>* gpu : gpus) {
      const std::pair<int, int> image{(*gpu)[a], (*gpu)[b]};
      for (int u = first[image.first]; u < first[image.first + 1]; ++u) {
        if (transfers[u].second < image.second) continue;
        if (transfers[u].second == image.second) covered[u] = 1;
        break;
      }
      const std::vector<int>& to = routes.Get(image.first, image.second).links;
      images.push_back(&to);
      if (&to == &from) continue;  // the transfer itself (its route joins nothing)
      if (from.size() != to.size()) {
        return fmt::format("routes GPU {} -> {} and GPU {} -> {} differ in length", a, b,
                           image.first, image.second);
      }
      for (size_t k = 0; k < from.size(); ++k) {
        // Links of one class have the same bandwidth and latency (two classes are joined only
        // after their links compared equal): only links of two classes are compared.
        if (from[k] == to[k]) continue;
        const int x = root(from[k]), y = root(to[k]);
        if (x == y) continue;
        if (links[from[k]].bw_bytes_per_s != links[to[k]].bw_bytes_per_s ||
            links[from[k]].latency_ns != links[to[k]].latency_ns) {
          return fmt::format("links {} and {} do not correspond", links[from[k]].name,
                             links[to[k]].name);
        }
        parent[std::max(x, y)] = std::min(x, y);
      }
    }
  }
  std::vector<int> size(num_links, 0);
  link_rep.assign(num_links, 0);
  for (int l = 0; l < num_links; ++l) ++size[link_rep[l] = root(l)];
  link_mult.assign(num_links, 1);
  for (int l = 0; l < num_links; ++l) {
    const int members = size[link_rep[l]];
    if (order % members != 0) {
      return fmt::format("the {} links like {} do not divide {} symmetries", members, links[l].name,
                         order);
    }
    link_mult[l] = order / members;
  }
  // Loads: the images of a transfer that crosses a class n times cross each of its links
  // n x |G| / |class| times.
  std::vector<int> count(num_links, 0), own(num_links, 0), touched;
  for (size_t k = 0; k < orbit_reps.size(); ++k) {
    const auto [a, b] = transfers[orbit_reps[k]];
    touched.clear();
    for (int e = 0; e < order; ++e) {
      for (int l : *images[k * order + e]) {
        if (count[l]++ == 0) touched.push_back(l);
      }
    }
    const std::vector<int>& route = routes.Get(a, b).links;
    for (int l : route) ++own[link_rep[l]];
    std::string why;
    for (int l : touched) {
      if (why.empty() && count[l] != own[link_rep[l]] * link_mult[l]) {
        why = fmt::format("link {} carries {} images of transfer GPU {} -> {}, not {} as its class",
                          links[l].name, count[l], a, b, own[link_rep[l]] * link_mult[l]);
      }
      count[l] = 0;
    }
    for (int l : route) own[link_rep[l]] = 0;
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace terasim
