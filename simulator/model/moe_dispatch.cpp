// MoE dispatch formulas (see moe_dispatch.h).
#include "model/moe_dispatch.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace trainsim {

double moe_load_imbalance(const ModelConfig& m, const Settings& s, Mode mode) {
  if (mode == Mode::SimuMax12 || !m.is_moe() || m.moe_pad_expert_input_to_capacity) return 1;
  // trainsim's defaults (an assumption, not a measurement): an auxiliary loss keeps the busiest
  // EP rank ~10 % above the mean, Sinkhorn balances by construction, no balancing leaves ~30 %.
  // Force-balanced routing (Megatron --moe-router-force-load-balancing, for benchmarks) replaces
  // the logits by random ones: every expert gets the mean.
  const double f = s.moe.load_imbalance_factor ? *s.moe.load_imbalance_factor
                   : s.moe.force_load_balancing ? 1.0
                   : s.moe.load_balancing == LoadBalancing::Sinkhorn ? 1.0
                   : s.moe.load_balancing == LoadBalancing::None     ? 1.3
                                                                      : 1.1;
  // A capacity factor without padding (Megatron drops the tokens over capacity, pads nothing):
  // no expert runs more than capacity·mean rows.
  return m.capacity_given ? std::min(f, m.capacity) : f;
}

namespace {

// C(pool − away, k) / C(pool, k): no one of k draws without repetition from `pool` lands in the
// `away` ones: Π_j (pool − away − j)/(pool − j).
double miss_all(double pool, double away, int64_t k) {
  double miss = 1;
  for (int64_t j = 0; j < k; ++j) {
    const double dj = static_cast<double>(j);
    miss *= std::max(0.0, (pool - away - dj) / (pool - dj));
  }
  return miss;
}

double log_choose(double n, double r) {
  return std::lgamma(n + 1) - std::lgamma(r + 1) - std::lgamma(n - r + 1);
}

}  // namespace

double expected_token_nodes(int64_t experts, int64_t topk, int64_t nodes) {
  if (nodes <= 1) return 1;
  // P(no chosen expert on a given node) = C(E − E/N, k) / C(E, k) = Π_j (E − E/N − j)/(E − j).
  const double E = static_cast<double>(experts), per_node = E / static_cast<double>(nodes);
  return static_cast<double>(nodes) * (1 - miss_all(E, per_node, topk));
}

double expected_token_nodes(int64_t experts, int64_t topk, int64_t nodes, int64_t groups, int64_t group_topk) {
  if (nodes <= 1) return 1;
  if (groups <= 1 || group_topk <= 0 || group_topk >= groups || experts % groups != 0)
    return expected_token_nodes(experts, topk, nodes);
  const double E = static_cast<double>(experts), G = static_cast<double>(groups), g = static_cast<double>(group_topk);
  const double N = static_cast<double>(nodes), per_group = E / G, pool = g * per_group;
  if (groups % nodes == 0) {
    // q of the node's G/N groups among the token's g: hypergeometric; then k of the pool's
    // experts miss the node's q·E/G.
    const double own = G / N;
    double hit = 0;
    for (int64_t q = 1; q <= std::min<int64_t>(group_topk, groups / nodes); ++q) {
      const double dq = static_cast<double>(q);
      if (g - dq > G - own) continue;
      const double p = std::exp(log_choose(own, dq) + log_choose(G - own, g - dq) - log_choose(G, g));
      hit += p * (1 - miss_all(pool, dq * per_group, topk));
    }
    return N * hit;
  }
  if (nodes % groups == 0) {
    // The node's group is among the token's g with probability g/G; its E/N experts then.
    return N * (g / G) * (1 - miss_all(pool, E / N, topk));
  }
  return expected_token_nodes(experts, topk, nodes);
}

double deepep_bandwidth(int64_t sms, double reference_bps, double link_bps) {
  const double by_sms = reference_bps * static_cast<double>(sms) / static_cast<double>(kDeepEpReferenceSms);
  return sms > 0 ? std::min(link_bps, by_sms) : link_bps;
}

double deepep_time(double nvl_bytes, double rdma_bytes, int64_t sms, double nvl_link_bps, double rdma_link_bps,
                   double nvl_share, double rdma_share) {
  // One part: the link's bytes on the link, the counted bytes (bytes/share) on the SMs.
  auto part = [sms](double bytes, double share, double reference_bps, double link_bps) {
    if (bytes <= 0) return 0.0;
    const double link = bytes / link_bps;
    if (sms <= 0) return link;
    const double by_sms = reference_bps * static_cast<double>(sms) / static_cast<double>(kDeepEpReferenceSms);
    return std::max(link, bytes / std::max(share, 1e-9) / by_sms);
  };
  return std::max(part(nvl_bytes, nvl_share, kDeepEpNvlinkReferenceBps, nvl_link_bps),
                  part(rdma_bytes, rdma_share, kDeepEpRdmaReferenceBps, rdma_link_bps));
}

}  // namespace trainsim
