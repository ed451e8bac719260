// The estimate's stages after chunk costing, in the order estimate() runs them: pipeline costs
// → pipeline replay (program and DP ops on the engine) → tail (DP, optimizer, straggler) →
// per-stage times → per-stage memory → the views' rank profiles. Internal to estimate/.
#pragma once

#include "core/small_vector.h"
#include "estimate/chunk_results.h"
#include "estimate/estimate.h"
#include "estimate/replay.h"
#include "schedule/lower.h"

namespace trainsim::detail {

// Per-micro-batch pass times of every virtual chunk (and the all-to-all pieces of merged
// steps), the pipeline transfer, and each rank's phase sums.
void pipeline_costs(const Plan& plan, const Env& env, ChunkResults& results, PipelineCosts& costs,
                    SmallVector<PhaseSums, 8>& rank_sums);

// What the replay leaves for the later stages: each rank's DP traffic, the steps the walks read
// (they may point into `shorts` or the per-thread program: the run is not moved), the end of
// the pipeline.
struct PipelineRun {
  SmallVector<RankDp, 8> dp;
  SmallVector<RankSteps, 8> rank_steps;
  Program shorts[2];
  double pipe = 0;
};

// The program (and, in the default mode, its DP ops) replayed on the engine, whole or steady
// state: fills the estimate's timeline, engine op count and pipeline time.
void run_pipeline(const Plan& plan, const Env& env, ChunkResults& results, const PipelineCosts& costs, bool events,
                  PipelineReplay replay_mode, Estimate& est, PipelineRun& run);

// Per rank: DP time (dense + expert, dense, expert), optimizer and exposed DP time, and the rank
// as one chunk (static memory).
struct StepTail {
  SmallVector<double, 8> dp, dense_dp, edp, optim, exposed_dp;
  SmallVector<const ChunkResult*, 8> whole;
};

// After the pipeline: DP traffic still running, the optimizer, the straggler allowance; sets
// each rank's end and the step time.
void step_tail(const Plan& plan, const Env& env, ChunkResults& results, const PipelineRun& run, bool events,
               Estimate& est, StepTail& tail);

// Per-stage time breakdown, read from the chunk sums and the timeline.
void stage_times(const Plan& plan, const PipelineCosts& costs, const SmallVector<PhaseSums, 8>& rank_sums,
                 const PipelineRun& run, const StepTail& tail, Estimate& est);

// Per-stage memory (static + activations in flight + peaks), and the views' rank profiles.
void stage_memory(const Plan& plan, ChunkResults& results, const PipelineRun& run, const StepTail& tail, bool events,
                  Estimate& est);

}  // namespace trainsim::detail
