// Context-parallel attention flavours (Megatron --cp-comm-type, run by TransformerEngine): how a
// CP group splits heads and sequence, what each flavour exchanges, and the ring's overlap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/settings.h"

namespace trainsim {

/// How a CP group of cp ranks splits attention: heads over `a2a` ranks (all-to-all), the
/// sequence over `ring` ranks (KV circulated); a2a·ring = cp. all_gather splits neither (a2a =
/// ring = 1: every rank keeps its queries and gathers all keys and values).
struct CpSplit {
  int64_t a2a = 1, ring = 1;
};
[[nodiscard]] CpSplit cp_split(const Settings& s);

/// One step of a ring-attention pass on the timeline of a rank (seconds from the pass start).
struct RingStep {
  double compute_start, compute_end;    // blockwise attention on the KV block held
  double exchange_start, exchange_end;  // send/recv of the block the next step uses (none last)
};

/// Ring attention (TE AttnFuncWithCPAndKVP2P): step i computes on the KV block received in step
/// i−1 while the block for step i+1 is exchanged, so step i+1 starts when both are done. Step 0
/// uses the local block. With causal load balancing every step does the same work (see
/// docs/cost-model.md), `block_s` each. `exchange_s` is one step's send/recv.
[[nodiscard]] std::vector<RingStep> ring_schedule(int64_t steps, double block_s, double exchange_s);

/// Seconds of one ring pass: the last step's end plus an exposed `tail_s` (the backward's last
/// dK/dV send back to its owner).
[[nodiscard]] double ring_pass_time(int64_t steps, double block_s, double exchange_s, double tail_s);

}  // namespace trainsim
