// The host stream of each rank, added to a lowered program (default mode with the system's
// host.framework): one host op per pass issuing it, in the rank's program order. A device pass
// starts no earlier than its host op's start plus max(launch, host − device): the first kernel
// needs launching, and a pass whose host time exceeds its device time ends when its last kernel
// is issued (the device idles before it, visible in the trace). Sync points make the host wait
// for the device: a forward with sync points inside (ChunkTimes::fwd_first), the loss read after
// the head's forward, and every blocking p2p bundle (Megatron's batch_p2p_sync: the transfers
// wait for the host to get there, one host op after them issues and synchronizes).
#pragma once

#include "engine/engine.h"
#include "schedule/lower.h"

namespace trainsim {

/// Adds the host ops of every rank of `e` (lowered from a program with `costs`); nothing when
/// costs.host is false.
void add_host_stream(Engine& e, const PipelineCosts& costs);

/// The fraction of a host op of `host` seconds at which a device pass of `device` seconds may
/// start: max(launch, host − device) / host, at most 1.
[[nodiscard]] double host_issue_fraction(double host, double device, double launch);

}  // namespace trainsim
