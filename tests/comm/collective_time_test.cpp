// collective_time on hand-computed cases: the inter-node all-to-all NIC sharing (stage tag
// tested case-insensitively, as the peer lowercases it), the group-size fixed latency, and the
// network groups resolved once (resolve_network, choose_networks) giving the same times.
#include <gtest/gtest.h>

#include <stdexcept>

#include "inputs/strategy_config.h"
#include "comm/collective.h"
#include "test_presets.h"

namespace trainsim {
namespace {

// One inter-node network at 1e10 B/s, efficiency 1, no latency; all2all moves (n−1)/n.
SystemConfig inter_node_system() {
  SystemConfig sys;
  sys.num_per_node = 8;
  NetworkConfig& nd = sys.networks["inter_node"];
  nd.bandwidth.bytes_per_s = 1e10;
  NetOpConfig& a2a = nd.ops["all2all"];
  a2a.offset = -1;
  return sys;
}

TEST(CollectiveTimeTest, InterNodeAllToAllSharesTheNicForExpertAndContextStages) {
  const SystemConfig sys = inter_node_system();
  const StrategyConfig s;
  // 16 ranks on 2 nodes: 1e9·15/16 bytes, half of it leaves the node, over 1e10/8 B/s.
  for (const char* stage : {"ep", "EP", "cp", "a2a_Cp"}) {
    EXPECT_DOUBLE_EQ(collective_time(sys, s, "inter_node", Collective::AllToAll, 1e9, 16, stage), 0.375)
        << stage;
  }
  // Other stages: the whole 1e9·15/16 bytes at the full bandwidth.
  EXPECT_DOUBLE_EQ(collective_time(sys, s, "inter_node", Collective::AllToAll, 1e9, 16, "tp"), 0.09375);
}

// The presets' InfiniBand all-to-all runs at the network's bus efficiency (0.8, as every other
// inter-node collective; docs/config-reference.md): an EP all-to-all of 2^27 bytes over 32 ranks
// on 4 nodes moves 2^27·31/32·3/4 = 97,517,568 bytes off the node over 372.53 GiB/s / 8 GPUs ·
// 0.8 = 39.9999 GB/s, plus 3 µs per ring step (31) and 20 µs: 2.4379 + 0.113 = 2.5509 ms.
TEST(CollectiveTimeTest, PresetInterNodeAllToAllRunsAtTheNicBusEfficiency) {
  const StrategyConfig s;
  for (const char* name : {"h100-sxm-80g", "h100-sxm-80g-measured", "b200-sxm-180g", "b200-sxm-180g-measured"}) {
    const SystemConfig sys = test::preset_system(name);
    const double bps = 372.53 * 1073741824.0 / 8 * 0.8;
    const double want = 134217728.0 * 31 / 32 * 3 / 4 / bps + (3 * 31 + 20) * 1e-6;
    EXPECT_NEAR(want, 2.5509e-3, 1e-7);
    EXPECT_NEAR(collective_time(sys, s, "inter_node", Collective::AllToAll, 134217728.0, 32, "Dispatch_FWD_EP"), want,
                1e-12)
        << name;
  }
}

// Inter-node reductions share the node's NICs between the GPUs of a DP stage's TP (and CP) group,
// or of an expert DP stage's EP·ETP group; the tag must match exactly.
TEST(CollectiveTimeTest, InterNodeReductionsShareTheNicByDataParallelStage) {
  SystemConfig sys = inter_node_system();
  NetOpConfig& ar = sys.networks["inter_node"].ops["all_reduce"];
  ar.scale = 2;
  ar.offset = -1;
  StrategyConfig s;
  s.tp_size = 2;
  s.cp_size = 2;
  s.ep_size = 8;
  // 16 ranks: 1e9·2·15/16 = 1.875e9 bytes over 1e10 B/s divided by min(8, group).
  EXPECT_DOUBLE_EQ(collective_time(sys, s, "inter_node", Collective::AllReduce, 1e9, 16, "dp"), 0.75);
  EXPECT_DOUBLE_EQ(collective_time(sys, s, "inter_node", Collective::AllReduce, 1e9, 16, "dp_cp"), 0.375);
  EXPECT_DOUBLE_EQ(collective_time(sys, s, "inter_node", Collective::AllReduce, 1e9, 16, "edp"), 1.5);
  for (const char* stage : {"tp", "d", "dp_c", "dp_cpx", "edpx", "DP", ""})
    EXPECT_DOUBLE_EQ(collective_time(sys, s, "inter_node", Collective::AllReduce, 1e9, 16, stage), 0.1875) << stage;
}

TEST(CollectiveTimeTest, FixedLatencyByGroupSizeOverridesTheFlatOne) {
  SystemConfig sys = inter_node_system();
  const StrategyConfig s;
  NetworkConfig& nd = sys.networks["inter_node"];
  nd.bandwidth.fixed_latency_s = 1e-3;
  EXPECT_DOUBLE_EQ(collective_time(sys, s, "inter_node", Collective::AllToAll, 1e9, 16, "tp"), 0.09375 + 1e-3);
  nd.bandwidth.fixed_latency_s_by_comm_num["16"] = 2e-3;
  EXPECT_DOUBLE_EQ(collective_time(sys, s, "inter_node", Collective::AllToAll, 1e9, 16, "tp"), 0.09375 + 2e-3);
  // The op's own table comes first; a group size in neither table keeps the flat latency.
  nd.ops["all2all"].fixed_latency_s_by_comm_num["16"] = 4e-3;
  EXPECT_DOUBLE_EQ(collective_time(sys, s, "inter_node", Collective::AllToAll, 1e9, 16, "tp"), 0.09375 + 4e-3);
  EXPECT_DOUBLE_EQ(collective_time(sys, s, "inter_node", Collective::AllToAll, 1e9, 8, "tp"),
                   1e9 * 7 / 8 / 1e10 + 1e-3);
  EXPECT_EQ(collective_time(sys, s, "inter_node", Collective::AllToAll, 1e9, 1, "tp"), 0);
}

TEST(CollectiveTimeTest, ResolvedNetworkPointsIntoTheSystemAndSeesItsValues) {
  SystemConfig sys = inter_node_system();
  const StrategyConfig s;
  const NetworkRef net = resolve_network(sys, "inter_node");
  NetworkConfig& nd = sys.networks["inter_node"];
  EXPECT_EQ(net.config, &nd);
  EXPECT_EQ(net.ops[static_cast<size_t>(Collective::AllToAll)], &nd.ops["all2all"]);
  EXPECT_EQ(net.ops[static_cast<size_t>(Collective::AllReduce)], nullptr);
  EXPECT_TRUE(net.inter_node);
  EXPECT_FALSE(net.pcie);
  EXPECT_FALSE(net.nvlink);
  EXPECT_DOUBLE_EQ(collective_time(sys, s, net, Collective::AllToAll, 1e9, 16, "ep"), 0.375);
  // Values edited in place after resolving count.
  nd.bandwidth.fixed_latency_s = 1e-3;
  EXPECT_DOUBLE_EQ(collective_time(sys, s, net, Collective::AllToAll, 1e9, 16, "tp"), 0.09375 + 1e-3);
  // A group or collective the system lacks throws, as the named lookup.
  EXPECT_THROW((void)collective_time(sys, s, net, Collective::AllReduce, 1e9, 16, "tp"), std::out_of_range);
  EXPECT_EQ(resolve_network(sys, "high_intra_node").config, nullptr);
  EXPECT_THROW((void)collective_time(sys, s, "high_intra_node", Collective::AllToAll, 1e9, 16, "tp"),
               std::out_of_range);
}

TEST(CollectiveTimeTest, ResolvedGroupsKeepThePeersNameTests) {
  SystemConfig sys;
  sys.num_per_node = 8;
  sys.fc8 = true;
  sys.intra_with_pcie = true;
  NetworkConfig& pcie = sys.networks["intra_node_pcie_2x"];
  pcie.bandwidth.bytes_per_s = 5e9;
  NetOpConfig& ar = pcie.ops["all_reduce"];
  ar.scale = 2;
  ar.offset = -1;
  ar.dp_fixed_bw["2"] = 1e10;
  NetworkConfig& nvl = sys.networks["high_intra_node"];
  nvl.bandwidth.bytes_per_s = 1e10;
  nvl.ops["all_gather"].offset = -1;
  sys.networks["inter_node"] = sys.networks["intra_node_pcie_2x"];
  StrategyConfig s;
  s.tp_size = 2;
  s.world_size = 16;
  // tp 2 on the 2x PCIe group, dp 8 spans 16 GPUs: inter-node. Only the groups used are resolved.
  const NetworkChoice c = choose_networks(sys, s, Mode::SimuMax12);
  EXPECT_EQ(c.of(Group::TP), "intra_node_pcie_2x");
  EXPECT_EQ(c.net(Group::TP).config, &sys.networks["intra_node_pcie_2x"]);
  EXPECT_TRUE(c.net(Group::TP).pcie);
  EXPECT_EQ(c.of(Group::DP), "inter_node");
  EXPECT_EQ(c.net(Group::DP).config, &sys.networks["inter_node"]);
  EXPECT_EQ(c.nets[static_cast<size_t>(Network::HighIntraNode)].config, nullptr);
  // 2 ranks: 1e9·2·(2−1)/2 bytes. A DP stage on PCIe takes the measured 1e10 B/s; others the
  // group's 5e9 B/s.
  EXPECT_DOUBLE_EQ(collective_time(sys, s, c.net(Group::TP), Collective::AllReduce, 1e9, 2, "dp"), 0.1);
  EXPECT_DOUBLE_EQ(collective_time(sys, s, c.net(Group::TP), Collective::AllReduce, 1e9, 2, "tp"), 0.2);
  // fc8 NVLink: 4 ranks get 3/7 of the bandwidth; 1e9·3/4 bytes over 1e10·3/7 B/s.
  EXPECT_DOUBLE_EQ(collective_time(sys, s, resolve_network(sys, "high_intra_node"), Collective::AllGather, 1e9, 4,
                                   "tp"),
                   0.175);
}

}  // namespace
}  // namespace trainsim
