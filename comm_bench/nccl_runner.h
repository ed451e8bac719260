// The measured sweep on GPUs (CUDA + NCCL); built only when both are available.
#pragma once

#include <string>

#include "options.h"
#include "world.h"

namespace comm_bench {

/// Runs every planned (group, collective, size), writes `o.out` from rank 0 after each size
/// and prints the table at the end. Throws RankError on a failed call or a timeout.
void run_sweep(const World& world, const Options& o, const std::string& command);

}  // namespace comm_bench
