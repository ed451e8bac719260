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

/// What DeepEP's normal kernels move per SM, as the rate of `kDeepEpReferenceSms` SMs, counting a
/// token once per destination rank (NVLink: `recv_x`, the rows each rank receives) or per
/// destination node (RDMA: `num_rdma_token_sent`, the sender's own node included), not the bytes
/// that cross the link. Fitted on measured H100 timings (aiconfigurator-core 0.12.0,
/// h100_sxm/comm/sglang wideep_deepep_normal_perf: SGLang's DeepEP on nodes of 8 H100, hidden
/// 7168, 256 experts, top-8, tokens routed uniformly; copied into tests/data/deepep): the median
/// over both directions of the rows' bytes per second and SM, rows of 1024 to 131,072 tokens per
/// rank, dispatch FP8 with fp32 scales per 128 values (7392 bytes a token), combine bf16:
///  - NVLink: the 16 rows of one node (EP8, 20 SMs, the only count measured there): 16.52 GB/s
///    per SM (dispatch 16.44, combine 17.34 at the median), 396 GB/s on 24 SMs. The same kernels
///    on H800 (DeepEP's README: 153 GB/s on 24 SMs, the former reference) were bound by its
///    ~160 GB/s NVLink; whether 20 SMs on H100 are, the table cannot tell (one SM count), so
///    this too is a lower bound.
///  - RDMA: the 96 rows of two nodes (EP16, 4 to 24 SMs; time × SMs nearly constant, so bound
///    by the SMs, leaving the node at 0.12 to 0.88 of the NIC's 50 GB/s): 3.18 GB/s per SM
///    (dispatch 3.72, combine 3.06), 76 GB/s on 24 SMs.
///    The former reference, 58 GB/s, was an unverified figure of a later DeepEP README (H800).
/// Held out, the 4-node rows (EP32; 0.80 to 0.96 of the NIC at 16 SMs and more, where the
/// preset's link caps the time) are predicted 44.5 % (dispatch) and 27.6 % (combine) slow on
/// average (max 88 %, 45 %): there an SM moves more RDMA copies than on two nodes (4.55 to 5.89
/// GB/s at 4 SMs), each carrying fewer NVLink copies (tests/model/deepep_measured_test.cpp,
/// docs/cost-model.md §17.5).
inline constexpr int64_t kDeepEpReferenceSms = 24;
inline constexpr double kDeepEpNvlinkReferenceBps = 396e9;
inline constexpr double kDeepEpRdmaReferenceBps = 76e9;

/// Bandwidth DeepEP's kernels reach on `sms` SMs over a link that carries `link_bps`: the
/// published figure scales with the SMs below the reference count (the kernels' channels are
/// SM pairs: fewer SMs, fewer channels in flight) and the link caps it:
/// min(link_bps, reference_bps·sms/24).
[[nodiscard]] double deepep_bandwidth(int64_t sms, double reference_bps, double link_bps);

/// Seconds of one DeepEP dispatch or combine on one rank: `nvl_bytes` over NVLink and
/// `rdma_bytes` to other nodes, the two pipelined (DeepEP forwards RDMA arrivals over NVLink
/// while it receives). Each part takes the longer of its SMs' work and its link's: the SMs move
/// the bytes as DeepEP counts them (every destination rank or node, the own one included: the
/// link's bytes over `nvl_share` / `rdma_share`, the fraction of them that crosses the link) at
/// reference·sms/24; the link carries its bytes at `*_link_bps`:
/// max(nvl/share_nvl/(396 GB/s·s/24), nvl/L_nvl, rdma/share_rdma/(76 GB/s·s/24), rdma/L_rdma).
/// `sms` 0: HybridEP, no published per-SM rate, bound by the links alone.
[[nodiscard]] double deepep_time(double nvl_bytes, double rdma_bytes, int64_t sms, double nvl_link_bps,
                                 double rdma_link_bps, double nvl_share = 1, double rdma_share = 1);

}  // namespace trainsim
