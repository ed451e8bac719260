// Per-stage time breakdown of an estimate, read from the chunk sums and the timeline.
#include <algorithm>
#include <vector>

#include "estimate/stages.h"
#include "schedule/a2a_overlap.h"

namespace trainsim::detail {

void stage_times(const Plan& plan, const PipelineCosts& costs, const SmallVector<PhaseSums, 8>& rank_sums,
                 const PipelineRun& run, const StepTail& tail, Estimate& est) {
  const int64_t pp = plan.par.pp, v = plan.par.vpp;
  const double mbc = static_cast<double>(plan.batch.micro_batch_num);
  const double pipe = run.pipe;
  const auto& rank_steps = run.rank_steps;
  const double* const rank_dp = tail.dp.begin();
  const double* const rank_dense_dp = tail.dense_dp.begin();
  const double* const rank_edp = tail.edp.begin();
  const double* const rank_optim = tail.optim.begin();
  const double* const rank_exposed_dp = tail.exposed_dp.begin();
  est.stage_times.reserve(reported_ranks(pp).n);
  for (int64_t r : reported_ranks(pp)) {
    const auto ri = static_cast<size_t>(r);
    const PhaseSums& ps = rank_sums[ri];
    const ChunkTimes per_mb = ps.times(false);
    StageTime& st = est.stage_times.emplace_back();  // filled in place
    st.name = plan.stage_kind(r);
    st.fwd_compute_s = ps.fwd * mbc;
    st.bwd_compute_s = ps.bwd * mbc;
    st.recompute_s = ps.recompute * mbc;
    st.tp_comm_s = (ps.fwd_net + ps.bwd_net + ps.recompute_net) * mbc;
    const int neighbours = pp == 1 ? 0 : (r == 0 || r == pp - 1 ? 1 : 2);
    st.pp_comm_s = 2 * neighbours * costs.p2p * mbc * static_cast<double>(v);
    st.dp_comm_s = rank_dp[ri];
    for (size_t g = 0; g < kGroupCount; ++g) st.comm_by_group_s[g] = ps.net_by_group[g] * mbc;
    st.comm_by_group_s[static_cast<size_t>(Group::PP)] = st.pp_comm_s;
    st.comm_by_group_s[static_cast<size_t>(Group::DP)] = rank_dense_dp[ri];
    st.comm_by_group_s[static_cast<size_t>(Group::EDP)] = rank_edp[ri];
    st.optimizer_s = rank_optim[ri];
    st.pipeline_s = pipe;
    st.fwd_per_mb_s = per_mb.fwd;
    st.bwd_per_mb_s = per_mb.bwd;
    // The bubble: the pipeline time its passes do not fill, their time as run (what merged
    // forward/backward steps save below, subtracted there).
    st.bubble_s = pipe - mbc * (per_mb.fwd + per_mb.bwd);
    st.total_s = est.timeline.totals[ri].end;
    for (Group g : kChunkGroups)
      st.hidden_comm_by_group_s[static_cast<size_t>(g)] = ps.hidden_by_group[static_cast<size_t>(g)] * mbc;
    if (rank_dp[ri] > 0) {
      // The hidden DP time, shared between the dense and expert groups by their totals.
      const double hidden = std::max(0.0, rank_dp[ri] - rank_exposed_dp[ri]) / rank_dp[ri];
      st.hidden_comm_by_group_s[static_cast<size_t>(Group::DP)] = rank_dense_dp[ri] * hidden;
      st.hidden_comm_by_group_s[static_cast<size_t>(Group::EDP)] = rank_edp[ri] * hidden;
    }
    if (plan.ovl.a2a_overlap) {
      // What the merged steps save over running their passes one after the other.
      // Per (forward chunk, backward chunk): computed once, summed over the merged steps.
      const auto& a2a = costs.a2a[ri];
      std::vector<double> saved(static_cast<size_t>(v * v));
      for (size_t f = 0; f < a2a.size(); ++f)
        for (size_t b = 0; b < a2a.size(); ++b)
          saved[f * a2a.size() + b] = std::max(0.0, a2a[f].fwd.total() + a2a[b].bwd.total() -
                                                        merged_step_time(a2a[f].fwd, a2a[b].bwd, costs.a2a_slowdown));
      // The key: the chunk of the merged forward just run, else -1.
      const double hidden = sum_steps(rank_steps[ri], int64_t{-1}, [&](int64_t& merged_chunk, const Step& step) {
        const double term = merged_chunk >= 0
                                ? saved[static_cast<size_t>(merged_chunk) * a2a.size() + static_cast<size_t>(step.chunk)]
                                : 0.0;
        merged_chunk = step.merged ? step.chunk : -1;
        return term;
      });
      const auto ep = static_cast<size_t>(Group::EP);
      st.hidden_comm_by_group_s[ep] = std::min(hidden, st.comm_by_group_s[ep]);
      st.bubble_s += hidden;  // the merged steps ran shorter than their two passes by `hidden`
    }
    const RankTotals& tot = est.timeline.totals[ri];
    st.p2p_wait_s = tot.p2p_blocking;
    st.idle_s = pipe - tot.compute_busy - tot.p2p_blocking;
  }

}

}  // namespace trainsim::detail
