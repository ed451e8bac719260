// Host costs of ops, CUDA graph capture and passes with sync points (see host_cost.h).
#include "compute/host_cost.h"

#include <algorithm>
#include <string_view>

namespace trainsim {

double leaf_host_s(const HostFramework& f, const Leaf& l, int phase, bool module_call) {
  const auto kernels = static_cast<double>(l.kernels[static_cast<size_t>(phase)].size());
  const auto comms = static_cast<double>(l.comms[static_cast<size_t>(phase)].size());
  if (kernels == 0 && comms == 0) return 0;
  return kernels * f.eager_op_s + comms * f.collective_s + (l.te_module && module_call ? f.te_module_s : 0);
}

GraphCapture graph_capture(const Settings& s) {
  GraphCapture g;
  if (s.host.cuda_graphs == CudaGraphImpl::None) return g;
  if (s.host.cuda_graph_scope.empty()) {
    g.attn = g.mlp = g.moe = true;
    return g;
  }
  for (const std::string& x : s.host.cuda_graph_scope) {
    if (x == "full") g.attn = g.mlp = g.moe = true;
    if (x == "attn") g.attn = true;
    if (x == "mlp") g.mlp = true;
    if (x == "moe") g.moe = true;
    if (x == "moe_router" || x == "moe_preprocess") g.router = true;
    if (x == "full_iteration") g.all = true;
    // mamba: no Mamba layers here, nothing captured.
  }
  return g;
}

std::vector<bool> captured_leaves(const LayerTemplate& t, const GraphCapture& g) {
  const size_t n = t.leaves.size();
  std::vector<bool> out(n, g.all);
  if (g.all || !g.any()) return out;
  // The MLP part starts at the pre-MLP norm (Megatron's TransformerLayer: attention with its
  // bias-dropout-add, then the MLP or MoE block with its own).
  size_t mlp_from = n;
  for (size_t i = 0; i < n; ++i)
    if (t.leaves[i].name == "pre_mlp_layernorm") {
      mlp_from = i;
      break;
    }
  bool after_sync = false;
  for (size_t i = 0; i < n; ++i) {
    const Leaf& l = t.leaves[i];
    const bool attn_part = i < mlp_from;
    after_sync = after_sync || l.host_sync;
    bool c = attn_part ? g.attn : t.moe ? g.moe : g.mlp;
    if (!attn_part && t.moe && g.router && l.name.substr(0, 6) == "router") c = true;
    if (!attn_part && t.moe && after_sync) c = false;
    out[i] = c;
  }
  return out;
}

int64_t graph_launches(const std::vector<bool>& captured) {
  int64_t runs = 0;
  for (size_t i = 0; i < captured.size(); ++i)
    if (captured[i] && (i == 0 || !captured[i - 1])) ++runs;
  return runs;
}

SyncedPass synced_pass(std::span<const HostSegment> segments, double sync_s, double launch_s) {
  SyncedPass p;
  if (segments.empty()) return p;
  p.host_first = segments[0].host;
  p.device_first = segments[0].device;
  for (size_t k = 1; k < segments.size(); ++k) {
    const HostSegment& s = segments[k];
    const double span = sync_s + std::max(launch_s + s.device, s.host);
    p.device_rest += span;
    p.host_rest += k + 1 < segments.size() ? span : sync_s + s.host;
  }
  return p;
}

}  // namespace trainsim
