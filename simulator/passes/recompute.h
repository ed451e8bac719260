// Recompute pass: marks which leaves of a recomputed layer re-run in the backward, where the
// checkpointed segments start and end, and which leaves keep no input copy (the peer's legacy
// granularities and Megatron's recompute modules with output discarding).
#pragma once

#include <vector>

#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "plan/settings.h"
#include "model/graph.h"

namespace trainsim {

/// Sets the recompute roles of one recomputed layer's leaves (`moe`: the layer's MLP is MoE).
/// `mode`: the default mode checkpoints Megatron's whole dense MLP (fc1 included) for the `mlp`
/// module; the peer keeps fc1's activations.
void apply_recompute(std::vector<Leaf>& L, const ModelConfig& m, const Settings& s, bool moe, Mode mode);

}  // namespace trainsim
