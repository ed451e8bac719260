// merge_comm: comm_bench fits into the system file, checked against the simulator's formula.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "inputs/strategy_config.h"
#include "comm/collective.h"
#include "calibration/comm_merge.h"
#include "system/system_config.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "results.h"

namespace trainsim {
namespace {

// Minimal system: num_per_node from the caller, inter_node at 200 GiB/s.
std::string system_text(int num_per_node) {
  return R"({"sys_name": "t", "num_per_node": )" + std::to_string(num_per_node) +
         R"(, "accelerator": {"backend": "cuda", "mem_gbs": 80, "mode": "roofline",
      "op": {"default": {"tflops": 989, "efficient_factor": 0.5}},
      "bandwidth": {"default": {"gbps": 3350, "efficient_factor": 0.8, "latency_us": 2}}},
    "networks": {"intra_with_pcie": false,
      "inter_node": {"processor_usage": 0, "bandwidth": {"gbps": 200, "efficient_factor": 1, "latency_us": 35},
        "op": {"all_reduce": {"scale": 2, "offset": -1}, "p2p": {"scale": 1, "offset": 0}}}}})";
}

std::string comm_text(const std::string& fits) {
  return R"({"schema_version": "1.0.0", "complete": true, "provenance": {"gpu": "H100"}, "points": [], "fits": [)" +
         fits + "]}";
}

std::string fit(const std::string& op, const std::string& net, int n, double lat_us, double gbs,
                const std::string& kind = "intra_node") {
  return R"({"op": ")" + op + R"(", "group": "g", "kind": ")" + kind + R"(", "network": ")" + net +
         R"(", "n": )" + std::to_string(n) + R"(, "latency_us": )" + std::to_string(lat_us) +
         R"(, "bus_bandwidth_gbs": )" + std::to_string(gbs) + "}";
}

// The simulator's collective time. Stages pick the inter-node NIC sharing the merge assumes:
// p2p ("pp") and DP all-reduce with tp = 8 ("dp") both divide the node bandwidth by 8.
// In compat mode (the default here) the merged α–β entries answer; in the default mode the
// collective models of the merged points.
double simulated_time(const SystemConfig& sys, const std::string& net, const std::string& op, double size,
                      int n, Mode mode = Mode::SimuMax12) {
  StrategyConfig s;
  s.tp_size = 8;
  Collective kind = Collective::AllReduce;
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::P2P,
                       Collective::AllToAll})
    if (op == collective_name(c)) kind = c;
  const char* stage = net != "inter_node" ? "tp" : op == "p2p" ? "pp" : "dp";
  return collective_time(sys, s, resolve_network(sys, net, mode), kind, size, n, stage);
}

std::string merge_error(const std::string& comm) {
  SystemConfig sys = load_system(system_text(8), "sys.json");
  try {
    merge_comm(sys, comm, "comm.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(CommMergeTest, SplitsLatencyIntoPerHopAndFixed) {
  SystemConfig sys = load_system(system_text(8), "sys.json");
  merge_comm(sys, comm_text(fit("all_reduce", "high_intra_node", 2, 30, 100) + "," +
                            fit("all_reduce", "high_intra_node", 8, 70, 200)),
             "comm.json");
  const NetworkConfig& net = sys.networks.at("high_intra_node");
  // New network: gbps = the fastest op (200 GB/s = 186.26 GiB/s), so all_reduce eff = 1.
  EXPECT_DOUBLE_EQ(net.bandwidth.bytes_per_s, 200e9);
  EXPECT_EQ(net.ops.size(), 5u);
  const NetOpConfig& ar = net.ops.at("all_reduce");
  EXPECT_DOUBLE_EQ(*ar.efficient_factor, 1.0);
  // Hops 2·(n−1): 2 for n = 2, 14 for n = 8. Per hop 30/2 = 15 µs and 70/14 = 5 µs → 5 µs;
  // fixed = α − 5·hops: 30 − 10 = 20 µs and 70 − 70 = 0.
  EXPECT_NEAR(*ar.latency_s, 5e-6, 1e-15);
  EXPECT_NEAR(ar.fixed_latency_s_by_comm_num.at("2"), 20e-6, 1e-15);
  EXPECT_NEAR(ar.fixed_latency_s_by_comm_num.at("8"), 0, 1e-15);
  EXPECT_DOUBLE_EQ(*ar.fixed_latency_s, 0);
  EXPECT_FALSE(sys.intra_with_pcie);
  EXPECT_NE(sys.provenance_json.find("\"comm_bench\":{\"complete\":true,\"gpu\":\"H100\",\"source\":\"comm.json\"}"),
            std::string::npos);
}

TEST(CommMergeTest, LatencyIsFlatWhenNodesAreNotEight) {
  SystemConfig sys = load_system(system_text(4), "sys.json");
  merge_comm(sys, comm_text(fit("all_gather", "intra_node_pcie_2x", 2, 30, 10) + "," +
                            fit("all_gather", "intra_node_pcie_4x", 4, 70, 10)),
             "comm.json");
  EXPECT_TRUE(sys.intra_with_pcie);
  // SimuMax multiplies latency by hops only when num_per_node == 8: each class keeps its α.
  EXPECT_NEAR(*sys.networks.at("intra_node_pcie_4x").ops.at("all_gather").latency_s, 70e-6, 1e-15);
  EXPECT_NEAR(sys.networks.at("intra_node_pcie_4x").ops.at("all_gather").fixed_latency_s_by_comm_num.at("4"), 0,
              1e-15);
}

TEST(CommMergeTest, InterNodeBandwidthIsPerNode) {
  SystemConfig sys = load_system(system_text(8), "sys.json");
  merge_comm(sys, comm_text(fit("p2p", "inter_node", 2, 10, 25, "inter_node")), "comm.json");
  const NetworkConfig& net = sys.networks.at("inter_node");
  EXPECT_DOUBLE_EQ(net.bandwidth.bytes_per_s, 200 * kGiB);  // existing nominal value kept
  // Per-GPU 25 GB/s × 8 GPUs per node over 200 GiB/s = 2e11/(200·2^30) = 0.9313225746.
  EXPECT_NEAR(*net.ops.at("p2p").efficient_factor, 0.9313225746154785, 1e-15);
  EXPECT_NEAR(*net.ops.at("p2p").latency_s, 10e-6, 1e-15);
  // 64 MiB p2p: 64 MiB/25 GB/s + 10 µs = 2684.35456 + 10 µs.
  EXPECT_NEAR(simulated_time(sys, "inter_node", "p2p", 64 * kMiB, 2), 2694.35456e-6, 1e-12);
}

TEST(CommMergeTest, SimulatorReproducesFittedTimesAfterRoundTrip) {
  using comm_bench::CommResults, comm_bench::GroupKind, comm_bench::model_bytes, comm_bench::size_sweep;
  using CB = comm_bench::Collective;
  CommResults r;
  struct Series {
    CB op;
    const char* group;
    GroupKind kind;
    const char* net;
    int n;
    double alpha, bw;
  };
  const Series series[] = {
      {CB::AllReduce, "intra_node_x2", GroupKind::IntraNode, "high_intra_node", 2, 18e-6, 150e9},
      {CB::AllReduce, "intra_node_x8", GroupKind::IntraNode, "high_intra_node", 8, 35e-6, 360e9},
      {CB::AllGather, "intra_node_x8", GroupKind::IntraNode, "high_intra_node", 8, 30e-6, 350e9},
      {CB::AllToAll, "intra_node_x4", GroupKind::IntraNode, "high_intra_node", 4, 28e-6, 300e9},
      {CB::P2P, "intra_node_x2", GroupKind::IntraNode, "high_intra_node", 2, 12e-6, 140e9},
      {CB::AllReduce, "inter_node_x2", GroupKind::InterNode, "inter_node", 2, 60e-6, 45e9},
      {CB::AllReduce, "world_x16", GroupKind::World, "inter_node", 16, 90e-6, 300e9},
  };
  for (const auto& s : series)
    for (uint64_t size : size_sweep(8, uint64_t{1} << 30, 4))
      r.points.push_back({s.op, s.group, s.kind, s.net, s.n, size,
                          s.alpha + model_bytes(s.op, static_cast<double>(size), s.n) / s.bw, 20});
  comm_bench::fit_all(r);
  ASSERT_EQ(r.fits.size(), 7u);

  std::ifstream f(std::string(TRAINSIM_SOURCE_DIR) + "/configs/system/b200-simumax.json");
  std::ostringstream text;
  text << f.rdbuf();
  SystemConfig sys = load_system(text.str(), "b200-simumax.json");
  merge_comm(sys, comm_bench::results_to_json_text(r), "comm.json");
  const SystemConfig back = load_system(system_to_json_text(sys), "merged.json");
  for (const auto& s : series) {
    if (s.kind == GroupKind::World) continue;  // reported, not merged
    const char* op = comm_bench::info(s.op).name;
    for (double size : {1.0 * kMiB, 64.0 * kMiB, 1024.0 * kMiB}) {
      // Bandwidth comes from the largest group of each op, so the NVLink n = 2 all_reduce keeps
      // its α exactly and takes its bandwidth from n = 8.
      const bool small_ar = s.op == CB::AllReduce && s.n == 2 && std::string(s.net) == "high_intra_node";
      const double bw = small_ar ? 360e9 : s.bw;
      const double expect = s.alpha + model_bytes(s.op, size, s.n) / bw;
      // comm.json keeps 6 significant digits.
      EXPECT_NEAR(simulated_time(back, s.net, op, size, s.n) / expect, 1, 1e-5) << op << " " << s.group << " " << size;
      // The default mode's collective models give every group size its own measured curve.
      const double own = s.alpha + model_bytes(s.op, size, s.n) / s.bw;
      EXPECT_NEAR(simulated_time(back, s.net, op, size, s.n, Mode::Default) / own, 1, 1e-5)
          << op << " " << s.group << " " << size;
    }
  }
}

TEST(CommMergeTest, RejectsBadInput) {
  EXPECT_EQ(merge_error(comm_text(fit("allreduce", "high_intra_node", 8, 1, 1))),
            "comm.json: /fits/0/op: unknown collective 'allreduce'; valid values: all_reduce, all_gather, "
            "reduce_scatter, p2p, all2all; did you mean 'all_reduce'?");
  EXPECT_EQ(merge_error(comm_text(fit("all_reduce", "high_intra_nod", 8, 1, 1))),
            "comm.json: /fits/0/network: unknown network 'high_intra_nod'; valid values: high_intra_node, low_intra_node, "
            "inter_node, intra_node_pcie_2x, intra_node_pcie_4x, intra_node_pcie_8x; did you mean 'high_intra_node'?");
  EXPECT_EQ(merge_error(R"({"schema_version": "2.0.0", "fits": []})"),
            "comm.json: /schema_version: unsupported schema_version '2.0.0'; this build reads 1.x.y");
  EXPECT_EQ(merge_error(R"({"schema_version": "10.0", "fits": []})"),
            "comm.json: /schema_version: unsupported schema_version '10.0'; this build reads 1.x.y");
  EXPECT_EQ(merge_error(R"({"schema_version": 1, "fits": []})"),
            "comm.json: /schema_version: expected a string, got a number (1)");
  EXPECT_EQ(merge_error(R"({"schema_version": "1.0.0"})"), "comm.json: /fits: required array is missing");
  EXPECT_EQ(merge_error(R"({"schema_version": "1.0.0", "fits": [{"op": "p2p", "network": "inter_node", "n": 2,
      "latency_us": 1, "bus_bandwidth_gbs": 0, "latency_uss": 3}]})"),
            "comm.json: /fits/0/latency_uss: unknown key; did you mean 'latency_us'?\n"
            "comm.json: /fits/0/bus_bandwidth_gbs: must be > 0");
  EXPECT_EQ(merge_error(comm_text(fit("p2p", "high_intra_node", 2, 1, 1) + "," +
                                  fit("p2p", "intra_node_pcie_2x", 2, 1, 1))),
            "comm.json: /fits: fits mix NVLink (high_intra_node) and PCIe (intra_node_pcie_*) intra-node classes");
  EXPECT_EQ(merge_error(comm_text(fit("p2p", "high_intra_node", 2, 1, 1) + "," +
                                  fit("p2p", "high_intra_node", 2, 1, 1))),
            "comm.json: /fits/1: second fit for p2p on high_intra_node with n = 2");
  // World and single-rank fits are reported in comm.json but not merged.
  EXPECT_EQ(merge_error(comm_text(fit("all_reduce", "inter_node", 16, 1, 1, "world"))), "<no error>");
}

// A fit beyond the system file's ranges: a bus bandwidth of 1e300 GB/s merged into an infinite
// efficient_factor, written as null and read back as unset; a latency of 1e300 µs was reported
// against the merged output file, not comm.json.
TEST(CommMergeTest, FitsBeyondThePlausibleRangesAreErrors) {
  EXPECT_EQ(merge_error(comm_text(fit("all_reduce", "high_intra_node", 8, 10, 1e300))),
            "comm.json: /fits/0/bus_bandwidth_gbs: must be in [1e-06, 1e+06] GB/s, got 1e+300");
  EXPECT_EQ(merge_error(comm_text(fit("all_reduce", "high_intra_node", 8, 1e300, 300))),
            "comm.json: /fits/0/latency_us: must be at most 1e+09 µs, got 1e+300");
  EXPECT_EQ(merge_error(comm_text(fit("all_reduce", "high_intra_node", 8, 1e9, 1e6))), "<no error>");
}

// The measured points the collective models are fitted from: one of the wrong shape was skipped
// without a word (the model fitted without it, or no model at all for `"points": {}`).
TEST(CommMergeTest, MalformedPointsAreErrorsAtTheirPath) {
  const std::string fits = fit("all_reduce", "high_intra_node", 8, 10, 300);
  const auto with_points = [&](const std::string& points) {
    return R"({"schema_version": "1.0.0", "points": )" + points + R"(, "fits": [)" + fits + "]}";
  };
  const std::string ok = R"({"op": "all_reduce", "network": "high_intra_node", "n": 8, "size_bytes": 1024,
                            "time_us": 10})";
  EXPECT_EQ(merge_error(with_points("[" + ok + "]")), "<no error>");
  EXPECT_EQ(merge_error(with_points(R"({"a": 1})")),
            "comm.json: /points: expected an array of {op, network, n, size_bytes, time_us} (as comm_bench writes it)");
  EXPECT_EQ(merge_error(with_points("[" + ok + R"(, 5,
      {"op": "all_reduce", "network": "high_intra_node", "n": 8, "size_bytes": "2048", "time_us": 10},
      {"op": "all_reduce", "network": "high_intra_node", "n": 8.5, "size_bytes": 4096},
      {"kind": 3, "op": "all_reduce", "network": "high_intra_node", "n": 8, "size_bytes": 8192, "time_us": 10},
      {"kind": "world", "op": "all_reduce", "n": 16}])")),
            "comm.json: /points/1: expected an object {op, network, n, size_bytes, time_us}\n"
            "comm.json: /points/2/size_bytes: expected a number (the message size in bytes)\n"
            "comm.json: /points/3/n: expected an integer (the group size)\n"
            "comm.json: /points/3/time_us: expected a number (the measured time in µs)\n"
            "comm.json: /points/4/kind: expected a string (intra_node, inter_node, world or single)");
}

// A point of an op or network the fits do not know (allreduce for all_reduce) was left out
// without a word; a point the model rejects was named by its index among its op's points
// ("collective point 0" for the file's /points/2).
TEST(CommMergeTest, PointsOfUnknownNamesAndRejectedPointsAreErrorsAtTheirIndex) {
  const std::string fits = fit("all_reduce", "high_intra_node", 8, 10, 300);
  const auto with_points = [&](const std::string& points) {
    return R"({"schema_version": "1.0.0", "points": [)" + points + R"(], "fits": [)" + fits + "]}";
  };
  const auto point = [](const char* op, const char* net, int n, const char* bytes, const char* us) {
    return strprintf(R"({"op": "%s", "network": "%s", "n": %d, "size_bytes": %s, "time_us": %s})", op, net, n, bytes,
                     us);
  };
  EXPECT_EQ(merge_error(with_points(point("allreduce", "high_intra_node", 8, "1024", "10") + "," +
                                    point("all_reduce", "high_intra_nod", 8, "1024", "10"))),
            "comm.json: /points/0/op: unknown collective 'allreduce'; valid values: all_reduce, all_gather, "
            "reduce_scatter, p2p, all2all; did you mean 'all_reduce'?\n"
            "comm.json: /points/1/network: unknown network 'high_intra_nod'; valid values: high_intra_node, "
            "low_intra_node, inter_node, intra_node_pcie_2x, intra_node_pcie_4x, intra_node_pcie_8x; did you mean "
            "'high_intra_node'?");
  EXPECT_EQ(merge_error(with_points(point("all_gather", "high_intra_node", 8, "1024", "10") + "," +
                                    point("all_reduce", "high_intra_node", 8, "1024", "10") + "," +
                                    point("all_reduce", "high_intra_node", 8, "1e300", "10") + "," +
                                    point("all_reduce", "high_intra_node", 8, "1024", "12"))),
            "comm.json: /points/2: the size must be at most 2^50 bytes (1 PiB) (n 8, size_bytes 1e+300, time_us 10)\n"
            "comm.json: /points/3: a second time for all_reduce on high_intra_node with n 8 and 1024 bytes; the first "
            "is /points/1");
}

}  // namespace
}  // namespace trainsim
