// MoE token dispatch as Megatron runs it (--moe-token-dispatcher-type and friends): the
// dispatcher flavour, the load imbalance of dropless routing and DeepEP's node dedupe.
#pragma once

#include <cstdint>

#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "inputs/strategy_config.h"

namespace trainsim {

/// `allgather` (MoEAllGatherTokenDispatcher), `alltoall` (MoEAlltoAllTokenDispatcher, SimuMax's
/// all2all) or `flex` with DeepEP (MoEFlexTokenDispatcher).
enum class MoeDispatcher : uint8_t { AllGather, AllToAll, Flex };

/// The dispatcher of a validated strategy; unset means SimuMax's all2all (= alltoall).
[[nodiscard]] MoeDispatcher moe_dispatcher(const StrategyConfig& s);

/// Tokens of the most loaded EP rank's experts over the mean (≥ 1). 1 when every expert is
/// padded to its capacity (fixed shapes); for dropless routing `moe_load_imbalance_factor`, or
/// the default of the router's load balancing (docs/cost-model.md §17.3). 1 in compat mode
/// (SimuMax v1.2 routes evenly).
[[nodiscard]] double moe_load_imbalance(const ModelConfig& m, const StrategyConfig& s, Mode mode);

/// Expected number of distinct nodes a token's `topk` experts live on, the `experts` experts
/// spread evenly over `nodes` nodes and chosen uniformly without repetition:
/// nodes·(1 − C(E − E/nodes, k)/C(E, k)). DeepEP sends a token once per destination node.
[[nodiscard]] double expected_token_nodes(int64_t experts, int64_t topk, int64_t nodes);

}  // namespace trainsim
