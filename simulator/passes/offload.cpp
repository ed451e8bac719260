#include "passes/offload.h"

#include <string>

namespace trainsim {
namespace {

// Megatron's offload_modules and the leaf holding each module's saved tensors.
struct NameLeaf {
  const char* name;
  const char* leaf;
};
constexpr NameLeaf kModuleLeaves[] = {
    {"attn_norm", "input_layernorm"}, {"core_attn", "core_attention"},   {"attn_proj", "linear_proj"},
    {"mlp_norm", "pre_mlp_layernorm"}, {"expert_fc1", "experts.linear_fc1"}, {"moe_act", "expert_swiglu"},
};
// Megatron's offload_tensors and the leaves that save each tagged tensor: the pre-MLP norm's
// output is kept by the dense MLP's linear_fc1 (or, in a MoE layer, by the router, which the
// shared expert's fc1 reads from); the dispatched tokens by the experts' fc1.
constexpr NameLeaf kTensorLeaves[] = {
    {"pre_mlp_layernorm_output", "linear_fc1"},
    {"pre_mlp_layernorm_output", "router"},
    {"dispatched_input", "experts.linear_fc1"},
};

}  // namespace

void apply_offload(std::vector<Leaf>& L, const Settings& s) {
  if (!s.off.activations) return;
  auto offload = [&](const char* leaf) {
    for (auto& l : L) {
      if (l.name != leaf || l.recompute || l.offload_bytes > 0) continue;
      if (l.cache < static_cast<double>(s.off.min_tensor_bytes)) continue;
      l.offload_bytes = l.cache;
      l.bpk += l.cache;
      l.cache = 0;
    }
  };
  for (const auto& mod : s.off.modules)
    for (const auto& row : kModuleLeaves)
      if (mod == row.name) offload(row.leaf);
  for (const auto& tag : s.off.tensors)
    for (const auto& row : kTensorLeaves)
      if (tag == row.name) offload(row.leaf);
}

}  // namespace trainsim
