// The search's worker: decides every candidate of one parallel layout (micro batch sizes up,
// recompute tried only when the plan does not fit without it) and keeps the best feasible plans.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <iterator>
#include <limits>
#include <optional>
#include <mutex>
#include <thread>
#include <tuple>

#include "plan/pipeline_layout.h"
#include "plan/validate.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/bound.h"
#include "estimate/finite.h"
#include "estimate/fit.h"
#include "search/worker.h"

namespace trainsim::search_detail {
namespace {

// Overlap switches the search turns off where Megatron rejects them at a candidate's sizes.
bool turn_off_overlap(StrategyConfig& s, const std::string& path) {
  if (path == "/overlap_grad_reduce") s.overlap_grad_reduce = false;
  else if (path == "/overlap_param_gather") s.overlap_param_gather = false;
  else if (path == "/tp_comm_overlap") s.tp_comm_overlap = false;
  else if (path == "/overlap_moe_expert_parallel_comm") s.overlap_moe_expert_parallel_comm = false;
  else if (path == "/moe_shared_expert_overlap") s.moe_shared_expert_overlap = false;
  else return false;
  return true;
}

}  // namespace

// Normalizes `s` (moot switches off) and turns off the overlaps Megatron rejects at its sizes;
// returns the issues left (empty: `s` is a legal, normalized plan).
std::vector<Issue> legalize(const ModelConfig& m, const SystemConfig& sys, StrategyConfig& s, Mode mode) {
  for (int round = 0;; ++round) {
    StrategyConfig normal = s;
    (void)normalize_strategy(m, normal, mode);
    std::vector<Issue> issues = validate_plan(m, normal, sys, PlanSources{}, mode);
    if (issues.empty() || round == 8) {
      s = std::move(normal);
      return issues;
    }
    bool changed = false;
    for (const Issue& i : issues) changed = turn_off_overlap(s, i.path) || changed;
    if (!changed) {
      s = std::move(normal);
      return issues;
    }
  }
}

StrategyConfig Worker::layout_strategy(const Layout& l, int64_t mbs, bool& expressible) const {
  StrategyConfig s = sh_.o.base;
  const SearchSpace& sp = sh_.space;
  s.world_size = sh_.o.world_size;
  s.seq_len = sh_.seq_len;
  s.tp_size = l.tp;
  s.cp_size = l.cp;
  s.pp_size = l.pp;
  s.ep_size = l.ep;
  s.etp_size = l.etp;
  s.interleaving_size = l.vpp;
  s.hierarchical_context_parallel_sizes.clear();
  expressible = true;
  if (l.cp == 1) {
    s.cp_comm_type = StrategyConfig{}.cp_comm_type;  // a CP flavour changes nothing without CP
  } else {
    s.cp_comm_type = sp.cp_comm[l.cp_comm];
    if (s.cp_comm_type == "a2a+p2p") {
      const int64_t a = hierarchical_a2a(sh_.m, l.tp, l.cp);
      expressible = a > 0;
      if (a > 0) s.hierarchical_context_parallel_sizes = {a, l.cp / a};
    }
  }
  set_dispatcher(s, sp.dispatcher[l.dispatcher]);
  s.microbatch_group_size_per_vp_stage.reset();
  if (sh_.o.overlaps_on && sh_.o.mode == Mode::Default) {
    s.overlap_grad_reduce = s.overlap_param_gather = s.tp_comm_overlap = true;
    s.moe_shared_expert_overlap = true;
    s.pp_comm_async = true;
  }
  if (sh_.m.is_moe() && sh_.o.mode == Mode::Default) s.overlap_moe_expert_parallel_comm = l.a2a_overlap;
  // SimuMax 1.2 models only the synchronous interleaved schedule; Megatron overlaps its p2p.
  if (l.vpp > 1 && sh_.o.mode == Mode::SimuMax12) s.pp_comm_async = false;
  s.zero_state = l.zero;
  s.data_parallel_sharding_strategy.reset();  // zero_state says it
  s.enable_sequence_parallel = l.sp;
  s.micro_batch_size = mbs;
  s.micro_batch_num = 1;
  s.num_layers_in_first_pipeline_stage.reset();
  s.num_layers_in_last_pipeline_stage.reset();
  s.account_for_embedding_in_pipeline_split = s.account_for_loss_in_pipeline_split = false;
  // The search chooses the split and the virtual stages itself.
  s.pipeline_model_parallel_layout.reset();
  s.num_layers_per_virtual_pipeline_stage.reset();
  set_recompute(s, RecomputeKind::None, 0);
  if (l.split == PipelineSplit::Balanced) {
    expressible = expressible && set_balanced(s, sh_.m, l.pp, l.vpp);
  } else if (l.split != PipelineSplit::Even) {
    const int64_t layers = sh_.m.layer_num, per = (layers + l.pp - 1) / l.pp;
    const int64_t rest = layers - per * (l.pp - 1);
    expressible = expressible && rest > 0;
    if (l.split == PipelineSplit::UnevenLast)
      s.num_layers_in_last_pipeline_stage = rest;
    else
      s.num_layers_in_first_pipeline_stage = rest;
  }
  return s;
}

void Worker::keep(Candidate c) {
  ++feasible_;
  if (sh_.base_time > 0 && c.iteration_time_s < sh_.base_time) ++faster_than_base_;
  // Pareto front (time, memory): drop what the new plan dominates, skip it when dominated.
  {
    const Better better{RankBy::Time};
    bool dominated = false;
    for (const Candidate& f : front_)
      if (f.iteration_time_s <= c.iteration_time_s && f.peak_bytes <= c.peak_bytes &&
          (f.iteration_time_s < c.iteration_time_s || f.peak_bytes < c.peak_bytes || better(f, c))) {
        dominated = true;
        break;
      }
    if (!dominated) {
      std::erase_if(front_, [&](const Candidate& f) {
        return c.iteration_time_s <= f.iteration_time_s && c.peak_bytes <= f.peak_bytes;
      });
      front_.push_back(c);
    }
  }
  const Better better{sh_.o.rank_by};
  // Room for the variants the diverse top-k folds away.
  const auto keep_n = sh_.o.keep == 0 ? size_t{0}
                                      : static_cast<size_t>(sh_.o.keep) * (sh_.o.collapse_within > 0 ? kCollapsePool : 1);
  if (keep_n == 0) {
    kept_.push_back(std::move(c));
    return;
  }
  if (kept_.size() == keep_n) {
    if (!better(c, kept_.front())) return;
    std::pop_heap(kept_.begin(), kept_.end(), better);
    kept_.pop_back();
  }
  kept_.push_back(std::move(c));
  std::push_heap(kept_.begin(), kept_.end(), better);
}

double Worker::static_scale(const StrategyConfig& s) const {
  // The reserve on the weights, gradients and optimizer states alone (the estimate's rule).
  return !sh_.rule.use_reserved         ? 1.0
         : sh_.o.mode == Mode::SimuMax12 ? 1.0 / s.mem_factor
                                         : 1.0 + sh_.sys.allocator_fragmentation;
}

bool Worker::over_memory_bound(const StrategyConfig& s, bool& static_oom) {
  PlanBound b;
  try {
    b = plan_lower_bound(keyed_plan(sh_.m, s, sh_.sys, sh_.o.mode), &cache_, /*time=*/false);
  } catch (const std::exception&) {
    return false;  // the estimate decides (and reports the error)
  }
  bool over = false;
  for (const StageMemory& st : b.stages) over = over || !fit_verdict(st, sh_.rule).fits;
  // The stages' static memory is the estimate's: static_oom as evaluate() finds it.
  if (over)
    for (const StageMemory& st : b.stages)
      static_oom = static_oom ||
                   sh_.rule.static_floor_bytes(st.model_bytes, static_scale(s)) > sh_.rule.stage_limit_bytes(st);
  return over;
}

Worker::Outcome Worker::evaluate(const StrategyConfig& s, RecomputeKind k, PipelineSplit split,
                                 bool& static_oom, Candidate& out, double* time) {
  // Where the time is not needed, a plan whose memory bound is over the limit does not fit: the
  // estimate's verdict without the estimate.
  if (time == nullptr && over_memory_bound(s, static_oom)) return Outcome::Oom;
  sh_.calls.fetch_add(1, std::memory_order_relaxed);
  Estimate e;
  std::optional<Plan> plan;
  try {
    plan.emplace(keyed_plan(sh_.m, s, sh_.sys, sh_.o.mode));
    e = estimate(*plan, &cache_, /*events=*/false);
    require_finite(e, PlanSources{});
  } catch (const std::exception& err) {
    if (layout_ < error_layout_) {
      error_layout_ = layout_;
      first_error_ = err.what();
    }
    return Outcome::Error;
  }
  if (time != nullptr) *time = e.iteration_time_s;
  const double scale = static_scale(s);
  // Weights, gradients and optimizer states (and the memory outside PyTorch) do not depend on the
  // micro batch or recompute: when they alone exceed the limit (even as TIGHT: the allocator's
  // floor), no variant of this layout fits.
  for (const auto& st : e.stages)
    static_oom = static_oom || sh_.rule.static_floor_bytes(st.model_bytes, scale) > sh_.rule.stage_limit_bytes(st);
  const FitVerdict fit = fit_verdict(e, sh_.rule);
  if (!fit.fits) return Outcome::Oom;
  const double peak = sh_.rule.use_reserved ? e.peak_reserved_bytes() : e.peak_alloc_bytes();
  out.strategy = s;
  out.split = split;
  out.recompute = k;
  out.iteration_time_s = e.iteration_time_s;
  const Throughput t = sh_.o.mfu == MfuConvention::Megatron ? megatron_throughput(sh_.m, *plan, sh_.sys, e)
                                                            : Throughput{e.tflops_per_gpu, e.mfu};
  out.mfu = t.mfu;
  out.tflops_per_gpu = t.tflops_per_gpu;
  out.tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
  out.peak_bytes = peak;
  out.fit = fit;
  out.straggler_ratio = e.straggler_ratio;
  out.stage_times = std::move(e.stage_times);
  out.stages = std::move(e.stages);
  return Outcome::Fits;
}

std::string Worker::prepare(const Layout& l, int64_t mbs, StrategyConfig& out) const {
  bool expressible = true;
  StrategyConfig s = layout_strategy(l, mbs, expressible);
  if (!expressible)
    return l.cp > 1 && sh_.space.cp_comm[l.cp_comm] == "a2a+p2p" ? "illegal_hierarchical_context_parallel_sizes"
                                                                 : "illegal_pp_size";
  // Megatron's interleaving rules read micro_batch_num: validate with the count this layout gets.
  if (s.world_size % (l.tp * l.cp * l.pp) == 0 && sh_.o.global_batch % (s.dp_size() * mbs) == 0)
    s.micro_batch_num = sh_.o.global_batch / (s.dp_size() * mbs);
  // A switch of the base strategy with no effect at this layout is turned off, and an overlap
  // Megatron rejects at these sizes is off, not a reason to reject the plan (each recompute
  // variant starts from here again and is legalized on its own).
  StrategyConfig normal = s;
  std::vector<Issue> issues = legalize(sh_.m, sh_.sys, normal, sh_.o.mode);
  if (!issues.empty()) return illegal_reason(issues);
  if (sh_.o.global_batch % (s.dp_size() * mbs) != 0) return "global_batch";
  out = std::move(normal);
  // A switched-on choice that does not act here (the dispatcher without experts to exchange,
  // the EP overlap where Megatron rejects it) makes this layout the twin of another one.
  const std::string& disp = sh_.space.dispatcher[l.dispatcher];
  if ((disp != "base" && dispatcher_of(out) != disp && l.dispatcher != 0) ||
      (l.a2a_overlap && !out.overlap_moe_expert_parallel_comm &&
       std::find(sh_.space.a2a_overlap.begin(), sh_.space.a2a_overlap.end(), false) != sh_.space.a2a_overlap.end()))
    return "duplicate";
  return "";
}

void Worker::bound(const Layout& l, size_t index, double* lb, SeedSlot* slots) {
  layout_ = index;
  for (size_t mi = 0; mi < sh_.space.mbs.size(); ++mi) {
    StrategyConfig s;
    const std::string why = prepare(l, sh_.space.mbs[mi], s);
    if (!why.empty() && why != "duplicate") continue;
    slots[mi].plan = true;
    try {
      const PlanBound b = plan_lower_bound(keyed_plan(sh_.m, s, sh_.sys, sh_.o.mode), &cache_);
      lb[mi] = b.time_s;
      for (const StageMemory& st : b.stages) slots[mi].oom = slots[mi].oom || !fit_verdict(st, sh_.rule).fits;
    } catch (const std::exception&) {
      lb[mi] = 0;  // no bound: the estimate decides (and reports the error)
    }
  }
}

void Worker::seed(const Layout& l, size_t index, size_t mi, double& lb, SeedSlot& slot) {
  layout_ = index;
  StrategyConfig s;
  (void)prepare(l, sh_.space.mbs[mi], s);  // a plan, or a duplicate's (its twin's) plan
  slot.estimated = true;
  double t = 0;
  slot.c = std::make_unique<Candidate>();
  slot.out = evaluate(s, RecomputeKind::None, l.split, slot.static_oom, *slot.c, &t);
  lb = slot.out == Outcome::Error ? 0 : t;  // an error is decided (and reported) in the main pass
  // The plan of a duplicate is its twin's (the EP overlap turned off): that layout uses it.
  slot.valid = slot.out != Outcome::Error;
  slot.hash = strategy_hash(s);
}

// Layers of the largest chunk: selective recompute covers them all and bounds the full_block
// binary search (the peer uses ceil(L/pp)).
int64_t Worker::largest_chunk(const Layout& l, const StrategyConfig& s) const {
  int64_t chunk_layers = 0;
  if (sh_.o.mode == Mode::Default) {
    std::vector<VirtualStage> stages;
    std::string path, why;
    const bool ok = pipeline_stages(sh_.m, s, stages, &path, &why);
    TRAINSIM_ASSERT(ok, "validate_plan accepted the pipeline split");
    for (const auto& v : stages) chunk_layers = std::max(chunk_layers, v.layers);
  } else {
    StageLayers split;
    const bool split_ok = split_layers(sh_.m.layer_num, s, split, nullptr);
    TRAINSIM_ASSERT(split_ok, "validate_plan accepted the pipeline split");
    chunk_layers = l.vpp > 1 ? sh_.m.layer_num / (l.pp * l.vpp) : std::max({split.first, split.middle, split.last});
  }
  return std::max<int64_t>(chunk_layers, 1);
}

void Worker::run_layout(const Layout& l, size_t index, std::vector<std::array<bool, kRecomputeKinds>>& ladder,
                        SeedSlot* seeds) {
  layout_ = index;
  const std::vector<RecomputeKind>& kinds = sh_.space.recompute;
  const auto n_kinds = static_cast<int64_t>(kinds.size());
  const auto n_mbs = static_cast<int64_t>(sh_.space.mbs.size());
  // Sequence parallel has no effect with tp 1: the sp-off twin of an sp-on plan is skipped; a
  // CP flavour without CP likewise.
  if ((!l.sp && l.tp == 1 && sh_.sp_on_in_space) || (l.cp == 1 && l.cp_comm != 0)) {
    reject("duplicate", n_kinds * n_mbs);
    return;
  }
  // Memory grows with the micro batch size for a fixed recompute choice, so what was over the
  // limit at a smaller mbs stays over it (the brute-force test checks this pruning).
  bool static_oom = false;          // weights, grads and optimizer states alone do not fit
  std::array<bool, kRecomputeKinds> oom_below{};  // per RecomputeKind: over the limit at a smaller mbs
  int64_t full_block_min = 1;       // fewest full_block layers that fit at a smaller mbs
  for (size_t mi = 0; mi < sh_.space.mbs.size(); ++mi) {
    const int64_t mbs = sh_.space.mbs[mi];
    std::array<bool, kRecomputeKinds>& fits_before = ladder[mi];
    StrategyConfig s;
    if (std::string why = prepare(l, mbs, s); !why.empty()) {
      reject(why, n_kinds);
      continue;
    }
    // Branch and bound: the plan without recompute at the group's preferred switches is at least
    // as fast as every plan here; when it is slower than the bound, none of them can rank.
    if (lb_ != nullptr && lb_[mi] > sh_.bound) {
      reject("time_bound", n_kinds);
      continue;
    }
    const int64_t chunk_layers = largest_chunk(l, s);

    bool none_fits = false, block_fits = false;
    for (RecomputeKind k : kinds) {  // sorted: None first, full_uniform last
      StrategyConfig v = s;
      set_recompute(v, k, chunk_layers);
      if (k != RecomputeKind::None) {
        std::vector<Issue> vi = legalize(sh_.m, sh_.sys, v, sh_.o.mode);
        if (!vi.empty()) {
          reject(illegal_reason(vi), 1);
          continue;
        }
        if (!v.is_recompute()) {  // the recompute choice has nothing to act on in this model
          reject("duplicate", 1);
          continue;
        }
      }
      if (static_oom || oom_below[static_cast<size_t>(k)]) {
        reject("oom_bound", 1);
        continue;
      }
      if (none_fits || (k == RecomputeKind::FullUniform && block_fits)) {
        reject("recompute_not_needed", 1);
        continue;
      }
      if (k == RecomputeKind::FullUniform && chunk_layers < 2) {  // one layer per unit: full_block
        reject("duplicate", 1);
        continue;
      }
      // The layout with the EP overlap on fits with the same choice, or without recompute: it
      // is at least as fast.
      if (sh_.o.ladder && (fits_before[static_cast<size_t>(k)] || fits_before[0])) {
        reject("switch_not_needed", 1);
        continue;
      }

      Candidate c;
      Outcome out;
      if (k == RecomputeKind::None && seeds != nullptr && seeds[mi].valid && seeds[mi].hash == strategy_hash(v)) {
        out = seeds[mi].out;  // estimated in the bound pass
        static_oom = static_oom || seeds[mi].static_oom;
        if (out == Outcome::Fits) c = std::move(*seeds[mi].c);
        seeds[mi].c.reset();
        seeds[mi].valid = false;  // used
      } else {
        out = evaluate(v, k, l.split, static_oom, c);
      }
      // Uniform units of 2 layers, else 4, else 8 (within the chunk): the first that fits.
      for (int64_t n = 4; k == RecomputeKind::FullUniform && out == Outcome::Oom && n <= std::min<int64_t>(8, chunk_layers);
           n *= 2) {
        StrategyConfig t = v;
        t.recompute_unit_layers = n;
        out = evaluate(t, k, l.split, static_oom, c);
      }
      block_fits = block_fits || (out == Outcome::Fits && k == RecomputeKind::FullBlock);
      if (out == Outcome::Fits && k == RecomputeKind::FullBlock) {
        // Fewest recomputed layers per chunk that fit: memory falls as layers grow, so all
        // layers are tried first (one call when nothing fits), then the rest is
        // binary-searched (the peer's search_best_recompute_layer_num).
        int64_t lo = full_block_min, hi = chunk_layers - 1;
        while (lo <= hi) {
          const int64_t mid = lo + (hi - lo) / 2;
          StrategyConfig t = v;
          t.recompute_layer_num = mid;
          bool unused = false;
          if (evaluate(t, k, l.split, unused, c) == Outcome::Fits)
            hi = mid - 1;
          else
            lo = mid + 1;
        }
        full_block_min = c.strategy.recompute_layer_num;
      }
      if (out == Outcome::Fits) {
        none_fits = k == RecomputeKind::None;
        fits_before[static_cast<size_t>(k)] = true;
        keep(std::move(c));
        sh_.done.fetch_add(1, std::memory_order_relaxed);
      } else if (out == Outcome::Oom) {
        oom_below[static_cast<size_t>(k)] = true;
        reject("oom", 1);
      } else {
        reject("estimate_error", 1);
      }
    }
  }
}

}  // namespace trainsim::search_detail
