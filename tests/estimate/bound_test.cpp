// A lower bound of a plan's step time and its memory from its chunk costs and program, without
// the replay (estimate/bound.h): the pipeline formula against hand computations, the dp-stream
// seconds against the dp stream the estimate replays, the time bound at most the estimate's and
// the memory the estimate's over the candidates of several searches (dense, MoE with every dispatcher and the EP overlap, MLA with MTP, PP/VPP, CP
// flavours, ZeRO stages, recompute forms, SimuMax compat mode).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_estimate.h"
#include "estimate/bound.h"
#include "estimate/estimate.h"
#include "estimate/fit.h"
#include "inputs/strategy_config.h"
#include "search/search.h"
#include "search/worker.h"
#include "test_presets.h"

namespace trainsim {
namespace {

// One rank, one chunk: the compute stream runs mbc forwards and backwards, 4 · (1 + 2) = 12 s.
TEST(BoundTest, OneRankIsItsBusyTime) {
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound({{{1}, {2}, {0}, {0}}}, 4, true), 12.0);
}

// Two ranks, 1F1B: rank 1 waits for rank 0's first forward (1 s), runs 2 · (3 + 4) = 14 s, and
// rank 0's last backward (2 s) follows its last: 1 + 14 + 2 = 17 s; rank 0 alone: 2 · 3 = 6 s.
// Without a backward last (split backward) the 2 s do not follow: 15 s.
TEST(BoundTest, WarmUpAndCoolDownOfEarlierRanks) {
  const std::vector<RankPassBounds> ranks = {{{1}, {2}, {0}, {0}}, {{3}, {4}, {0}, {0}}};
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound(ranks, 2, true), 17.0);
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound(ranks, 2, false), 15.0);
}

// Uniform 1F1B stages of f = 1, b = 2 over pp = 4 and mbc = 8: (mbc + pp − 1)(f + b) = 33 s, the
// replayed 1F1B time without transfer costs (Narayanan et al. 2021, §2.2.1: the bubble is
// (pp − 1)(f + b)).
TEST(BoundTest, UniformOneFOneBIsTheClassicBubble) {
  const std::vector<RankPassBounds> ranks(4, RankPassBounds{{1}, {2}, {0}, {0}});
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound(ranks, 8, true), 33.0);
}

// Virtual chunks: a rank's busy time sums its chunks, the earlier ranks add their shortest
// forward and backward. Rank 1: 0.5 + 3 · (1 + 2 + 0.5 + 1) + 1 = 15 s.
TEST(BoundTest, VirtualChunksAddTheirShortestPass) {
  const std::vector<RankPassBounds> ranks = {{{0.5, 1}, {1, 2}, {0, 0}, {0, 0}}, {{1, 0.5}, {2, 1}, {0, 0}, {0, 0}}};
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound(ranks, 3, true), 15.0);
}

// Merged steps: compute 1 + 1 s and 6 s of all-to-alls per micro-batch; one of the compute and
// EP streams is busy for half of 2 · 8 s = 8 s, more than the 4 s of compute.
TEST(BoundTest, AllToAllsBoundHalfTheirSumWithCompute) {
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound({{{1}, {1}, {0}, {6}}}, 2, true), 8.0);
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound({{{1}, {1}, {0}, {1}}}, 2, true), 4.0);
}

// A busy time known from the program's merged steps replaces the pass sum where larger: one rank
// whose 4 micro-batches take 20 s of merged steps; 5 s is below the 4 · (1 + 2) = 12 s of passes.
TEST(BoundTest, MergedStepsBusyTime) {
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound({{{1}, {2}, {0}, {0}, 20}}, 4, true), 20.0);
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound({{{1}, {2}, {0}, {0}, 5}}, 4, true), 12.0);
  // Rank 1 after rank 0's shortest forward (1 s) and before its backward (2 s): 1 + 30 + 2.
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound({{{1}, {2}, {0}, {0}}, {{1}, {2}, {0}, {0}, 30}}, 4, true), 33.0);
}

// A split backward's weight-gradient pass keeps the stream busy too: 2 · (1 + 1 + 1) = 6 s.
TEST(BoundTest, WeightGradientPass) {
  EXPECT_DOUBLE_EQ(pipeline_time_lower_bound({{{1}, {1}, {1}, {0}}}, 2, false), 6.0);
}

ModelConfig layers(const char* preset, int64_t n) {
  ModelConfig m = test::preset_model(preset);
  m.layer_num = n;
  return m;
}

// The dp-stream seconds are what the estimate's dp stream runs: the durations of its events on
// each rank (overlap_param_gather keeps every all-gather on the stream), for ZeRO 1, 2 (sharded
// gradients, reduced after every backward) and 3 (FSDP gathers before every pass), dense and MoE.
TEST(BoundTest, DpStreamSecondsAreTheReplayedDpStream) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  for (const char* preset : {"llama3-8b", "mixtral-8x7b"})
    for (int64_t zero : {0, 1, 2, 3})
      for (int64_t vpp : {1, 2}) {
        const ModelConfig m = layers(preset, 8);
        StrategyConfig s;
        s.seq_len = 4096;
        s.world_size = 32;
        s.tp_size = 2;
        s.pp_size = 2;
        s.ep_size = m.is_moe() ? 4 : 1;
        s.interleaving_size = vpp;
        s.micro_batch_size = 1;
        s.micro_batch_num = 8;
        s.zero_state = zero;
        s.overlap_grad_reduce = true;
        s.overlap_param_gather = zero == 1 || zero == 2;
        const Plan plan = resolve_plan(m, s, sys, Mode::Default);
        const Estimate e = estimate(plan);
        const PlanBound bound = plan_lower_bound(plan);
        ASSERT_EQ(bound.dp_stream_s.size(), 2u);
        for (int32_t r = 0; r < 2; ++r) {
          double on_stream = 0;
          for (const TimelineEvent& ev : e.timeline.events)
            if (ev.rank == r && ev.stream == Stream::Dp) on_stream += ev.end - ev.start;
          EXPECT_NEAR(bound.dp_stream_s[static_cast<size_t>(r)], on_stream, 1e-9 * on_stream)
              << preset << " zero " << zero << " vpp " << vpp << " rank " << r;
          EXPECT_GT(on_stream, 0);  // dp 8: every ZeRO stage reduces over the data-parallel ranks
        }
      }
}

// The candidates of one search space (the search's own strategy setters and legalization), each
// bound checked against its estimate: the search's (cached, no events, steady replay) and, for
// every fifth, perf's (no cache, events, the whole program replayed).
struct Space {
  const char* name;
  ModelConfig m;
  Mode mode = Mode::Default;
  int64_t world = 16, batch = 32, seq = 4096;
  std::vector<int64_t> tp{1, 2}, cp{1}, pp{1, 2}, vpp{1}, ep{1}, zero{1}, mbs{1};
  std::vector<std::string> cp_comm{"p2p"}, dispatcher{"base"};
  std::vector<bool> a2a{false};
  std::vector<RecomputeKind> recompute{RecomputeKind::None};
  bool offload = false;  // the optimizer states in host memory (the search's last resort)
};

struct Checked {
  int64_t plans = 0;
  double tightest = 0;  // the largest bound / estimate ratio
};

void expect_bounded(const Plan& plan, const Estimate& e, const PlanBound& b, const std::string& what) {
  EXPECT_LE(b.time_s, e.iteration_time_s) << what;
  ASSERT_EQ(b.stages.size(), e.stages.size()) << what;
  for (size_t i = 0; i < e.stages.size(); ++i) {
    // The memory is the estimate's, to the bit: the search decides out-of-memory plans with it.
    EXPECT_EQ(b.stages[i].peak_alloc_bytes, e.stages[i].peak_alloc_bytes) << what << " stage " << i;
    EXPECT_EQ(b.stages[i].peak_reserved_bytes, e.stages[i].peak_reserved_bytes) << what << " stage " << i;
    EXPECT_EQ(b.stages[i].non_tensor_bytes, e.stages[i].non_tensor_bytes) << what << " stage " << i;
    EXPECT_EQ(b.stages[i].model_bytes, e.stages[i].model_bytes) << what << " stage " << i;
  }
  (void)plan;
}

Checked check_space(const Space& sp, const SystemConfig& sys) {
  Checked out;
  EstimateCache bound_cache, estimate_cache;
  for (int64_t tp : sp.tp)
    for (int64_t cp : sp.cp)
      for (const std::string& cpc : sp.cp_comm)
        for (int64_t pp : sp.pp)
          for (int64_t vpp : sp.vpp)
            for (int64_t ep : sp.ep)
              for (int64_t zero : sp.zero)
                for (int64_t mbs : sp.mbs)
                  for (const std::string& disp : sp.dispatcher)
                    for (bool a2a : sp.a2a)
                      for (RecomputeKind k : sp.recompute) {
                        if (sp.world % (tp * cp * pp) != 0 || (cp == 1 && cpc != sp.cp_comm.front())) continue;
                        const int64_t dp = sp.world / (tp * cp * pp);
                        if (sp.batch % (dp * mbs) != 0) continue;
                        StrategyConfig s;
                        s.world_size = sp.world;
                        s.seq_len = sp.seq;
                        s.tp_size = tp;
                        s.cp_size = cp;
                        if (cp > 1) s.cp_comm_type = cpc;  // else the default: a flavour changes nothing
                        if (cpc == "a2a+p2p") {
                          const int64_t a = search_detail::hierarchical_a2a(sp.m, tp, cp);
                          if (a == 0) continue;
                          s.hierarchical_context_parallel_sizes = {a, cp / a};
                        }
                        s.pp_size = pp;
                        s.interleaving_size = vpp;
                        s.ep_size = ep;
                        s.zero_state = zero;
                        s.micro_batch_size = mbs;
                        s.micro_batch_num = sp.batch / (dp * mbs);
                        s.enable_sequence_parallel = tp > 1;
                        if (sp.mode == Mode::Default) {
                          s.overlap_grad_reduce = s.overlap_param_gather = s.tp_comm_overlap = true;
                          s.moe_shared_expert_overlap = s.pp_comm_async = true;
                          if (sp.m.is_moe()) s.overlap_moe_expert_parallel_comm = a2a;
                        }
                        if (sp.offload) {
                          s.optimizer_cpu_offload = true;
                          s.optimizer_offload_fraction = 1.0;
                        }
                        search_detail::set_dispatcher(s, disp);
                        search_detail::set_recompute(s, k, k == RecomputeKind::FullBlock ? 1 : 0);
                        if (!search_detail::legalize(sp.m, sys, s, sp.mode).empty()) continue;
                        const Plan plan = keyed_plan(sp.m, s, sys, sp.mode);
                        const PlanBound b = plan_lower_bound(plan, &bound_cache);
                        const Estimate e = estimate(plan, &estimate_cache, /*events=*/false);
                        const std::string what = std::string(sp.name) + ": " + strategy_to_json_text(s);
                        expect_bounded(plan, e, b, what);
                        if (out.plans % 5 == 0) expect_bounded(plan, estimate(plan), b, what + " (perf)");
                        out.tightest = std::max(out.tightest, b.time_s / e.iteration_time_s);
                        ++out.plans;
                      }
  return out;
}

TEST(BoundTest, BoundsAreAtMostTheEstimateOverSearchSpaces) {
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  std::vector<Space> spaces;
  {  // dense: PP with virtual stages, ZeRO 0/1/3, micro batch sizes, recompute forms
    Space d{"dense", layers("llama3-8b", 8)};
    d.tp = {1, 2, 4};
    d.pp = {1, 2, 4};
    d.vpp = {1, 2};
    d.zero = {0, 1, 3};
    d.mbs = {1, 2};
    d.recompute = {RecomputeKind::None, RecomputeKind::FullBlock, RecomputeKind::FullUniform,
                   RecomputeKind::CoreAttn, RecomputeKind::CoreAttnMlp};
    spaces.push_back(d);
  }
  {  // context parallelism: every flavour at 16k tokens
    Space c{"cp", layers("llama3-8b", 4)};
    c.seq = 16384;
    c.batch = 8;
    c.cp = {2, 4};
    c.tp = {1, 2};
    c.pp = {1, 2};
    c.cp_comm = {"p2p", "a2a", "all_gather", "a2a+p2p"};
    c.recompute = {RecomputeKind::None, RecomputeKind::CoreAttn};
    spaces.push_back(c);
  }
  {  // MoE: dispatchers, the EP overlap (merged steps), expert parallel sizes, ZeRO 1/3
    Space moe{"moe", layers("mixtral-8x7b", 8)};
    moe.pp = {1, 2};
    moe.vpp = {1, 2};
    moe.ep = {2, 8};
    moe.zero = {1, 3};
    moe.dispatcher = {"alltoall", "allgather", "deepep", "hybridep"};
    moe.a2a = {false, true};
    moe.recompute = {RecomputeKind::None, RecomputeKind::MoeAct, RecomputeKind::FullBlock};
    spaces.push_back(moe);
  }
  {  // MLA, a dense first layer, MTP
    ModelConfig v3 = layers("deepseek-v3", 4);
    v3.dense_layers = 1;
    v3.mtp_num_layers = 1;
    Space mla{"mla", v3};
    mla.pp = {1, 2};
    mla.ep = {4, 8};
    mla.a2a = {false, true};
    mla.dispatcher = {"alltoall", "deepep"};
    mla.recompute = {RecomputeKind::None, RecomputeKind::MlaUpProjMlp};
    spaces.push_back(mla);
  }
  {  // optimizer CPU offload, 1F1B and interleaved
    Space off{"offload", layers("llama3-8b", 8)};
    off.tp = {1, 2, 4};
    off.pp = {1, 2, 4};
    off.vpp = {1, 2};
    off.zero = {1};
    off.mbs = {1, 2};
    off.offload = true;
    spaces.push_back(off);
  }
  {  // SimuMax v1.2 compat mode: its pipeline, DP tail and memory conventions
    Space compat{"compat", layers("llama3-8b", 8)};
    compat.mode = Mode::SimuMax12;
    compat.pp = {1, 2, 4};
    compat.vpp = {1, 2};
    compat.zero = {0, 1};
    compat.recompute = {RecomputeKind::None, RecomputeKind::FullBlock, RecomputeKind::SelectiveAll};
    spaces.push_back(compat);
  }
  int64_t total = 0;
  for (const Space& sp : spaces) {
    const Checked c = check_space(sp, sys);
    EXPECT_GT(c.plans, 10) << sp.name;
    // The bound is not vacuous: some plan's bound is within 15 % of its estimate.
    EXPECT_GT(c.tightest, 0.85) << sp.name;
    total += c.plans;
  }
  EXPECT_GT(total, 400);
}

}  // namespace
}  // namespace trainsim
