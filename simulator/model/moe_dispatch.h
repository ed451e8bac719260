// MoE token dispatch as Megatron runs it (--moe-token-dispatcher-type and friends): the
// dispatcher flavour, the load imbalance of dropless routing and DeepEP's node dedupe.
#pragma once

#include <cstdint>

#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "plan/settings.h"

namespace trainsim {

/// Tokens of the most loaded EP rank's experts over the mean (≥ 1). 1 when every expert is
/// padded to its capacity (fixed shapes); for dropless routing `moe_load_imbalance_factor`, or
/// the default of the router's load balancing (docs/cost-model.md §17.3). 1 in compat mode
/// (SimuMax v1.2 routes evenly).
[[nodiscard]] double moe_load_imbalance(const ModelConfig& m, const Settings& s, Mode mode);

/// Expected number of distinct nodes a token's `topk` experts live on, the `experts` experts
/// spread evenly over `nodes` nodes and chosen uniformly without repetition:
/// nodes·(1 − C(E − E/nodes, k)/C(E, k)). DeepEP sends a token once per destination node.
[[nodiscard]] double expected_token_nodes(int64_t experts, int64_t topk, int64_t nodes);

/// The same under node-limited routing (Megatron --moe-router-num-groups G,
/// --moe-router-group-topk g; DeepSeek-V3's n_group / topk_group): the experts form G equal
/// groups in expert order, a token picks g groups and its k experts among their g·E/G experts.
/// With G a multiple of `nodes` a node holds G/nodes whole groups (the number of a token's
/// groups on a node is hypergeometric); with `nodes` a multiple of G a group spans nodes/G
/// nodes. Other layouts, G ≤ 1 or g ≥ G route as without groups. `nodes` may be EP ranks.
[[nodiscard]] double expected_token_nodes(int64_t experts, int64_t topk, int64_t nodes, int64_t groups,
                                          int64_t group_topk);

/// Megatron's default of --moe-deepep-num-sms.
inline constexpr int64_t kDeepEpDefaultNumSms = 20;

/// DeepEP's published normal-kernel figures (deepseek-ai/DeepEP README, "Normal kernels with
/// NVLink and RDMA forwarding", as shipped in the deep-ep 1.0.0 source package: H800, ~160 GB/s
/// NVLink and CX7 400 Gb/s RDMA (~50 GB/s), DeepSeek-V3 pretraining setting, 4096 tokens, top-4
/// groups, top-8 experts; the tests run them with 24 SMs, tests/test_intranode.py and
/// test_internode.py `test_main(24, ...)`): intranode EP8 dispatch 153 GB/s over NVLink (combine
/// 158), internode dispatch 43 (EP16), 44 (EP32) and 46 GB/s (EP64) over RDMA (combine 43, 47,
/// 45). The rates count a token once per destination rank (NVLink: `recv_x`, the rows each rank
/// receives) or per destination node (RDMA: `num_rdma_token_sent`, the sender's own node
/// included), not the bytes that cross the link. The RDMA reference is 58 GB/s, the EP32 figure
/// of a later version of that README (43, 58 and 51 GB/s at EP16, 32, 64, after DeepEP's
/// internode kernels were sped up): the project holds no copy of that text, so the figure is
/// unverified; with the 1.0.0 figure (46) DeepSeek-V3 on 1024 H100 is predicted 6.8 % slower
/// (docs/cost-model.md §17.5).
inline constexpr int64_t kDeepEpReferenceSms = 24;
inline constexpr double kDeepEpNvlinkReferenceBps = 153e9;
inline constexpr double kDeepEpRdmaReferenceBps = 58e9;

/// Bandwidth DeepEP's kernels reach on `sms` SMs over a link that carries `link_bps`: the
/// published figure scales with the SMs below the reference count (the kernels' channels are
/// SM pairs: fewer SMs, fewer channels in flight) and the link caps it:
/// min(link_bps, reference_bps·sms/24). The published figures were link-bound, so per SM
/// DeepEP moves at least reference/24; trainsim takes that as its rate (a lower bound).
[[nodiscard]] double deepep_bandwidth(int64_t sms, double reference_bps, double link_bps);

/// Seconds of one DeepEP dispatch or combine on one rank: `nvl_bytes` over NVLink and
/// `rdma_bytes` to other nodes, the two pipelined (DeepEP forwards RDMA arrivals over NVLink
/// while it receives). Each part takes the longer of its SMs' work and its link's: the SMs move
/// the bytes as DeepEP counts them (every destination rank or node, the own one included: the
/// link's bytes over `nvl_share` / `rdma_share`, the fraction of them that crosses the link) at
/// reference·sms/24; the link carries its bytes at `*_link_bps`:
/// max(nvl/share_nvl/(153 GB/s·s/24), nvl/L_nvl, rdma/share_rdma/(58 GB/s·s/24), rdma/L_rdma).
/// `sms` 0: HybridEP, no published per-SM rate, bound by the links alone.
[[nodiscard]] double deepep_time(double nvl_bytes, double rdma_bytes, int64_t sms, double nvl_link_bps,
                                 double rdma_link_bps, double nvl_share = 1, double rdma_share = 1);

}  // namespace trainsim
