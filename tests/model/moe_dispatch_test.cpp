// MoE dispatch: dispatcher bytes, DeepEP's node dedupe, permute fusion, the load imbalance of
// dropless routing and the legality of the keys.
#include "test_estimate.h"
#include "model/moe_dispatch.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "system/presets.h"
#include "plan/validate.h"
#include "estimate/estimate.h"
#include "model/graph.h"
#include "test_presets.h"

namespace trainsim {
namespace {

TEST(MoeDispatch, ExpectedDestinationNodesOfAToken) {
  // DeepSeek-V3 over 4 nodes: 256 experts, 64 per node, top-8:
  // 4·(1 − Π_{j<8} (192 − j)/(256 − j)) = 4·(1 − 0.09645) = 3.6142 nodes instead of 8 copies.
  EXPECT_NEAR(expected_token_nodes(256, 8, 4), 3.614214305566513, 1e-12);
  EXPECT_DOUBLE_EQ(expected_token_nodes(256, 8, 1), 1.0);
  // Top-1 always lands on one node.
  EXPECT_NEAR(expected_token_nodes(64, 1, 8), 1.0, 1e-12);
}

ModelConfig dropless(const char* preset) {
  ModelConfig m = test::preset_model(preset);
  m.moe_pad_expert_input_to_capacity = false;
  m.capacity_given = false;  // no capacity factor: Megatron's dropless routing
  return m;
}

TEST(MoeDispatch, LoadImbalanceDefaultsAndOverride) {
  const ModelConfig padded = test::preset_model("mixtral-8x7b"), m = dropless("mixtral-8x7b");
  StrategyConfig s;
  EXPECT_DOUBLE_EQ(moe_load_imbalance(padded, s, Mode::Default), 1.0);  // fixed shapes
  EXPECT_DOUBLE_EQ(moe_load_imbalance(m, s, Mode::Default), 1.1);       // aux_loss
  EXPECT_DOUBLE_EQ(moe_load_imbalance(m, s, Mode::SimuMax12), 1.0);
  s.moe_router_load_balancing_type = "none";
  EXPECT_DOUBLE_EQ(moe_load_imbalance(m, s, Mode::Default), 1.3);
  s.moe_router_load_balancing_type = "sinkhorn";
  EXPECT_DOUBLE_EQ(moe_load_imbalance(m, s, Mode::Default), 1.0);
  s.moe_load_imbalance_factor = 1.25;
  EXPECT_DOUBLE_EQ(moe_load_imbalance(m, s, Mode::Default), 1.25);
  // A capacity factor without padding drops what is over it: min(1.25, 1.2) = 1.2.
  ModelConfig capped = m;
  capped.capacity = 1.2;
  capped.capacity_given = true;
  EXPECT_DOUBLE_EQ(moe_load_imbalance(capped, s, Mode::Default), 1.2);
}

// Megatron: no capacity factor = dropless; a factor without padding drops the tokens over it.
TEST(MoeDispatch, CapacityFactorWithoutPaddingCapsTheBusiestExpert) {
  nlohmann::json j = nlohmann::json::parse(resolve_config("model", "mixtral-8x7b").text);
  j["moe_pad_expert_input_to_capacity"] = false;
  j.erase("capacity");
  const ModelConfig m = load_model(j.dump(), "m.json");
  EXPECT_FALSE(m.capacity_given);
  EXPECT_EQ(model_to_json_text(m).find("\"capacity\""), std::string::npos);  // stays dropless
  const StrategyConfig s;
  EXPECT_DOUBLE_EQ(moe_load_imbalance(m, s, Mode::Default), 1.1);
  j["capacity"] = 1.0;
  const ModelConfig capped = load_model(j.dump(), "m.json");
  EXPECT_TRUE(capped.capacity_given);
  EXPECT_DOUBLE_EQ(moe_load_imbalance(capped, s, Mode::Default), 1.0);
}

StrategyConfig ep8() {
  StrategyConfig s;
  s.seq_len = 4096;
  s.micro_batch_size = 1;
  s.micro_batch_num = 8;
  s.world_size = 8;
  s.ep_size = 8;
  return s;
}

const Leaf& leaf(const Chunk& c, const std::string& name) {
  for (const auto& l : c.templates.at(0)->leaves)
    if (l.name == name) return l;
  throw std::runtime_error("no leaf " + name);
}

// Mixtral 8x7B, EP8, S 4096, b 1, dropless with imbalance 1.1: T = 4096 tokens, k = 2, H 4096.
TEST(MoeDispatch, BytesPerDispatcher) {
  const ModelConfig m = dropless("mixtral-8x7b");
  const ChunkSpec spec{false, false, 1, 0, 0};
  const ChunkEnv env{8, 1.1};
  StrategyConfig s = ep8();
  // alltoall: the busiest rank receives 1.1·k·T·H·2 B = 1.1·2·4096·4096·2 = 73,819,750.4 B.
  const Chunk c = build_chunk(m, s, 32000, spec, env);
  const Leaf& a2a = leaf(c, "permutation");
  // Before it the counts' all-gather (dropless): E·8·ep = 8·8·8 = 512 B.
  ASSERT_EQ(a2a.comms[kFwd].size(), 2u);
  EXPECT_EQ(a2a.comms[kFwd][0].kind, Collective::AllGather);
  EXPECT_DOUBLE_EQ(a2a.comms[kFwd][0].bytes, 512.0);
  EXPECT_EQ(a2a.comms[kFwd][1].kind, Collective::AllToAll);
  EXPECT_DOUBLE_EQ(a2a.comms[kFwd][1].bytes, 1.1 * 2 * 4096 * 4096 * 2);
  // Expert GEMM rows: k·T/E·ep·1.1 = 2·4096/8·8·1.1 = 9011.2 tokens per local expert.
  const Leaf& fc1 = leaf(c, "experts.linear_fc1");
  EXPECT_DOUBLE_EQ(fc1.kernels[kFwd][0].flops, 2 * (2.0 * 4096 / 8 * 8 * 1.1) * 4096 * 2 * 14336);
  // allgather: every token of the 8 ranks, 8·4096·4096·2 = 268,435,456 B, reduce-scattered back.
  s.moe_token_dispatcher_type = "allgather";
  const Chunk ag = build_chunk(m, s, 32000, spec, env);
  // Default mode: first the routing map and the probs, T·E·(1 + 4)·8 = 4096·8·5·8 = 1,310,720 B.
  ASSERT_EQ(leaf(ag, "permutation").comms[kFwd].size(), 2u);
  EXPECT_DOUBLE_EQ(leaf(ag, "permutation").comms[kFwd][0].bytes, 1310720.0);
  EXPECT_EQ(leaf(ag, "permutation").comms[kFwd][1].kind, Collective::AllGather);
  EXPECT_DOUBLE_EQ(leaf(ag, "permutation").comms[kFwd][1].bytes, 268435456.0);
  EXPECT_EQ(leaf(ag, "unpermutation").comms[kFwd][0].kind, Collective::ReduceScatter);
  // Default mode: the counts, the index building and the gather (El = 1: no sort); fused, TE's
  // 3-pass row-id map instead of PyTorch's 8 masked_select launches.
  ASSERT_EQ(leaf(ag, "permutation").kernels[kFwd].size(), 3u);
  EXPECT_EQ(leaf(ag, "permutation").kernels[kFwd][1].launches, 8u);
  s.moe_permute_fusion = true;
  const Chunk fused = build_chunk(m, s, 32000, spec, env);
  ASSERT_EQ(leaf(fused, "permutation").kernels[kFwd].size(), 3u);
  EXPECT_EQ(leaf(fused, "permutation").kernels[kFwd][1].launches, 3u);
  // Compat mode: the peer's two passes, one fused.
  const ChunkEnv compat{8, 1.0, Mode::SimuMax12};
  s.moe_token_dispatcher_type.reset();
  EXPECT_EQ(leaf(build_chunk(m, s, 32000, spec, compat), "permutation").kernels[kFwd].size(), 1u);
  s.moe_permute_fusion = false;
  EXPECT_EQ(leaf(build_chunk(m, s, 32000, spec, compat), "permutation").kernels[kFwd].size(), 2u);
}

// Expert tensor parallelism, Mixtral 8x7B (capacity 1) ep4 etp2, S 4096, b 1: P = k·T = 2·4096 =
// 8192 permuted rows per rank, P·H·2 = 8192·4096·2 = 67,108,864 B; the ETP all-gather makes them
// etp·P = 16384 rows for the experts. Compat mode sizes the unpermutation from those 16384 rows
// (SimuMax v1.2: its 10 ETP variants in tests/data/golden-variants): saved rows, the ETP
// reduce-scatter and the combine all-to-all are twice the default mode's.
TEST(MoeDispatch, CompatUnpermutationTakesTheEtpGatheredRows) {
  const ModelConfig m = test::preset_model("mixtral-8x7b");
  StrategyConfig s = ep8();
  s.ep_size = 4;
  s.etp_size = 2;
  const ChunkSpec spec{false, false, 1, 0, 0};
  const double rows = 8192 * 4096 * 2.0;  // P·H·e
  for (const Mode mode : {Mode::Default, Mode::SimuMax12}) {
    SCOPED_TRACE(mode == Mode::Default ? "default" : "compat");
    const Chunk c = build_chunk(m, s, 32000, spec, ChunkEnv{8, 1.0, mode});
    const double etp_rows = mode == Mode::Default ? 1 : 2;  // rows of the unpermutation / P
    const Leaf& perm = leaf(c, "permutation");
    ASSERT_EQ(perm.comms[kFwd].size(), 2u);
    EXPECT_EQ(perm.comms[kFwd][0].kind, Collective::AllToAll);
    EXPECT_DOUBLE_EQ(perm.comms[kFwd][0].bytes, rows);
    EXPECT_EQ(perm.comms[kFwd][1].kind, Collective::AllGather);
    EXPECT_EQ(perm.comms[kFwd][1].group, Group::ETP);
    EXPECT_DOUBLE_EQ(perm.comms[kFwd][1].bytes, 2 * rows);  // the gathered tensor
    const Leaf& unperm = leaf(c, "unpermutation");
    ASSERT_EQ(unperm.comms[kFwd].size(), 2u);
    EXPECT_EQ(unperm.comms[kFwd][0].kind, Collective::ReduceScatter);
    EXPECT_EQ(unperm.comms[kFwd][0].group, Group::ETP);
    EXPECT_DOUBLE_EQ(unperm.comms[kFwd][0].bytes, 2 * rows * etp_rows);
    EXPECT_EQ(unperm.comms[kFwd][1].kind, Collective::AllToAll);
    EXPECT_DOUBLE_EQ(unperm.comms[kFwd][1].bytes, rows * etp_rows);
    EXPECT_EQ(unperm.comms[kFwd][1].n, 4);
    EXPECT_DOUBLE_EQ(unperm.cache, rows * etp_rows);
  }
}

// DeepSeek-V3 EP32 over 4 nodes of 8: DeepEP sends T·H·2·3.6142·(3/4) over RDMA (the token's
// remote nodes) instead of k = 8 copies; the NVLink part: tests/model/moe_kernels_test.cpp.
TEST(MoeDispatch, DeepEpSendsATokenOncePerNode) {
  const ModelConfig m = dropless("deepseek-v3");
  StrategyConfig s = ep8();
  s.world_size = 32;
  s.ep_size = 32;
  s.moe_token_dispatcher_type = "flex";
  s.moe_enable_deepep = true;
  const ChunkSpec spec{false, false, 1, 0, 0};
  const Chunk flex = build_chunk(m, s, 129280, spec, ChunkEnv{8, 1.0});
  const Leaf& p = leaf(flex, "permutation");
  ASSERT_EQ(p.comms[kFwd].size(), 1u);
  EXPECT_EQ(p.comms[kFwd][0].n, 32);
  EXPECT_NEAR(p.comms[kFwd][0].rdma_bytes, 4096.0 * 7168 * 2 * 3.614214305566513 * 3 / 4, 1e-3);
  s.moe_token_dispatcher_type = "alltoall";
  s.moe_enable_deepep = false;
  const Chunk all2all = build_chunk(m, s, 129280, spec, ChunkEnv{8, 1.0});
  const Leaf& a = leaf(all2all, "permutation");
  // Dropless alltoall: the counts' all-gather (E·8·ep = 256·8·32 bytes), then the k copies.
  ASSERT_EQ(a.comms[kFwd].size(), 2u);
  EXPECT_DOUBLE_EQ(a.comms[kFwd][0].bytes, 256 * 8 * 32.0);
  EXPECT_DOUBLE_EQ(a.comms[kFwd][1].bytes, 8 * 4096.0 * 7168 * 2);
}

// The slowest EP rank sets the pace: dropless routing with the default imbalance is slower than
// with perfectly balanced routing, and uses more memory.
TEST(MoeDispatch, ImbalanceSlowsTheStep) {
  const ModelConfig m = dropless("mixtral-8x7b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  StrategyConfig s = ep8();
  s.moe_load_imbalance_factor = 1.0;
  const Estimate balanced = estimate(m, s, sys);
  s.moe_load_imbalance_factor.reset();
  const Estimate busy = estimate(m, s, sys);
  EXPECT_GT(busy.iteration_time_s, balanced.iteration_time_s * 1.02);
  EXPECT_GT(busy.peak_alloc_bytes(), balanced.peak_alloc_bytes());
}

// moe_shared_expert_overlap: the shared expert runs under the dispatch and combine all-to-alls;
// what it hides comes off the EP communication and off the micro-batch passes alike.
TEST(MoeDispatch, SharedExpertHidesUnderTheAllToAll) {
  const ModelConfig m = test::preset_model("deepseek-v2-lite");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  StrategyConfig s = ep8();
  const Estimate serial = estimate(m, s, sys);
  s.moe_shared_expert_overlap = true;
  const Estimate overlapped = estimate(m, s, sys);
  const size_t ep = static_cast<size_t>(Group::EP);
  const StageTime &a = serial.stage_times.at(0), &b = overlapped.stage_times.at(0);
  // The all-to-all still runs (same total); the hidden part leaves the step.
  EXPECT_NEAR(a.comm_by_group_s[ep], b.comm_by_group_s[ep], a.comm_by_group_s[ep] * 1e-12);
  const double hidden = b.hidden_comm_by_group_s[ep];
  EXPECT_GT(hidden, 0.0);
  EXPECT_NEAR(b.exposed_comm_s(ep), a.exposed_comm_s(ep) - hidden, hidden * 1e-9);
  EXPECT_NEAR((a.fwd_per_mb_s + a.bwd_per_mb_s - b.fwd_per_mb_s - b.bwd_per_mb_s) * 8, hidden, hidden * 1e-9);
  EXPECT_LT(overlapped.iteration_time_s, serial.iteration_time_s);
  const auto issues = validate_plan(test::preset_model("mixtral-8x7b"), s, sys, {"mixtral-8x7b", "s.json", "h100"});
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].str(), "s.json: /moe_shared_expert_overlap: changes nothing: model mixtral-8x7b has no shared expert");
}

TEST(MoeDispatch, KeysOnlyWhereTheyChangeSomething) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const PlanSources src{"mixtral-8x7b", "s.json", "h100"};
  StrategyConfig s = ep8();
  s.moe_permute_fusion = true;
  const auto compat = validate_plan(dropless("mixtral-8x7b"), s, sys, src, Mode::SimuMax12);
  ASSERT_EQ(compat.size(), 1u);
  EXPECT_EQ(compat[0].str(), "s.json: /moe_permute_fusion: is not part of SimuMax v1.2 (it routes with all2all, "
                             "balanced); remove it or use the default mode");
  s.moe_permute_fusion = false;
  s.moe_enable_deepep = true;
  const auto deepep = validate_plan(dropless("mixtral-8x7b"), s, sys, src);
  ASSERT_EQ(deepep.size(), 1u);
  EXPECT_EQ(deepep[0].str(), "s.json: /moe_enable_deepep: DeepEP is a backend of the flex dispatcher; set "
                             "moe_token_dispatcher_type to 'flex'");
  s.moe_enable_deepep = false;
  s.moe_load_imbalance_factor = 1.2;
  const auto padded = validate_plan(test::preset_model("mixtral-8x7b"), s, sys, src);
  ASSERT_EQ(padded.size(), 1u);
  EXPECT_EQ(padded[0].str(), "s.json: /moe_load_imbalance_factor: changes nothing: model mixtral-8x7b pads every "
                             "expert to its capacity (moe_pad_expert_input_to_capacity); set that to false for "
                             "dropless routing");
  StrategyConfig dense = ep8();
  dense.ep_size = 1;
  dense.moe_token_dispatcher_type = "allgather";
  const auto d = validate_plan(test::preset_model("llama3-8b"), dense, sys, {"llama3-8b", "s.json", "h100"});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.json: /moe_token_dispatcher_type: changes nothing with a dense model; remove it");
}

}  // namespace
}  // namespace trainsim
