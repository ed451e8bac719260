// Step estimate of a resolved plan: chunk costs (op graph) → schedule program lowered onto the
// engine → timeline → DP, optimizer and straggler tail → MFU, and the per-stage memory peaks
// (in compat mode exactly the peer's PerfLLM analysis_cost / analysis_mem).
#include "estimate/estimate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "comm/collective.h"
#include "compute/cost.h"
#include "core/error.h"
#include "core/small_vector.h"
#include "core/units.h"
#include "estimate/chunk_cost.h"
#include "estimate/chunk_results.h"
#include "estimate/replay.h"
#include "estimate/tail.h"
#include "memory/activation.h"
#include "model/moe_dispatch.h"
#include "schedule/a2a_overlap.h"
#include "schedule/dp_lowering.h"
#include "schedule/lower.h"
#include "schedule/program.h"
#include "schedule/steady_steps.h"

namespace trainsim {

double StageTime::exposed_comm_s(size_t group) const {
  const double total = comm_by_group_s[group];
  return group == static_cast<size_t>(Group::PP) ? std::min(total, p2p_wait_s) : total - hidden_comm_by_group_s[group];
}

double Estimate::peak_alloc_bytes() const {
  double m = 0;
  for (const auto& s : stages) m = std::max(m, s.peak_alloc_bytes);
  return m;
}

double Estimate::peak_reserved_bytes() const {
  double m = 0;
  for (const auto& s : stages) m = std::max(m, s.peak_reserved_bytes);
  return m;
}

Estimate estimate(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys, EstimateCache* cache,
                  Mode mode, bool events) {
  return estimate(resolve_plan(m, s, sys, mode), cache, events);
}

Estimate estimate(const Plan& plan, EstimateCache* cache, bool events, PipelineReplay replay_mode) {
  using namespace detail;  // NOLINT: the estimate's stages
  const ModelConfig& m = *plan.model;
  const StrategyConfig& s = *plan.strategy;
  const SystemConfig& sys = *plan.system;
  Estimate est;
  EfficiencyLog log;
  ClassTable classes(sys);
  // The plan's networks found in its system as it is now (as the classes): the system may have
  // been edited in place since the plan was resolved, its entries replaced.
  const NetworkChoice nets = resolve_networks(sys, plan.nets.kind);
  Env env{m, s, sys, nets, &log, plan.mode, &classes};
  est.mode = plan.mode;
  est.schedule = schedule_name(plan.schedule);
  est.p2p = plan.p2p == P2PMode::Async ? "async" : "blocking";
  est.dp = plan.dp;
  est.edp = plan.edp;
  est.global_batch_size = plan.global_batch_size();
  est.padded_vocab = plan.padded_vocab;
  est.straggler_ratio = plan.straggler.ratio;
  est.straggler = plan.straggler;
  static constexpr std::string_view group_names[] = {"tp", "cp", "dp", "pp", "ep", "etp", "edp"};
  for (size_t g = 0; g < 7; ++g) est.networks[g] = {group_names[g], plan.nets.of(static_cast<Group>(g))};

  const int64_t pp = plan.pp, v = plan.vpp;
  const double mbc = static_cast<double>(plan.micro_batch_num);
  ChunkResults results(env, plan, cache);
  const bool split = plan.split_backward();

  // Per-micro-batch pass times of every virtual chunk, and the pipeline transfer. Kept per thread
  // across estimates (as the engine below) so that refilling them allocates nothing.
  thread_local PipelineCosts costs_memory;
  PipelineCosts& costs = costs_memory;
  costs.chunks.resize(static_cast<size_t>(pp));
  costs.a2a.resize(plan.a2a_overlap ? static_cast<size_t>(pp) : 0);
  costs.a2a_slowdown = 0;
  // Per-rank arrays of the estimate: inline for pipelines up to 8 stages.
  SmallVector<PhaseSums, 8> rank_sums;
  rank_sums.assign(static_cast<size_t>(pp), {});
  for (int64_t r = 0; r < pp; ++r) {
    costs.chunks[static_cast<size_t>(r)].clear();
    costs.chunks[static_cast<size_t>(r)].reserve(static_cast<size_t>(v));
    if (plan.a2a_overlap) {
      costs.a2a[static_cast<size_t>(r)].clear();
      costs.a2a[static_cast<size_t>(r)].reserve(static_cast<size_t>(v));
    }
    for (const auto& spec : plan.chunks[static_cast<size_t>(r)]) {
      const ChunkResult& cr = results.get(spec);
      const PhaseSums& ps = cr.sums;
      costs.chunks[static_cast<size_t>(r)].push_back(ps.times(split));
      if (plan.a2a_overlap) costs.a2a[static_cast<size_t>(r)].push_back({cr.a2a_fwd, cr.a2a_bwd});
      rank_sums[static_cast<size_t>(r)].add(ps);
    }
  }
  const double p2p_bytes = static_cast<double>(plan.micro_batch_size * plan.seq_len * m.hidden_size) *
                           (s.dtype == "fp32" ? 4 : 2) / static_cast<double>(plan.cp) /
                           (plan.sp ? static_cast<double>(plan.tp) : 1.0);
  // The all-to-all kernels take the EP network's processor_usage share of the SMs; DeepEP's take
  // moe_deepep_num_sms of the accelerator's SMs.
  if (plan.a2a_overlap)
    costs.a2a_slowdown = s.moe_enable_deepep
                             ? deepep_slowdown(s.moe_deepep_num_sms.value_or(kDeepEpDefaultNumSms), *sys.sm_count)
                             : contention(env, Group::EP);
  costs.p2p = pp > 1 ? collective_time(sys, s, nets.net(Group::PP), Collective::P2P, p2p_bytes, 2, "pp") : 0;
  if (plan.mode == Mode::Default && s.scatter_gather_tensors_in_pipeline) {
    // Narayanan et al. 2021, §4.1: the TP ranks of a stage hold the same activation; each sends
    // its 1/tp slice to its peer, and the next stage all-gathers the slices over its TP group
    // (2021 Megatron-LM p2p_communication.py: split_tensor_into_1d_equal_chunks, gather_split_1d_tensor).
    const auto tp = static_cast<double>(plan.tp);
    costs.p2p = collective_time(sys, s, nets.net(Group::PP), Collective::P2P, p2p_bytes / tp, 2, "pp") +
                collective_time(sys, s, nets.net(Group::TP), Collective::AllGather, p2p_bytes, plan.tp, "tp");
  }

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
          once_ops += static_cast<int64_t>(bs.size()) * (s.zero_state >= 2 ? 0 : s.overlap_param_gather ? 2 : 1);
    }
  // The replays reuse one engine's and one step table's memory, kept per thread across estimates
  // (as the engine's replay keeps its working arrays): lowering empties them first.
  thread_local Engine engine(1);
  thread_local StepOps step_ops;
  // Replays `prog` into `out`: false when it cannot finish.
  auto replay = [&](const Program& prog, Replayed& out) {
    lower(prog, costs, plan.p2p, engine, scheduled_dp ? &step_ops : nullptr);  // the DP ops hang on the steps
    out.dp.assign(static_cast<size_t>(pp), {});
    if (scheduled_dp)
      for (int64_t r = 0; r < pp; ++r)
        out.dp[static_cast<size_t>(r)] = add_dp_ops(engine, plan, nets, prog, step_ops, r,
                                                    backward[static_cast<size_t>(r)], buckets[static_cast<size_t>(r)]);
    out.ops = static_cast<int64_t>(engine.size());
    return engine.try_run(out.timeline, events);
  };
  std::optional<Replayed> replayed;
  Program shorts[2];
  if (!events && replay_mode != PipelineReplay::Full) replayed = extrapolate(plan, replay_mode, once_ops, replay, shorts);
  // The walks below (memory, merged steps) read each rank's steps: from the short programs when
  // the replay extrapolated and the plan's program is theirs with the steady block repeated,
  // else from the whole program.
  SmallVector<RankSteps, 8> rank_steps;
  rank_steps.assign(static_cast<size_t>(pp), {});
  bool periodic = replayed.has_value();
  if (periodic) {
    const int64_t repeats = (plan.micro_batch_num - plan.steady_base()) / plan.steady_period();
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
    plan.program(plan.micro_batch_num, program);
    for (int64_t r = 0; r < pp; ++r) rank_steps[static_cast<size_t>(r)] = whole_steps(program.ranks[static_cast<size_t>(r)]);
  }
  if (!replayed) {
    const bool ran = replay(program, replayed.emplace());
    TRAINSIM_ASSERT(ran, "schedule program deadlocked in the engine");
  }
  est.timeline = std::move(replayed->timeline);
  est.engine_ops = replayed->ops;
  const auto& dp_ops = replayed->dp;
  // The pipeline ends with the last compute or p2p op; DP buckets may run past it.
  double pipe = 0;
  for (const RankTotals& t : est.timeline.totals)
    for (Stream st : {Stream::Compute, Stream::PpForward, Stream::PpBackward})
      pipe = std::max(pipe, t.stream_end[static_cast<size_t>(st)]);
  est.pipeline_s = pipe;

  // DP communication, optimizer and the straggler allowance after the pipeline, per rank.
  // Per rank, in one block: DP (dense + expert, dense, expert), optimizer and exposed DP times.
  SmallVector<double, 5 * 8> per_rank;
  per_rank.assign(5 * static_cast<size_t>(pp), 0);
  double* const rank_dp = per_rank.begin();
  double* const rank_dense_dp = rank_dp + pp;
  double* const rank_edp = rank_dense_dp + pp;
  double* const rank_optim = rank_edp + pp;
  double* const rank_exposed_dp = rank_optim + pp;
  SmallVector<const ChunkResult*, 8> whole;
  whole.assign(static_cast<size_t>(pp), nullptr);
  for (int64_t r = 0; r < pp; ++r) {
    const auto ri = static_cast<size_t>(r);
    whole[ri] = &results.get(rank_spec(plan, r));
    // Ranks holding the same layers (the middle ones) have the same DP and optimizer costs.
    const bool same = r > 0 && whole[ri] == whole[ri - 1];
    const StaticMemory sm = shard_static_memory(whole[ri]->params, s);
    const double mg = (s.grad_reduce_in_bf16 || !s.use_fp32_accum_grad) ? 2 : 4;
    if (scheduled_dp) {
      rank_edp[ri] = dp_ops[ri].moe_s;
      rank_dense_dp[ri] = dp_ops[ri].dense_s;
    } else if (same) {
      rank_edp[ri] = rank_edp[ri - 1];
      rank_dense_dp[ri] = rank_dense_dp[ri - 1];
    } else {
      // SimuMax v1.2 (_compute_dp_time) sizes the reduce-scatter from its module gradient bytes,
      // which ZeRO >= 2 has already divided by dp·cp (experts: edp): the sharded gradient.
      const bool zero2 = s.zero_state >= 2;
      const double moe_grad = zero2 ? sm.moe_grad : sm.moe_params * mg;
      const double dense_grad = zero2 ? sm.grad : sm.dense_params * mg;
      const double pe = s.dtype == "fp32" ? 4 : 2;  // the parameters in the training dtype (numel·elem)
      rank_edp[ri] = dp_time(env, moe_grad, moe_grad / mg * pe, nets.net(Group::EDP), plan.edp, "edp");
      rank_dense_dp[ri] = dp_time(env, dense_grad, dense_grad / mg * pe, nets.net(Group::DP), plan.dp * plan.cp, "dp_cp");
    }
    rank_dp[ri] = rank_dense_dp[ri] + rank_edp[ri];
    rank_optim[ri] = same ? rank_optim[ri - 1] : optimizer_step_time(env, sm.grad + sm.moe_grad, sm.state + sm.moe_state);
  }
  // Megatron's embedding group: with pp > 1 the first stage's embedding and the last stage's copy
  // (a tied output layer, or the MTP lookups) all-reduce their gradients after the backward
  // (_allreduce_word_embedding_grads), over the pipeline network. Default mode only.
  if (plan.mode == Mode::Default && pp > 1 && (m.tie_word_embeddings || m.mtp_num_layers > 0)) {
    const double mg = (s.grad_reduce_in_bf16 || !s.use_fp32_accum_grad) ? 2 : 4;
    const double grad = static_cast<double>(plan.padded_vocab) / static_cast<double>(plan.tp) *
                        static_cast<double>(m.hidden_size) * mg;
    const double t = collective_time(sys, s, nets.net(Group::PP), Collective::AllReduce, grad, 2, "pp");
    for (size_t ri : {size_t{0}, static_cast<size_t>(pp - 1)}) {
      rank_dp[ri] += t;
      rank_dense_dp[ri] += t;
    }
  }
  // After the pipeline (stretched by the straggler allowance): the DP traffic still running (all
  // of it in compat mode), the optimizer, and the parameter all-gather when it follows the step.
  const double tail_start = pipe * plan.straggler.ratio;
  for (int64_t r = 0; r < pp; ++r) {
    const auto rr = static_cast<int32_t>(r);
    const auto ri = static_cast<size_t>(r);
    const double dp_tail =
        scheduled_dp ? std::max(0.0, est.timeline.totals[ri].stream_end[static_cast<size_t>(Stream::Dp)] - pipe)
                     : rank_dp[ri];
    const double after = dp_ops[ri].after_optimizer_s;
    rank_exposed_dp[ri] = dp_tail + after + (scheduled_dp ? dp_ops[0].param_gather_first_s : 0);
    const double optim_start = tail_start + dp_tail;
    const double end = optim_start + rank_optim[ri] + after;
    est.timeline.totals[ri].end = std::max(est.timeline.totals[ri].end, end);
    if (!events) continue;
    auto& ev = est.timeline.events;
    if (tail_start > pipe) ev.push_back({rr, Stream::Compute, StepKind::Straggler, -1, -1, pipe, tail_start});
    if (!scheduled_dp && rank_dp[ri] > 0)
      ev.push_back({rr, Stream::Dp, StepKind::DpComm, -1, -1, tail_start, tail_start + rank_dp[ri]});
    ev.push_back({rr, Stream::Compute, StepKind::Optimizer, -1, -1, optim_start, optim_start + rank_optim[ri]});
    if (after > 0) ev.push_back({rr, Stream::Dp, StepKind::DpComm, -1, -1, end - after, end});
  }
  est.iteration_time_s = est.timeline.span();

  // Per-stage time breakdown, read from the chunk sums and the timeline.
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
    if (plan.a2a_overlap) {
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
    }
    const RankTotals& tot = est.timeline.totals[ri];
    st.p2p_wait_s = tot.p2p_blocking;
    st.idle_s = pipe - tot.compute_busy - tot.p2p_blocking;
  }

  // Memory: static + cached micro-batches in flight + the single-micro-batch peak (1F1B), or a
  // replay of the rank's program over its chunks (interleaved).
  // The static part of rank r's memory into the fresh `mem` (filled in place).
  auto static_part = [&](int64_t r, StageMemory& mem) {
    const ChunkResult& cr = *whole[static_cast<size_t>(r)];
    const StaticMemory sm = shard_static_memory(cr.params, s);
    mem.weight_bytes = sm.weight + sm.moe_weight;
    mem.grad_bytes = sm.grad + sm.moe_grad;
    mem.state_bytes = sm.state + sm.moe_state;
    mem.model_bytes = sm.total() + cr.dummy_bytes;
    if (plan.mode == Mode::Default && s.zero_state >= 3) {
      // FSDP's gathered working set: the bf16 parameters of the layer computing and of the one
      // prefetched (the largest layer of the rank, twice).
      double largest = 0;
      for (const auto& b : cr.backward) largest = std::max(largest, b.dense + b.moe);
      mem.model_bytes += 2 * largest * 2;
    }
    // Optimizer CPU offload: the offloaded states leave the GPU; the host holds them and an fp32
    // copy of their gradients (4 B next to 12 B per parameter).
    const double offloaded = offloaded_fraction(s) * mem.state_bytes;
    mem.state_bytes -= offloaded;
    mem.model_bytes -= offloaded;
    mem.host_bytes = offloaded * 16 / 12;
  };
  est.stages.reserve(v == 1 ? reported_ranks(pp).n : static_cast<size_t>(pp));
  if (v == 1) {
    for (int64_t r : reported_ranks(pp)) {
      const ActivationResult& act = whole[static_cast<size_t>(r)]->act;
      StageMemory& mem = est.stages.emplace_back();
      static_part(r, mem);
      mem.name = plan.stage_kind(r);
      // The peer keeps pp − r micro-batches in flight whatever their number; Megatron holds at
      // most the micro-batches the program has started and not finished.
      mem.in_flight_micro_batches = plan.mode == Mode::SimuMax12
                                        ? pp - r
                                        : max_in_flight(rank_steps[static_cast<size_t>(r)], split);
      mem.activation_cache_per_mb_bytes = act.cache_per_mb;
      mem.peak_activation_bytes = act.peak.peak;
      static const std::string_view kStageNames[] = {"forward", "backward", "recompute_forward", "recompute_backward"};
      const std::string_view stage = kStageNames[act.peak.peak_stage];
      mem.peak_phase.reserve(stage.size() + 4 + act.peak.peak_leaf.size());
      mem.peak_phase.append(stage).append(" at ").append(act.peak.peak_leaf);
      mem.peak_alloc_bytes = mem.model_bytes +
                             static_cast<double>(mem.in_flight_micro_batches - 1) * act.cache_per_mb + act.peak.peak;
      // Offloaded activations of every micro-batch in flight wait in host memory.
      mem.host_bytes += static_cast<double>(mem.in_flight_micro_batches) * act.offloaded_per_mb;
      mem.peak_reserved_bytes = mem.peak_alloc_bytes / s.mem_factor;
    }
  } else {
    // Interleaved: a chunk's forward adds its transient forward peak on top of the live caches,
    // its backward the backward peak beyond its cache.
    for (int64_t r = 0; r < pp; ++r) {
      const auto ri = static_cast<size_t>(r);
      StageMemory& mem = est.stages.emplace_back();
      static_part(r, mem);
      mem.name = r == 0 ? "first_stage" : (r == pp - 1 ? "last_stage" : "pp_stage_" + std::to_string(r));
      mem.activation_cache_per_mb_bytes = whole[ri]->act.cache_per_mb;
      std::vector<const ActivationResult*> acts;
      for (const ChunkSpec& spec : plan.chunks[ri]) acts.push_back(&results.get(spec).act);
      struct State {
        double live = 0, best = 0, host = 0, host_max = 0;
        int64_t live_n = 0, max_n = 0;
      };
      const State w = walk(rank_steps[ri], State{}, [&](State& x, const Step& step) {
        const ActivationResult& a = *acts[static_cast<size_t>(step.chunk)];
        if (step.pass == Pass::Forward) {
          x.best = std::max(x.best, x.live + a.peak.slot[PeakPoint::kForward]);
          x.live += a.cache_per_mb;
          x.host += a.offloaded_per_mb;
          x.host_max = std::max(x.host_max, x.host);
          x.max_n = std::max(x.max_n, ++x.live_n);
        } else {
          const double bwd = std::max({a.peak.slot[PeakPoint::kBackward], a.peak.slot[PeakPoint::kRecomputeForward],
                                       a.peak.slot[PeakPoint::kRecomputeBackward]}) - a.cache_per_mb;
          x.best = std::max(x.best, x.live + bwd);
          x.live -= a.cache_per_mb;
          x.host -= a.offloaded_per_mb;
          --x.live_n;
        }
      });
      mem.in_flight_micro_batches = w.max_n;
      mem.peak_activation_bytes = w.best;
      mem.peak_phase = "interleaved schedule replay";
      mem.peak_alloc_bytes = mem.model_bytes + w.best;
      mem.host_bytes += w.host_max;
      mem.peak_reserved_bytes = mem.peak_alloc_bytes / s.mem_factor;
    }
  }

  // What views read per rank: every chunk's ops and the memory the rank holds.
  est.micro_batches = plan.micro_batch_num;
  if (events) {
    for (int64_t r = 0; r < pp; ++r) {
      const auto ri = static_cast<size_t>(r);
      RankProfile prof;
      StageMemory mem;
      static_part(r, mem);
      prof.model_bytes = mem.model_bytes;
      for (const auto& spec : plan.chunks[ri]) {
        const ChunkResult& cr = results.get(spec);
        prof.chunks.push_back(cr.ops.expand());
        prof.chunk_cache_bytes.push_back(cr.act.cache_per_mb);
        prof.chunk_peak_bytes.push_back(cr.act.peak.peak);
      }
      est.ranks.push_back(std::move(prof));
    }
  }

  const double tokens = static_cast<double>(plan.seq_len * plan.micro_batch_size * plan.micro_batch_num * plan.dp);
  const double fpt = flops_per_token(m, static_cast<double>(plan.seq_len), static_cast<double>(est.padded_vocab));
  const double theory = std::floor(fpt * tokens / static_cast<double>(plan.world));
  est.tflops_per_gpu = theory / est.iteration_time_s / kTera;
  est.mfu = est.tflops_per_gpu * kTera / sys.ops.known_at(ComputeOps::slot("default")).peak_flops;
  est.tokens_per_s_per_gpu = tokens / est.iteration_time_s / static_cast<double>(plan.world);
  est.misses = std::move(log.misses);
  est.efficiency_hits = log.hits;
  return est;
}

}  // namespace trainsim
