// Context-parallel flavours: the ring's overlap, the split of heads and sequence, the attention
// leaf's exchanges and the legality of TP × CP combinations.
#include "inputs/strategy_config.h"
#include "test_estimate.h"
#include "model/context_parallel.h"

#include <gtest/gtest.h>

#include "comm/collective.h"
#include "plan/validate.h"
#include "estimate/estimate.h"
#include "model/graph.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

// 4 steps of 2 ms blocks, 3 ms exchanges (exchange-bound): step 0 computes on the local block
// [0, 2] while block 1 arrives [0, 3]; step 1 starts at 3 and so on; the last step sends nothing.
TEST(RingAttention, ExchangeOfStepIOverlapsAttentionOfStepIMinusOne) {
  const auto s = ring_schedule(4, 2e-3, 3e-3);
  ASSERT_EQ(s.size(), 4u);
  for (size_t i = 1; i < s.size(); ++i) {
    // The block step i uses was exchanged while step i−1 computed.
    EXPECT_DOUBLE_EQ(s[i - 1].exchange_start, s[i - 1].compute_start);
    EXPECT_DOUBLE_EQ(s[i].compute_start, std::max(s[i - 1].compute_end, s[i - 1].exchange_end));
  }
  EXPECT_DOUBLE_EQ(s[1].compute_start, 3e-3);
  EXPECT_DOUBLE_EQ(s[3].compute_start, 9e-3);
  EXPECT_DOUBLE_EQ(s[3].exchange_end, s[3].exchange_start);  // nothing left to send
  // 3·max(2, 3) + 2 = 11 ms, plus a 0.5 ms exposed tail.
  EXPECT_DOUBLE_EQ(ring_pass_time(4, 2e-3, 3e-3, 0.5e-3), 11.5e-3);
  // Compute-bound: 1 ms exchanges hide entirely, 4·2 = 8 ms.
  EXPECT_DOUBLE_EQ(ring_pass_time(4, 2e-3, 1e-3, 0), 8e-3);
}

TEST(ContextParallel, SplitOfHeadsAndSequencePerFlavour) {
  StrategyConfig s;
  s.cp_size = 8;
  s.cp_comm_type = "a2a";
  EXPECT_EQ(cp_split(s).a2a, 8);
  s.cp_comm_type = "p2p";
  EXPECT_EQ(cp_split(s).ring, 8);
  EXPECT_EQ(cp_split(s).a2a, 1);
  s.cp_comm_type = "all_gather";
  EXPECT_EQ(cp_split(s).ring * cp_split(s).a2a, 1);
  s.cp_comm_type = "a2a+p2p";
  s.hierarchical_context_parallel_sizes = {2, 4};
  EXPECT_EQ(cp_split(s).a2a, 2);
  EXPECT_EQ(cp_split(s).ring, 4);
}

StrategyConfig llama405_tp8_cp2(const char* cp_comm_type) {
  StrategyConfig s;
  s.seq_len = 8192;
  s.micro_batch_size = 1;
  s.micro_batch_num = 4;
  s.world_size = 16;
  s.tp_size = 8;
  s.cp_size = 2;
  s.cp_comm_type = cp_comm_type;
  return s;
}

const Leaf& attention_of(const Chunk& c) {
  for (const auto& l : c.templates.at(0)->leaves)
    if (l.name == "core_attention") return l;
  throw std::runtime_error("no core_attention");
}

// Llama 3 405B (128 heads, 8 KV heads of 128), TP8 × CP2, S 8192, b 1.
TEST(ContextParallel, AttentionLeafPerFlavour) {
  const ModelConfig m = test::preset_model("llama3-405b");
  const ChunkSpec spec{false, false, 1, 0, 0};
  const Chunk p2p = build_chunk(m, llama405_tp8_cp2("p2p"), 128256, spec);
  const Leaf& ring = attention_of(p2p);
  // Ring over 2 ranks; one KV block = b·(g/t)·(S/c)·(d_k + d_v)·2 B = 1·1·4096·256·2 = 2,097,152 B.
  EXPECT_EQ(ring.ring_steps, 2);
  EXPECT_DOUBLE_EQ(ring.ring_block_bytes, 2097152.0);
  EXPECT_TRUE(ring.comms[kFwd].empty());
  // FLOPs 2·b·(h/t)·(S/c)·S·(d+d) = 2·16·4096·8192·256 = 274,877,906,944, as with all-to-all
  // (the same work, split by sequence instead of heads); the key is one step's shape.
  EXPECT_DOUBLE_EQ(ring.kernels[kFwd][0].flops, 274877906944.0);
  EXPECT_NE(format_packed_key(ring.kernels[kFwd][0].key).find("seq_len=4096, head_num=16, kv_head_num=1"), std::string::npos);

  const Chunk ag = build_chunk(m, llama405_tp8_cp2("all_gather"), 128256, spec);
  const Leaf& gather = attention_of(ag);
  EXPECT_EQ(gather.ring_steps, 0);
  // All-gather of K and V: full tensor b·(g/t)·S·(d+d)·2 B = 8192·256·2 = 4,194,304 B; backward
  // gathers again and reduce-scatters dK, dV.
  ASSERT_EQ(gather.comms[kFwd].size(), 1u);
  EXPECT_EQ(gather.comms[kFwd][0].kind, Collective::AllGather);
  EXPECT_DOUBLE_EQ(gather.comms[kFwd][0].bytes, 4194304.0);
  ASSERT_EQ(gather.comms[kBwdAct].size(), 2u);
  EXPECT_EQ(gather.comms[kBwdAct][1].kind, Collective::ReduceScatter);
  EXPECT_DOUBLE_EQ(gather.kernels[kFwd][0].flops, ring.kernels[kFwd][0].flops);
}

TEST(ContextParallel, HierarchicalA2aInsideRingAcross) {
  const ModelConfig m = test::preset_model("llama3-405b");
  StrategyConfig s = llama405_tp8_cp2("a2a+p2p");
  s.tp_size = 4;
  s.cp_size = 4;
  s.hierarchical_context_parallel_sizes = {2, 2};
  const Chunk c = build_chunk(m, s, 128256, ChunkSpec{false, false, 1, 0, 0});
  const Leaf& l = attention_of(c);
  // Ring over the outer 2; a block after the all-to-all: b·(g/t/2)·(S/2)·256·2 = 1·4096·512 B.
  EXPECT_EQ(l.ring_steps, 2);
  EXPECT_DOUBLE_EQ(l.ring_block_bytes, 2097152.0);
  ASSERT_EQ(l.comms[kFwd].size(), 4u);  // q, k, v, o all-to-all over the inner 2
  EXPECT_EQ(l.comms[kFwd][0].n, 2);
  EXPECT_EQ(l.comms[kFwd][0].kind, Collective::AllToAll);
}

TEST(ContextParallel, Tp8Cp2OnEightKvHeadsNeedsRingOrGather) {
  const ModelConfig m = test::preset_model("llama3-405b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const PlanSources src{"llama3-405b", "s.json", "h100"};
  const auto a2a = validate_plan(m, llama405_tp8_cp2("a2a"), sys, src);
  ASSERT_EQ(a2a.size(), 1u);
  EXPECT_EQ(a2a[0].str(), "s.json: /cp_size: all-to-all context parallelism splits heads: 2 must divide the "
                          "per-TP-rank head_num (16) and kv_head_num (1); cp_comm_type p2p works with any head count");
  EXPECT_TRUE(validate_plan(m, llama405_tp8_cp2("p2p"), sys, src).empty());
  EXPECT_TRUE(validate_plan(m, llama405_tp8_cp2("all_gather"), sys, src).empty());

  const auto compat = validate_plan(m, llama405_tp8_cp2("p2p"), sys, src, Mode::SimuMax12);
  ASSERT_EQ(compat.size(), 1u);
  EXPECT_EQ(compat[0].str(), "s.json: /cp_comm_type: 'p2p' is not part of SimuMax v1.2; valid values: a2a (or use "
                             "the default mode)");
  StrategyConfig one = llama405_tp8_cp2("p2p");
  one.cp_size = 1;
  one.world_size = 8;
  const auto nothing = validate_plan(m, one, sys, src);
  ASSERT_EQ(nothing.size(), 1u);
  EXPECT_EQ(nothing[0].str(), "s.json: /cp_comm_type: 'p2p' changes nothing with cp_size 1; remove it or set cp_size > 1");
  StrategyConfig h = llama405_tp8_cp2("a2a+p2p");
  const auto sizes = validate_plan(m, h, sys, src);
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_EQ(sizes[0].str(), "s.json: /hierarchical_context_parallel_sizes: cp_comm_type a2a+p2p needs [a2a group, "
                            "ring group] with a product of cp_size (2), e.g. [1, 2]");
}

// The ring's exchange hides under attention: inside one node (Llama 3 70B, TP4 × CP2, S 16384)
// only the backward's tail is exposed, while all_gather's gathers and the all-to-alls are.
TEST(ContextParallel, RingHidesItsExchangeInTheStep) {
  const ModelConfig m = test::preset_model("llama3-70b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  StrategyConfig s = llama405_tp8_cp2("p2p");
  s.seq_len = 16384;
  s.tp_size = 4;
  s.world_size = 8;
  const size_t cp = static_cast<size_t>(Group::CP);
  const Estimate ring = estimate(m, s, sys);
  EXPECT_GT(ring.iteration_time_s, 0);
  // Only each backward's last dK, dV return is exposed: 80 layers · 4 micro-batches · one P2P of
  // a KV block b·(g/t)·(S/c)·(d_k + d_v)·2 B = 1·2·8192·256·2 = 8,388,608 B.
  const NetworkChoice nets = choose_networks(sys, s, Mode::Default);
  const double x = collective_time(sys, s, nets.of(Group::CP), Collective::P2P, 8388608.0, 2, "cp");
  const StageTime& st = ring.stage_times.at(0);
  EXPECT_NEAR(st.exposed_comm_s(cp), 80 * 4 * x, 1e-9);
  // Hidden under the attention: with 2 steps, the forward's one KV exchange (x) and the
  // backward's one K, V, dK, dV exchange (twice the bytes, x2).
  const double x2 = collective_time(sys, s, nets.of(Group::CP), Collective::P2P, 2 * 8388608.0, 2, "cp");
  EXPECT_NEAR(st.hidden_comm_by_group_s[cp], 80 * 4 * (x + x2), 1e-9);
  EXPECT_NEAR(st.comm_by_group_s[cp], 80 * 4 * (2 * x + x2), 1e-9);
  for (const char* other : {"all_gather", "a2a"}) {
    s.cp_comm_type = other;
    const Estimate e = estimate(m, s, sys);
    EXPECT_GT(e.stage_times.at(0).comm_by_group_s[cp], 0.0) << other;
    EXPECT_LT(ring.iteration_time_s, e.iteration_time_s) << other;
  }
}

// Across two nodes (Llama 3 405B, TP8 × CP2) the ring still beats gathering K and V.
TEST(ContextParallel, RingAcrossNodesBeatsAllGather) {
  const ModelConfig m = test::preset_model("llama3-405b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  StrategyConfig s = llama405_tp8_cp2("p2p");
  const Estimate ring = estimate(m, s, sys);
  s.cp_comm_type = "all_gather";
  EXPECT_LT(ring.iteration_time_s, estimate(m, s, sys).iteration_time_s);
}

}  // namespace
}  // namespace trainsim
