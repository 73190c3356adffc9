#include "topologies/instance_spec.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include "models/errors.h"
#include "models/json_reader.h"
#include "models/limits.h"
#include "models/model_card.h"  // DataRoot()

namespace terasim {
namespace {

VertexKind ParseComponentKind(const std::string& text, const std::string& where) {
  if (text == "nvswitch") return VertexKind::kNvSwitch;
  if (text == "pcie_switch") return VertexKind::kPcieSwitch;
  if (text == "cpu") return VertexKind::kCpu;
  if (text == "nic") return VertexKind::kNic;
  ThrowInput("{}: kind: unknown component kind '{}' (known: nvswitch, pcie_switch, cpu, nic)",
             where, text);
}

LinkKind ParseLinkKind(const std::string& text, const std::string& where) {
  if (text == "nvlink") return LinkKind::kNvLink;
  if (text == "pcie") return LinkKind::kPcie;
  if (text == "socket") return LinkKind::kSocket;
  ThrowInput("{}: kind: unknown link kind '{}' (known: nvlink, pcie, socket)", where, text);
}

double RequireEfficiency(const JsonReader& r, const std::string& key) {
  double value = r.RequireDouble(key);
  if (!(value > 0 && value <= 1)) {
    ThrowInput("{}: {}: must be in (0, 1] (got {})", r.where(), key, value);
  }
  return value;
}

std::string RequireSource(const JsonReader& r, const std::string& key) {
  std::string source = r.RequireString(key);
  if (source.empty()) ThrowInput("{}: {}: must say where the numbers come from", r.where(), key);
  return source;
}

// Undirected adjacency of the components over links of the given kinds.
std::vector<std::vector<int>> Adjacency(const InstanceSpec& spec, std::set<LinkKind> kinds) {
  std::vector<std::vector<int>> adj(spec.components.size());
  for (const InstanceLink& link : spec.links) {
    if (kinds.count(spec.link_types[link.type].kind) == 0) continue;
    adj[link.a].push_back(link.b);
    adj[link.b].push_back(link.a);
  }
  return adj;
}

// Whether `from` reaches a component of kind `target` without passing through a GPU or NIC.
bool Reaches(const InstanceSpec& spec, const std::vector<std::vector<int>>& adj, int from,
             VertexKind target) {
  std::vector<bool> seen(adj.size(), false);
  std::deque<int> queue{from};
  seen[from] = true;
  while (!queue.empty()) {
    int c = queue.front();
    queue.pop_front();
    if (c != from && spec.components[c].kind == target) return true;
    VertexKind kind = spec.components[c].kind;
    if (c != from && (kind == VertexKind::kGpu || kind == VertexKind::kNic)) continue;
    for (int next : adj[c]) {
      if (!seen[next]) {
        seen[next] = true;
        queue.push_back(next);
      }
    }
  }
  return false;
}

void ParseComponents(const JsonReader& r, InstanceSpec* spec) {
  for (int g = 0; g < spec->gpus; ++g) {
    spec->components.push_back({"gpu" + std::to_string(g), VertexKind::kGpu});
  }
  const nlohmann::json& array = r.RequireArray("components");
  for (size_t i = 0; i < array.size(); ++i) {
    JsonReader c = JsonReader::Element(array, i, r.where(), "components");
    c.RejectUnknown({"name", "kind", "note"});
    Component component;
    component.name = c.RequireString("name");
    component.kind = ParseComponentKind(c.RequireString("kind"), c.where());
    if (component.name.empty()) ThrowInput("{}: name: must not be empty", c.where());
    if (spec->ComponentIndex(component.name) >= 0) {
      ThrowInput("{}: name: '{}' is already used (GPUs are gpu0..gpu{})", c.where(), component.name,
                 spec->gpus - 1);
    }
    spec->components.push_back(component);
  }
}

void ParseLinkTypes(const JsonReader& r, InstanceSpec* spec) {
  JsonReader types = r.Child("link_types");
  const nlohmann::json& object = r.RequireObject("link_types");
  if (object.empty()) ThrowInput("{}: must define at least one link type", types.where());
  for (auto it = object.begin(); it != object.end(); ++it) {
    JsonReader t = types.Child(it.key());
    t.RejectUnknown(
        {"kind", "bandwidth_gbytes_per_s", "efficiency", "latency_ns", "source", "note"});
    LinkType type;
    type.name = it.key();
    type.kind = ParseLinkKind(t.RequireString("kind"), t.where());
    // 1 kB/s to 1 PB/s: far outside any real link on both sides.
    type.raw_bw_bytes_per_s = t.RequireDoubleIn("bandwidth_gbytes_per_s", 1e-6, 1e6) * 1e9;
    type.efficiency = RequireEfficiency(t, "efficiency");
    type.latency_ns = t.RequireInt("latency_ns", 0, limits::kMaxDurationNs, "kMaxDurationNs");
    type.source = RequireSource(t, "source");
    spec->link_types.push_back(type);
  }
}

int LinkTypeIndex(const InstanceSpec& spec, const std::string& name) {
  for (size_t i = 0; i < spec.link_types.size(); ++i) {
    if (spec.link_types[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

void ParseLinks(const JsonReader& r, InstanceSpec* spec) {
  const nlohmann::json& array = r.RequireArray("links");
  std::map<std::pair<int, int>, size_t> seen;
  for (size_t i = 0; i < array.size(); ++i) {
    JsonReader l = JsonReader::Element(array, i, r.where(), "links");
    l.RejectUnknown({"a", "b", "type", "lanes", "note"});
    InstanceLink link;
    for (const char* end : {"a", "b"}) {
      std::string name = l.RequireString(end);
      int index = spec->ComponentIndex(name);
      if (index < 0) ThrowInput("{}: {}: unknown component '{}'", l.where(), end, name);
      (end[0] == 'a' ? link.a : link.b) = index;
    }
    std::string type_name = l.RequireString("type");
    link.type = LinkTypeIndex(*spec, type_name);
    if (link.type < 0) {
      std::string known;
      for (const auto& t : spec->link_types) known += (known.empty() ? "" : ", ") + t.name;
      ThrowInput("{}: type: unknown link type '{}' (known: {})", l.where(), type_name, known);
    }
    link.lanes = static_cast<int>(l.OptionalInt("lanes", 1, 1, 1024));
    const Component& a = spec->components[link.a];
    const Component& b = spec->components[link.b];
    if (link.a == link.b) ThrowInput("{}: a link must join two different components", l.where());
    auto key = std::minmax(link.a, link.b);
    if (auto it = seen.find(key); it != seen.end()) {
      ThrowInput("{}: {}-{} is already linked by links[{}] (use lanes for parallel links)",
                 l.where(), a.name, b.name, it->second);
    }
    seen[key] = i;
    const LinkKind kind = spec->link_types[link.type].kind;
    auto is = [](const Component& c, VertexKind k) { return c.kind == k; };
    bool ok = true;
    if (kind == LinkKind::kNvLink) {
      ok = (is(a, VertexKind::kGpu) || is(a, VertexKind::kNvSwitch)) &&
           (is(b, VertexKind::kGpu) || is(b, VertexKind::kNvSwitch)) &&
           (is(a, VertexKind::kGpu) || is(b, VertexKind::kGpu));
    } else if (kind == LinkKind::kSocket) {
      ok = is(a, VertexKind::kCpu) && is(b, VertexKind::kCpu);
    } else {  // PCIe: never GPU-GPU, never touching an NVSwitch
      ok = !(is(a, VertexKind::kGpu) && is(b, VertexKind::kGpu)) && !is(a, VertexKind::kNvSwitch) &&
           !is(b, VertexKind::kNvSwitch);
    }
    if (!ok) {
      ThrowInput("{}: type: a {} link cannot join {} '{}' and {} '{}'", l.where(),
                 LinkKindName(kind), VertexKindName(a.kind), a.name, VertexKindName(b.kind),
                 b.name);
    }
    spec->links.push_back(link);
  }
}

void ParseNetwork(const JsonReader& r, InstanceSpec* spec) {
  JsonReader n = r.Child("network");
  n.RejectUnknown(
      {"nic_gbits_per_s", "efficiency", "latency_us", "transport", "gpudirect", "source", "note"});
  NetworkSpec& net = spec->network;
  net.nic_raw_bw_bytes_per_s = n.RequireDoubleIn("nic_gbits_per_s", 1e-5, 1e7) * 1e9 / 8;
  net.efficiency = RequireEfficiency(n, "efficiency");
  double latency_us = n.RequireDoubleIn("latency_us", 1e-3, limits::kMaxDurationNs / 1e3);
  net.latency_ns = static_cast<TimeNs>(std::llround(latency_us * 1000));
  net.transport = n.RequireString("transport");
  net.gpudirect = n.RequireBool("gpudirect");
  net.source = RequireSource(n, "source");
}

// The NVLink-neighbour test for rings: a direct NVLink, or both GPUs on one NVSwitch.
int DirectNvLink(const InstanceSpec& spec, int a, int b) {
  for (size_t i = 0; i < spec.links.size(); ++i) {
    const InstanceLink& l = spec.links[i];
    if (spec.link_types[l.type].kind != LinkKind::kNvLink) continue;
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return static_cast<int>(i);
  }
  return -1;
}

bool ShareNvSwitch(const InstanceSpec& spec, int a, int b) {
  std::set<int> switches_a;
  for (const InstanceLink& l : spec.links) {
    if (spec.link_types[l.type].kind != LinkKind::kNvLink) continue;
    if (l.a == a && spec.components[l.b].kind == VertexKind::kNvSwitch) switches_a.insert(l.b);
    if (l.b == a && spec.components[l.a].kind == VertexKind::kNvSwitch) switches_a.insert(l.a);
  }
  for (const InstanceLink& l : spec.links) {
    if (spec.link_types[l.type].kind != LinkKind::kNvLink) continue;
    if ((l.a == b && switches_a.count(l.b)) || (l.b == b && switches_a.count(l.a))) return true;
  }
  return false;
}

void ParseRings(const JsonReader& r, InstanceSpec* spec) {
  if (!r.Has("rings")) {
    std::vector<int> ring(spec->gpus);
    for (int g = 0; g < spec->gpus; ++g) ring[g] = g;
    spec->rings.push_back(ring);
    return;
  }
  RequireSource(r, "rings_source");
  const nlohmann::json& array = r.RequireArray("rings");
  std::set<int> used_links;
  for (size_t i = 0; i < array.size(); ++i) {
    std::string where = fmt::format("{}: rings[{}]", r.where(), i);
    const nlohmann::json& ring_json = array[i];
    std::vector<int> ring;
    if (ring_json.is_array()) {
      for (const auto& v : ring_json) {
        if (!v.is_number_integer())
          ring.push_back(-1);
        else
          ring.push_back(v.get<int>());
      }
    }
    std::vector<int> sorted = ring;
    std::sort(sorted.begin(), sorted.end());
    bool permutation = ring_json.is_array() && static_cast<int>(ring.size()) == spec->gpus;
    for (int g = 0; permutation && g < spec->gpus; ++g) permutation = sorted[g] == g;
    if (!permutation) {
      ThrowInput("{}: must list each of GPUs 0..{} exactly once", where, spec->gpus - 1);
    }
    for (int k = 0; k < spec->gpus && spec->gpus > 1; ++k) {
      int a = ring[k];
      int b = ring[(k + 1) % spec->gpus];
      int link = DirectNvLink(*spec, a, b);
      if (link < 0) {
        if (ShareNvSwitch(*spec, a, b)) continue;
        ThrowInput("{}: gpu{} -> gpu{}: no NVLink between them", where, a, b);
      }
      if (spec->gpus > 2 && !used_links.insert(link).second) {
        ThrowInput(
            "{}: gpu{} -> gpu{}: NVLink already used by another ring (rings must be "
            "edge-disjoint)",
            where, a, b);
      }
    }
    spec->rings.push_back(ring);
  }
  if (spec->rings.empty()) ThrowInput("{}: rings: must list at least one ring", r.where());
}

void CheckReachability(const std::string& origin, const InstanceSpec& spec) {
  if (spec.NumNics() == 0) ThrowInput("{}: components: no NIC (kind \"nic\")", origin);
  auto pcie = Adjacency(spec, {LinkKind::kPcie});
  auto host = Adjacency(spec, {LinkKind::kPcie, LinkKind::kSocket});
  for (int g = 0; g < spec.gpus; ++g) {
    if (!Reaches(spec, pcie, g, VertexKind::kCpu)) {
      ThrowInput("{}: gpu{}: no PCIe path to a CPU", origin, g);
    }
    if (!Reaches(spec, host, g, VertexKind::kNic)) {
      ThrowInput("{}: gpu{}: no PCIe path to a NIC", origin, g);
    }
  }
}

}  // namespace

int InstanceSpec::NumNics() const {
  return static_cast<int>(
      std::count_if(components.begin(), components.end(),
                    [](const Component& c) { return c.kind == VertexKind::kNic; }));
}

bool InstanceSpec::HasNvSwitch() const {
  return std::any_of(components.begin(), components.end(),
                     [](const Component& c) { return c.kind == VertexKind::kNvSwitch; });
}

int InstanceSpec::ComponentIndex(const std::string& name) const {
  for (size_t i = 0; i < components.size(); ++i) {
    if (components[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

InstanceSpec ParseInstanceSpec(const std::string& json_text, const std::string& origin) {
  nlohmann::json doc = ParseJson(json_text, origin);
  JsonReader r(doc, origin);
  r.RejectUnknown({"name", "description", "device", "device_source", "gpus", "components",
                   "link_types", "links", "links_source", "network", "rings", "rings_source",
                   "source", "note"});
  InstanceSpec spec;
  spec.file = origin;
  spec.name = r.RequireString("name");
  if (spec.name.empty() || spec.name.find(':') != std::string::npos) {
    ThrowInput("{}: name: must be non-empty and contain no ':'", origin);
  }
  spec.description = r.OptionalString("description", "");
  spec.device = r.RequireString("device");
  if (spec.device.empty()) ThrowInput("{}: device: must name a device spec", origin);
  RequireSource(r, "device_source");
  spec.gpus = static_cast<int>(r.RequireInt("gpus", 1, 64));
  if (spec.gpus > 64) ThrowInput("{}: gpus: at most 64 per node (got {})", origin, spec.gpus);
  ParseComponents(r, &spec);
  ParseLinkTypes(r, &spec);
  ParseLinks(r, &spec);
  RequireSource(r, "links_source");
  ParseNetwork(r, &spec);
  ParseRings(r, &spec);
  CheckReachability(origin, spec);
  return spec;
}

InstanceSpec LoadInstanceSpec(const std::string& name_or_path) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  std::string path = name_or_path;
  if (!is_path) {
    path = DataRoot() + "/topologies/data/" + name_or_path + ".json";
    if (!std::filesystem::exists(path)) {
      std::string known;
      for (const auto& spec : ListInstanceSpecs()) known += (known.empty() ? "" : ", ") + spec.name;
      ThrowInput("--cluster: unknown instance type '{}' (known: {})", name_or_path, known);
    }
  }
  return ParseInstanceSpec(ReadTextFile(path), path);
}

std::vector<InstanceSpec> ListInstanceSpecs() {
  std::string dir = DataRoot() + "/topologies/data";
  if (!std::filesystem::is_directory(dir)) ThrowInput("{}: instance folder not found", dir);
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<InstanceSpec> specs;
  for (const auto& p : paths) specs.push_back(ParseInstanceSpec(ReadTextFile(p), p));
  std::sort(specs.begin(), specs.end(),
            [](const InstanceSpec& a, const InstanceSpec& b) { return a.name < b.name; });
  return specs;
}

}  // namespace terasim
