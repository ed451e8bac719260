// Pipeline schedules replayed as events with blocking point-to-point rendezvous
// (Megatron 1F1B and the synchronous interleaved schedule, as the peer's perf model).
#pragma once

#include <cstdint>
#include <vector>

namespace trainsim {

/// Per-micro-batch durations of one pipeline rank (seconds). p2p entries are 0 where the rank
/// has no neighbour on that side.
struct StagePhases {
  double fwd = 0, bwd = 0;
  double fwd_recv = 0, fwd_send = 0, bwd_recv = 0, bwd_send = 0;
};

/// Megatron non-interleaved 1F1B over `ranks.size()` stages and `mbc` micro-batches: warm-up
/// forwards, steady one-forward-one-backward with batched send/recv, cool-down backwards.
/// A send/recv pair ends at max(ready times) + max(durations) on both ranks.
/// Returns the time the last rank finishes.
[[nodiscard]] double replay_1f1b(const std::vector<StagePhases>& ranks, int64_t mbc);

/// Megatron interleaved schedule (synchronous, batched p2p) over pp ranks with v virtual chunks
/// each; `chunks[r][c]` are the durations of rank r's chunk c. `group` is
/// microbatch_group_size_per_vp_stage. Also returns, per rank, the order of phases
/// (chunk, forward?) for the memory replay.
struct InterleavedPhase {
  int chunk;
  bool forward;
};
[[nodiscard]] double replay_interleaved(const std::vector<std::vector<StagePhases>>& chunks,
                                        int64_t mbc, int64_t group,
                                        std::vector<std::vector<InterleavedPhase>>* order);

}  // namespace trainsim
