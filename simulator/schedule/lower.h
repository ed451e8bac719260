// Lowering a schedule program onto the engine: compute steps on each rank's compute stream and
// the pipeline transfers between virtual stages, blocking (rendezvous bundles, as Megatron's
// batched send/recv calls) or asynchronous (transfers on the sender's p2p streams; the consumer
// waits for the data, as Megatron's overlap_p2p_comm).
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"
#include "plan/plan.h"
#include "schedule/a2a_overlap.h"
#include "schedule/program.h"

namespace trainsim {

/// Durations of one virtual chunk's passes for one micro-batch (seconds). `bwd` is the whole
/// backward, or only its input-gradient half when the program splits the backward.
struct ChunkTimes {
  double fwd = 0, bwd = 0, bwd_weight = 0;
  // Host seconds to issue each pass (PipelineCosts::host). A forward with sync points runs on
  // the host as two ops, host_fwd_first then the rest (host_fwd − host_fwd_first), the second
  // starting when the device is fwd_first into its pass (the first sync); fwd_first 0: none.
  double host_fwd = 0, host_bwd = 0, host_bwd_weight = 0;
  double host_fwd_first = 0, fwd_first = 0;
  bool loss_sync = false;  // the host reads the loss after this chunk's forward (the head)
};

/// A chunk's forward and backward cut at its EP all-to-alls (merged steps).
struct ChunkA2a {
  A2aPass fwd, bwd;
};

struct PipelineCosts {
  std::vector<std::vector<ChunkTimes>> chunks;  // [rank][chunk]
  double p2p = 0;                               // one activation / gradient transfer
  std::vector<std::vector<ChunkA2a>> a2a;       // [rank][chunk], merged steps only (else empty)
  double a2a_slowdown = 0;                      // compute beside an EP all-to-all (merged steps)
  /// The host stream (default mode with the system's host.framework): a host op per pass; a
  /// device pass starts no earlier than `launch` after its host op starts; blocking p2p costs
  /// the host `p2p_host` and makes it wait for the transfer (Megatron's batch_p2p_sync).
  bool host = false;
  double launch = 0, p2p_host = 0, sync = 0;  // sync: the host's read once the device is there
};


/// Why blocking bundles cannot pair the program's transfers ("" when they can). Blocking
/// lowering exists for non-split programs; interleaved ones pair only when Megatron's
/// recv_tensor_from_previous_stage rules post as many receives as the peer sends.
[[nodiscard]] std::string blocking_problem(const Program& p);

/// Engine op of every compute step: [rank][index of the step in the rank's program].
using StepOps = std::vector<std::vector<Engine::OpId>>;

/// Builds the engine for `p`. Blocking mode requires blocking_problem(p) to be empty. `steps`,
/// when given, receives the op of each compute step (to hang other streams' ops on them); a
/// merged forward/backward pair (asynchronous lowering only) gives each pass's last op.
[[nodiscard]] Engine lower(const Program& p, const PipelineCosts& costs, P2PMode mode, StepOps* steps = nullptr);
/// The same into `e`, emptied first: replays of several programs reuse its memory.
void lower(const Program& p, const PipelineCosts& costs, P2PMode mode, Engine& e, StepOps* steps);

}  // namespace trainsim
