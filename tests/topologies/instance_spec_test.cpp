#include <catch2/catch.hpp>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "models/errors.h"
#include "models/model_card.h"  // DataRoot()
#include "topologies/topology.h"

using namespace terasim;

namespace {

// A small valid instance: 2 GPUs with one NVLink, one PCIe switch, two CPUs, one NIC.
nlohmann::json ValidInstance() {
  return nlohmann::json::parse(R"({
    "name": "tiny.2x", "device": "v100-sxm2-16gb", "device_source": "test",
    "gpus": 2,
    "components": [{"name": "pcie0", "kind": "pcie_switch"}, {"name": "cpu0", "kind": "cpu"},
                   {"name": "cpu1", "kind": "cpu"}, {"name": "nic0", "kind": "nic"}],
    "link_types": {
      "nv": {"kind": "nvlink", "bandwidth_gbytes_per_s": 25, "efficiency": 0.8,
             "latency_ns": 100, "source": "test"},
      "pcie": {"kind": "pcie", "bandwidth_gbytes_per_s": 16, "efficiency": 0.7,
               "latency_ns": 100, "source": "test"},
      "qpi": {"kind": "socket", "bandwidth_gbytes_per_s": 6, "efficiency": 1,
              "latency_ns": 100, "source": "test"}},
    "links": [{"a": "gpu0", "b": "gpu1", "type": "nv", "lanes": 2},
              {"a": "gpu0", "b": "pcie0", "type": "pcie"},
              {"a": "gpu1", "b": "pcie0", "type": "pcie"},
              {"a": "pcie0", "b": "cpu0", "type": "pcie"},
              {"a": "cpu0", "b": "cpu1", "type": "qpi"},
              {"a": "nic0", "b": "cpu1", "type": "pcie"}],
    "links_source": "test",
    "network": {"nic_gbits_per_s": 25, "efficiency": 0.6, "latency_us": 50, "transport": "tcp",
                "gpudirect": false, "source": "test"},
    "rings": [[0, 1]], "rings_source": "test"
  })");
}

std::string ErrorOf(const nlohmann::json& doc) {
  try {
    ParseInstanceSpec(doc.dump(), "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("p3.16xlarge carries FACTS.md's numbers", "[topologies]") {
  InstanceSpec p3 = LoadInstanceSpec("p3.16xlarge");
  CHECK(p3.name == "p3.16xlarge");
  CHECK(p3.device == "v100-sxm2-16gb");
  CHECK(p3.gpus == 8);
  // 16 NVLink pairs + 8 GPU-switch + 4 switch-CPU + 1 QPI + 1 NIC-CPU
  CHECK(p3.links.size() == 30);
  for (const LinkType& t : p3.link_types) {
    if (t.kind == LinkKind::kNvLink) {
      // NVLink 2.0: 25 GB/s per link per direction raw, NCCL plans 20 GB/s (80%)
      CHECK(t.raw_bw_bytes_per_s == Approx(25e9));
      CHECK(t.EffectiveBwBytesPerS() == Approx(20e9));
    } else if (t.kind == LinkKind::kPcie) {
      // PCIe Gen3 x16: 15.75 GB/s raw, about 11 GB/s achieved
      CHECK(t.raw_bw_bytes_per_s == Approx(15.75e9));
      CHECK(t.EffectiveBwBytesPerS() == Approx(11e9).epsilon(0.01));
    } else {
      // inter-socket: about 6 GB/s as NCCL models it
      CHECK(t.EffectiveBwBytesPerS() == Approx(6e9));
    }
  }
  // one 25 Gbps NIC = 3.125 GB/s each way, TCP, no GPUDirect, NCCL-over-TCP efficiency in
  // [0.45, 0.75]; the one-way latency (fitted, tools/fit/fit_p3.py) at least half of the
  // ~0.1 ms wire round trip, and below a millisecond
  CHECK(p3.NumNics() == 1);
  CHECK(p3.network.nic_raw_bw_bytes_per_s == Approx(3.125e9));
  CHECK(p3.network.transport == "tcp");
  CHECK_FALSE(p3.network.gpudirect);
  CHECK(p3.network.efficiency >= 0.45);
  CHECK(p3.network.efficiency <= 0.75);
  CHECK(p3.network.latency_ns >= 50 * kNsPerUs);
  CHECK(p3.network.latency_ns < 1000 * kNsPerUs);
  // the two cube-mesh rings of FACTS.md
  REQUIRE(p3.rings.size() == 2);
  CHECK(p3.rings[0] == std::vector<int>{0, 3, 2, 1, 5, 6, 7, 4});
  CHECK(p3.rings[1] == std::vector<int>{0, 1, 3, 7, 5, 4, 6, 2});
}

TEST_CASE("every instance file loads, names its device and sources every number", "[topologies]") {
  std::vector<InstanceSpec> specs = ListInstanceSpecs();
  REQUIRE(specs.size() >= 4);
  std::map<std::string, std::string> device;
  for (const auto& s : specs) {
    device[s.name] = s.device;
    // the device spec an instance names exists in models/data/devices
    CHECK(std::filesystem::exists(DataRoot() + "/models/data/devices/" + s.device + ".json"));
    CHECK_FALSE(s.network.source.empty());
    for (const LinkType& t : s.link_types) CHECK_FALSE(t.source.empty());
  }
  // device spec names as the task fixes them
  CHECK(device["p3.16xlarge"] == "v100-sxm2-16gb");
  CHECK(device["p3dn.24xlarge"] == "v100-sxm2-32gb");
  CHECK(device["p4d.24xlarge"] == "a100-40gb");
  CHECK(device["p5.48xlarge"] == "h100-80gb");
  for (size_t i = 1; i < specs.size(); ++i) CHECK(specs[i - 1].name < specs[i].name);
}

TEST_CASE("the test instance template is valid", "[topologies]") {
  // the error cases below each break exactly one thing of this
  CHECK(ErrorOf(ValidInstance()) == "no error");
}

TEST_CASE("malformed instance files name the file, the place and the problem", "[topologies]") {
  auto with = [](auto edit) {
    nlohmann::json doc = ValidInstance();
    edit(doc);
    return ErrorOf(doc);
  };
  CHECK(with([](auto& d) { d["link_types"]["pcie"]["bandwidth_gbytes_per_s"] = 0; }) ==
        "bad.json: link_types: pcie: bandwidth_gbytes_per_s: must be > 0 (got 0)");
  CHECK(with([](auto& d) { d["link_types"]["nv"]["efficiency"] = 1.5; }) ==
        "bad.json: link_types: nv: efficiency: must be in (0, 1] (got 1.5)");
  CHECK(with([](auto& d) { d["link_types"]["nv"]["latency_ns"] = -1; }) ==
        "bad.json: link_types: nv: latency_ns: must be >= 0 (got -1)");
  CHECK(with([](auto& d) { d["link_types"]["nv"]["source"] = ""; }) ==
        "bad.json: link_types: nv: source: must say where the numbers come from");
  CHECK(with([](auto& d) { d["link_types"]["nv"]["kind"] = "infiniband"; }) ==
        "bad.json: link_types: nv: kind: unknown link kind 'infiniband' (known: nvlink, pcie, "
        "socket)");
  CHECK(with([](auto& d) { d["links"][3]["b"] = "cpu9"; }) ==
        "bad.json: links[3]: b: unknown component 'cpu9'");
  CHECK(with([](auto& d) { d["links"][3]["type"] = "pcie4"; }) ==
        "bad.json: links[3]: type: unknown link type 'pcie4' (known: nv, pcie, qpi)");
  CHECK(with([](auto& d) { d["links"][0]["lanes"] = 0; }) ==
        "bad.json: links[0]: lanes: must be >= 1 (got 0)");
  CHECK(with([](auto& d) { d["links"][3]["a"] = "cpu0"; }) ==
        "bad.json: links[3]: a link must join two different components");
  CHECK(with([](auto& d) {
          d["links"].push_back({{"a", "gpu1"}, {"b", "gpu0"}, {"type", "nv"}});
        }) ==
        "bad.json: links[6]: gpu1-gpu0 is already linked by links[0] (use lanes for parallel "
        "links)");
  CHECK(with([](auto& d) { d["links"][1]["type"] = "nv"; }) ==
        "bad.json: links[1]: type: a nvlink link cannot join gpu 'gpu0' and pcie_switch 'pcie0'");
  CHECK(with([](auto& d) { d["links"][0]["typo"] = 1; }) ==
        "bad.json: links[0]: typo: unknown field");
  CHECK(with([](auto& d) { d["components"][1]["kind"] = "tpu"; }) ==
        "bad.json: components[1]: kind: unknown component kind 'tpu' (known: nvswitch, "
        "pcie_switch, cpu, nic)");
  CHECK(with([](auto& d) { d["components"][1]["name"] = "gpu1"; }) ==
        "bad.json: components[1]: name: 'gpu1' is already used (GPUs are gpu0..gpu1)");
  CHECK(with([](auto& d) { d.erase("device"); }) == "bad.json: device: missing");
  CHECK(with([](auto& d) { d["gpus"] = 0; }) == "bad.json: gpus: must be >= 1 (got 0)");
  CHECK(with([](auto& d) { d["network"]["nic_gbits_per_s"] = -25; }) ==
        "bad.json: network: nic_gbits_per_s: must be > 0 (got -25)");
  CHECK(with([](auto& d) { d["network"].erase("gpudirect"); }) ==
        "bad.json: network: gpudirect: missing");
  CHECK(with([](auto& d) {
          d["rings"] = {{0, 0}};
        }) == "bad.json: rings[0]: must list each of GPUs 0..1 exactly once");
  CHECK(with([](auto& d) { d.erase("rings_source"); }) == "bad.json: rings_source: missing");
  // gpu1 loses its PCIe switch: no route to any CPU
  CHECK(with([](auto& d) { d["links"].erase(2); }) == "bad.json: gpu1: no PCIe path to a CPU");
  // the NIC is detached from the host
  CHECK(with([](auto& d) { d["links"].erase(5); }) == "bad.json: gpu0: no PCIe path to a NIC");
  CHECK(with([](auto& d) {
          d["components"].erase(3);
          d["links"].erase(5);
        }) == "bad.json: components: no NIC (kind \"nic\")");
  CHECK(ErrorOf(nlohmann::json::array()) == "bad.json: must be a JSON object");
}

TEST_CASE("rings must follow NVLinks and not share one", "[topologies]") {
  // 4 GPUs on a square of NVLinks 0-1-2-3-0 plus the diagonal 0-2
  nlohmann::json doc = ValidInstance();
  doc["gpus"] = 4;
  doc["links"] = nlohmann::json::parse(R"([
    {"a": "gpu0", "b": "gpu1", "type": "nv"}, {"a": "gpu1", "b": "gpu2", "type": "nv"},
    {"a": "gpu2", "b": "gpu3", "type": "nv"}, {"a": "gpu3", "b": "gpu0", "type": "nv"},
    {"a": "gpu0", "b": "gpu2", "type": "nv"},
    {"a": "gpu0", "b": "pcie0", "type": "pcie"}, {"a": "gpu1", "b": "pcie0", "type": "pcie"},
    {"a": "gpu2", "b": "pcie0", "type": "pcie"}, {"a": "gpu3", "b": "pcie0", "type": "pcie"},
    {"a": "pcie0", "b": "cpu0", "type": "pcie"}, {"a": "nic0", "b": "cpu0", "type": "pcie"}])");
  doc["rings"] = {{0, 1, 2, 3}};
  CHECK(ErrorOf(doc) == "no error");
  // 1-3 has no NVLink
  doc["rings"] = {{0, 1, 3, 2}};
  CHECK(ErrorOf(doc) == "bad.json: rings[0]: gpu1 -> gpu3: no NVLink between them");
  // the second ring reuses 0-1
  doc["rings"] = {{0, 1, 2, 3}, {1, 0, 2, 3}};
  CHECK(ErrorOf(doc) ==
        "bad.json: rings[1]: gpu1 -> gpu0: NVLink already used by another ring (rings must be "
        "edge-disjoint)");
}

TEST_CASE("a JSON syntax error names the file and line", "[topologies]") {
  std::string message;
  try {
    ParseInstanceSpec("{\n \"name\": }", "bad.json");
  } catch (const InputError& e) {
    message = e.what();
  }
  // ParseJson's format: "FILE: line L column C: invalid JSON: ..."
  CHECK(message.rfind("bad.json: line 2", 0) == 0);
}

TEST_CASE("cluster specs and options are checked with the flag named", "[topologies]") {
  auto error = [](const std::string& spec, ClusterOptions options = {}) {
    try {
      BuildCluster(spec, options);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("p3.16xlarge:0") ==
        "--cluster: 'p3.16xlarge:0': node count must be in [1, 65536] "
        "(got 0)");
  CHECK(error("p3.16xlarge:4x") ==
        "--cluster: 'p3.16xlarge:4x': node count '4x' is not a positive integer");
  CHECK(error("p3.16xlarge:") ==
        "--cluster: 'p3.16xlarge:': node count '' is not a positive integer");
  CHECK(error(":4") ==
        "--cluster: ':4': missing the instance type (INSTANCE:COUNT, e.g. p3.16xlarge:48)");
  CHECK(error("p9.huge:2").rfind("--cluster: unknown instance type 'p9.huge' (known: ", 0) == 0);
  ClusterOptions bad_leaf;
  bad_leaf.nodes_per_leaf = 0;
  CHECK(error("p3.16xlarge:2", bad_leaf) == "--nodes-per-leaf: must be >= 1 (got 0)");
  ClusterOptions bad_efficiency;
  bad_efficiency.nic_efficiency = 1.5;
  CHECK(error("p3.16xlarge:2", bad_efficiency) == "--nic-efficiency: must be in (0, 1] (got 1.5)");
  // INSTANCE alone is one node
  ClusterSpec one = ParseClusterSpec("p3.16xlarge");
  CHECK(one.nodes == 1);
  CHECK_FALSE(one.explicit_count);
  CHECK(ParseClusterSpec("p3.16xlarge:48").nodes == 48);
}
