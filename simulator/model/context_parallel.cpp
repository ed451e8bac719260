// Context-parallel flavours and the ring-attention overlap (see context_parallel.h).
#include "model/context_parallel.h"

#include <algorithm>

#include "core/error.h"

namespace trainsim {

CpFlavor cp_flavor(const std::string& cp_comm_type) {
  if (cp_comm_type == "p2p") return CpFlavor::P2P;
  if (cp_comm_type == "all_gather") return CpFlavor::AllGather;
  if (cp_comm_type == "a2a+p2p") return CpFlavor::A2AP2P;
  TRAINSIM_ASSERT(cp_comm_type == "a2a", "unknown cp_comm_type");
  return CpFlavor::A2A;
}

CpSplit cp_split(const StrategyConfig& s) {
  switch (cp_flavor(s.cp_comm_type)) {
    case CpFlavor::A2A: return {s.cp_size, 1};
    case CpFlavor::P2P: return {1, s.cp_size};
    case CpFlavor::AllGather: return {1, 1};
    case CpFlavor::A2AP2P: {
      // Megatron --hierarchical-context-parallel-sizes: [inner a2a group, outer ring group].
      const auto& h = s.hierarchical_context_parallel_sizes;
      TRAINSIM_ASSERT(h.size() == 2 && h[0] * h[1] == s.cp_size, "a2a+p2p sizes not validated");
      return {h[0], h[1]};
    }
  }
  return {};
}

std::vector<RingStep> ring_schedule(int64_t steps, double block_s, double exchange_s) {
  std::vector<RingStep> out;
  double start = 0;
  for (int64_t i = 0; i < steps; ++i) {
    RingStep st{start, start + block_s, start, i + 1 < steps ? start + exchange_s : start};
    out.push_back(st);
    start = std::max(st.compute_end, st.exchange_end);
  }
  return out;
}

double ring_pass_time(int64_t steps, double block_s, double exchange_s, double tail_s) {
  if (steps <= 0) return 0;
  const auto sched = ring_schedule(steps, block_s, exchange_s);
  return sched.back().compute_end + tail_s;
}

}  // namespace trainsim
