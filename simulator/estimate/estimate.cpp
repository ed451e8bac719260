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
#include "estimate/stages.h"
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

Estimate estimate(const Plan& plan, EstimateCache* cache, bool events, PipelineReplay replay_mode) {
  using namespace detail;  // NOLINT: the estimate's stages
  const ModelConfig& m = *plan.model;
  const Settings& s = plan;
  const SystemConfig& sys = *plan.system;
  Estimate est;
  EfficiencyLog log;
  ClassTable classes(sys);
  // The plan's networks found in its system as it is now (as the classes): the system may have
  // been edited in place since the plan was resolved, its entries replaced.
  const NetworkChoice nets = resolve_networks(sys, plan.nets.kind, plan.mode);
  Env env{m, s, sys, nets, &log, plan.mode, &classes};
  est.mode = plan.mode;
  est.schedule = schedule_name(plan.schedule);
  est.p2p = plan.p2p == P2PMode::Async ? "async" : "blocking";
  est.dp = plan.par.dp;
  est.edp = plan.par.edp;
  est.global_batch_size = plan.global_batch_size();
  est.padded_vocab = plan.padded_vocab;
  est.straggler_ratio = plan.straggler.ratio;
  est.straggler = plan.straggler;
  static constexpr std::string_view group_names[] = {"tp", "cp", "dp", "pp", "ep", "etp", "edp"};
  for (size_t g = 0; g < 7; ++g) est.networks[g] = {group_names[g], plan.nets.of(static_cast<Group>(g))};

  ChunkResults results(env, plan, cache);

  // Per-micro-batch pass times of every virtual chunk, kept per thread across estimates (as the
  // engine's memory) so that refilling them allocates nothing; per-rank arrays inline up to pp 8.
  thread_local PipelineCosts costs_memory;
  PipelineCosts& costs = costs_memory;
  SmallVector<PhaseSums, 8> rank_sums;
  pipeline_costs(plan, env, results, costs, rank_sums);
  PipelineRun run;
  run_pipeline(plan, env, results, costs, events, replay_mode, est, run);
  StepTail tail;
  step_tail(plan, env, results, run, events, est, tail);
  stage_times(plan, costs, rank_sums, run, tail, est);
  stage_memory(plan, results, run, tail, events, est);

  const double tokens = static_cast<double>(plan.batch.seq_len * plan.batch.micro_batch_size * plan.batch.micro_batch_num * plan.par.dp);
  const double fpt = flops_per_token(m, static_cast<double>(plan.batch.seq_len), static_cast<double>(est.padded_vocab));
  const double theory = std::floor(fpt * tokens / static_cast<double>(plan.par.world));
  est.tflops_per_gpu = theory / est.iteration_time_s / kTera;
  est.mfu = est.tflops_per_gpu * kTera / sys.ops.known_at(op_index(OpClass::Default)).peak_flops;
  est.tokens_per_s_per_gpu = tokens / est.iteration_time_s / static_cast<double>(plan.par.world);
  est.misses = std::move(log.misses);
  est.efficiency_hits = log.hits;
  est.efficiency_interpolated = log.interpolated;
  est.efficiency_extrapolated = log.extrapolated;
  est.efficiency_by_class = log.by_class;
  est.collectives_by_kind = log.collectives;
  return est;
}

}  // namespace trainsim
