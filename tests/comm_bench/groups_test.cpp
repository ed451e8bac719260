// Group planning and network classes.
#include <gtest/gtest.h>

#include "groups.h"

namespace comm_bench {
namespace {

std::vector<std::string> names(const std::vector<GroupPlan>& plans) {
  std::vector<std::string> out;
  for (const auto& p : plans) out.push_back(p.name);
  return out;
}

std::vector<int> block_nodes(int nodes, int per_node) {
  std::vector<int> out;
  for (int n = 0; n < nodes; ++n)
    for (int l = 0; l < per_node; ++l) out.push_back(n);
  return out;
}

TEST(CommGroupTest, TwoNvlinkNodesOfEight) {
  const auto plans = plan_groups(block_nodes(2, 8), IntraLink::NVLink);
  ASSERT_EQ(names(plans), (std::vector<std::string>{"intra_node_x2", "intra_node_x4", "intra_node_x8",
                                                    "inter_node_x2", "world_x16"}));
  const GroupPlan& x8 = plans[2];
  EXPECT_EQ(x8.network, "high_intra_node");
  EXPECT_EQ(x8.groups, (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}}));
  EXPECT_EQ(plans[0].groups.size(), 8u);  // 4 pairs per node, all at once
  const GroupPlan& inter = plans[3];
  EXPECT_EQ(inter.kind, GroupKind::InterNode);
  EXPECT_EQ(inter.network, "inter_node");
  ASSERT_EQ(inter.groups.size(), 8u);
  EXPECT_EQ(inter.groups[1], (std::vector<int>{1, 9}));
  EXPECT_EQ(inter.color_of(9), 1);
  EXPECT_EQ(plans[4].kind, GroupKind::World);
  EXPECT_EQ(plans[4].size, 16);
}

TEST(CommGroupTest, PcieNodeUsesSimuMaxPcieClasses) {
  const auto plans = plan_groups(block_nodes(1, 8), IntraLink::PCIe);
  ASSERT_EQ(plans.size(), 3u);  // one node: no inter-node or world plans
  EXPECT_EQ(plans[0].network, "intra_node_pcie_2x");
  EXPECT_EQ(plans[1].network, "intra_node_pcie_4x");
  EXPECT_EQ(plans[2].network, "intra_node_pcie_8x");
  EXPECT_EQ(network_class(GroupKind::IntraNode, 3, IntraLink::PCIe), "intra_node_pcie_4x");
}

TEST(CommGroupTest, RoundRobinPlacementUsesHostNames) {
  const std::vector<int> nodes = node_ids({"b", "a", "b", "a"});
  EXPECT_EQ(nodes, (std::vector<int>{0, 1, 0, 1}));
  const auto plans = plan_groups(nodes, IntraLink::NVLink);
  ASSERT_EQ(names(plans), (std::vector<std::string>{"intra_node_x2", "inter_node_x2", "world_x4"}));
  EXPECT_EQ(plans[0].groups, (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(plans[1].groups, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
}

TEST(CommGroupTest, PairsAcrossNodesWhenMoreThanTwoNodes) {
  const auto plans = plan_groups(block_nodes(3, 2), IntraLink::NVLink);
  ASSERT_EQ(names(plans), (std::vector<std::string>{"intra_node_x2", "inter_node_x3", "inter_node_pair", "world_x6"}));
  EXPECT_EQ(plans[2].groups, (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));  // node 2 idles
  EXPECT_EQ(plans[2].color_of(4), -1);
  const std::vector<Collective> all = {Collective::AllReduce, Collective::P2P};
  EXPECT_EQ(plan_collectives(plans[2], all), (std::vector<Collective>{Collective::P2P}));
  EXPECT_EQ(plan_collectives(plans[0], all), all);  // pairs: p2p too
  EXPECT_EQ(plan_collectives(plans[1], all), (std::vector<Collective>{Collective::AllReduce}));
}

TEST(CommGroupTest, SingleProcess) {
  std::vector<std::string> notes;
  const auto plans = plan_groups({0}, IntraLink::NVLink, &notes);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].kind, GroupKind::Single);
  EXPECT_EQ(plans[0].network, "");
  EXPECT_TRUE(plan_collectives(plans[0], {Collective::P2P}).empty());  // never a rank with itself
  ASSERT_EQ(notes.size(), 1u);
}

TEST(CommGroupTest, NotesForUnevenAndUnclassifiedGroups) {
  std::vector<std::string> notes;
  std::vector<int> nodes = block_nodes(1, 8);
  for (int i = 0; i < 6; ++i) nodes.push_back(1);
  const auto plans = plan_groups(nodes, IntraLink::NVLink, &notes);
  EXPECT_EQ(names(plans), (std::vector<std::string>{"intra_node_x2", "intra_node_x4", "intra_node_x6",
                                                    "inter_node_x2", "world_x14"}));
  EXPECT_EQ(notes, (std::vector<std::string>{"nodes hold 6 to 8 ranks: groups use the first 6 ranks of each node",
                                             "6 ranks per node do not divide into groups of 4: the rest idle"}));
  notes.clear();
  (void)plan_groups(block_nodes(1, 16), IntraLink::PCIe, &notes);
  EXPECT_EQ(notes, (std::vector<std::string>{
                       "intra-node groups of 16 over PCIe skipped: SimuMax has no PCIe class above 8"}));
}

TEST(CommGroupTest, DescribeShowsFirstGroups) {
  const auto plans = plan_groups(block_nodes(1, 4), IntraLink::NVLink);
  EXPECT_EQ(describe_plans(plans),
            "  intra_node_x2    high_intra_node      2 group(s) of 2: [0,1] [2,3]\n"
            "  intra_node_x4    high_intra_node      1 group(s) of 4: [0,1,2,3]\n");
  EXPECT_NE(describe_plans(plan_groups(block_nodes(2, 8), IntraLink::NVLink)).find("[6,7] ... (4 more)"),
            std::string::npos);
}

}  // namespace
}  // namespace comm_bench
