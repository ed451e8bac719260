// Group planning: which sub-communicators to measure and which network class each belongs to.
#pragma once

#include <string>
#include <vector>

#include "collectives.h"

namespace comm_bench {

/// How a group is placed on the nodes.
enum class GroupKind {
  Single,          // one process (world of 1): functional smoke test, never fitted
  IntraNode,       // g ranks of one node (TP/EP-like groups)
  InterNode,       // one rank per node (DP/PP-like groups across nodes)
  InterNodePair,   // two ranks on different nodes (p2p only)
  World,           // every rank (mixed intra/inter; reported, not merged)
};
[[nodiscard]] const char* kind_name(GroupKind k);
/// Throws trainsim::UsageError for an unknown spelling.
[[nodiscard]] GroupKind parse_kind(const std::string& s);

/// Link between the GPUs of one node.
enum class IntraLink { NVLink, PCIe };

/// One measured configuration: several equal groups that run concurrently (as TP groups do in
/// training), each listing world ranks in communicator order.
struct GroupPlan {
  std::string name;      // e.g. "intra_node_x8", "inter_node_x2", "world_x16"
  GroupKind kind = GroupKind::Single;
  std::string network;   // system JSON network class; "" when not fitted
  int size = 0;
  std::vector<std::vector<int>> groups;
  /// Index of the group holding `rank`, or −1 (the rank idles while this plan runs).
  [[nodiscard]] int color_of(int rank) const;
};

/// SimuMax network class (perf_llm.py analysis_high_link_net / analysis_pcie_net):
/// NVLink → high_intra_node; PCIe → intra_node_pcie_{2x,4x,8x} (size ≤ 2/4/8); inter-node and
/// world → inter_node; single → "". PCIe groups above 8 have no class ("").
[[nodiscard]] std::string network_class(GroupKind k, int size, IntraLink link);

/// Node index of every rank, numbered by first appearance of its host name.
[[nodiscard]] std::vector<int> node_ids(const std::vector<std::string>& hostnames);

/// Plans for ranks placed on nodes `node_of_rank` (node index per world rank): intra-node
/// groups of 2, 4, 8 and the whole node; one rank per node; pairs across nodes when there are
/// more than two nodes; the whole world. Sizes that cannot be formed are left out with a
/// line in `notes`.
[[nodiscard]] std::vector<GroupPlan> plan_groups(const std::vector<int>& node_of_rank, IntraLink link,
                                                 std::vector<std::string>* notes = nullptr);

/// The requested collectives that make sense on a plan: p2p only on pairs, pairs only p2p,
/// no p2p for a single rank (it would send to itself).
[[nodiscard]] std::vector<Collective> plan_collectives(const GroupPlan& plan,
                                                       const std::vector<Collective>& requested);

/// One line per plan: "intra_node_x8  high_intra_node  2 groups of 8: [0..7] [8..15]".
[[nodiscard]] std::string describe_plans(const std::vector<GroupPlan>& plans);

}  // namespace comm_bench
