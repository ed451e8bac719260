// Strategy search: legality and feasibility of the results, agreement with brute force,
// determinism across thread counts, and candidate bookkeeping.
#include "test_estimate.h"
#include "search/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "system/presets.h"
#include "test_presets.h"
#include "plan/validate.h"
#include "core/error.h"
#include "core/units.h"

namespace trainsim {
namespace {

using test::preset_model;
using test::preset_system;

int64_t total_rejected(const SearchResult& r) {
  int64_t n = 0;
  for (const auto& [reason, count] : r.rejected_by_reason) n += count;
  return n;
}

// A 10-layer Llama-3-8B on 16 GPUs with a 22 GiB limit: uneven pipelines (pp 4 splits 10 layers
// as 3+3+3+1 or 1+3+3+3), an inexpressible one (pp 8), and plans that need recompute.
class SmallSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = preset_model("llama3-8b");
    model_.layer_num = 10;
    sys_ = preset_system("h100-sxm-80g");
    space_.tp = {1, 2, 4};
    space_.pp = {1, 2, 4, 8};
    space_.mbs = {1, 2};
    space_.zero = {0, 1};
    // SimuMax's space (the seed-003 dimensions are tested in search_space_test.cpp).
    space_.vpp = {1};
    space_.recompute = {RecomputeKind::None, RecomputeKind::FullBlock, RecomputeKind::SelectiveAll,
                        RecomputeKind::SelectiveAttn, RecomputeKind::SelectiveMlp};
    space_.splits = {PipelineSplit::Even, PipelineSplit::UnevenLast, PipelineSplit::UnevenFirst};
    opt_.overlaps_on = false;
    opt_.ladder = false;
    opt_.collapse_within = 0;
    opt_.world_size = 16;
    opt_.global_batch = 32;
    opt_.base.seq_len = 4096;
    opt_.gmi_error_gib = sys_.mem_bytes / kGiB - 22;
    opt_.keep = 0;
  }
  ModelConfig model_;
  SystemConfig sys_;
  SearchSpace space_;
  SearchOptions opt_;
};

TEST_F(SmallSearchTest, BestCandidateIsLegalAndFits) {
  const SearchResult r = search(model_, sys_, space_, opt_);
  ASSERT_FALSE(r.candidates.empty());
  EXPECT_DOUBLE_EQ(r.memory_limit_bytes, 22 * kGiB);
  for (const Candidate& c : r.candidates) {
    EXPECT_TRUE(validate_plan(model_, c.strategy, sys_, PlanSources{}).empty());
    const Estimate e = estimate(model_, c.strategy, sys_);
    // FITS, or TIGHT: the allocated bytes and one 20 MiB allocator segment within the limit.
    if (c.fit.tight())
      EXPECT_LE(e.peak_alloc_bytes() + 20 * 1024.0 * 1024.0, r.memory_limit_bytes);
    else
      EXPECT_LE(e.peak_reserved_bytes(), r.memory_limit_bytes);
    EXPECT_EQ(c.fit.tight(), e.peak_reserved_bytes() > r.memory_limit_bytes);
    EXPECT_DOUBLE_EQ(e.iteration_time_s, c.iteration_time_s);
    EXPECT_DOUBLE_EQ(e.peak_reserved_bytes(), c.peak_bytes);
    EXPECT_EQ(c.strategy.global_batch_size(), 32);
  }
  for (size_t i = 1; i < r.candidates.size(); ++i)
    EXPECT_LE(r.candidates[i - 1].iteration_time_s, r.candidates[i].iteration_time_s);
}

// One MFU convention: every candidate's MFU and TFLOP/s are what perf shows for its plan
// (Megatron-LM's count by default), or SimuMax's on request.
TEST_F(SmallSearchTest, CandidatesCountMfuAsPerfDoes) {
  const SearchResult r = search(model_, sys_, space_, opt_);
  ASSERT_FALSE(r.candidates.empty());
  SearchOptions simumax = opt_;
  simumax.mfu = MfuConvention::SimuMax;
  const SearchResult s = search(model_, sys_, space_, simumax);
  ASSERT_EQ(s.candidates.size(), r.candidates.size());
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Candidate& c = r.candidates[i];
    const Estimate e = estimate(model_, c.strategy, sys_);
    const Throughput t = megatron_throughput(model_, c.strategy, sys_, e);
    EXPECT_DOUBLE_EQ(c.mfu, t.mfu);
    EXPECT_DOUBLE_EQ(c.tflops_per_gpu, t.tflops_per_gpu);
    EXPECT_DOUBLE_EQ(s.candidates[i].mfu, e.mfu);  // same ranking by time, the other count
    EXPECT_NE(c.mfu, e.mfu);
  }
}

// Calls estimate() on every combination, every recompute layer count included, and applies
// the search's definitions: recompute only when the plan does not fit without it; full_block
// on the fewest layers that fit; fitting is FITS or TIGHT (the reserved peak, or the allocated
// bytes plus one 20 MiB allocator segment, within the limit).
TEST_F(SmallSearchTest, AgreesWithBruteForce) {
  using Key = std::tuple<int64_t, int64_t, int, int64_t, int64_t, int, int64_t>;
  std::map<Key, double> brute;
  int64_t combos = 0, calls = 0;
  const RecomputeKind kinds[] = {RecomputeKind::None, RecomputeKind::FullBlock,
                                 RecomputeKind::SelectiveAll, RecomputeKind::SelectiveAttn,
                                 RecomputeKind::SelectiveMlp};
  auto fits = [&](const StrategyConfig& s, double* time) {
    ++calls;
    const Estimate e = estimate(model_, s, sys_);
    *time = e.iteration_time_s;
    return e.peak_reserved_bytes() <= 22 * kGiB || e.peak_alloc_bytes() + 20 * 1024.0 * 1024.0 <= 22 * kGiB;
  };
  for (int64_t tp : space_.tp)
    for (int64_t pp : space_.pp)
      for (int split = 0; split < 3; ++split) {
        if ((split == 0) != (pp == 1 || 10 % pp == 0)) continue;
        if (split == 2 && pp == 8) continue;  // 10 layers cannot start with a short stage over 8
        for (int64_t mbs : space_.mbs)
          for (int64_t zero : space_.zero) {
            combos += 5;
            StrategyConfig s = opt_.base;
            s.world_size = 16;
            s.tp_size = tp;
            s.pp_size = pp;
            s.micro_batch_size = mbs;
            s.zero_state = zero;
            const int64_t per = (10 + pp - 1) / pp, rest = 10 - per * (pp - 1);
            if (rest <= 0) continue;
            if (split == 1) s.num_layers_in_last_pipeline_stage = rest;
            if (split == 2) s.num_layers_in_first_pipeline_stage = rest;
            if (!validate_plan(model_, s, sys_, PlanSources{}).empty()) continue;
            if (32 % (s.dp_size() * mbs) != 0) continue;
            s.micro_batch_num = 32 / (s.dp_size() * mbs);
            auto key = [&](RecomputeKind k, int64_t layers) {
              return Key{tp, pp, split, mbs, zero, static_cast<int>(k), layers};
            };
            double t = 0;
            if (fits(s, &t)) {
              brute[key(RecomputeKind::None, 0)] = t;
              continue;
            }
            for (RecomputeKind k : kinds) {
              if (k == RecomputeKind::None) continue;
              StrategyConfig v = s;
              v.recompute_granularity =
                  k == RecomputeKind::FullBlock ? "full_block" : "selective_recompute";
              v.attn_recompute = v.mla_rms_recompute =
                  k == RecomputeKind::SelectiveAll || k == RecomputeKind::SelectiveAttn;
              v.mlp_recompute = v.mlp_rms_recompute =
                  k == RecomputeKind::SelectiveAll || k == RecomputeKind::SelectiveMlp;
              for (int64_t layers = k == RecomputeKind::FullBlock ? 1 : per; layers <= per;
                   ++layers) {
                v.recompute_layer_num = layers;
                if (fits(v, &t)) {
                  brute[key(k, layers)] = t;
                  break;
                }
              }
            }
          }
      }

  for (int threads : {1, 3}) {
    opt_.threads = threads;
    const SearchResult r = search(model_, sys_, space_, opt_);
    EXPECT_EQ(r.evaluated, combos);
    EXPECT_EQ(r.feasible, static_cast<int64_t>(brute.size()));
    ASSERT_EQ(r.candidates.size(), brute.size());
    EXPECT_LT(r.estimate_calls, calls);  // pruning and binary search save work
    std::map<Key, double> found;
    for (const Candidate& c : r.candidates) {
      const StrategyConfig& s = c.strategy;
      found[Key{s.tp_size, s.pp_size, static_cast<int>(c.split), s.micro_batch_size, s.zero_state,
                static_cast<int>(c.recompute), s.recompute_layer_num}] = c.iteration_time_s;
    }
    EXPECT_EQ(found, brute);
    // Same ranking: the search's order is brute force's times sorted.
    std::vector<double> want, got;
    for (const auto& [k, t] : brute) want.push_back(t);
    std::sort(want.begin(), want.end());
    for (const Candidate& c : r.candidates) got.push_back(c.iteration_time_s);
    EXPECT_EQ(got, want);
    // Some of them fit only as TIGHT (over 22 GiB with the reserve).
    EXPECT_GT(std::count_if(r.candidates.begin(), r.candidates.end(), [](const Candidate& c) { return c.fit.tight(); }),
              0);
  }
  // The space exercises every path: plain fits, recompute, and out-of-memory plans.
  std::map<int, int> by_kind;
  for (const auto& [k, t] : brute) ++by_kind[std::get<5>(k)];
  EXPECT_GT(by_kind[static_cast<int>(RecomputeKind::None)], 0);
  EXPECT_GT(by_kind[static_cast<int>(RecomputeKind::FullBlock)], 0);
  EXPECT_GT(by_kind[static_cast<int>(RecomputeKind::SelectiveAll)], 0);
}

TEST_F(SmallSearchTest, RejectedCountsAddUp) {
  const SearchResult r = search(model_, sys_, space_, opt_);
  // 3 tp × (pp 1, 2: even; pp 4: two uneven splits; pp 8: one inexpressible split) = 15
  // layouts × 2 mbs × 2 zero × 5 recompute choices.
  EXPECT_EQ(r.evaluated, 3 * 5 * 2 * 2 * 5);
  EXPECT_EQ(r.feasible + total_rejected(r), r.evaluated);
  // pp 8 splits 10 layers as 2 per stage with a negative remainder: tp 1, 2 × 2 mbs × 2 zero × 5;
  // tp 4 × pp 8 does not factor 16 GPUs.
  EXPECT_EQ(r.rejected_by_reason.at("illegal_pp_size"), 40);
  EXPECT_EQ(r.rejected_by_reason.at("illegal_world_size"), 20);
  EXPECT_GT(r.rejected_by_reason.at("oom"), 0);
  EXPECT_GT(r.rejected_by_reason.at("recompute_not_needed"), 0);
  EXPECT_GT(r.rejected_by_reason.at("oom_bound"), 0);  // pruning is covered by the brute-force test
  EXPECT_EQ(r.rejected_by_reason.count("estimate_error"), 0u);
}

TEST(SearchTest, SameResultForAnyThreadCount) {
  const ModelConfig m = preset_model("mixtral-8x7b");
  const SystemConfig sys = preset_system("h100-sxm-80g");
  SearchSpace space;
  space.pp = {1, 2, 4, 8};
  space.sp = {true, false};
  space.zero = {0, 1};
  space.vpp = {1, 2};
  space.mbs = {1, 2};
  space.tp = {1, 2, 4};
  space.ep = {1, 4, 8};
  space.dispatcher = {"alltoall", "deepep"};
  space.recompute = {RecomputeKind::None, RecomputeKind::FullBlock, RecomputeKind::MoeAct};
  SearchOptions o;
  o.world_size = 64;
  o.global_batch = 256;
  o.base.seq_len = 4096;
  o.keep = 0;
  o.threads = 1;
  const SearchResult one = search(m, sys, space, o);
  o.threads = 4;
  const SearchResult four = search(m, sys, space, o);
  EXPECT_EQ(four.threads, 4);
  ASSERT_GT(one.candidates.size(), 10u);
  ASSERT_EQ(one.candidates.size(), four.candidates.size());
  for (size_t i = 0; i < one.candidates.size(); ++i) {
    EXPECT_EQ(strategy_to_json_text(one.candidates[i].strategy),
              strategy_to_json_text(four.candidates[i].strategy));
    EXPECT_EQ(one.candidates[i].iteration_time_s, four.candidates[i].iteration_time_s);
  }
  EXPECT_EQ(one.rejected_by_reason, four.rejected_by_reason);
  EXPECT_EQ(one.estimate_calls, four.estimate_calls);
  EXPECT_GT(one.rejected_by_reason.at("duplicate"), 0);  // sp off with tp 1

  // keep = 3 returns the first three of the full ranking (the bound skips plans that cannot rank).
  o.keep = 3;
  const SearchResult top = search(m, sys, space, o);
  ASSERT_EQ(top.candidates.size(), 3u);
  EXPECT_LT(top.feasible, one.feasible);
  EXPECT_LT(top.estimate_calls, one.estimate_calls);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(strategy_to_json_text(top.candidates[i].strategy),
              strategy_to_json_text(one.candidates[i].strategy));
}

// Default mode: TP8 × CP2 on 8 KV heads cannot split heads all-to-all (Megatron rejects it), so
// the ring (Megatron's default) and the other flavours are the candidates.
TEST(SearchTest, RingContextParallelWhereHeadsDoNotSplit) {
  const ModelConfig m = preset_model("llama3-8b");
  const SystemConfig sys = preset_system("h100-sxm-80g");
  SearchSpace space;
  space.tp = {8};
  space.cp = {2};
  space.pp = {1};
  space.recompute = {RecomputeKind::None};
  SearchOptions o;
  o.world_size = 16;
  o.global_batch = 8;
  o.base.seq_len = 16384;
  o.threads = 1;
  o.keep = 0;
  const SearchResult r = search(m, sys, space, o);
  ASSERT_FALSE(r.candidates.empty());
  for (const Candidate& c : r.candidates) EXPECT_NE(c.strategy.cp_comm_type, "a2a");
  EXPECT_GT(r.rejected_by_reason.at("illegal_cp_size"), 0);  // a2a: 8 KV heads / TP 8 do not split over CP 2
  space.cp_comm = {"p2p"};
  EXPECT_EQ(search(m, sys, space, o).candidates.front().strategy.cp_comm_type, "p2p");
  o.mode = Mode::SimuMax12;  // SimuMax v1.2 has a2a only: the layout is illegal there
  space.cp_comm.clear();
  EXPECT_TRUE(search(m, sys, space, o).candidates.empty());
}

TEST(SearchTest, RanksByMfu) {
  const ModelConfig m = preset_model("llama3-8b");
  const SystemConfig sys = preset_system("h100-sxm-80g");
  SearchOptions o;
  o.world_size = 8;
  o.global_batch = 64;
  o.base.seq_len = 4096;
  o.keep = 0;
  o.rank_by = RankBy::Mfu;
  const SearchResult r = search(m, sys, {}, o);
  ASSERT_GT(r.candidates.size(), 1u);
  for (size_t i = 1; i < r.candidates.size(); ++i)
    EXPECT_GE(r.candidates[i - 1].mfu, r.candidates[i].mfu);
}

TEST(SearchTest, DefaultSpace) {
  const SearchSpace dense =
      default_search_space(preset_model("llama3-70b"), preset_system("h100-sxm-80g"), 64);
  EXPECT_EQ(dense.tp, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(dense.pp.size(), 64u);  // 1..min(80 layers, 64 GPUs)
  EXPECT_EQ(dense.ep, (std::vector<int64_t>{1}));
  EXPECT_EQ(dense.recompute, (std::vector<RecomputeKind>{RecomputeKind::None, RecomputeKind::FullBlock,
                                                         RecomputeKind::CoreAttn, RecomputeKind::FullUniform,
                                                         RecomputeKind::CoreAttnMlp}));
  EXPECT_EQ(dense.vpp, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(dense.cp, (std::vector<int64_t>{1}));  // 4096 tokens
  EXPECT_EQ(dense.zero, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(dense.dispatcher, (std::vector<std::string>{"base"}));
  const SearchSpace moe =
      default_search_space(preset_model("deepseek-v3"), preset_system("h100-sxm-80g"), 256);
  EXPECT_EQ(moe.tp, (std::vector<int64_t>{1, 2, 4, 8}));  // MLA splits over TP (Megatron)
  EXPECT_EQ(default_search_space(preset_model("deepseek-v3"), preset_system("h100-sxm-80g"), 256, {}, Mode::SimuMax12).tp,
            (std::vector<int64_t>{1}));  // SimuMax v1.2 models MLA with tp 1
  EXPECT_EQ(moe.ep, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(moe.pp.size(), 61u);
  EXPECT_EQ(moe.dispatcher, (std::vector<std::string>{"alltoall", "allgather", "deepep", "hybridep"}));
  EXPECT_EQ(moe.a2a_overlap, (std::vector<bool>{true, false}));
  // none, full, core_attn, full_uniform, core_attn+mlp (3 dense layers), mla_up_proj+mlp, 3 MoE sets
  EXPECT_EQ(moe.recompute.size(), 9u);
}

// The limit is the fit rule of perf (estimate/fit.h): the system's unusable_mem_gbs unless
// --gmi-error replaces it. 79.65 − 2.5 = 77.15 GiB; with a 10 GiB margin, 69.65 GiB.
TEST(SearchTest, LimitIsTheFitRuleOfTheSystem) {
  const ModelConfig m = preset_model("llama3-8b");
  SystemConfig sys = preset_system("h100-sxm-80g");
  sys.unusable_mem_bytes = 2.5 * kGiB;
  sys.unusable_mem_given = true;
  SearchOptions o;
  o.world_size = 8;
  o.global_batch = 8;
  o.threads = 1;
  SearchSpace space;
  space.tp = {8};
  space.pp = {1};
  space.mbs = {1};
  // Default mode: the device less each plan's memory outside PyTorch (here the system's measured
  // 2.5 GiB, which replaces the CUDA context and NCCL terms).
  const SearchResult r = search(m, sys, space, o);
  EXPECT_NEAR(r.memory_limit_bytes / kGiB, 79.65, 1e-9);
  EXPECT_DOUBLE_EQ(r.unusable_memory_bytes, 0);
  EXPECT_TRUE(r.per_plan_non_tensor);
  ASSERT_FALSE(r.candidates.empty());
  for (const auto& st : r.candidates.front().stages) EXPECT_DOUBLE_EQ(st.non_tensor_bytes, 2.5 * kGiB);
  // Compat mode: SimuMax's flat margin.
  SearchOptions c = o;
  c.mode = Mode::SimuMax12;
  const SearchResult rc = search(m, sys, space, c);
  EXPECT_NEAR(rc.memory_limit_bytes / kGiB, 77.15, 1e-9);
  EXPECT_NEAR(rc.unusable_memory_bytes / kGiB, 2.5, 1e-12);
  EXPECT_FALSE(rc.per_plan_non_tensor);
  // --gmi-error: a flat margin in either mode.
  o.gmi_error_gib = 10;
  const SearchResult rg = search(m, sys, space, o);
  EXPECT_NEAR(rg.memory_limit_bytes / kGiB, 69.65, 1e-9);
  EXPECT_FALSE(rg.per_plan_non_tensor);
}

TEST(SearchTest, BadOptionsAreConfigErrors) {
  const ModelConfig m = preset_model("llama3-8b");
  const SystemConfig sys = preset_system("h100-sxm-80g");
  SearchOptions o;
  o.world_size = 8;
  try {
    (void)search(m, sys, {}, o);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "search: /global_batch: must be in 1..1073741824, got 0");
  }
  o.global_batch = 8;
  o.gmi_error_gib = 80;
  try {
    (void)search(m, sys, {}, o);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "search: /gmi_error: 80 GiB leaves no memory on a 79.65 GiB device");
  }
  o.gmi_error_gib = 6;
  SearchSpace space;
  space.zero = {4};
  EXPECT_THROW((void)search(m, sys, space, o), ConfigError);
}

}  // namespace
}  // namespace trainsim
