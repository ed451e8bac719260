// The pipeline replay of an estimate.
#include "estimate/replay.h"

#include "core/error.h"
#include "estimate/stages.h"
#include "schedule/host_lowering.h"

namespace trainsim::detail {

int64_t max_in_flight(const RankSteps& steps, bool split) {
  struct State {
    int64_t live = 0, best = 0;
  };
  const Pass frees = split ? Pass::BackwardWeight : Pass::Backward;
  return walk(steps, State{}, [frees](State& st, const Step& s) {
           if (s.pass == Pass::Forward) st.best = std::max(st.best, ++st.live);
           if (s.pass == frees) --st.live;
         }).best;
}


void run_pipeline(const Plan& plan, const Env& env, ChunkResults& results, const PipelineCosts& costs, bool events,
                  PipelineReplay replay_mode, Estimate& est, PipelineRun& run) {
  const Settings& s = plan;
  const NetworkChoice& nets = env.nets;
  const int64_t pp = plan.par.pp;
  const bool split = plan.split_backward();
  const bool scheduled_dp = plan.mode == Mode::Default;
  SmallVector<ChunkBuckets, 8> buckets;
  buckets.assign(static_cast<size_t>(pp), {});
  // The backward of every chunk of each rank, for the DP buckets.
  SmallVector<RankBackward, 8> backward;
  backward.assign(static_cast<size_t>(scheduled_dp ? pp : 0), {});
  for (size_t r = 0; r < backward.size(); ++r)
    for (const auto& spec : plan.chunks[r]) backward[r].push_back(&results.get(spec).backward);
  // Ops of the DP buckets that the program holds once, whatever its micro-batches (the final
  // reductions and the parameter all-gathers): every steady-state replay repeats them.
  int64_t once_ops = 0;
  if (scheduled_dp)
    for (int64_t r = 0; r < pp; ++r) {
      buckets[static_cast<size_t>(r)] = chunk_buckets_of(plan, split, r, backward[static_cast<size_t>(r)]);
      for (const auto& sides : buckets[static_cast<size_t>(r)])
        for (const auto& bs : sides)
          once_ops += static_cast<int64_t>(bs.size()) * (s.ovl.zero_state >= 2 ? 0 : s.ovl.overlap_param_gather ? 2 : 1);
    }
  // The replays reuse one engine's and one step table's memory, kept per thread across estimates
  // (as the engine's replay keeps its working arrays): lowering empties them first.
  thread_local Engine engine(1);
  thread_local StepOps step_ops;
  // Replays `prog` into `out`: false when it cannot finish.
  auto replay = [&](const Program& prog, Replayed& out) {
    lower(prog, costs, plan.p2p, engine, scheduled_dp ? &step_ops : nullptr);  // the DP ops hang on the steps
    add_host_stream(engine, costs);
    out.dp.assign(static_cast<size_t>(pp), {});
    if (scheduled_dp)
      for (int64_t r = 0; r < pp; ++r)
        out.dp[static_cast<size_t>(r)] = add_dp_ops(engine, plan, nets, prog, step_ops, r,
                                                    backward[static_cast<size_t>(r)], buckets[static_cast<size_t>(r)]);
    out.ops = static_cast<int64_t>(engine.size());
    return engine.try_run(out.timeline, events);
  };
  std::optional<Replayed> replayed;
  Program (&shorts)[2] = run.shorts;
  if (!events && replay_mode != PipelineReplay::Full) replayed = extrapolate(plan, replay_mode, once_ops, replay, shorts);
  // The walks below (memory, merged steps) read each rank's steps: from the short programs when
  // the replay extrapolated and the plan's program is theirs with the steady block repeated,
  // else from the whole program.
  SmallVector<RankSteps, 8>& rank_steps = run.rank_steps;
  rank_steps.assign(static_cast<size_t>(pp), {});
  bool periodic = replayed.has_value();
  if (periodic) {
    const int64_t repeats = (plan.batch.micro_batch_num - plan.steady_base()) / plan.steady_period();
    for (int64_t r = 0; r < pp && periodic; ++r) {
      const auto ri = static_cast<size_t>(r);
      const auto rs = periodic_steps(shorts[0].ranks[ri], shorts[1].ranks[ri], repeats);
      periodic = rs.has_value();
      if (rs) rank_steps[ri] = *rs;
    }
  }
  // The whole program, when read, is built into memory kept per thread (as the engine's).
  thread_local Program program_memory;
  Program& program = program_memory;
  if (!periodic) {
    plan.program(plan.batch.micro_batch_num, program);
    for (int64_t r = 0; r < pp; ++r) rank_steps[static_cast<size_t>(r)] = whole_steps(program.ranks[static_cast<size_t>(r)]);
  }
  if (!replayed) {
    const bool ran = replay(program, replayed.emplace());
    TRAINSIM_ASSERT(ran, "schedule program deadlocked in the engine");
  }
  est.timeline = std::move(replayed->timeline);
  est.engine_ops = replayed->ops;
  run.dp = std::move(replayed->dp);
  // The pipeline ends with the last compute or p2p op; DP buckets may run past it.
  double& pipe = run.pipe;
  pipe = 0;
  for (const RankTotals& t : est.timeline.totals)
    for (Stream st : {Stream::Compute, Stream::PpForward, Stream::PpBackward})
      pipe = std::max(pipe, t.stream_end[static_cast<size_t>(st)]);
  est.pipeline_s = pipe;

}

}  // namespace trainsim::detail
