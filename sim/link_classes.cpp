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
  // Where the topology declares its nodes node 0 shifted (NetworkTopology::LinksPerNode and
  // NetworkLinksPerNode), the route of an image on nodes m.. (m > 0) is read as the route of
  // its image m nodes down with every link shifted (Shifted): no route is computed and kept
  // for the images of every replica's transfers.
  const int links_per_node = topology.LinksPerNode();
  const int network_per_node = topology.NetworkLinksPerNode();
  const int num_nodes = topology.NumNodes();
  const int gpus_per_node = num_nodes > 0 ? num_gpus / num_nodes : 0;
  const int network_begin = num_nodes * links_per_node;
  struct Shifted {
    const std::vector<int>* links;   // the route m nodes down
    int links_shift, network_shift;  // m x L, m x K
  };
  const auto shifted_link = [network_begin](const Shifted& route, int link) {
    return link < network_begin ? link + route.links_shift : link + route.network_shift;
  };
  const auto route_of = [&](int x, int y) {
    if (links_per_node > 0 && gpus_per_node > 0) {
      const int m = std::min(x, y) / gpus_per_node;
      const bool across = x / gpus_per_node != y / gpus_per_node;
      if (m > 0 && (!across || network_per_node > 0)) {
        return Shifted{&routes.Get(x - m * gpus_per_node, y - m * gpus_per_node).links,
                       m * links_per_node, m * network_per_node};
      }
    }
    return Shifted{&routes.Get(x, y).links, 0, 0};
  };
  std::vector<Shifted> images;  // per orbit representative, its order routes
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
      const Shifted to =
          image == transfers[t] ? Shifted{&from, 0, 0} : route_of(image.first, image.second);
      images.push_back(to);
      if (image == transfers[t]) continue;  // the transfer itself (its route joins nothing)
      if (from.size() != to.links->size()) {
        return fmt::format("routes GPU {} -> {} and GPU {} -> {} differ in length", a, b,
                           image.first, image.second);
      }
      for (size_t k = 0; k < from.size(); ++k) {
        // Links of one class have the same bandwidth and latency (two classes are joined only
        // after their links compared equal): only links of two classes are compared.
        const int f = from[k];
        const int g = shifted_link(to, (*to.links)[k]);
        if (f == g) continue;
        const int x = root(f), y = root(g);
        if (x == y) continue;
        if (links[f].bw_bytes_per_s != links[g].bw_bytes_per_s ||
            links[f].latency_ns != links[g].latency_ns) {
          return fmt::format("links {} and {} do not correspond", links[f].name, links[g].name);
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
      const Shifted& image = images[k * order + e];
      for (int l : *image.links) {
        const int shifted = shifted_link(image, l);
        if (count[shifted]++ == 0) touched.push_back(shifted);
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
