// Lower bound of a plan's step time from its chunk costs (estimate/bound.h).
#include "estimate/bound.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "estimate/chunk_results.h"
#include "estimate/stages.h"

namespace trainsim {

double pipeline_time_lower_bound(const std::vector<RankPassBounds>& ranks, int64_t mbc, bool backward_last) {
  // The engine runs a rank's compute-stream ops one at a time (engine/engine.h), so a rank's
  // compute stream ends no earlier than its first op's start plus every op's duration. Its first
  // op is a forward (a backward needs the forward of its micro-batch on the same rank) of some
  // virtual stage c·pp + r, which waits for the forward of every earlier virtual stage, hence for
  // one forward on each rank q < r (p2p and waits only add). Without a split backward, its last
  // op is a backward of a virtual stage c·pp + r, whose input gradient the backwards of the
  // earlier stages wait for: one on each rank q < r, after the rank's end.
  double bound = 0, before = 0, after = 0;  // before / after: Σ over the ranks above r
  for (const RankPassBounds& r : ranks) {
    double busy = 0;
    for (const auto* v : {&r.fwd, &r.bwd, &r.bwd_weight}) busy += std::accumulate(v->begin(), v->end(), 0.0);
    bound = std::max(bound, before + static_cast<double>(mbc) * busy + (backward_last ? after : 0.0));
    const auto least = [](const std::vector<double>& v) {
      return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
    };
    before += least(r.fwd);
    after += least(r.bwd);
  }
  return bound;
}

double step_time_lower_bound(const Plan& plan, EstimateCache* cache) {
  using namespace detail;  // NOLINT: the estimate's stages
  EfficiencyLog log;
  ClassTable classes(*plan.system);
  const NetworkChoice nets = resolve_networks(*plan.system, plan.nets.kind);
  Env env{*plan.model, *plan.strategy, *plan.system, nets, &log, plan.mode, &classes};
  ChunkResults results(env, plan, cache);
  // The per-micro-batch pass times the replay runs (estimate(): pipeline_costs).
  PipelineCosts costs;
  SmallVector<PhaseSums, 8> rank_sums;
  pipeline_costs(plan, env, results, costs, rank_sums);
  std::vector<RankPassBounds> ranks(costs.chunks.size());
  for (size_t r = 0; r < ranks.size(); ++r)
    for (size_t c = 0; c < costs.chunks[r].size(); ++c) {
      const ChunkTimes& t = costs.chunks[r][c];
      double f = t.fwd, b = t.bwd;
      // Merged steps (overlap_moe_expert_parallel_comm, schedule/a2a_overlap.h): a pass holds the
      // compute stream for its compute pieces (each slowed, never sped up, beside an all-to-all);
      // its all-to-alls run on the EP stream. An unmerged pass takes its whole time, more.
      if (!costs.a2a.empty()) {
        const ChunkA2a& a = costs.a2a[r][c];
        f = std::min(f, std::accumulate(a.fwd.compute.begin(), a.fwd.compute.end(), 0.0));
        b = std::min(b, std::accumulate(a.bwd.compute.begin(), a.bwd.compute.end(), 0.0));
      }
      ranks[r].fwd.push_back(f);
      ranks[r].bwd.push_back(b);
      ranks[r].bwd_weight.push_back(t.bwd_weight);
    }
  // The step's tail starts at the pipeline's end stretched by the straggler factor
  // (estimate/tail.cpp step_tail) and only adds time after it.
  return plan.straggler.ratio * pipeline_time_lower_bound(ranks, plan.micro_batch_num, !plan.split_backward());
}

}  // namespace trainsim
