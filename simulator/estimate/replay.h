// The pipeline replay of an estimate: the program and its DP ops lowered onto the engine, run
// whole or for three short micro-batch counts extrapolated to the plan's (steady state).
// Internal to estimate/.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/small_vector.h"
#include "estimate/estimate.h"
#include "plan/plan.h"
#include "schedule/dp_lowering.h"
#include "schedule/program.h"
#include "schedule/steady_steps.h"
#include "timeline/timeline.h"

namespace trainsim::detail {

// Most micro-batches whose activations a rank holds at once under its program (freed by the
// backward, or by the weight-gradient pass when the backward is split).
[[nodiscard]] int64_t max_in_flight(const RankSteps& steps, bool split);

// What the estimate reads from one replay of the pipeline and its DP ops.
struct Replayed {
  Timeline timeline;
  SmallVector<RankDp, 8> dp;
  int64_t ops = 0;
};

// Visits every total of three replays that the estimate reads, and the streams' busy times, in a
// fixed order: `f(x0, x1, x2)` gets the same total of each; false stops the visit (and is returned).
template <class F>
bool each_total(Replayed (&r)[3], F f) {
  for (size_t k = 0; k < r[2].timeline.totals.size(); ++k) {
    RankTotals* t[3] = {&r[0].timeline.totals[k], &r[1].timeline.totals[k], &r[2].timeline.totals[k]};
    auto field = [&](auto member) { return f(t[0]->*member, t[1]->*member, t[2]->*member); };
    if (!field(&RankTotals::end)) return false;
    for (size_t st = 0; st < static_cast<size_t>(kStreamCount); ++st)
      if (!f(t[0]->stream_end[st], t[1]->stream_end[st], t[2]->stream_end[st])) return false;
    for (size_t st = 0; st < static_cast<size_t>(kStreamCount); ++st)
      if (!f(t[0]->stream_busy[st], t[1]->stream_busy[st], t[2]->stream_busy[st])) return false;
    if (!field(&RankTotals::compute_busy) || !field(&RankTotals::p2p_blocking)) return false;
  }
  for (size_t k = 0; k < r[2].dp.size(); ++k)
    for (double RankDp::*x : {&RankDp::dense_s, &RankDp::moe_s, &RankDp::after_optimizer_s, &RankDp::param_gather_first_s})
      if (!f(r[0].dp[k].*x, r[1].dp[k].*x, r[2].dp[k].*x)) return false;
  return true;
}

// The steady-state replay (PipelineReplay): programs of a, a + g and a + 2g micro-batches, with
// g the micro-batches of one period (the interleaved group, whose last one may be partial: a has
// mbc's remainder modulo g) and a past the warm-up (2·pp·v + 2g). Where every total grows by the
// same step twice (relative 1e-12, the rounding of the replay's sums), every rank's compute
// grows by the same period and no stream gets more work per period than the period, the totals
// extrapolate to mbc; else nullopt. The last two conditions rule out a rank or stream that falls
// behind a little each period (a slower stage, DP collectives slower than the compute they hang
// on): it uses up its slack and slows the pipeline only after more periods than the replays hold.
// `shorts` receives the programs of a and a + g (the walks over a rank's steps read them).
template <class Replay>
std::optional<Replayed> extrapolate(const Plan& plan, PipelineReplay mode, int64_t once_ops, const Replay& replay,
                                    Program (&shorts)[2]) {
  const int64_t mbc = plan.batch.micro_batch_num;
  const int64_t g = plan.steady_period(), a = plan.steady_base();
  const int64_t last = a + 2 * g;
  // Auto: only where the three replays hold fewer ops than the whole program (about 5 per
  // micro-batch and virtual stage: passes and transfers; `once_ops` in each replay).
  const int64_t per_mb = 5 * plan.par.pp * plan.par.vpp;
  if (mbc <= last || (mode == PipelineReplay::Auto && 3 * once_ops + per_mb * 3 * (a + g) >= once_ops + per_mb * mbc))
    return std::nullopt;
  // The shorter programs must pair their blocking bundles and finish, as the plan's does.
  // Longest first: the shorter replays then fit in the memory the first one took.
  Replayed r[3];
  for (int64_t i = 2; i >= 0; --i) {
    Program prog = plan.program(a + i * g);
    if (plan.p2p == P2PMode::Blocking && plan.par.pp > 1 && !blocking_problem(prog).empty()) return std::nullopt;
    if (!replay(prog, r[i])) return std::nullopt;
    if (i < 2) shorts[i] = std::move(prog);
  }
  double period = 0, span = 0;
  for (size_t k = 0; k < r[2].timeline.totals.size(); ++k) {
    period = std::max(period, r[2].timeline.totals[k].end - r[1].timeline.totals[k].end);
    span = std::max(span, r[2].timeline.totals[k].end);
  }
  for (size_t k = 0; k < r[2].timeline.totals.size(); ++k) {
    const RankTotals &t1 = r[1].timeline.totals[k], &t2 = r[2].timeline.totals[k];
    const auto compute = static_cast<size_t>(Stream::Compute);
    if (period - (t2.end - t1.end) > 1e-12 * span ||
        period - (t2.stream_end[compute] - t1.stream_end[compute]) > 1e-12 * span)
      return std::nullopt;
    for (size_t st = 0; st < static_cast<size_t>(kStreamCount); ++st)
      if (t2.stream_busy[st] - t1.stream_busy[st] > period + 1e-12 * span) return std::nullopt;
  }
  const auto periods = static_cast<double>((mbc - last) / g);
  const bool linear = each_total(r, [periods](double x0, double x1, double& x2) {
    const double step = x2 - x1;
    if (std::abs(step - (x1 - x0)) > 1e-12 * std::max({std::abs(x0), std::abs(x2)})) return false;
    x2 += periods * step;
    return true;
  });
  if (!linear) return std::nullopt;
  r[2].ops += r[0].ops + r[1].ops;
  return std::move(r[2]);
}

// Ranks reported per stage: "stage" (pp 1), first / middle (rank 1, the most in flight) / last.
struct ReportedRanks {
  int64_t r[3];
  size_t n;
  [[nodiscard]] const int64_t* begin() const { return r; }
  [[nodiscard]] const int64_t* end() const { return r + n; }
};
inline ReportedRanks reported_ranks(int64_t pp) {
  if (pp == 1) return {{0, 0, 0}, 1};
  if (pp == 2) return {{0, 1, 0}, 2};
  return {{0, 1, pp - 1}, 3};
}

}  // namespace trainsim::detail
