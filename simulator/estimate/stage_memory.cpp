// Per-stage memory of an estimate: static memory of each rank, activations of the micro-batches
// in flight and the transient peaks (1F1B closed form, or a walk over the interleaved program),
// and the views' rank profiles.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "estimate/stages.h"
#include "estimate/tail.h"
#include "memory/activation.h"
#include "memory/non_tensor.h"

namespace trainsim::detail {
namespace {

// Memory: static + cached micro-batches in flight + the single-micro-batch peak (1F1B), or a
// replay of the rank's program over its chunks (interleaved). Reserved memory and the memory
// outside PyTorch: SimuMax's conventions in compat mode (the fit rule subtracts the flat margin),
// the terms of memory/non_tensor.h in the default mode.
class StageMemoryBuilder {
 public:
  StageMemoryBuilder(const Plan& p, ChunkResults& r, const PipelineRun& run, const StepTail& tail, Estimate& e)
      : plan(p), s(p), results(r), rank_steps(run.rank_steps), whole(tail.whole), est(e),
        simumax_memory(p.mode == Mode::SimuMax12), outside(non_tensor_memory(*p.model, s, *p.system)),
        non_tensor(simumax_memory ? 0.0 : outside.total()),
        // Library workspaces are allocated through PyTorch: part of the allocated bytes (default mode).
        workspaces(simumax_memory ? 0.0 : outside.workspace_bytes) {}

  void run(bool events) {
    est.stages.reserve(plan.par.vpp == 1 ? reported_ranks(plan.par.pp).n : static_cast<size_t>(plan.par.pp));
    if (plan.par.vpp == 1)
      one_f_one_b();
    else
      interleaved();
    est.micro_batches = plan.batch.micro_batch_num;
    if (events) rank_profiles();
  }

 private:
  const Plan& plan;
  const Settings& s;
  ChunkResults& results;
  const SmallVector<RankSteps, 8>& rank_steps;
  const SmallVector<const ChunkResult*, 8>& whole;
  Estimate& est;
  const bool simumax_memory;
  const NonTensorMemory outside;
  const double non_tensor, workspaces;

  double reserved_of(double alloc) const {
    return simumax_memory ? alloc / s.mem.mem_factor : allocator_reserved_bytes(alloc, plan.system->allocator_fragmentation);
  }

  // The static part of rank r's memory into the fresh `mem` (filled in place).
  void static_part(int64_t r, StageMemory& mem) const {
    const ChunkResult& cr = *whole[static_cast<size_t>(r)];
    const StaticMemory sm = shard_static_memory(cr.params, s);
    mem.weight_bytes = sm.weight + sm.moe_weight;
    mem.grad_bytes = sm.grad + sm.moe_grad;
    mem.state_bytes = sm.state + sm.moe_state;
    mem.model_bytes = sm.total() + cr.dummy_bytes + workspaces;
    if (plan.mode == Mode::Default && s.ovl.zero_state >= 3) {
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
  }

  void one_f_one_b() {
    const int64_t pp = plan.par.pp;
    const bool split = plan.split_backward();
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
      mem.peak_transient_bytes = act.peak.peak - act.peak.peak_live;
      static const std::string_view kStageNames[] = {"forward", "backward", "recompute_forward", "recompute_backward"};
      const std::string_view stage = kStageNames[act.peak.peak_stage];
      mem.peak_phase.reserve(stage.size() + 4 + act.peak.peak_leaf.size());
      mem.peak_phase.append(stage).append(" at ").append(act.peak.peak_leaf);
      mem.peak_alloc_bytes = mem.model_bytes +
                             static_cast<double>(mem.in_flight_micro_batches - 1) * act.cache_per_mb + act.peak.peak;
      // Offloaded activations of every micro-batch in flight wait in host memory.
      mem.host_bytes += static_cast<double>(mem.in_flight_micro_batches) * act.offloaded_per_mb;
      mem.peak_reserved_bytes = reserved_of(mem.peak_alloc_bytes);
      mem.non_tensor_bytes = non_tensor;
    }
  }

  void interleaved() {
    const int64_t pp = plan.par.pp;
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
      double live = 0, best = 0, best_transient = 0, host = 0, host_max = 0;
      int64_t live_n = 0, max_n = 0;
    };
    // A candidate peak: the live caches plus a chunk's slot, whose transient part is the slot
    // less the activations live in it.
    const auto consider = [](State& x, double candidate, double transient) {
      if (candidate > x.best) x.best_transient = transient;
      x.best = std::max(x.best, candidate);
    };
    const State w = walk(rank_steps[ri], State{}, [&](State& x, const Step& step) {
      const ActivationResult& a = *acts[static_cast<size_t>(step.chunk)];
      if (step.pass == Pass::Forward) {
        consider(x, x.live + a.peak.slot[PeakPoint::kForward],
                 a.peak.slot[PeakPoint::kForward] - a.peak.slot_live[PeakPoint::kForward]);
        x.live += a.cache_per_mb;
        x.host += a.offloaded_per_mb;
        x.host_max = std::max(x.host_max, x.host);
        x.max_n = std::max(x.max_n, ++x.live_n);
      } else {
        size_t top = PeakPoint::kBackward;
        for (size_t k : {size_t{PeakPoint::kRecomputeForward}, size_t{PeakPoint::kRecomputeBackward}})
          if (a.peak.slot[k] > a.peak.slot[top]) top = k;
        const double bwd = std::max({a.peak.slot[PeakPoint::kBackward], a.peak.slot[PeakPoint::kRecomputeForward],
                                     a.peak.slot[PeakPoint::kRecomputeBackward]}) - a.cache_per_mb;
        consider(x, x.live + bwd, a.peak.slot[top] - a.peak.slot_live[top]);
        x.live -= a.cache_per_mb;
        x.host -= a.offloaded_per_mb;
        --x.live_n;
      }
    });
    mem.in_flight_micro_batches = w.max_n;
    mem.peak_activation_bytes = w.best;
    mem.peak_transient_bytes = w.best_transient;
    mem.peak_phase = "interleaved schedule replay";
    mem.peak_alloc_bytes = mem.model_bytes + w.best;
    mem.host_bytes += w.host_max;
    mem.peak_reserved_bytes = reserved_of(mem.peak_alloc_bytes);
    mem.non_tensor_bytes = non_tensor;
  }
  }

  // What views read per rank: every chunk's ops and the memory the rank holds.
  void rank_profiles() {
    for (int64_t r = 0; r < plan.par.pp; ++r) {
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
};

}  // namespace

void stage_memory(const Plan& plan, ChunkResults& results, const PipelineRun& run, const StepTail& tail, bool events,
                  Estimate& est) {
  StageMemoryBuilder(plan, results, run, tail, est).run(events);
}

}  // namespace trainsim::detail
