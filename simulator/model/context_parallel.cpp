// Context-parallel flavours and the ring-attention overlap (see context_parallel.h).
#include "model/context_parallel.h"

#include <algorithm>

#include "core/error.h"

namespace trainsim {

CpSplit cp_split(const Settings& s) {
  switch (s.par.cp_comm) {
    case CpFlavor::A2A: return {s.par.cp, 1};
    case CpFlavor::P2P: return {1, s.par.cp};
    case CpFlavor::AllGather: return {1, 1};
    case CpFlavor::A2AP2P: {
      // Megatron --hierarchical-context-parallel-sizes: [inner a2a group, outer ring group].
      TRAINSIM_ASSERT(s.par.cp_a2a * s.par.cp_ring == s.par.cp, "a2a+p2p sizes not validated");
      return {s.par.cp_a2a, s.par.cp_ring};
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
