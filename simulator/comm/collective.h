// Collective time on a network group (the peer's compute_net_op_time) and the choice of
// network group per parallel dimension (its analysis_net).
#pragma once

#include <array>
#include <string>

#include "config/mode.h"
#include "config/strategy_config.h"
#include "config/system_config.h"
#include "model/graph.h"

namespace trainsim {

/// Network group name per parallel dimension, indexed by Group.
struct NetworkChoice {
  std::array<std::string, 7> name;
  [[nodiscard]] const std::string& of(Group g) const { return name[static_cast<int>(g)]; }
};

/// Picks the network of each group from the ranks it spans in Megatron's order tp-cp-ep-dp-pp
/// (NVLink or PCIe templates). SimuMax12: the peer's test of the span against num_per_node.
/// Default: a group is on high_intra_node only when every instance of it lies inside one NVLink
/// domain (nvlink_domain(sys) GPUs): span ≤ domain and the domain a multiple of the span; the
/// pipeline group only when the whole world fits one domain (its slowest p2p pair sets the pace).
/// User `*_net` values are ignored, as the peer.
[[nodiscard]] NetworkChoice choose_networks(const SystemConfig& sys, const StrategyConfig& s, Mode mode);

/// Seconds for one collective over `n` ranks on `net` of `bytes` (the full tensor).
/// `stage` is the peer's comm_stage tag ("dp_cp", "edp", "tp", "cp", "ep", ...).
[[nodiscard]] double collective_time(const SystemConfig& sys, const StrategyConfig& s,
                                     const std::string& net, Collective kind, double bytes,
                                     int64_t n, const char* stage);

[[nodiscard]] const char* collective_name(Collective c);

}  // namespace trainsim
