#include "passes/offload.h"

#include <algorithm>
#include <string>

namespace trainsim {
namespace {

// Megatron's offload_modules and the leaf holding each module's saved tensors.
struct ModuleLeaf {
  const char* module;
  const char* leaf;
};
constexpr ModuleLeaf kModuleLeaves[] = {
    {"attn_norm", "input_layernorm"}, {"core_attn", "core_attention"},   {"attn_proj", "linear_proj"},
    {"mlp_norm", "pre_mlp_layernorm"}, {"expert_fc1", "experts.linear_fc1"}, {"moe_act", "expert_swiglu"},
};

}  // namespace

void apply_offload(std::vector<Leaf>& L, const StrategyConfig& s) {
  if (!s.fine_grained_activation_offloading) return;
  for (const auto& mod : s.offload_modules) {
    const auto* row = std::find_if(std::begin(kModuleLeaves), std::end(kModuleLeaves),
                                   [&](const ModuleLeaf& r) { return mod == r.module; });
    if (row == std::end(kModuleLeaves)) continue;  // the reader rejects unknown modules
    for (auto& l : L) {
      if (l.name != row->leaf || l.recompute || l.offload_bytes > 0) continue;
      if (l.cache < static_cast<double>(s.min_offloaded_tensor_size)) continue;
      l.offload_bytes = l.cache;
      l.bpk += l.cache;
      l.cache = 0;
    }
  }
}

}  // namespace trainsim
