// The MoE layer at kernel granularity (model/moe_kernels.h, model/ops_moe.cpp default mode) and
// DeepEP's bandwidth (model/moe_dispatch.h): hand-computed bytes, launches and times.
#include "test_estimate.h"
#include "model/moe_kernels.h"

#include <gtest/gtest.h>

#include "compute/cost.h"
#include "inputs/megatron_args.h"
#include "estimate/estimate.h"
#include "model/graph.h"
#include "model/moe_dispatch.h"
#include "test_presets.h"

namespace trainsim {
namespace {

// Qwen3-30B-A3B's router on a micro-batch of 4096 tokens: E 128, k 8, bf16 logits.
// X = T·E = 524,288 scores, K = T·k = 32,768 routed copies.
RouterShape qwen3_router() {
  RouterShape r;
  r.tokens = 4096;
  r.experts = 128;
  r.topk = 8;
  r.e = 2;
  return r;
}

TEST(MoeKernels, RouterUnfusedSoftmaxWithAuxLossAndCapacity) {
  RouterShape r = qwen3_router();
  r.aux_loss = true;
  r.capacity = r.pad = true;
  const FwdBwdKernels k = router_kernels(r);
  // Forward: top-k X·2 + K·10 = 1,376,256; softmax of the k 2·K·2 = 131,072; dense probs and map
  // X·15 + K·24 = 8,650,752 (6 launches); top-capacity and masks X·10 + K·19 = 5,865,472 (5);
  // aux loss X·28 + K·24 = 15,466,496 (12): 31,490,048 bytes in 25 launches.
  EXPECT_DOUBLE_EQ(k.fwd.bytes, 31490048.0);
  EXPECT_EQ(k.fwd.launches, 25u);
  // Backward: softmax 3·K·2 = 196,608; top-k zeros + scatter X·2 + K·10 = 1,376,256 (2);
  // the probs scatter's gather K·12 = 393,216; capacity mask X·5 = 2,621,440; aux loss
  // X·24 = 12,582,912 (3): 17,170,432 bytes in 8 launches.
  EXPECT_DOUBLE_EQ(k.bwd.bytes, 17170432.0);
  EXPECT_EQ(k.bwd.launches, 8u);
}

TEST(MoeKernels, FusedRouterIsAFewKernels) {
  RouterShape r = qwen3_router();
  r.aux_loss = true;
  r.fused = true;
  const FwdBwdKernels k = router_kernels(r);
  // TE fused top-k X·(2 + 5) = 3,670,016 (1) and the fused aux loss X·12 = 6,291,456 (5).
  EXPECT_DOUBLE_EQ(k.fwd.bytes, 9961472.0);
  EXPECT_EQ(k.fwd.launches, 6u);
  EXPECT_EQ(k.bwd.launches, 4u);
  // The z-loss stays PyTorch's: 7 more forward launches over X·4·2 = 4,194,304 bytes.
  r.z_loss = true;
  const FwdBwdKernels z = router_kernels(r);
  EXPECT_EQ(z.fwd.launches, 13u);
  EXPECT_DOUBLE_EQ(z.fwd.bytes - k.fwd.bytes, 4194304.0);
}

TEST(MoeKernels, PermuteIndexAndCounts) {
  // TE's mask-map permute over 4096 × 128: three passes, X·21 = 11,010,048 bytes.
  const KernelBatch fused = permute_index_kernels(4096, 128, 32768, 2, true, false);
  EXPECT_DOUBLE_EQ(fused.bytes, 11010048.0);
  EXPECT_EQ(fused.launches, 3u);
  // Unfused dropless: X·(14 + 6) + P·(8 + 2) = 10,485,760 + 327,680 in 8 launches.
  const KernelBatch unfused = permute_index_kernels(4096, 128, 32768, 2, false, false);
  EXPECT_DOUBLE_EQ(unfused.bytes, 10813440.0);
  EXPECT_EQ(unfused.launches, 8u);
  // Counts: the routing map's sum (X + E·8), dropless also 7 launches of E·8.
  EXPECT_EQ(dispatch_count_kernels(4096, 128, true).launches, 1u);
  const KernelBatch counts = dispatch_count_kernels(4096, 128, false);
  EXPECT_EQ(counts.launches, 8u);
  EXPECT_DOUBLE_EQ(counts.bytes, 524288.0 + 8 * 128 * 8);
  EXPECT_EQ(fp8_row_alignment(false), 16);
  EXPECT_EQ(fp8_row_alignment(true), 32);
}

// A batch of small kernels pays the bandwidth class's latency once per launch: the Qwen3 router's
// 25 forward launches on the H100 preset (3119.93 GiB/s at 0.8, 10 µs):
// 31,490,048 / (3119.93·2^30·0.8) + 25·10 µs = 261.75 µs.
TEST(MoeKernels, LaunchesPayTheLatencyEach) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  ClassTable classes(sys);
  Kernel k;
  k.bytes = 31490048;
  k.launches = 25;
  EXPECT_NEAR(kernel_cost(classes, k, nullptr).time_s, 0.0002617500202641265, 1e-12);
  k.launches = 1;
  EXPECT_NEAR(kernel_cost(classes, k, nullptr).time_s, 0.0002617500202641265 - 24 * 10e-6, 1e-12);
}

TEST(MoeKernels, NodeLimitedRoutingBoundsTheNodes) {
  // DeepSeek-V3 over 8 nodes: 256 experts, top-8. Without groups 8·(1 − C(224,8)/C(256,8)) = 5.29.
  EXPECT_NEAR(expected_token_nodes(256, 8, 8, 0, 0), 5.294652000382479, 1e-12);
  // 8 groups of 32 (one per node), 4 per token: 8·(4/8)·(1 − C(96,8)/C(128,8)) = 3.629.
  EXPECT_NEAR(expected_token_nodes(256, 8, 8, 8, 4), 3.6290109244257005, 1e-12);
  // 16 groups, 2 per node, 4 per token: Σ_q hypergeometric(q; 16, 2, 4)·(1 − C(64 − 16q, 8)/C(64, 8))
  // over 8 nodes = 3.326 (a simulation of 200,000 tokens gives 3.324).
  EXPECT_NEAR(expected_token_nodes(256, 8, 8, 16, 4), 3.3262361434662058, 1e-12);
  // At most group_topk nodes when each group is one node.
  EXPECT_LE(expected_token_nodes(256, 8, 8, 8, 2), 2.0);
}

// DeepEP's bandwidth: 396 GB/s on 24 SMs over NVLink (fitted on H100, moe_dispatch.h),
// proportional below, capped by the link.
TEST(MoeKernels, DeepEpTimeVersusSms) {
  EXPECT_DOUBLE_EQ(deepep_bandwidth(20, kDeepEpNvlinkReferenceBps, 1e12), 330e9);
  EXPECT_DOUBLE_EQ(deepep_bandwidth(20, kDeepEpNvlinkReferenceBps, 300e9), 300e9);
  EXPECT_DOUBLE_EQ(deepep_bandwidth(0, kDeepEpNvlinkReferenceBps, 300e9), 300e9);  // HybridEP: the link
  // 1 GB over NVLink on 24 SMs: 1e9/396e9 = 2.525 ms; on 12 SMs twice that.
  EXPECT_NEAR(deepep_time(1e9, 0, 24, 1e12, 1e12), 1e9 / 396e9, 1e-15);
  EXPECT_NEAR(deepep_time(1e9, 0, 12, 1e12, 1e12), 2e9 / 396e9, 1e-15);
  // Across nodes the RDMA part (76 GB/s on 24 SMs, NIC 40 GB/s) sets the pace when larger:
  // max(1e9/396e9, 0.5e9/76e9, 0.5e9/40e9) = 12.5 ms.
  EXPECT_NEAR(deepep_time(1e9, 0.5e9, 24, 1e12, 40e9), 0.0125, 1e-15);
}

// DeepEP's SMs move every copy it counts, the own rank's or node's included; the link carries
// the share that leaves. EP8 in one node on 20 SMs: 0.875 GB crossing NVLink is 1 GB of copies,
// 1e9/(396e9·20/24) = 1e9/330e9 = 3.030 ms (the link at 1 TB/s would take 0.875 ms); a link of
// 100 GB/s takes 8.75 ms instead. Across 8 nodes (share 7/8) 1 GB leaving the node is 8/7 GB of
// copies: on 8 SMs at 76e9·8/24 = 25.33 GB/s 45.11 ms, more than the 25 ms of a 40 GB/s NIC;
// on 20 SMs (63.33 GB/s, 18.05 ms) the NIC binds. HybridEP (no SM count): the link alone.
TEST(MoeKernels, DeepEpSmsMoveEveryCopyTheLinkTheLeavingShare) {
  EXPECT_NEAR(deepep_time(0.875e9, 0, 20, 1e12, 1e12, 0.875), 1e9 / 330e9, 1e-15);
  EXPECT_NEAR(deepep_time(0.875e9, 0, 20, 100e9, 1e12, 0.875), 0.00875, 1e-15);
  EXPECT_NEAR(deepep_time(0, 1e9, 8, 1e12, 40e9, 1, 0.875), (8.0 / 7.0) * 1e9 / (76e9 * 8 / 24), 1e-12);
  EXPECT_NEAR((8.0 / 7.0) * 1e9 / (76e9 * 8 / 24), 0.045112781954887, 1e-12);
  EXPECT_NEAR(deepep_time(0, 1e9, 20, 1e12, 40e9, 1, 0.875), 0.025, 1e-15);
  EXPECT_NEAR(deepep_time(0, 1e9, 0, 1e12, 40e9, 1, 0.875), 0.025, 1e-15);
}

// The flex dispatcher's calls in the graph: DeepSeek-V3 EP32 over 4 nodes of 8, b 1, S 4096,
// balanced: RDMA bytes T·H·2·n̄·(N − 1)/N with n̄ = 3.6142, NVLink T·H·2·r̄·(1 − 1/8) with r̄ the
// distinct EP ranks of a token's 8 experts, on DeepEP's 20 SMs.
TEST(MoeKernels, FlexCallsSplitNvlinkAndRdma) {
  ModelConfig m = test::preset_model("deepseek-v3");
  m.moe_pad_expert_input_to_capacity = false;
  m.capacity_given = false;
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.world_size = 32;
  s.ep_size = 32;
  s.moe_token_dispatcher_type = "flex";
  const Chunk c = build_chunk(m, s, 129280, ChunkSpec{false, false, 1, 0, 0}, ChunkEnv{8, 1.0});
  const Leaf* p = nullptr;
  for (const auto& l : c.templates.at(0)->leaves)
    if (l.name == "permutation") p = &l;
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->comms[kFwd].size(), 1u);
  const CommCall& d = p->comms[kFwd][0];
  EXPECT_TRUE(d.flex);
  EXPECT_EQ(d.sms, 20);
  const double tok = 4096.0 * 7168 * 2;
  EXPECT_NEAR(d.rdma_bytes, tok * 3.614214305566513 * 3 / 4, 1e-3);
  EXPECT_NEAR(d.bytes, tok * expected_token_nodes(256, 8, 32) * 7 / 8, 1e-3);
  // DeepEP counts the copies to its own node and rank too: 3 of 4 nodes' copies leave the node,
  // 7 of 8 ranks' copies cross NVLink.
  EXPECT_FLOAT_EQ(d.rdma_share, 0.75f);
  EXPECT_FLOAT_EQ(d.nvl_share, 0.875f);
  EXPECT_TRUE(p->host_sync);  // dropless: the host reads the counts
  // HybridEP: the same bytes, bound by the links (no SM count).
  s.moe_flex_dispatcher_backend = "hybridep";
  const Chunk h = build_chunk(m, s, 129280, ChunkSpec{false, false, 1, 0, 0}, ChunkEnv{8, 1.0});
  for (const auto& l : h.templates.at(0)->leaves) {
    if (l.name == "permutation") {
      EXPECT_EQ(l.comms[kFwd][0].sms, 0);
    }
  }
}

// DeepSeek-V2-Lite EP8 dropless (balanced) with the alltoall dispatcher and TE's fused permute:
// the permutation's forward kernels are the counts (8 launches), the index building (3), the
// gather and the sort of the received rows by local expert (8 local experts).
TEST(MoeKernels, AllToAllPermutationKernels) {
  ModelConfig m = test::preset_model("deepseek-v2-lite");  // 64 experts, top-6, El = 8 on EP8
  m.moe_pad_expert_input_to_capacity = false;
  m.capacity_given = false;
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.world_size = 8;
  s.ep_size = 8;
  s.moe_token_dispatcher_type = "alltoall";
  s.moe_permute_fusion = true;
  const Chunk c = build_chunk(m, s, 102400, ChunkSpec{false, false, 2, 1, 0}, ChunkEnv{8, 1.0});
  const Leaf* p = nullptr;
  for (const auto& t : c.templates)
    for (const auto& l : t->leaves)
      if (l.name == "permutation") p = &l;
  ASSERT_NE(p, nullptr);
  const KernelList& f = p->kernels[kFwd];
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].launches, 8u);  // counts
  EXPECT_EQ(f[1].launches, 3u);  // TE's row-id map
  // H 2048, T 4096, P = 6·4096: gather (T + P)·H·2, sort 2·R·(H·2 + 4) with R = P.
  const double T = 4096, P = 6 * 4096.0, H = 2048;
  EXPECT_DOUBLE_EQ(f[2].bytes, (T + P) * H * 2);
  EXPECT_DOUBLE_EQ(f[3].bytes, 2 * P * (H * 2 + 4));
  EXPECT_EQ(f[3].launches, 2u);
  // The counts' all-gather over EP: E·8·ep = 64·8·8 = 4096 bytes, before the dispatch.
  ASSERT_EQ(p->comms[kFwd].size(), 2u);
  EXPECT_EQ(p->comms[kFwd][0].kind, Collective::AllGather);
  EXPECT_DOUBLE_EQ(p->comms[kFwd][0].bytes, 4096.0);
  EXPECT_TRUE(p->host_sync);
}

// TE's Fp8Padding under fp8: a copy of the R received rows (2·R·H·2 bytes) before fc1, and the
// unpadding after fc2, when the rows per expert vary; not when a padded count is a multiple of
// 16 or the router pads (moe_router_padding_for_fp8). DeepSeek-V2-Lite EP8 as above: R = 24,576.
TEST(MoeKernels, Fp8PaddingCopiesTheRowsWhenCountsVary) {
  ModelConfig m = test::preset_model("deepseek-v2-lite");
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.world_size = 8;
  s.ep_size = 8;
  s.moe_token_dispatcher_type = "alltoall";
  s.moe_permute_fusion = true;
  s.fp8 = true;
  auto kernels = [&](const ModelConfig& mm, const StrategyConfig& ss, const char* name) {
    const Chunk c = build_chunk(mm, ss, 102400, ChunkSpec{false, false, 2, 1, 0}, ChunkEnv{8, 1.0});
    for (const auto& t : c.templates)
      for (const auto& l : t->leaves)
        if (l.name == name) return l.kernels[kFwd];
    return KernelList{};
  };
  // Padded to capacity: M = ceil(6·4096/64)·8 = 3072 rows per local expert, 192·16: no copy.
  EXPECT_EQ(kernels(m, s, "permutation").size(), 4u);
  ModelConfig dropless = m;
  dropless.moe_pad_expert_input_to_capacity = false;
  dropless.capacity_given = false;
  const KernelList f = kernels(dropless, s, "permutation");
  ASSERT_EQ(f.size(), 5u);
  EXPECT_DOUBLE_EQ(f[4].bytes, 2 * 24576.0 * 2048 * 2);
  EXPECT_EQ(kernels(dropless, s, "unpermutation").size(), 3u);  // unpad, unsort, unpermute
  StrategyConfig router_pads = s;
  router_pads.moe_router_padding_for_fp8 = true;
  EXPECT_EQ(kernels(dropless, router_pads, "permutation").size(), 4u);
}

// DeepEP's SMs set its bandwidth: fewer SMs, a slower EP all-to-all, up to the link (on 24 SMs
// and more, 396 GB/s · 7/8 of the copies crossing exceeds the H100's 419.1 GiB/s · 0.75 = 337.5
// GB/s: 48 and 24 SMs take the same time).
TEST(MoeKernels, DeepEpStepSlowsWithFewerSms) {
  ModelConfig m = test::preset_model("mixtral-8x7b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 8;
  s.world_size = 8;
  s.ep_size = 8;
  s.moe_token_dispatcher_type = "flex";
  const size_t ep = static_cast<size_t>(Group::EP);
  s.moe_deepep_num_sms = 24;
  const double at24 = estimate(m, s, sys).stage_times.at(0).comm_by_group_s[ep];
  double last = 0;
  for (int64_t sms : {48, 20, 12}) {
    s.moe_deepep_num_sms = sms;
    const double t = estimate(m, s, sys).stage_times.at(0).comm_by_group_s[ep];
    if (sms == 48) {
      EXPECT_DOUBLE_EQ(t, at24);
    }
    EXPECT_GT(t, last) << sms;
    last = t;
  }
}

TEST(MoeKernels, MegatronRouterFlagsAreRead) {
  const MegatronArgs a = parse_megatron_args(
      "--num-experts 256 --moe-router-num-groups 8 --moe-router-group-topk 4 --moe-router-score-function sigmoid "
      "--moe-router-fusion --moe-aux-loss-coeff 1e-4 --moe-router-force-load-balancing "
      "--moe-router-padding-for-fp8 --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep "
      "--moe-hybridep-num-sms 16",
      "f");
  EXPECT_EQ(a.strategy["moe_router_num_groups"], 8);
  EXPECT_EQ(a.strategy["moe_router_group_topk"], 4);
  EXPECT_EQ(a.strategy["moe_router_score_function"], "sigmoid");
  EXPECT_EQ(a.strategy["moe_router_fusion"], true);
  EXPECT_DOUBLE_EQ(a.strategy["moe_aux_loss_coeff"].get<double>(), 1e-4);
  EXPECT_EQ(a.strategy["moe_router_force_load_balancing"], true);
  EXPECT_EQ(a.strategy["moe_router_padding_for_fp8"], true);
  EXPECT_EQ(a.strategy["moe_hybridep_num_sms"], 16);
  EXPECT_TRUE(a.not_modeled.empty());
}

}  // namespace
}  // namespace trainsim
