// collective_time on hand-computed cases: the inter-node all-to-all NIC sharing (stage tag
// tested case-insensitively, as the peer lowercases it) and the group-size fixed latency.
#include <gtest/gtest.h>

#include "comm/collective.h"

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

}  // namespace
}  // namespace trainsim
