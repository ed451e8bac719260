// SDPA graph descriptions.
#include "sdpa_graph.h"

#include <cmath>

#include "core/error.h"
#include "core/text.h"

namespace trainsim::kb {

const SdpaTensor& SdpaGraph::at(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return t;
  throw Error("sdpa graph has no tensor '" + name + "'");
}

size_t SdpaGraph::buffer_bytes(const SdpaTensor& t) {
  int64_t last = 0;
  for (size_t i = 0; i < t.dims.size(); ++i) last += (t.dims[i] - 1) * t.strides[i];
  return static_cast<size_t>(last + 1) * (t.dtype == "fp32" ? 4 : 2);
}

SdpaGraph sdpa_graph(const SdpaShape& a, bool backward) {
  if (a.kv_head_num < 1 || a.head_num % a.kv_head_num != 0)
    throw Error(strprintf("head_num %lld is not a multiple of kv_head_num %lld", static_cast<long long>(a.head_num),
                          static_cast<long long>(a.kv_head_num)));
  const int64_t b = a.batch, s = a.seq_len, f = a.qkv_contiguous ? 1 : 2;
  auto sbhd = [&](const char* name, int64_t uid, int64_t h, int64_t d, int64_t factor, bool out) {
    return SdpaTensor{name, uid, {b, h, s, d}, {h * d, d, factor * b * h * d, 1}, "bf16", out};
  };
  SdpaGraph g;
  g.backward = backward;
  g.attn_scale = 1.0f / std::sqrt(static_cast<float>(a.qk_head_dim));
  const int64_t hq = a.head_num, hk = a.kv_head_num;
  g.tensors = {sbhd("Q", 1, hq, a.qk_head_dim, f, false), sbhd("K", 2, hk, a.qk_head_dim, f, false),
               sbhd("V", 3, hk, a.v_head_dim, f, false), sbhd("O", 4, hq, a.v_head_dim, 1, !backward),
               SdpaTensor{"Stats", 5, {b, hq, s, 1}, {hq * s, s, 1, 1}, "fp32", !backward}};
  if (backward) {
    g.generate_stats = false;
    g.tensors.push_back(sbhd("dO", 6, hq, a.v_head_dim, 1, false));
    g.tensors.push_back(sbhd("dQ", 7, hq, a.qk_head_dim, 1, true));
    g.tensors.push_back(sbhd("dK", 8, hk, a.qk_head_dim, 1, true));
    g.tensors.push_back(sbhd("dV", 9, hk, a.v_head_dim, 1, true));
  }
  return g;
}

}  // namespace trainsim::kb
