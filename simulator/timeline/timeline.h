// The engine's output: what ran where and when, per rank and stream. Step time, bubble, exposed
// communication and the pipeline order are read from it; summary, JSON and trace are views of it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/small_vector.h"

namespace trainsim {

/// Streams of one rank. Ops on one stream run in issue order; different streams overlap.
/// Host: the CPU thread of the rank issuing the work (default mode with the system's
/// host.framework; compute/host_cost.h).
enum class Stream : uint8_t { Compute, PpForward, PpBackward, Dp, Ep, Host, kCount };
inline constexpr int kStreamCount = static_cast<int>(Stream::kCount);
[[nodiscard]] const char* stream_name(Stream s);

/// What an op of the step is.
enum class StepKind : uint8_t {
  Forward,         // a chunk's forward for one micro-batch
  Backward,        // a chunk's whole backward (input and weight gradients, recompute)
  BackwardInput,   // input-gradient half of a split backward (zero-bubble schedules)
  BackwardWeight,  // weight-gradient half of a split backward
  P2P,             // pipeline send/receive (a batched bundle when blocking)
  Straggler,       // slow-rank allowance added to the pipeline
  DpComm,          // gradient reduce-scatter / all-reduce and parameter all-gather
  Optimizer,       // optimizer step
  EpComm,          // expert-parallel all-to-all on the EP stream (overlap_moe_expert_parallel_comm)
  HostLaunch,      // the host issuing a pass (chunk, micro-batch) or a blocking p2p
  HostSync,        // the host reading a value from the device once it is there
};
[[nodiscard]] const char* step_kind_name(StepKind k);

struct TimelineEvent {
  int32_t rank = 0;
  Stream stream = Stream::Compute;
  StepKind kind = StepKind::Forward;
  int32_t chunk = -1;  // virtual chunk, -1 when not tied to one
  int32_t mb = -1;     // micro-batch, -1 when not tied to one
  double start = 0, end = 0;  // seconds from the start of the step
};

/// Per-rank sums the engine keeps whether or not it records events.
struct RankTotals {
  double end = 0;           // latest end of the rank's ops
  std::array<double, kStreamCount> stream_end{};  // latest end per stream
  std::array<double, kStreamCount> stream_busy{};  // summed op time per stream
  double compute_busy = 0;  // compute-stream time in forward / backward passes
  double p2p_blocking = 0;  // compute-stream time in blocking p2p (transfer and waiting)
};

struct Timeline {
  int32_t ranks = 0;
  SmallVector<RankTotals, 2> totals;  // one per rank, always filled by the engine (inline up to 2)
  std::vector<TimelineEvent> events;  // every op, when the engine was asked to record them

  /// Latest end over all events (0 when empty).
  [[nodiscard]] double span() const;
  /// Latest end of the events of one rank.
  [[nodiscard]] double rank_end(int32_t rank) const;
  /// Summed duration of one rank's events of a kind.
  [[nodiscard]] double busy(int32_t rank, StepKind kind) const;
};

}  // namespace trainsim
