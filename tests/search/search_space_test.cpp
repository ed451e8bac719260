// The seed-003 search space (CP flavours, virtual stages, balanced splits, Megatron recompute
// sets, dispatchers, overlaps), its pruning (ladder, branch and bound) against exhaustive runs,
// agreement with perf's code path, the base plan's rank, the diverse top-k and the Pareto front.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "test_estimate.h"
#include "plan/pipeline_layout.h"
#include "inputs/plan_request.h"
#include "system/presets.h"
#include "plan/validate.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/estimate.h"
#include "estimate/fit.h"
#include "search/search.h"
#include "test_presets.h"
#include "search/report.h"

namespace trainsim {
namespace {

using test::preset_model;
using test::preset_system;

// perf's code path: the candidate's strategy written as a strategy file, read back, normalized
// by build_plan, estimated without a cache.
void expect_perf_agrees(const std::string& model, const SystemConfig& sys, const Candidate& c) {
  PlanRequest req;
  req.model = resolve_config("model", model);
  req.strategy = ConfigText{strategy_to_json_text(c.strategy), "candidate.json"};
  const PlanConfigs plan = build_plan(req, "", "");
  EXPECT_TRUE(plan.no_effect.empty()) << "a candidate carries no moot switch: " << plan.no_effect.front().key;
  const Estimate e = estimate(plan.model, plan.strategy, sys);
  EXPECT_EQ(e.iteration_time_s, c.iteration_time_s) << strategy_to_json_text(c.strategy);
  EXPECT_EQ(e.peak_reserved_bytes(), c.peak_bytes);
  EXPECT_EQ(e.straggler_ratio, c.straggler_ratio);
  EXPECT_TRUE(fit_verdict(e, fit_rule(sys, Mode::Default)).fits);
}

SearchOptions options(int64_t gpus, int64_t batch, int64_t seq) {
  SearchOptions o;
  o.world_size = gpus;
  o.global_batch = batch;
  o.base.seq_len = seq;
  o.threads = 2;
  return o;
}

// Llama 3 8B at 16k tokens on 16 GPUs: every CP flavour Megatron accepts is a candidate (a2a cannot
// split 8 KV heads over TP 8 × CP 2 and is Megatron's rejection there), virtual stages and the
// balanced split (account_for_embedding/loss) appear, and every kept plan is perf's.
TEST(SearchSpaceTest, DenseDimensionsAndPerfAgreement) {
  const ModelConfig m = preset_model("llama3-8b");
  const SystemConfig sys = preset_system("h100-sxm-80g");
  SearchSpace space;
  space.tp = {2, 4, 8};
  space.pp = {1, 2};
  space.mbs = {1};
  SearchOptions o = options(16, 32, 16384);
  o.keep = 0;
  o.collapse_within = 0;
  const SearchResult r = search(m, sys, space, o);
  EXPECT_EQ(default_search_space(m, sys, 16, space, Mode::Default, 16384).cp, (std::vector<int64_t>{1, 2, 4}));
  std::set<std::string> flavours;
  std::set<int64_t> vpps;
  bool balanced = false;
  for (const Candidate& c : r.candidates) {
    if (c.strategy.cp_size > 1) flavours.insert(c.strategy.cp_comm_type);
    vpps.insert(virtual_stages_per_rank(m, c.strategy));
    balanced = balanced || c.strategy.account_for_embedding_in_pipeline_split;
    EXPECT_TRUE(c.strategy.overlap_grad_reduce || c.strategy.dp_size() == 1);
    if (c.strategy.cp_size == 2 && c.strategy.tp_size == 8) {
      EXPECT_NE(c.strategy.cp_comm_type, "a2a");
    }
  }
  EXPECT_EQ(flavours, (std::set<std::string>{"a2a", "a2a+p2p", "all_gather", "p2p"}));
  EXPECT_EQ(vpps, (std::set<int64_t>{1, 2, 4, 8}));
  EXPECT_TRUE(balanced);
  EXPECT_GT(r.rejected_by_reason.at("illegal_cp_size"), 0);  // a2a where the heads do not split
  // Every plan has one straggler factor: 16 GPUs are 2 nodes, 1 + 1/2 · 0.055 · 1 = 1.0275.
  for (const Candidate& c : r.candidates) EXPECT_DOUBLE_EQ(c.straggler_ratio, 1.0275);
  for (size_t i = 0; i < r.candidates.size(); i += 7) expect_perf_agrees("llama3-8b", sys, r.candidates[i]);
}

// Mixtral on 16 GPUs: the four dispatchers and the EP overlap where Megatron runs it (pp 1 or a
// virtual pipeline; elsewhere it is off, never a rejection), the MoE recompute sets; perf agrees.
TEST(SearchSpaceTest, MoeDimensionsAndPerfAgreement) {
  const ModelConfig m = preset_model("mixtral-8x7b");
  const SystemConfig sys = preset_system("h100-sxm-80g");
  SearchSpace space;
  space.tp = {2, 4};
  space.pp = {1, 2, 4};
  space.ep = {4, 8};
  space.mbs = {1};
  SearchOptions o = options(32, 64, 4096);
  o.keep = 0;
  o.collapse_within = 0;
  const SearchResult r = search(m, sys, space, o);
  ASSERT_GT(r.candidates.size(), 20u);
  std::set<std::string> dispatchers;
  std::set<std::string> recomputes;
  bool overlap = false;
  for (const Candidate& c : r.candidates) {
    const StrategyConfig& s = c.strategy;
    dispatchers.insert(s.moe_token_dispatcher_type == std::optional<std::string>("flex") ? *s.moe_flex_dispatcher_backend
                                                                                         : *s.moe_token_dispatcher_type);
    recomputes.insert(recompute_kind_name(c.recompute));
    if (s.overlap_moe_expert_parallel_comm) {
      overlap = true;
      EXPECT_TRUE(s.pp_size == 1 || virtual_stages_per_rank(m, s) > 1);
    }
  }
  EXPECT_EQ(dispatchers, (std::set<std::string>{"allgather", "alltoall", "deepep", "hybridep"}));
  EXPECT_TRUE(overlap);
  EXPECT_EQ(r.rejected_by_reason.count("illegal_overlap_moe_expert_parallel_comm"), 0u);
  EXPECT_TRUE(recomputes.count("none"));
  for (size_t i = 0; i < r.candidates.size(); i += 11) expect_perf_agrees("mixtral-8x7b", sys, r.candidates[i]);
}

// The ladder (less sharding and the EP overlap first) and the branch-and-bound return the top ten
// of the exhaustive search, plan for plan, on a space where both prune.
TEST(SearchSpaceTest, LadderAndBoundKeepTheTopK) {
  const ModelConfig m = preset_model("mixtral-8x7b");
  const SystemConfig sys = preset_system("h100-sxm-80g");
  SearchSpace space;
  space.tp = {1, 2, 4};
  space.pp = {1, 2, 4};
  space.ep = {2, 8};
  space.vpp = {1, 2};
  space.zero = {0, 1, 3};
  space.dispatcher = {"alltoall", "deepep"};
  SearchOptions o = options(32, 128, 4096);
  o.keep = 10;
  o.collapse_within = 0;
  const SearchResult pruned = search(m, sys, space, o);
  SearchOptions all = o;
  all.ladder = all.branch_and_bound = false;
  const SearchResult full = search(m, sys, space, all);
  EXPECT_LT(pruned.estimate_calls, full.estimate_calls);
  EXPECT_GT(pruned.rejected_by_reason.at("time_bound"), 0);
  EXPECT_GT(pruned.rejected_by_reason.at("switch_not_needed"), 0);
  ASSERT_EQ(pruned.candidates.size(), 10u);
  ASSERT_EQ(full.candidates.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(pruned.candidates[i].iteration_time_s, full.candidates[i].iteration_time_s) << i;
    EXPECT_EQ(strategy_to_json_text(pruned.candidates[i].strategy), strategy_to_json_text(full.candidates[i].strategy));
  }
  // The same answer, counts and estimates on one thread.
  o.threads = 1;
  const SearchResult one = search(m, sys, space, o);
  EXPECT_EQ(one.estimate_calls, pruned.estimate_calls);
  EXPECT_EQ(one.rejected_by_reason, pruned.rejected_by_reason);
}

// The base plan's own time and rank (1 + the feasible plans strictly faster), the diverse top-k
// and the time × memory Pareto front.
TEST(SearchSpaceTest, BaseRankDiverseTopAndParetoFront) {
  const ModelConfig m = preset_model("llama3-8b");
  const SystemConfig sys = preset_system("h100-sxm-80g");
  SearchSpace space;
  space.tp = {1, 2, 4};
  space.pp = {1, 2};
  space.mbs = {1, 2};
  SearchOptions o = options(16, 64, 4096);
  o.base = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8, "world_size": 16,
                             "tp_size": 2, "pp_size": 1})", "base");
  o.rank_base = true;
  o.keep = 0;
  o.collapse_within = 0;
  const SearchResult all = search(m, sys, space, o);
  ASSERT_TRUE(all.base.evaluated);
  ASSERT_TRUE(all.base.fits);
  const double t = all.base.plan.iteration_time_s;
  const auto faster = std::count_if(all.candidates.begin(), all.candidates.end(),
                                    [&](const Candidate& c) { return c.iteration_time_s < t; });
  EXPECT_EQ(all.base.rank, 1 + faster);
  EXPECT_EQ(all.base.plan.strategy.micro_batch_num, 8);  // 64 / (dp 8 · mbs 1)
  // Pareto: no feasible plan is both faster and smaller than a front plan; every plan is matched
  // or beaten by one on the front.
  ASSERT_FALSE(all.pareto.empty());
  for (const Candidate& p : all.pareto)
    for (const Candidate& c : all.candidates)
      EXPECT_FALSE(c.iteration_time_s < p.iteration_time_s && c.peak_bytes < p.peak_bytes);
  for (const Candidate& c : all.candidates)
    EXPECT_TRUE(std::any_of(all.pareto.begin(), all.pareto.end(), [&](const Candidate& p) {
      return p.iteration_time_s <= c.iteration_time_s && p.peak_bytes <= c.peak_bytes;
    }));
  // Diverse top-k: no two kept plans share sizes and micro batch within 0.5 %.
  o.keep = 40;
  o.collapse_within = 0.005;
  const SearchResult top = search(m, sys, space, o);
  int64_t folded = 0;
  for (size_t i = 0; i < top.candidates.size(); ++i) {
    folded += top.candidates[i].variants;
    for (size_t j = 0; j < i; ++j) {
      const StrategyConfig &a = top.candidates[i].strategy, &b = top.candidates[j].strategy;
      const bool same = a.tp_size == b.tp_size && a.cp_size == b.cp_size && a.pp_size == b.pp_size &&
                        virtual_stages_per_rank(m, a) == virtual_stages_per_rank(m, b) &&
                        a.ep_size == b.ep_size && a.micro_batch_size == b.micro_batch_size;
      EXPECT_FALSE(same && top.candidates[i].iteration_time_s <= 1.005 * top.candidates[j].iteration_time_s);
    }
  }
  EXPECT_EQ(folded, top.collapsed);
  EXPECT_GT(top.collapsed, 0);
  EXPECT_EQ(top.base.rank, all.base.rank);
  // --explain names the flags that change and the step time of both.
  const std::string ex = search_explain(top);
  EXPECT_NE(ex.find("Megatron flags that change (base -> best):"), std::string::npos) << ex;
  EXPECT_NE(ex.find(strprintf("%10.3f %10.3f", t, top.candidates.front().iteration_time_s)), std::string::npos) << ex;
}

}  // namespace
}  // namespace trainsim

namespace trainsim {
namespace {

// --explain's Megatron flags of a plan, by hand from Megatron-LM's flag names.
TEST(SearchSpaceTest, MegatronFlagsOfAPlan) {
  StrategyConfig s;
  s.tp_size = 4;
  s.enable_sequence_parallel = true;
  s.cp_size = 4;
  s.cp_comm_type = "a2a+p2p";
  s.hierarchical_context_parallel_sizes = {2, 2};
  s.pp_size = 2;
  s.pipeline_model_parallel_layout = "Et|tt|tt|tL";
  s.ep_size = 8;
  s.moe_token_dispatcher_type = "flex";
  s.moe_flex_dispatcher_backend = "hybridep";
  s.overlap_moe_expert_parallel_comm = true;
  s.micro_batch_size = 2;
  s.zero_state = 3;
  s.overlap_grad_reduce = true;
  s.megatron_recompute = true;
  s.recompute_granularity.reset();
  s.megatron_recompute_modules = {"layernorm", "moe_act"};
  const std::vector<std::pair<std::string, std::string>> want = {
      {"--tensor-model-parallel-size", "4"},
      {"--sequence-parallel", ""},
      {"--context-parallel-size", "4"},
      {"--cp-comm-type", "a2a+p2p"},
      {"--hierarchical-context-parallel-sizes", "2 2"},
      {"--pipeline-model-parallel-size", "2"},
      {"--pipeline-model-parallel-layout", "\"Et|tt|tt|tL\""},
      {"--expert-model-parallel-size", "8"},
      {"--expert-tensor-parallel-size", "1"},
      {"--moe-token-dispatcher-type", "flex"},
      {"--moe-flex-dispatcher-backend", "hybridep"},
      {"--overlap-moe-expert-parallel-comm", ""},
      {"--micro-batch-size", "2"},
      {"--use-megatron-fsdp", ""},
      {"--data-parallel-sharding-strategy", "optim_grads_params"},
      {"--overlap-grad-reduce", ""},
      {"--recompute-granularity", "selective"},
      {"--recompute-modules", "layernorm moe_act"}};
  EXPECT_EQ(megatron_flags(s), want);
  // Full recompute of the first 3 layers of each chunk, the distributed optimizer.
  StrategyConfig f;
  f.zero_state = 1;
  f.micro_batch_size = 1;
  f.recompute_granularity = "full_block";
  f.recompute_layer_num = 3;
  const auto flags = megatron_flags(f);
  EXPECT_NE(std::find(flags.begin(), flags.end(), std::make_pair(std::string("--use-distributed-optimizer"), std::string())),
            flags.end());
  EXPECT_NE(std::find(flags.begin(), flags.end(), std::make_pair(std::string("--recompute-method"), std::string("block"))),
            flags.end());
  EXPECT_NE(std::find(flags.begin(), flags.end(), std::make_pair(std::string("--recompute-num-layers"), std::string("3"))),
            flags.end());
}

}  // namespace
}  // namespace trainsim

namespace trainsim {
namespace {

// Full recompute in uniform units where no full_block plan fits: Llama 3 8B at 8k tokens, mbs 4 on
// 8 GPUs (ZeRO 1): full_block of all 32 layers is over the device, units of 2 layers fit; at
// mbs 2 full_block fits (31 layers) and the uniform form is not needed.
TEST(SearchSpaceTest, FullUniformOnlyWhereNoBlockFits) {
  const ModelConfig m = preset_model("llama3-8b");
  const SystemConfig sys = preset_system("h100-sxm-80g");
  SearchSpace space;
  space.tp = space.pp = space.cp = space.vpp = space.zero = {1};
  space.mbs = {4};
  space.recompute = {RecomputeKind::FullBlock, RecomputeKind::FullUniform};
  SearchOptions o = options(8, 64, 8192);
  o.gmi_error_gib = 0;
  o.keep = 0;
  o.tight = false;  // the reserve counted: full_block on every layer is over by it (TIGHT)
  SearchResult r = search(m, sys, space, o);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].recompute, RecomputeKind::FullUniform);
  EXPECT_EQ(r.candidates[0].strategy.recompute_unit_layers, 2);
  EXPECT_EQ(r.rejected_by_reason.at("oom"), 1);  // full_block on every layer
  const auto flags = megatron_flags(r.candidates[0].strategy);
  EXPECT_NE(std::find(flags.begin(), flags.end(), std::make_pair(std::string("--recompute-method"), std::string("uniform"))),
            flags.end());
  space.mbs = {2};
  r = search(m, sys, space, o);
  ASSERT_EQ(r.candidates.size(), 1u);
  EXPECT_EQ(r.candidates[0].recompute, RecomputeKind::FullBlock);
  EXPECT_EQ(r.candidates[0].strategy.recompute_layer_num, 31);
  EXPECT_EQ(r.rejected_by_reason.at("recompute_not_needed"), 1);
}

}  // namespace
}  // namespace trainsim

namespace trainsim {
namespace {

// Every reported plan (the top ten, the Pareto front and the base) of three searches is perf's:
// the same time, memory and straggler factor through perf's code path.
TEST(SearchSpaceTest, EveryReportedPlanIsPerfs) {
  const SystemConfig sys = preset_system("h100-sxm-80g");
  struct Case {
    const char* model;
    int64_t gpus, batch, seq;
  };
  for (const Case& k : {Case{"llama3-8b", 16, 64, 8192}, Case{"mixtral-8x7b", 32, 128, 4096},
                        Case{"deepseek-v2-lite", 16, 64, 4096}}) {
    SCOPED_TRACE(k.model);
    const ModelConfig m = preset_model(k.model);
    SearchSpace space;
    space.tp = {1, 2, 4};
    space.pp = {1, 2};
    space.mbs = {1, 2};
    SearchOptions o = options(k.gpus, k.batch, k.seq);
    o.keep = 10;
    const SearchResult r = search(m, sys, space, o);
    ASSERT_FALSE(r.candidates.empty());
    for (const Candidate& c : r.candidates) expect_perf_agrees(k.model, sys, c);
    for (const Candidate& c : r.pareto) expect_perf_agrees(k.model, sys, c);
  }
}

}  // namespace
}  // namespace trainsim
