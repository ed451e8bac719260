// Activation offloading pass: moves the saved tensors of the offloaded modules to host memory.
#pragma once

#include <vector>

#include "plan/settings.h"
#include "model/graph.h"

namespace trainsim {

/// Megatron's fine-grained activation offloading over one layer's leaves: a leaf of a listed
/// module (offload_modules), or one saving a listed tensor (offload_tensors), that keeps its saved tensors (not recomputed) and saves at least
/// min_offloaded_tensor_size bytes hands them to host memory after its forward (offload_bytes,
/// no GPU cache) and gets them back for its backward (added to its backward transient).
void apply_offload(std::vector<Leaf>& L, const Settings& s);

}  // namespace trainsim
