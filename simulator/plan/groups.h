// The parallel groups of a plan and the network each runs on: the group and collective kinds,
// the network groups of a system file (`networks.<name>`) and the choice of one per group that
// the Plan resolves (defined in comm/collective.cpp, beside the collective times that read them).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "inputs/mode.h"
#include "plan/settings.h"
#include "system/system_config.h"

namespace trainsim {

class CollectiveModel;  // comm/collective_model.h: measured collective times over size

enum class Collective { AllReduce, AllGather, ReduceScatter, P2P, AllToAll };
/// Parallel group a collective runs over (selects the network group).
enum class Group { TP, CP, DP, PP, EP, ETP, EDP };
/// The groups a chunk's leaves communicate over; DP, PP and EDP traffic is scheduled outside
/// the chunk. The estimate cache keys chunks by these groups' networks.
inline constexpr Group kChunkGroups[] = {Group::TP, Group::CP, Group::EP, Group::ETP};
inline constexpr size_t kGroupCount = 7;
[[nodiscard]] const char* group_name(Group g);  // "tp", "cp", "dp", "pp", "ep", "etp", "edp"

/// The network groups choose_networks picks from (system JSON `networks.<name>`).
enum class Network : uint8_t { HighIntraNode, InterNode, IntraNodePcie2x, IntraNodePcie4x, IntraNodePcie8x };
inline constexpr size_t kNetworkCount = 5;
inline constexpr size_t kCollectiveCount = 5;
[[nodiscard]] const std::string& network_name(Network n);

/// A network group of one system with its collectives, found once so that collective_time
/// searches no map. Points into the system, which must outlive it and keep its entries as they
/// are: replacing an entry (assigning a group, or the whole system) leaves it stale.
struct NetworkRef {
  const NetworkConfig* config = nullptr;                   // null: the system has no such group
  std::array<const NetOpConfig*, kCollectiveCount> ops{};  // by Collective; null: not in the group
  /// By Collective: the op's measured model where it has one and the mode uses it (default mode).
  std::array<const CollectiveModel*, kCollectiveCount> models{};
  bool pcie = false;        // a PCIe group: measured DP bandwidths (dp_fixed_bw) apply
  bool nvlink = false;      // high_intra_node: fc8 scales its bandwidth with the group size
  bool inter_node = false;  // the node's GPUs share its NICs
};

/// The group `name` of `sys` (what the name says of it: the peer's tests on the name). Its ops'
/// collective models are used in the default mode only (compat mode: the peer's formula).
[[nodiscard]] NetworkRef resolve_network(const SystemConfig& sys, const std::string& name, Mode mode = Mode::Default);

/// Network group per parallel dimension, with the groups it uses resolved against the system.
struct NetworkChoice {
  std::array<Network, kGroupCount> kind{};
  std::array<NetworkRef, kNetworkCount> nets;  // by Network; resolved where some group uses it
  [[nodiscard]] const std::string& of(Group g) const { return network_name(kind[static_cast<size_t>(g)]); }
  [[nodiscard]] const NetworkRef& net(Group g) const {
    return nets[static_cast<size_t>(kind[static_cast<size_t>(g)])];
  }
};

/// The groups of `kind` (by Group) resolved against `sys`: what choose_networks returns for that
/// choice. An estimate resolves its plan's choice again, as the system may have been edited in
/// place since the plan was resolved (its entries replaced: the plan's references left stale).
[[nodiscard]] NetworkChoice resolve_networks(const SystemConfig& sys, const std::array<Network, kGroupCount>& kind,
                                             Mode mode);

/// Picks the network of each group from the ranks it spans in Megatron's order tp-cp-ep-dp-pp
/// (NVLink or PCIe templates). SimuMax12: the peer's test of the span against num_per_node.
/// Default: a group is on high_intra_node only when every instance of it lies inside one NVLink
/// domain (nvlink_domain(sys) GPUs): span ≤ domain and the domain a multiple of the span; the
/// pipeline group only when the whole world fits one domain (its slowest p2p pair sets the pace).
/// User `*_net` values are ignored, as the peer. The chosen groups are resolved against `sys`.
[[nodiscard]] NetworkChoice choose_networks(const SystemConfig& sys, const Settings& s, Mode mode);

}  // namespace trainsim
