// Pipeline schedules as programs: per rank, the order in which it runs (chunk, micro-batch, pass)
// steps. A schedule is one builder here; the engine replays any program (see schedule/lower.h).
#pragma once

#include <cstdint>
#include <vector>

namespace trainsim {

enum class Pass : uint8_t {
  Forward,
  Backward,        // whole backward, or its input-gradient half when the program splits it
  BackwardWeight,  // weight-gradient half (split programs only)
};

struct Step {
  int32_t chunk = 0;  // virtual chunk on this rank (virtual stage = chunk·pp + rank)
  int32_t mb = 0;
  Pass pass = Pass::Forward;
  bool merged = false;  // a forward run merged with the backward after it (EP A2A overlap)
};

struct Program {
  int64_t pp = 1, v = 1, mbc = 1;
  int64_t group = 1;            // interleaved: micro-batches per chunk group
  bool split_backward = false;  // Backward is the input-gradient half; BackwardWeight follows
  std::vector<std::vector<Step>> ranks;
};

/// Megatron's non-interleaved 1F1B: rank r runs min(pp−r−1, mbc) warm-up forwards, then one
/// forward / one backward, then the cool-down backwards (schedules.py
/// forward_backward_pipelining_without_interleaving).
[[nodiscard]] Program one_f_one_b(int64_t pp, int64_t mbc);
/// Each builder also writes into a given program, whose step lists keep their memory (the
/// estimate's replays, one after another).
void one_f_one_b(int64_t pp, int64_t mbc, Program& into);

/// Megatron's interleaved 1F1B over v virtual chunks per rank: micro-batches enter in groups of
/// `group` per chunk (microbatch_group_size_per_vp_stage, schedule table of
/// forward_backward_pipelining_with_interleaving); warm-up (pp−r−1)·2 + (v−1)·group steps.
/// Works for any pp ≥ 1, mbc ≥ 1 and group ≥ 1.
/// `combined`: Megatron's combined 1F1B (overlap_moe_expert_parallel_comm, combined_1f1b.py):
/// one more warm-up forward, so that each steady-state forward runs a later micro-batch than the
/// backward it is merged with (independent passes); those forwards are marked `merged`. With
/// pp 1 and v 1 this is the no-pipelining combined schedule: F0, (F1 B0), …, B(mbc−1).
[[nodiscard]] Program interleaved(int64_t pp, int64_t v, int64_t mbc, int64_t group, bool combined = false);
void interleaved(int64_t pp, int64_t v, int64_t mbc, int64_t group, bool combined, Program& into);
/// The (micro-batch, chunk) of the k-th forward of the interleaved table; the k-th backward
/// runs the same micro-batch on chunk v−1−chunk.
struct TableEntry {
  int64_t mb, chunk;
};
[[nodiscard]] std::vector<TableEntry> interleaved_table(int64_t v, int64_t mbc, int64_t group);

/// Zero-bubble ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, §3.1): the
/// backward is split into input gradient (B) and weight gradient (W); warm-up as 1F1B; rank r
/// defers each W by r micro-batches so at most pp micro-batches hold activations on any rank
/// (1F1B's peak), and the deferred W passes fill the cool-down bubble.
[[nodiscard]] Program zero_bubble_h1(int64_t pp, int64_t mbc);
void zero_bubble_h1(int64_t pp, int64_t mbc, Program& into);

}  // namespace trainsim
