// The Plan: chunks per rank and virtual stage, schedule choice per mode, content keys.
#include "test_estimate.h"
#include "plan/plan.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "estimate/estimate.h"
#include "test_presets.h"
#include "test_errors.h"

namespace trainsim {
namespace {

StrategyConfig strategy(int64_t pp, int64_t v, int64_t mbc) {
  StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4})", "s.json");
  s.world_size = 8 * pp;
  s.tp_size = 2;
  s.pp_size = pp;
  s.interleaving_size = v;
  s.micro_batch_num = mbc;
  return s;
}

using test::error_of;

const PlanSources kSrc{"m.json", "s.json", "y.json"};

// Rows of one block, past its inline room too (3 ranks × 4 chunks); copies keep their own specs.
TEST(ChunkGridTest, RowsByRank) {
  ChunkGrid g(3, 4);
  ASSERT_EQ(g.size(), 3u);
  for (size_t r = 0; r < 3; ++r)
    for (size_t c = 0; c < 4; ++c) g[r][c].layers = static_cast<int64_t>(10 * r + c);
  const ChunkGrid copy = g;
  g[1][2].layers = -1;
  size_t rows = 0;
  for (const auto& rank : copy) {
    ASSERT_EQ(rank.size(), 4u);
    for (size_t c = 0; c < 4; ++c) EXPECT_EQ(rank[c].layers, static_cast<int64_t>(10 * rows + c));
    ++rows;
  }
  EXPECT_EQ(rows, 3u);
  EXPECT_EQ(g[1][2].layers, -1);
  EXPECT_EQ(g[2][3].layers, 23);
  EXPECT_EQ(ChunkGrid().size(), 0u);
}

// A moved-from grid has no rows: its specs went with the move, so its row spans must not reach
// past them.
TEST(ChunkGridTest, MovedFromGridHasNoRows) {
  ChunkGrid g(3, 4);
  g[2][3].layers = 7;
  ChunkGrid moved(std::move(g));
  EXPECT_EQ(g.size(), 0u);  // NOLINT(bugprone-use-after-move): the source is left empty
  EXPECT_EQ(g.begin(), g.end());
  EXPECT_EQ(moved[2][3].layers, 7);
  ChunkGrid other(2, 2);
  other = std::move(moved);
  EXPECT_EQ(moved.size(), 0u);  // NOLINT(bugprone-use-after-move)
  ASSERT_EQ(other.size(), 3u);
  EXPECT_EQ(other[2].size(), 4u);
  EXPECT_EQ(other[2][3].layers, 7);
  g = other;
  EXPECT_EQ(g[2][3].layers, 7);
}

class PlanResolveTest : public ::testing::Test {
 protected:
  ModelConfig m_ = test::preset_model("llama3-8b");
  SystemConfig sys_ = test::preset_system("h100-sxm-80g");
};

TEST_F(PlanResolveTest, VirtualStagesTakeLayersInModelOrder) {
  const StrategyConfig s = strategy(4, 2, 8);
  const Plan p = resolve_plan(m_, s, sys_, Mode::Default);
  EXPECT_EQ(p.schedule, ScheduleKind::Interleaved);
  EXPECT_EQ(p.p2p, P2PMode::Async);  // Megatron's overlap_p2p_comm default
  ASSERT_EQ(p.chunks.size(), 4u);
  for (const auto& rank : p.chunks) {
    ASSERT_EQ(rank.size(), 2u);
    for (const auto& c : rank) EXPECT_EQ(c.layers, 4);
  }
  EXPECT_TRUE(p.chunks[0][0].embedding);
  EXPECT_FALSE(p.chunks[0][1].embedding);
  EXPECT_TRUE(p.chunks[3][1].head);
  EXPECT_FALSE(p.chunks[3][0].head);
}

TEST_F(PlanResolveTest, UnevenStagesWithInterleaving) {
  StrategyConfig s = strategy(4, 2, 8);
  s.num_layers_in_first_pipeline_stage = 4;
  s.num_layers_in_last_pipeline_stage = 4;  // 24 layers left: 12 per middle stage
  const Plan p = resolve_plan(m_, s, sys_, Mode::Default);
  EXPECT_EQ(p.chunks[0][0].layers, 2);
  EXPECT_EQ(p.chunks[1][0].layers, 6);
  EXPECT_EQ(p.chunks[2][1].layers, 6);
  EXPECT_EQ(p.chunks[3][1].layers, 2);
  EXPECT_NE(error_of([&] { (void)resolve_plan(m_, s, sys_, Mode::SimuMax12, kSrc); }).find("SimuMax 1.2 needs an even layer split"),
            std::string::npos);
}

// DeepSeek-V2-Lite style: 3 leading dense layers over 2-layer virtual chunks land on virtual
// stages 0 (rank 0 chunk 0) and 1 (rank 1 chunk 0).
TEST_F(PlanResolveTest, LeadingDenseLayersFollowModelOrder) {
  ModelConfig moe = test::preset_model("mixtral-8x7b");
  moe.dense_layers = 3;
  moe.layer_num = 16;
  StrategyConfig s = strategy(4, 2, 8);
  s.tp_size = 1;
  s.ep_size = 8;
  const Plan p = resolve_plan(moe, s, sys_, Mode::Default);
  EXPECT_EQ(p.chunks[0][0].dense_layers, 2);
  EXPECT_EQ(p.chunks[1][0].dense_layers, 1);
  EXPECT_EQ(p.chunks[2][0].dense_layers, 0);
  EXPECT_EQ(p.chunks[0][1].dense_layers, 0);
}

// The case that hit an internal assertion: llama3-8b with 16 layers, tp2 pp4, interleaving 2,
// 5 micro-batches. Megatron runs it; SimuMax 1.2's synchronous replay cannot pair it.
TEST_F(PlanResolveTest, InterleavedWithMicroBatchesNotAMultipleOfPp) {
  ModelConfig m = m_;
  m.layer_num = 16;
  StrategyConfig s = strategy(4, 2, 5);
  const Estimate e = estimate(m, s, sys_);
  EXPECT_GT(e.iteration_time_s, 0);
  EXPECT_EQ(e.schedule, "interleaved_1f1b");
  s.pp_comm_async = false;
  EXPECT_EQ(error_of([&] { (void)resolve_plan(m, s, sys_, Mode::Default, kSrc); }),
            "s.json: /pp_comm_async: Megatron's synchronous interleaved schedule posts 5 sends but 6 receives "
            "from rank 0 to rank 3 for pp 4, 2 chunks, 5 micro-batches in groups of 4; set pp_comm_async "
            "true (Megatron's overlap_p2p_comm default) for the asynchronous schedule");
  StrategyConfig t = strategy(2, 2, 4);  // pp 2: Megatron runs it, SimuMax 1.2 refuses it
  t.pp_comm_async = false;
  EXPECT_GT(estimate(m, t, sys_).iteration_time_s, 0);
}

TEST_F(PlanResolveTest, PartialGroupThatCannotProgressIsAnInputError) {
  ModelConfig m = m_;
  m.layer_num = 48;
  const StrategyConfig s = strategy(4, 3, 5);  // groups of 4: the last holds one micro-batch
  // The verdict is kept per program: the second time (and after a plan that progresses) the same.
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(error_of([&] { (void)resolve_plan(m, s, sys_, Mode::Default, kSrc); }),
              "s.json: /micro_batch_num: Megatron's interleaved order cannot make progress with pp_size 4, "
              "interleaving_size 3, micro_batch_num 5 in groups of 4 (the partial last group leaves rank 0 "
              "waiting on its own backward); use a micro_batch_num that is a multiple of the group");
    EXPECT_NO_THROW((void)resolve_plan(m, strategy(4, 3, 6), sys_, Mode::Default, kSrc));  // groups of 4 and 2
  }
}

TEST_F(PlanResolveTest, ZeroBubbleIsADefaultModeSchedule) {
  StrategyConfig s = strategy(4, 1, 8);
  s.pipeline_schedule = "zero_bubble_h1";
  const Plan p = resolve_plan(m_, s, sys_, Mode::Default);
  EXPECT_EQ(p.schedule, ScheduleKind::ZeroBubbleH1);
  EXPECT_EQ(error_of([&] { (void)resolve_plan(m_, s, sys_, Mode::SimuMax12, kSrc); }),
            "s.json: /pipeline_schedule: SimuMax 1.2 has no zero-bubble schedule; use the default mode");
}

// ZB-H1 against 1F1B on the same plan: the same work, less bubble, and at most pp micro-batches
// in flight on every rank (1F1B's first-stage peak).
TEST_F(PlanResolveTest, ZeroBubbleH1IsFasterWithTheSamePeakMicroBatches) {
  StrategyConfig s = strategy(4, 1, 8);
  const Estimate base = estimate(m_, s, sys_);
  s.pipeline_schedule = "zero_bubble_h1";
  const Estimate zb = estimate(m_, s, sys_);
  EXPECT_LT(zb.pipeline_s, base.pipeline_s);
  EXPECT_GT(zb.pipeline_s, 8 * (base.stage_times[0].fwd_per_mb_s + base.stage_times[0].bwd_per_mb_s));
  for (const auto& st : zb.stages) EXPECT_EQ(st.in_flight_micro_batches, 4);
  EXPECT_EQ(base.stages[0].in_flight_micro_batches, 4);
  EXPECT_EQ(base.stages.back().in_flight_micro_batches, 1);
}

TEST_F(PlanResolveTest, ChunkKeyIgnoresPipelineOnlyFields) {
  const StrategyConfig a = strategy(2, 1, 8);
  StrategyConfig b = strategy(4, 1, 16);
  b.zero_state = 3;
  EXPECT_EQ(chunk_strategy_hash(a), chunk_strategy_hash(b));
  b.tp_size = 4;
  EXPECT_NE(chunk_strategy_hash(a), chunk_strategy_hash(b));
  ModelConfig m2 = m_;
  EXPECT_EQ(content_hash(m2), content_hash(m_));
  m2.vocab_size += 1;
  EXPECT_NE(content_hash(m2), content_hash(m_));
}

// The estimate cache keys chunks by the networks of kChunkGroups only: no leaf may talk over
// another group.
TEST(ChunkGroupsTest, LeavesCommunicateOverChunkGroupsOnly) {
  for (const char* name : {"llama3-8b", "mixtral-8x7b", "deepseek-v2-lite"}) {
    const ModelConfig m = test::preset_model(name);
    StrategyConfig s = strategy(1, 1, 4);
    s.tp_size = m.is_mla() ? 1 : 2;
    s.cp_size = m.is_mla() ? 1 : 2;
    s.ep_size = m.is_moe() ? 4 : 1;
    s.etp_size = m.is_moe() ? 2 : 1;
    s.world_size = 64;
    const Chunk c = build_chunk(m, s, padded_vocab_size(m.vocab_size, s.tp_size), {true, true, 2, 1, 0});
    auto check = [&](const Leaf& l) {
      for (const auto& phase : l.comms)
        for (const auto& call : phase)
          EXPECT_NE(std::find(std::begin(kChunkGroups), std::end(kChunkGroups), call.group), std::end(kChunkGroups))
              << name << " " << l.name;
    };
    for (const auto& l : c.pre) check(l);
    for (const auto& l : c.post) check(l);
    for (const auto& t : c.templates)
      for (const auto& l : t->leaves) check(l);
  }
}

}  // namespace
}  // namespace trainsim

namespace trainsim {
namespace {

// Communication split by group adds up to the per-stage totals; asynchronous interleaved p2p is
// hidden, blocking 1F1B p2p exposed.
TEST(CommByGroupTest, GroupsAddUpAndP2PExposureFollowsTheP2PMode) {
  const ModelConfig m = test::preset_model("mixtral-8x7b");
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8})", "s.json");
  s.world_size = 32;
  s.tp_size = 2;
  s.pp_size = 2;
  s.ep_size = 4;
  const size_t tp = static_cast<size_t>(Group::TP), cp = static_cast<size_t>(Group::CP);
  const size_t ep = static_cast<size_t>(Group::EP), etp = static_cast<size_t>(Group::ETP);
  const size_t dp = static_cast<size_t>(Group::DP), edp = static_cast<size_t>(Group::EDP);
  const size_t pp = static_cast<size_t>(Group::PP);
  const Estimate blocking = estimate(m, s, sys);
  for (const auto& st : blocking.stage_times) {
    const auto& c = st.comm_by_group_s;
    EXPECT_NEAR(c[tp] + c[cp] + c[ep] + c[etp], st.tp_comm_s, 1e-12 * st.tp_comm_s);
    EXPECT_GT(c[ep], 0);
    EXPECT_NEAR(c[dp] + c[edp], st.dp_comm_s, 1e-12 * st.dp_comm_s);
    EXPECT_GT(c[edp], 0);
    EXPECT_DOUBLE_EQ(c[pp], st.pp_comm_s);
    EXPECT_DOUBLE_EQ(st.exposed_comm_s(pp), c[pp]);  // blocking: the host waits at least the transfer
    EXPECT_DOUBLE_EQ(st.exposed_comm_s(tp), c[tp]);
  }
  s.interleaving_size = 2;  // asynchronous p2p by default
  const Estimate async = estimate(m, s, sys);
  for (const auto& st : async.stage_times) {
    EXPECT_GT(st.comm_by_group_s[pp], 0);
    EXPECT_EQ(st.exposed_comm_s(pp), 0);
    EXPECT_EQ(st.p2p_wait_s, 0);
  }
}

}  // namespace
}  // namespace trainsim

namespace trainsim {
namespace {

// Every schedule combination either estimates or is an input error: no internal assertion is
// reachable (pp 1–6, v 1–4, 1–12 micro-batches, every group, both p2p modes, both schedules,
// both modes).
TEST(ScheduleSpaceTest, EveryCombinationEstimatesOrIsAnInputError) {
  ModelConfig m = test::preset_model("llama3-8b");
  m.layer_num = 24;
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  int estimated = 0, rejected = 0;
  for (int64_t pp = 1; pp <= 6; ++pp)
    for (int64_t v = 1; v <= 4; ++v)
      for (int64_t mbc = 1; mbc <= 12; ++mbc)
        for (int64_t group = 0; group <= 8; group += 2)
          for (bool async : {true, false})
            for (const char* schedule : {"1f1b", "zero_bubble_h1"})
              for (Mode mode : {Mode::Default, Mode::SimuMax12}) {
                StrategyConfig s = load_strategy(R"({"seq_len": 1024, "micro_batch_size": 1, "micro_batch_num": 1})", "s");
                s.world_size = pp;
                s.pp_size = pp;
                s.interleaving_size = v;
                s.micro_batch_num = mbc;
                if (group > 0) s.microbatch_group_size_per_vp_stage = group;
                s.pp_comm_async = async;
                s.pipeline_schedule = schedule;
                try {
                  const Estimate e = estimate(m, s, sys, nullptr, mode);
                  EXPECT_GT(e.iteration_time_s, 0);
                  ++estimated;
                } catch (const ConfigError&) {
                  ++rejected;
                }
              }
  EXPECT_GT(estimated, 1000);
  EXPECT_GT(rejected, 1000);
}

// Before: the plan kept references into its system's network entries, so replacing an entry
// (or reloading the whole system) after resolving left the estimate reading other collectives'
// parameters or freed memory.
TEST_F(PlanResolveTest, EstimateReadsTheSystemsNetworkEntriesAsTheyAreNow) {
  StrategyConfig s = strategy(2, 1, 8);
  s.world_size = 32;  // dp 2 across nodes: the inter_node group carries the DP traffic
  const Plan p = resolve_plan(m_, s, sys_, Mode::Default);
  const double before = estimate(p, nullptr, false).iteration_time_s;
  NetworkConfig slower = sys_.networks.at("inter_node");
  slower.bandwidth.bytes_per_s /= 4;
  sys_.networks["inter_node"] = slower;
  const double fresh = estimate(resolve_plan(m_, s, sys_, Mode::Default), nullptr, false).iteration_time_s;
  EXPECT_GT(fresh, before);
  EXPECT_EQ(estimate(p, nullptr, false).iteration_time_s, fresh);
  sys_ = test::preset_system("h100-sxm-80g");
  EXPECT_EQ(estimate(p, nullptr, false).iteration_time_s, before);
}

}  // namespace
}  // namespace trainsim
