// MoE dispatch formulas (see moe_dispatch.h).
#include "model/moe_dispatch.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace trainsim {

MoeDispatcher moe_dispatcher(const StrategyConfig& s) {
  if (!s.moe_token_dispatcher_type || *s.moe_token_dispatcher_type == "alltoall") return MoeDispatcher::AllToAll;
  if (*s.moe_token_dispatcher_type == "allgather") return MoeDispatcher::AllGather;
  TRAINSIM_ASSERT(*s.moe_token_dispatcher_type == "flex", "unknown moe_token_dispatcher_type");
  return MoeDispatcher::Flex;
}

double moe_load_imbalance(const ModelConfig& m, const StrategyConfig& s, Mode mode) {
  if (mode == Mode::SimuMax12 || !m.is_moe() || m.moe_pad_expert_input_to_capacity) return 1;
  // trainsim's defaults (an assumption, not a measurement): an auxiliary loss keeps the busiest
  // EP rank ~10 % above the mean, Sinkhorn balances by construction, no balancing leaves ~30 %.
  const std::string type = s.moe_router_load_balancing_type.value_or("aux_loss");
  const double f = s.moe_load_imbalance_factor ? *s.moe_load_imbalance_factor
                   : type == "sinkhorn"        ? 1.0
                   : type == "none"            ? 1.3
                                               : 1.1;
  // A capacity factor without padding (Megatron drops the tokens over capacity, pads nothing):
  // no expert runs more than capacity·mean rows.
  return m.capacity_given ? std::min(f, m.capacity) : f;
}

double expected_token_nodes(int64_t experts, int64_t topk, int64_t nodes) {
  if (nodes <= 1) return 1;
  // P(no chosen expert on a given node) = C(E − E/N, k) / C(E, k) = Π_j (E − E/N − j)/(E − j).
  const double E = static_cast<double>(experts), per_node = E / static_cast<double>(nodes);
  double miss = 1;
  for (int64_t j = 0; j < topk; ++j) miss *= std::max(0.0, (E - per_node - static_cast<double>(j)) / (E - static_cast<double>(j)));
  return static_cast<double>(nodes) * (1 - miss);
}

}  // namespace trainsim
