// A lower bound of a plan's step time and its memory from its chunk costs and program, without
// the pipeline replay (estimate/bound.h).
#include "estimate/bound.h"

#include <algorithm>
#include <numeric>

#include "estimate/chunk_results.h"
#include "estimate/replay.h"
#include "estimate/stages.h"
#include "estimate/tail.h"
#include "memory/activation.h"
#include "memory/non_tensor.h"
#include "passes/fp8.h"
#include "schedule/a2a_overlap.h"
#include "schedule/dp_lowering.h"
#include "schedule/steady_steps.h"

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
  const auto n = static_cast<double>(mbc);
  for (const RankPassBounds& r : ranks) {
    double busy = 0;
    for (const auto* v : {&r.fwd, &r.bwd, &r.bwd_weight}) busy += std::accumulate(v->begin(), v->end(), 0.0);
    const double a2a = std::accumulate(r.a2a.begin(), r.a2a.end(), 0.0);
    const double all = std::max(n * busy, r.busy);
    bound = std::max({bound, before + all + (backward_last ? after : 0.0), n * (busy + a2a) / 2});
    const auto least = [](const std::vector<double>& v) {
      return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
    };
    before += least(r.fwd);
    after += least(r.bwd);
  }
  return bound;
}

double dp_stream_seconds(const Plan& plan, const NetworkChoice& nets, int64_t r,
                         const std::vector<const BackwardSegments*>& backward) {
  const Settings& s = plan;
  const bool split = plan.split_backward();
  RankBackward rank_backward;
  for (const BackwardSegments* b : backward) rank_backward.push_back(b);
  const ChunkBuckets buckets = chunk_buckets_of(plan, split, r, rank_backward);
  const bool sharded = s.ovl.zero_state >= 1;
  const double grad_bytes = (s.prec.grad_reduce_in_bf16 || !s.prec.fp32_accum_grad) ? 2 : 4;
  const auto mbc = static_cast<double>(plan.batch.micro_batch_num);
  double total = 0;
  for (size_t c = 0; c < buckets.size(); ++c)
    for (size_t si = 0; si < 2; ++si) {
      const DpSide& side = kDpSides[si];
      const int64_t n = side.n(plan);
      if (n <= 1) continue;
      // Full buckets share one size: a collective is costed again only when its size changes.
      std::pair<double, double> last[3] = {{-1, 0}, {-1, 0}, {-1, 0}};  // (bytes, seconds) per kind
      auto time = [&](Collective kind, double bytes) {
        auto& [b, t] = last[kind == Collective::AllGather ? 0 : kind == Collective::ReduceScatter ? 1 : 2];
        if (bytes != b) {
          b = bytes;
          t = collective_time(*plan.system, s, nets.net(side.group), kind, bytes, n, side.stage);
        }
        return t;
      };
      for (const GradBucket& b : buckets[c][si]) {
        if (sharded && s.ovl.zero_state < 3) total += time(Collective::AllGather, b.params * param_gather_bytes(s));
        // Once after the chunk's last backward, or after each of its mbc backwards (sharded grads).
        total += (s.ovl.zero_state >= 2 ? mbc : 1.0) *
                 time(sharded ? Collective::ReduceScatter : Collective::AllReduce, b.params * grad_bytes);
      }
      if (s.ovl.zero_state < 3) continue;
      // FSDP: before each of the mbc forwards and backwards, the chunk's parameters (bf16) in two
      // all-gathers: the first layer's share (the forward's first, the backward's last), the rest.
      const BackwardSegments& segs = *backward[c];
      double all = 0;
      for (const auto& b : segs) all += side.moe ? b.moe : b.dense;
      if (all <= 0) continue;
      for (int fwd = 0; fwd < 2; ++fwd) {
        double first = 0;
        for (size_t k = 0; k < segs.size() && first == 0; ++k) {
          const auto& b = fwd ? segs[segs.size() - 1 - k] : segs[k];
          first = side.moe ? b.moe : b.dense;
        }
        total += mbc * (time(Collective::AllGather, first * 2) + time(Collective::AllGather, (all - first) * 2));
      }
    }
  return total;
}

namespace {

// Each rank's steps as the estimate walks them (estimate/replay.cpp): the short programs of the
// steady state with its block repeated (schedule/steady_steps.h), or the whole program. The steps
// point into programs kept per thread, valid until the next call.
void program_steps(const Plan& plan, SmallVector<RankSteps, 8>& steps) {
  thread_local Program shorts[2], whole;
  const int64_t mbc = plan.batch.micro_batch_num, g = plan.steady_period(), a = plan.steady_base();
  steps.assign(static_cast<size_t>(plan.par.pp), {});
  bool periodic = mbc > a + g;
  if (periodic) {
    plan.program(a, shorts[0]);
    plan.program(a + g, shorts[1]);
    for (size_t r = 0; r < steps.size() && periodic; ++r) {
      const auto rs = periodic_steps(shorts[0].ranks[r], shorts[1].ranks[r], (mbc - a) / g);
      periodic = rs.has_value();
      if (rs) steps[r] = *rs;
    }
  }
  if (periodic) return;
  plan.program(mbc, whole);
  for (size_t r = 0; r < steps.size(); ++r) steps[r] = whole_steps(whole.ranks[r]);
}

// The compute stream's busy time of each rank over the plan's program when it merges steps
// (overlap_moe_expert_parallel_comm) into ranks[r].busy: an unmerged pass takes its time
// (schedule/lower.cpp step_time); a merged step of forward chunk f and backward chunk b takes at
// least its time on an idle rank (schedule/a2a_overlap.h merged_step_time) from its first compute
// piece to its last, where both passes end with a compute piece (every all-to-all then has a
// compute piece after it): the engine only delays ops, and the next step's compute comes after.
void merged_busy(const Plan& plan, const PipelineCosts& costs, const SmallVector<RankSteps, 8>& steps,
                 std::vector<RankPassBounds>& ranks) {
  std::vector<double> span;  // merged step of (forward chunk, backward chunk); -1: not yet timed
  for (size_t r = 0; r < ranks.size(); ++r) {
    const size_t v = costs.chunks[r].size();
    // Ranks holding the same chunks (the middle ones) have the same merged steps.
    if (r == 0 || !std::ranges::equal(plan.chunks[r], plan.chunks[r - 1])) span.assign(v * v, -1);
    auto merged = [&](size_t f, size_t b) {
      double& m = span[f * v + b];
      if (m >= 0) return m;
      const A2aPass& fp = costs.a2a[r][f].fwd;
      const A2aPass& bp = costs.a2a[r][b].bwd;
      m = fp.compute.size() > fp.a2a.size() && bp.compute.size() > bp.a2a.size()
              ? merged_step_time(fp, bp, costs.a2a_slowdown)
              : std::accumulate(fp.compute.begin(), fp.compute.end(), 0.0) +
                    std::accumulate(bp.compute.begin(), bp.compute.end(), 0.0);
      return m;
    };
    struct Pending {
      int64_t chunk;  // a merged forward's chunk, waiting for its backward; -1: none
    };
    ranks[r].busy = sum_steps(steps[r], Pending{-1}, [&](Pending& k, const Step& st) {
      const auto c = static_cast<size_t>(st.chunk);
      const ChunkTimes& t = costs.chunks[r][c];
      if (st.pass == Pass::Forward) {
        if (!st.merged) return t.fwd;
        k.chunk = st.chunk;
        return 0.0;
      }
      if (st.pass == Pass::BackwardWeight) return t.bwd_weight;
      if (k.chunk < 0) return t.bwd;
      const double m = merged(static_cast<size_t>(k.chunk), c);
      k.chunk = -1;
      return m;
    });
  }
}

// Whether 1F1B's closed form gives the estimate's micro-batches in flight (else the program is
// walked).
bool closed_form_memory(const Plan& plan) {
  // (Plan::program: 1F1B with merged steps is the combined schedule.)
  return plan.par.vpp == 1 && (plan.mode == Mode::SimuMax12 || (plan.schedule == ScheduleKind::OneFOneB && !plan.ovl.a2a_overlap));
}

// Each reported stage's memory as estimate/stage_memory.cpp computes it: that code itself over the
// program's steps, or, under 1F1B without merged steps, the same terms in closed form (the bound
// test compares them bit for bit).
void stage_memory_bounds(const Plan& plan, detail::ChunkResults& results, const SmallVector<RankSteps, 8>& steps,
                         std::vector<StageMemory>& stages) {
  using namespace detail;  // NOLINT: the estimate's stages
  if (!closed_form_memory(plan)) {
    // The estimate's own per-stage memory over the program's steps (estimate/stage_memory.cpp),
    // which reads no time: exact.
    PipelineRun run;
    run.rank_steps = steps;
    StepTail tail;
    tail.whole.assign(static_cast<size_t>(plan.par.pp), nullptr);
    for (int64_t r = 0; r < plan.par.pp; ++r) tail.whole[static_cast<size_t>(r)] = &results.get(rank_spec(plan, r));
    Estimate est;
    stage_memory(plan, results, run, tail, /*events=*/false, est);
    stages = std::move(est.stages);
    return;
  }
  const Settings& s = plan;
  const bool compat = plan.mode == Mode::SimuMax12;
  const NonTensorMemory outside = non_tensor_memory(*plan.model, s, *plan.system);
  auto add = [&](int64_t r, double activations) {
    // The static part exactly as estimate/stage_memory.cpp computes it (same terms, same order).
    const ChunkResult& whole = results.get(rank_spec(plan, r));
    const StaticMemory sm = shard_static_memory(whole.params, s);
    StageMemory& st = stages.emplace_back();
    st.model_bytes = sm.total() + whole.dummy_bytes + (compat ? 0.0 : outside.workspace_bytes);
    if (!compat && s.ovl.zero_state >= 3) {
      double largest = 0;  // FSDP's gathered working set: the largest layer, twice, in bf16
      for (const auto& b : whole.backward) largest = std::max(largest, b.dense + b.moe);
      st.model_bytes += 2 * largest * 2;
    }
    st.model_bytes -= offloaded_fraction(s) * (sm.state + sm.moe_state);
    st.peak_alloc_bytes = st.model_bytes + activations;
    st.peak_reserved_bytes = compat ? st.peak_alloc_bytes / s.mem.mem_factor
                                    : allocator_reserved_bytes(st.peak_alloc_bytes, plan.system->allocator_fragmentation);
    st.non_tensor_bytes = compat ? 0.0 : outside.total();
  };
  // 1F1B: rank r starts min(pp − r, mbc) micro-batches before its first backward
  // (schedule/program.cpp; the peer keeps pp − r), the estimate's max_in_flight.
  for (int64_t r : reported_ranks(plan.par.pp)) {
    const ActivationResult& act = results.get(rank_spec(plan, r)).act;
    const int64_t n = compat ? plan.par.pp - r : std::min(plan.par.pp - r, plan.batch.micro_batch_num);
    add(r, static_cast<double>(n - 1) * act.cache_per_mb + act.peak.peak);
  }
}

}  // namespace

PlanBound plan_lower_bound(const Plan& plan, EstimateCache* cache, bool time) {
  using namespace detail;  // NOLINT: the estimate's stages
  EfficiencyLog log;
  ClassTable classes(*plan.system);
  const NetworkChoice nets = resolve_networks(*plan.system, plan.nets.kind, plan.mode);
  Env env{*plan.model, plan, *plan.system, nets, &log, plan.mode, &classes};
  ChunkResults results(env, plan, cache);
  PlanBound out;
  SmallVector<RankSteps, 8> steps;
  if ((time && plan.ovl.a2a_overlap) || !closed_form_memory(plan)) program_steps(plan, steps);
  if (time) {
    // The per-micro-batch pass times the replay runs (estimate(): pipeline_costs).
    PipelineCosts costs;
    SmallVector<PhaseSums, 8> rank_sums;
    pipeline_costs(plan, env, results, costs, rank_sums);
    std::vector<RankPassBounds> ranks(costs.chunks.size());
    for (size_t r = 0; r < ranks.size(); ++r)
      for (size_t c = 0; c < costs.chunks[r].size(); ++c) {
        const ChunkTimes& t = costs.chunks[r][c];
        double f = t.fwd, b = t.bwd, a2a = 0;
        // Merged steps (overlap_moe_expert_parallel_comm, schedule/a2a_overlap.h): a pass holds the
        // compute stream for its compute pieces (each slowed, never sped up, beside an all-to-all);
        // its all-to-alls run on the EP stream. An unmerged pass takes its whole time, more.
        if (!costs.a2a.empty()) {
          const ChunkA2a& a = costs.a2a[r][c];
          f = std::min(f, std::accumulate(a.fwd.compute.begin(), a.fwd.compute.end(), 0.0));
          b = std::min(b, std::accumulate(a.bwd.compute.begin(), a.bwd.compute.end(), 0.0));
          a2a = std::accumulate(a.fwd.a2a.begin(), a.fwd.a2a.end(), 0.0) +
                std::accumulate(a.bwd.a2a.begin(), a.bwd.a2a.end(), 0.0);
        }
        ranks[r].a2a.push_back(a2a);
        ranks[r].fwd.push_back(f);
        ranks[r].bwd.push_back(b);
        ranks[r].bwd_weight.push_back(t.bwd_weight);
      }
    if (!costs.a2a.empty()) merged_busy(plan, costs, steps, ranks);
    // The step's tail starts at the pipeline's end stretched by the straggler factor
    // (estimate/tail.cpp step_tail) and only adds time after it.
    const double pipe = plan.straggler.ratio * pipeline_time_lower_bound(ranks, plan.batch.micro_batch_num, !plan.split_backward());
    out.time_s = pipe;
    const Settings& s = plan;
    const SystemConfig& sys = *plan.system;
    double optim = 0;
    for (size_t r = 0; r < ranks.size(); ++r) {
      // Ranks holding the same chunks (the middle ones) have the same optimizer step and DP traffic.
      const bool same = r > 0 && std::ranges::equal(plan.chunks[r], plan.chunks[r - 1]);
      if (!same) {
        // The rank's optimizer step (step_tail: its host read in the default mode) follows the
        // stretched pipeline and the rank's dp stream.
        const StaticMemory sm = shard_static_memory(results.get(rank_spec(plan, static_cast<int64_t>(r))).params, s);
        optim = optimizer_step_time(env, sm.grad + sm.moe_grad, sm.state + sm.moe_state);
        if (plan.mode == Mode::Default && sys.host_framework)
          optim += sys.host_framework->sync_s + sys.host_framework->eager_op_s;
      }
      out.time_s = std::max(out.time_s, pipe + optim);
      if (plan.mode != Mode::Default) continue;
      if (same) {
        out.dp_stream_s.push_back(out.dp_stream_s.back());
        continue;
      }
      std::vector<const BackwardSegments*> backward;
      for (const auto& spec : plan.chunks[r]) backward.push_back(&results.get(spec).backward);
      out.dp_stream_s.push_back(dp_stream_seconds(plan, nets, static_cast<int64_t>(r), backward));
      out.time_s = std::max(out.time_s, out.dp_stream_s.back() + optim);
    }
  }
  stage_memory_bounds(plan, results, steps, out.stages);
  return out;
}

}  // namespace trainsim
