// Strategy search. Work unit = one parallel layout (tp, cp, cp_comm_type, pp, split, ep, etp, vpp,
// zero, sp, dispatcher, EP all-to-all overlap); inside it micro batch sizes go up and recompute is
// tried only when the plan does not fit without it, so most candidates are decided without an
// estimate() call.
#include "search/search.h"

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
#include <mutex>
#include <thread>
#include <tuple>

#include "plan/pipeline_layout.h"
#include "plan/validate.h"
#include "core/error.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/finite.h"
#include "estimate/fit.h"

namespace trainsim {
namespace {

struct Layout {
  int64_t tp, cp, pp;
  PipelineSplit split;
  int64_t ep, etp, vpp, zero;
  bool sp;
  size_t cp_comm = 0, dispatcher = 0;  // indices into the space's lists
  bool a2a_overlap = false;
};

constexpr int64_t kAllLayers = int64_t{1} << 20;  // the strategy reader's "every layer"
// The diverse top-k draws its --top plans from the best kCollapsePool × --top (variants folded).
constexpr size_t kCollapsePool = 4;

// The dispatcher a strategy runs, in the search's names ("base" when none is set).
std::string dispatcher_of(const StrategyConfig& s) {
  if (!s.moe_token_dispatcher_type) return "base";
  if (*s.moe_token_dispatcher_type == "flex") return s.moe_flex_dispatcher_backend.value_or("deepep");
  return *s.moe_token_dispatcher_type;
}

void set_dispatcher(StrategyConfig& s, const std::string& d) {
  if (d == "base") return;
  s.moe_enable_deepep = false;
  s.moe_flex_dispatcher_backend.reset();
  if (d == "deepep" || d == "hybridep") {
    s.moe_token_dispatcher_type = "flex";
    s.moe_flex_dispatcher_backend = d;
  } else {
    s.moe_token_dispatcher_type = d;
  }
}

// The a2a group of a2a+p2p: the largest power of two below cp that splits the heads and KV heads
// of one TP rank (0: none).
int64_t hierarchical_a2a(const ModelConfig& m, int64_t tp, int64_t cp) {
  if (m.head_num % tp != 0 || m.kv_head_num % tp != 0) return 0;
  for (int64_t a = cp / 2; a >= 2; a /= 2)
    if (cp % a == 0 && (m.head_num / tp) % a == 0 && (m.kv_head_num / tp) % a == 0) return a;
  return 0;
}

// The balanced split of `layers` decoder layers over pp·vpp virtual stages, counting the
// embedding, the output layer + loss and each MTP layer as one layer: Megatron's
// account_for_*_in_pipeline_split where that divides evenly (no MTP), else a layout string whose
// extra layers go to the stages after the first. False when some stage would hold a negative count.
bool set_balanced(StrategyConfig& s, const ModelConfig& m, int64_t pp, int64_t vpp) {
  const int64_t stages = pp * vpp, mtp = m.mtp_num_layers;
  const int64_t units = m.layer_num + 2 + mtp;
  if (units < stages) return false;
  if (mtp == 0 && units % stages == 0) {
    s.account_for_embedding_in_pipeline_split = true;
    s.account_for_loss_in_pipeline_split = true;
    return true;
  }
  const int64_t base = units / stages, extra = units % stages;
  std::string layout;
  for (int64_t i = 0; i < stages; ++i) {
    int64_t n = base + (i >= 1 && i <= extra ? 1 : 0);
    std::string stage;
    if (i == 0) {
      stage = "E";
      --n;
    }
    int64_t t = n - (i == stages - 1 ? 1 + mtp : 0);
    if (t < 0) return false;
    if (t == 1) stage += "t";
    if (t > 1) stage += "t*" + std::to_string(t);
    if (i == stages - 1) {
      if (mtp == 1) stage += "m";
      if (mtp > 1) stage += "m*" + std::to_string(mtp);
      stage += "L";
    }
    layout += (i ? "|" : "") + stage;
  }
  s.pipeline_model_parallel_layout = layout;
  s.interleaving_size = 1;  // the layout fixes the virtual stages (Megatron rejects both)
  return true;
}

std::vector<int64_t> powers_of_two_up_to(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= n; v *= 2) out.push_back(v);
  return out;
}

// Total order on the searched parameters: the tie-break that makes results independent of
// evaluation order.
auto plan_key(const Candidate& c) {
  const StrategyConfig& s = c.strategy;
  return std::make_tuple(s.tp_size, s.cp_size, s.cp_comm_type, s.pp_size, static_cast<int>(c.split), s.ep_size,
                         s.etp_size, s.interleaving_size, s.zero_state, !s.enable_sequence_parallel,
                         dispatcher_of(s), !s.overlap_moe_expert_parallel_comm, s.micro_batch_size,
                         static_cast<int>(c.recompute), s.recompute_layer_num);
}

double rank_metric(const Candidate& c, RankBy by) {
  switch (by) {
    case RankBy::Mfu:
      return -c.mfu;
    case RankBy::Tokens:
      return -c.tokens_per_s_per_gpu;
    case RankBy::Time:
      break;
  }
  return c.iteration_time_s;
}

struct Better {
  RankBy by;
  bool operator()(const Candidate& a, const Candidate& b) const {
    const double ka = rank_metric(a, by), kb = rank_metric(b, by);
    if (ka != kb) return ka < kb;
    return plan_key(a) < plan_key(b);
  }
};

// Megatron's --recompute-modules of a selective kind (empty for the others).
std::vector<std::string> megatron_modules(RecomputeKind k) {
  switch (k) {
    case RecomputeKind::CoreAttn: return {"core_attn"};
    case RecomputeKind::CoreAttnMlp: return {"core_attn", "mlp"};
    case RecomputeKind::MlaUpProjMlp: return {"mla_up_proj", "mlp"};
    case RecomputeKind::MoeAct: return {"moe_act"};
    case RecomputeKind::LayernormMoeAct: return {"layernorm", "moe_act"};
    case RecomputeKind::Moe: return {"moe"};
    default: return {};
  }
}

void set_recompute(StrategyConfig& s, RecomputeKind k, int64_t layers) {
  s.enable_recompute = true;
  s.megatron_recompute = false;
  s.megatron_recompute_modules.clear();
  s.megatron_recompute_keys.clear();
  s.recompute_unit_layers = 1;
  s.attn_recompute = s.mla_rms_recompute = s.mlp_recompute = s.mlp_rms_recompute = false;
  s.recompute_granularity.reset();
  s.recompute_layer_num = 0;
  if (k == RecomputeKind::None) return;
  s.recompute_layer_num = layers;
  if (k == RecomputeKind::FullBlock) {
    s.recompute_granularity = "full_block";
    return;
  }
  if (k == RecomputeKind::FullUniform) {  // Megatron's full + uniform, as the strategy reader lowers it
    s.recompute_granularity = "full_block";
    s.recompute_layer_num = kAllLayers;
    s.recompute_unit_layers = 2;
    return;
  }
  // Megatron's selective sets, as the strategy reader lowers --recompute-modules.
  if (std::vector<std::string> mods = megatron_modules(k); !mods.empty()) {
    s.recompute_layer_num = kAllLayers;
    if (mods.size() == 1 && mods[0] == "core_attn") {
      s.recompute_granularity = "sdp_only";
      return;
    }
    s.megatron_recompute = true;
    s.megatron_recompute_modules = std::move(mods);
    return;
  }
  // The peer's search_best_selective_recompute flag sets.
  s.recompute_granularity = "selective_recompute";
  const bool attn = k != RecomputeKind::SelectiveMlp, mlp = k != RecomputeKind::SelectiveAttn;
  s.attn_recompute = s.mla_rms_recompute = attn;
  s.mlp_recompute = s.mlp_rms_recompute = mlp;
}

std::string illegal_reason(const std::vector<Issue>& issues) {
  std::string path = issues.front().path;
  if (!path.empty() && path[0] == '/') path.erase(0, 1);
  std::replace(path.begin(), path.end(), '/', '_');
  return "illegal_" + path;
}

// Shared, read-only inputs of the workers and their progress counters.
struct Shared {
  const ModelConfig& m;
  const SystemConfig& sys;
  const SearchOptions& o;
  const SearchSpace& space;
  int64_t seq_len;
  FitRule rule;
  bool sp_on_in_space;
  double base_time = 0;  // the base plan's time when it fits (candidates faster are counted)
  double bound = std::numeric_limits<double>::infinity();  // no plan slower than this can rank
  std::atomic<int64_t> done{0}, calls{0};
};

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

class Worker {
 public:
  enum class Outcome { Fits, Oom, Error };
  /// The bound pass's estimate of a group's first layout without recompute at one micro batch
  /// size, reused by the main pass for the same plan (same strategy hash).
  struct SeedSlot {
    bool valid = false;
    uint64_t hash = 0;
    Outcome out = Outcome::Error;
    bool static_oom = false;
    Candidate c;
  };
  explicit Worker(Shared& sh) : sh_(sh) {}

  /// Decides every candidate of layout number `index`.
  /// The plan of layout `l` at micro batch size `mbs`, legal and normalized, or the reason it is none.
  std::string prepare(const Layout& l, int64_t mbs, StrategyConfig& out) const;
  /// The bound pass: the time of `l` (a group's preferred layout) without recompute at every micro
  /// batch size into lb[mbs index] (0 where it is no plan); the feasible ones into seeds().
  void seed(const Layout& l, size_t index, double* lb, SeedSlot* slots);
  std::vector<double>& seeds() { return seeds_; }
  void set_lower_bounds(const double* lb) { lb_ = lb; }
  /// `ladder[mbs index][recompute kind]`: an earlier layout of the ladder group fits there.
  /// `seeds`: the bound pass's slots of this layout (its group's first), per mbs, or nullptr.
  void run_layout(const Layout& l, size_t index, std::vector<std::array<bool, kRecomputeKinds>>& ladder,
                  SeedSlot* seeds = nullptr);
  std::vector<Candidate>& kept() { return kept_; }
  std::vector<Candidate>& front() { return front_; }
  std::map<std::string, int64_t>& rejected() { return rejected_; }
  [[nodiscard]] int64_t feasible() const { return feasible_; }
  [[nodiscard]] int64_t faster_than_base() const { return faster_than_base_; }
  /// Layout index and message of this worker's first estimate error (index SIZE_MAX if none).
  [[nodiscard]] std::pair<size_t, std::string> first_error() const {
    return {error_layout_, first_error_};
  }

 private:
  StrategyConfig layout_strategy(const Layout& l, int64_t mbs, bool& expressible) const;
  /// Estimates `s`; fills `out` when it fits. Sets static_oom when weights, gradients and
  /// optimizer states alone exceed the limit.
  Outcome evaluate(const StrategyConfig& s, RecomputeKind k, PipelineSplit split, bool& static_oom,
                   Candidate& out, double* time = nullptr);
  void keep(Candidate c);
  void reject(const std::string& reason, int64_t n) {
    rejected_[reason] += n;
    sh_.done.fetch_add(n, std::memory_order_relaxed);
  }

  Shared& sh_;
  EstimateCache cache_;  // chunk results shared by this worker's candidates
  std::vector<Candidate> kept_;  // heap (worst on top) when keep > 0
  std::vector<Candidate> front_;  // time × memory Pareto front of this worker's feasible plans
  std::map<std::string, int64_t> rejected_;
  int64_t feasible_ = 0, faster_than_base_ = 0;
  std::vector<double> seeds_;
  const double* lb_ = nullptr;  // lower bounds of the current group per mbs (bound pass)
  size_t layout_ = 0, error_layout_ = SIZE_MAX;
  std::string first_error_;
};

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

Worker::Outcome Worker::evaluate(const StrategyConfig& s, RecomputeKind k, PipelineSplit split,
                                 bool& static_oom, Candidate& out, double* time) {
  sh_.calls.fetch_add(1, std::memory_order_relaxed);
  Estimate e;
  try {
    e = estimate(sh_.m, s, sh_.sys, &cache_, sh_.o.mode, /*events=*/false);
    require_finite(e, PlanSources{});
  } catch (const std::exception& err) {
    if (layout_ < error_layout_) {
      error_layout_ = layout_;
      first_error_ = err.what();
    }
    return Outcome::Error;
  }
  if (time != nullptr) *time = e.iteration_time_s;
  // The reserve on the weights, gradients and optimizer states alone (the estimate's rule).
  const double scale = !sh_.rule.use_reserved         ? 1.0
                       : sh_.o.mode == Mode::SimuMax12 ? 1.0 / s.mem_factor
                                                       : 1.0 + sh_.sys.allocator_fragmentation;
  // Weights, gradients and optimizer states (and the memory outside PyTorch) do not depend on the
  // micro batch or recompute: when they alone exceed the limit, no variant of this layout fits.
  for (const auto& st : e.stages)
    static_oom = static_oom || st.model_bytes * scale > sh_.rule.stage_limit_bytes(st);
  if (!fit_verdict(e, sh_.rule).fits) return Outcome::Oom;
  const double peak = sh_.rule.use_reserved ? e.peak_reserved_bytes() : e.peak_alloc_bytes();
  out.strategy = s;
  out.split = split;
  out.recompute = k;
  out.iteration_time_s = e.iteration_time_s;
  const Throughput t = sh_.o.mfu == MfuConvention::Megatron ? megatron_throughput(sh_.m, s, sh_.sys, e)
                                                            : Throughput{e.tflops_per_gpu, e.mfu};
  out.mfu = t.mfu;
  out.tflops_per_gpu = t.tflops_per_gpu;
  out.tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
  out.peak_bytes = peak;
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

void Worker::seed(const Layout& l, size_t index, double* lb, SeedSlot* slots) {
  layout_ = index;
  for (size_t mi = 0; mi < sh_.space.mbs.size(); ++mi) {
    StrategyConfig s;
    const std::string why = prepare(l, sh_.space.mbs[mi], s);
    if (!why.empty() && why != "duplicate") continue;
    SeedSlot& slot = slots[mi];
    double t = 0;
    slot.out = evaluate(s, RecomputeKind::None, l.split, slot.static_oom, slot.c, &t);
    if (slot.out == Outcome::Error) continue;  // decided (and reported) in the main pass
    lb[mi] = t;
    if (slot.out == Outcome::Fits) seeds_.push_back(t);
    // The main pass decides a duplicate's twin itself; the plan here is this layout's own.
    slot.valid = why.empty();
    slot.hash = strategy_hash(s);
  }
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
    // Layers of the largest chunk: selective recompute covers them all and bounds the
    // full_block binary search (the peer uses ceil(L/pp)).
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
    chunk_layers = std::max<int64_t>(chunk_layers, 1);

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
        if (out == Outcome::Fits) c = std::move(seeds[mi].c);
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

// The base strategy as given: its own sizes, split, micro batches and switches (moot ones off, as
// perf does), on the search's world size and global batch.
BaseResult evaluate_base(const ModelConfig& m, const SystemConfig& sys, const SearchOptions& o, const FitRule& rule,
                         int64_t seq_len) {
  BaseResult b;
  StrategyConfig s = o.base;
  s.seq_len = seq_len;
  s.world_size = o.world_size;
  try {
    if (s.tp_size * s.cp_size * s.pp_size < 1 || o.world_size % (s.tp_size * s.cp_size * s.pp_size) != 0 ||
        s.micro_batch_size < 1 || o.global_batch % (s.dp_size() * s.micro_batch_size) != 0)
      throw ConfigError("base", "/micro_batch_size",
                        strprintf("dp·mbs = %lld does not divide the global batch %lld",
                                  static_cast<long long>(s.dp_size() * s.micro_batch_size),
                                  static_cast<long long>(o.global_batch)));
    s.micro_batch_num = o.global_batch / (s.dp_size() * s.micro_batch_size);
    (void)normalize_strategy(m, s, o.mode);
    Estimate e = estimate(m, s, sys, nullptr, o.mode);
    require_finite(e, PlanSources{});
    b.evaluated = true;
    b.fits = fit_verdict(e, rule).fits;
    Candidate& c = b.plan;
    c.strategy = s;
    // Its recompute in the search's names where it is one of them ("as given" otherwise).
    c.recompute = RecomputeKind::None;
    if (s.is_recompute()) {
      c.recompute = static_cast<RecomputeKind>(kRecomputeKinds);  // none of the search's choices
      if (s.recompute_granularity == std::optional<std::string>("full_block"))
        c.recompute = s.recompute_layer_num >= kAllLayers && s.recompute_unit_layers > 1 ? RecomputeKind::FullUniform
                                                                                         : RecomputeKind::FullBlock;
      if (s.recompute_granularity == std::optional<std::string>("sdp_only")) c.recompute = RecomputeKind::CoreAttn;
      for (size_t k = 0; k < kRecomputeKinds; ++k)
        if (s.megatron_recompute && !megatron_modules(static_cast<RecomputeKind>(k)).empty() &&
            megatron_modules(static_cast<RecomputeKind>(k)) == s.megatron_recompute_modules)
          c.recompute = static_cast<RecomputeKind>(k);
    }
    c.split = s.pipeline_model_parallel_layout || s.account_for_embedding_in_pipeline_split ||
                      s.account_for_loss_in_pipeline_split
                  ? PipelineSplit::Balanced
              : s.num_layers_in_last_pipeline_stage  ? PipelineSplit::UnevenLast
              : s.num_layers_in_first_pipeline_stage ? PipelineSplit::UnevenFirst
                                                     : PipelineSplit::Even;
    c.iteration_time_s = e.iteration_time_s;
    const Throughput t = o.mfu == MfuConvention::Megatron ? megatron_throughput(m, s, sys, e)
                                                          : Throughput{e.tflops_per_gpu, e.mfu};
    c.mfu = t.mfu;
    c.tflops_per_gpu = t.tflops_per_gpu;
    c.tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
    c.peak_bytes = rule.use_reserved ? e.peak_reserved_bytes() : e.peak_alloc_bytes();
    c.straggler_ratio = e.straggler_ratio;
    c.stage_times = std::move(e.stage_times);
    c.stages = std::move(e.stages);
  } catch (const std::exception& err) {
    b.error = err.what();
  }
  return b;
}

}  // namespace

const char* recompute_kind_name(RecomputeKind k) {
  switch (k) {
    case RecomputeKind::None:
      return "none";
    case RecomputeKind::FullBlock:
      return "full_block";
    case RecomputeKind::SelectiveAll:
      return "selective_all";
    case RecomputeKind::SelectiveAttn:
      return "selective_attn";
    case RecomputeKind::SelectiveMlp:
      return "selective_mlp";
    case RecomputeKind::CoreAttn:
      return "core_attn";
    case RecomputeKind::CoreAttnMlp:
      return "core_attn+mlp";
    case RecomputeKind::MlaUpProjMlp:
      return "mla_up_proj+mlp";
    case RecomputeKind::MoeAct:
      return "moe_act";
    case RecomputeKind::LayernormMoeAct:
      return "layernorm+moe_act";
    case RecomputeKind::Moe:
      return "moe";
    case RecomputeKind::FullUniform:
      return "full_uniform";
  }
  return "as given";
}

const char* pipeline_split_name(PipelineSplit s) {
  switch (s) {
    case PipelineSplit::Even:
      return "even";
    case PipelineSplit::UnevenLast:
      return "uneven_last";
    case PipelineSplit::UnevenFirst:
      return "uneven_first";
    case PipelineSplit::Balanced:
      return "balanced";
  }
  return "?";
}

SearchSpace default_search_space(const ModelConfig& m, const SystemConfig& sys, int64_t world_size,
                                 SearchSpace space, Mode mode, int64_t seq_len) {
  const bool compat = mode == Mode::SimuMax12;
  // SimuMax v1.2 models MLA with tp 1 only; Megatron splits it like any attention.
  if (space.tp.empty())
    space.tp = m.is_mla() && compat ? std::vector<int64_t>{1} : powers_of_two_up_to(sys.num_per_node);
  if (space.pp.empty())
    for (int64_t p = 1; p <= std::min(m.layer_num, world_size); ++p) space.pp.push_back(p);
  // Context parallelism for long sequences: one doubling per 4096 tokens beyond the first, up to 8.
  if (space.cp.empty()) {
    space.cp = {1};
    if (!compat)
      for (int64_t c = 2; c <= 8 && c * 4096 <= seq_len; c *= 2) space.cp.push_back(c);
  }
  if (space.cp_comm.empty())
    space.cp_comm = compat ? std::vector<std::string>{"a2a"}
                           : std::vector<std::string>{"p2p", "a2a", "all_gather", "a2a+p2p"};
  if (space.ep.empty())
    space.ep = m.is_moe() ? powers_of_two_up_to(std::min(m.expert_num, world_size))
                          : std::vector<int64_t>{1};
  if (space.etp.empty()) space.etp = {1};
  if (space.vpp.empty()) space.vpp = compat ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 2, 4, 8};
  if (space.mbs.empty()) space.mbs = {1, 2, 4};
  if (space.zero.empty()) space.zero = compat ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 3};
  if (space.recompute.empty()) {
    if (compat) {
      space.recompute = {RecomputeKind::None, RecomputeKind::FullBlock, RecomputeKind::SelectiveAll,
                         RecomputeKind::SelectiveAttn, RecomputeKind::SelectiveMlp};
    } else {
      space.recompute = {RecomputeKind::None, RecomputeKind::FullBlock, RecomputeKind::CoreAttn,
                         RecomputeKind::FullUniform};
      if (!m.is_moe() || m.moe_layers_in(0, m.layer_num) < m.layer_num) space.recompute.push_back(RecomputeKind::CoreAttnMlp);
      if (m.is_mla()) space.recompute.push_back(RecomputeKind::MlaUpProjMlp);
      if (m.is_moe())
        space.recompute.insert(space.recompute.end(),
                               {RecomputeKind::MoeAct, RecomputeKind::LayernormMoeAct, RecomputeKind::Moe});
    }
  }
  if (space.sp.empty()) space.sp = {true};
  if (space.dispatcher.empty())
    space.dispatcher = m.is_moe() && !compat ? std::vector<std::string>{"alltoall", "allgather", "deepep", "hybridep"}
                                             : std::vector<std::string>{"base"};
  if (space.a2a_overlap.empty())
    space.a2a_overlap = m.is_moe() && !compat ? std::vector<bool>{true, false} : std::vector<bool>{false};
  return space;
}

SearchResult search(const ModelConfig& m, const SystemConfig& sys, const SearchSpace& space_in,
                    const SearchOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  auto bad = [](const std::string& path, const std::string& msg) {
    throw ConfigError("search", path, msg);
  };
  // The same bounds as the strategy reader, so products of sizes cannot overflow.
  if (o.world_size < 1 || o.world_size > (int64_t{1} << 24))
    bad("/world_size", "must be in 1..16777216, got " + std::to_string(o.world_size));
  if (o.global_batch < 1 || o.global_batch > (int64_t{1} << 30))
    bad("/global_batch", "must be in 1..1073741824, got " + std::to_string(o.global_batch));
  if (o.keep < 0) bad("/keep", "must be 0 (all) or more, got " + std::to_string(o.keep));
  // The fit rule of perf (estimate/fit.h), with the search's margin when one is given.
  FitRule rule = fit_rule(sys, o.mode);
  rule.use_reserved = o.use_reserved;
  if (o.gmi_error_gib) {
    if (!(*o.gmi_error_gib >= 0)) bad("/gmi_error", "must be a non-negative number of GiB");
    rule.unusable_bytes = *o.gmi_error_gib * kGiB;
    rule.stage_non_tensor = false;  // the given margin replaces the estimate's terms
  }
  const double limit = rule.limit_bytes();
  if (limit <= 0)
    bad("/gmi_error", strprintf("%g GiB leaves no memory on a %g GiB device", rule.unusable_bytes / kGiB,
                                sys.mem_bytes / kGiB));

  const int64_t seq_len = o.base.seq_len > 0 ? o.base.seq_len : 4096;
  SearchSpace space = default_search_space(m, sys, o.world_size, space_in, o.mode, seq_len);
  // A search started from a plan (rank_base) has that plan's values in every default dimension, so
  // that the plan's own layout is a candidate.
  if (o.rank_base && o.mode == Mode::Default) {
    const StrategyConfig& b = o.base;
    auto add = [](std::vector<int64_t>& v, const std::vector<int64_t>& given, int64_t x) {
      if (given.empty() && x >= 1 && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
    };
    add(space.tp, space_in.tp, b.tp_size);
    add(space.cp, space_in.cp, b.cp_size);
    add(space.pp, space_in.pp, b.pp_size);
    add(space.ep, space_in.ep, b.ep_size);
    add(space.etp, space_in.etp, b.etp_size);
    add(space.vpp, space_in.vpp, virtual_stages_per_rank(m, b));
    add(space.mbs, space_in.mbs, b.micro_batch_size);
    if (space_in.zero.empty() && std::find(space.zero.begin(), space.zero.end(), b.zero_state) == space.zero.end())
      space.zero.push_back(b.zero_state);
    if (space_in.cp_comm.empty() && b.cp_size > 1 &&
        std::find(space.cp_comm.begin(), space.cp_comm.end(), b.cp_comm_type) == space.cp_comm.end())
      space.cp_comm.push_back(b.cp_comm_type);
  }
  auto tidy = [&](std::vector<int64_t>& v, const char* name, int64_t lo, int64_t hi) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    if (v.empty()) bad(std::string("/") + name, "needs at least one value");
    if (v.front() < lo || v.back() > hi)
      bad(std::string("/") + name,
          strprintf("values must be in %lld..%lld", static_cast<long long>(lo),
                    static_cast<long long>(hi)));
  };
  const int64_t kMax = int64_t{1} << 16;
  tidy(space.tp, "tp", 1, kMax);
  tidy(space.pp, "pp", 1, int64_t{1} << 12);
  tidy(space.cp, "cp", 1, kMax);
  tidy(space.ep, "ep", 1, kMax);
  tidy(space.etp, "etp", 1, kMax);
  tidy(space.vpp, "vpp", 1, int64_t{1} << 8);
  tidy(space.mbs, "mbs", 1, kMax);  // ascending: the out-of-memory pruning relies on it
  tidy(space.zero, "zero", 0, 3);
  std::sort(space.recompute.begin(), space.recompute.end());
  space.recompute.erase(std::unique(space.recompute.begin(), space.recompute.end()),
                        space.recompute.end());
  std::sort(space.sp.begin(), space.sp.end(), std::greater<>());
  space.sp.erase(std::unique(space.sp.begin(), space.sp.end()), space.sp.end());
  std::sort(space.a2a_overlap.begin(), space.a2a_overlap.end(), std::greater<>());
  space.a2a_overlap.erase(std::unique(space.a2a_overlap.begin(), space.a2a_overlap.end()), space.a2a_overlap.end());
  auto tidy_names = [&](std::vector<std::string>& v, const char* name, const std::vector<std::string>& valid) {
    std::vector<std::string> out;  // first occurrence order: the first value is the preferred twin
    for (const auto& x : v) {
      if (std::find(valid.begin(), valid.end(), x) == valid.end())
        bad(std::string("/") + name, "unknown value '" + x + "'; valid values: " + join(valid));
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    }
    if (out.empty()) bad(std::string("/") + name, "needs at least one value");
    v = std::move(out);
  };
  tidy_names(space.cp_comm, "cp_comm", {"p2p", "a2a", "all_gather", "a2a+p2p"});
  tidy_names(space.dispatcher, "dispatcher", {"base", "alltoall", "allgather", "deepep", "hybridep"});

  // Layouts are decoded from their index (tp outermost, sp innermost) rather than stored, so
  // memory stays bounded whatever the space; the space itself is capped.
  std::vector<std::pair<int64_t, PipelineSplit>> pp_splits;
  auto split_on = [&](PipelineSplit x) {
    return space.splits.empty() || std::find(space.splits.begin(), space.splits.end(), x) != space.splits.end();
  };
  for (int64_t pp : space.pp) {
    if (pp > 1 && o.mode == Mode::Default && split_on(PipelineSplit::Balanced))
      pp_splits.emplace_back(pp, PipelineSplit::Balanced);
    if (pp == 1 || m.layer_num % pp == 0) {
      if (split_on(PipelineSplit::Even) || pp == 1) pp_splits.emplace_back(pp, PipelineSplit::Even);
      continue;
    }
    const int64_t per = (m.layer_num + pp - 1) / pp;
    if (split_on(PipelineSplit::UnevenLast)) pp_splits.emplace_back(pp, PipelineSplit::UnevenLast);
    if (m.layer_num - per * (pp - 1) > 0 && split_on(PipelineSplit::UnevenFirst))
      pp_splits.emplace_back(pp, PipelineSplit::UnevenFirst);
  }
  // The space is capped on its sizes (the switches multiply it by at most 40).
  const size_t radix[] = {space.tp.size(),  space.cp.size(),  pp_splits.size(),  space.ep.size(),
                          space.etp.size(), space.vpp.size(), space.zero.size(), space.sp.size(),
                          space.mbs.size(), std::max<size_t>(1, space.recompute.size())};
  uint64_t sized = 1;  // each factor ≤ 2^17 and the product stops at the cap: no overflow
  for (size_t n : radix) {
    sized *= n;
    if (sized > kMaxSearchCandidates)
      bad("/space", strprintf("more than %lld candidates; give fewer values to --tp, --pp, --cp, --ep, "
                              "--etp, --vpp, --mbs, --zero or --recompute",
                              static_cast<long long>(kMaxSearchCandidates)));
  }
  const auto switches = static_cast<int64_t>(space.cp_comm.size() * space.dispatcher.size() * space.a2a_overlap.size());
  const int64_t per_layout = static_cast<int64_t>(space.mbs.size() * space.recompute.size());
  int64_t total = 0;  // counted below: each switch only where it can act
  // keep 0 keeps every feasible candidate: only for spaces small enough to hold in memory.
  if ((o.keep == 0 || o.keep > kMaxKeep) && sized * static_cast<uint64_t>(switches) > static_cast<uint64_t>(kMaxKeep))
    bad("/keep", strprintf("keeping %s of %llu candidates; at most %lld can be kept",
                           o.keep == 0 ? "all" : std::to_string(o.keep).c_str(),
                           static_cast<unsigned long long>(sized * static_cast<uint64_t>(switches)),
                           static_cast<long long>(kMaxKeep)));
  // The layouts worth deciding: a switch is varied only where it can act (cp_comm_type with CP,
  // the dispatcher with experts exchanged, the EP overlap with EP, sequence parallel with TP); the
  // other combinations are twins (duplicate), and sizes that do not factor the world are illegal.
  std::vector<Layout> layouts;
  std::map<std::string, int64_t> pre_rejected;
  const bool sp_on_in_space = space.sp.front();
  // Ladder groups: layouts that differ only in the EP overlap, on before off: the later one is
  // estimated at a (micro batch, recompute) only where the earlier one does not fit
  // (switch_not_needed). ZeRO stages are not laddered: ZeRO 3 can be faster than ZeRO 1 (its
  // optimizer step updates a shard).
  std::vector<int64_t> zero_order;
  for (int64_t z : {1, 2, 3, 0})
    if (std::find(space.zero.begin(), space.zero.end(), z) != space.zero.end()) zero_order.push_back(z);
  std::vector<std::pair<size_t, size_t>> groups;  // [start, count) in `layouts`
  for (int64_t tp : space.tp)
    for (int64_t cp : space.cp)
      for (const auto& [pp, split] : pp_splits)
        for (int64_t ep : space.ep)
          for (int64_t etp : space.etp)
            for (int64_t vpp : space.vpp)
              for (bool sp : space.sp) {
                const auto n_zero = static_cast<int64_t>(zero_order.size());
                const size_t n_cpc = cp > 1 ? space.cp_comm.size() : 1;
                const size_t n_disp = m.is_moe() && ep * etp > 1 ? space.dispatcher.size() : 1;
                const size_t n_a2a = m.is_moe() && ep > 1 ? space.a2a_overlap.size() : 1;
                const auto here = n_zero * static_cast<int64_t>(n_cpc * n_disp * n_a2a) * per_layout;
                total += here;
                if (o.world_size % (tp * cp * pp) != 0) {
                  pre_rejected["illegal_world_size"] += here;
                  continue;
                }
                if (!sp && tp == 1 && sp_on_in_space) {
                  pre_rejected["duplicate"] += here;
                  continue;
                }
                for (size_t c = 0; c < n_cpc; ++c)
                  for (size_t d = 0; d < n_disp; ++d)
                    for (int64_t zero : zero_order) {
                      groups.emplace_back(layouts.size(), 0);
                      for (size_t a = 0; a < n_a2a; ++a)
                        layouts.push_back(Layout{tp, cp, pp, split, ep, etp, vpp, zero, sp, c, d, space.a2a_overlap[a]});
                      groups.back().second = layouts.size() - groups.back().first;
                    }
              }
  const size_t n_layouts = groups.size();

  Shared sh{m, sys, o, space, seq_len, rule, sp_on_in_space};
  for (const auto& [reason, n] : pre_rejected) sh.done += n;
  SearchResult r;
  if (o.rank_base) {
    r.base = evaluate_base(m, sys, o, rule, seq_len);
    if (r.base.fits) sh.base_time = r.base.plan.iteration_time_s;
  }
  r.memory_limit_bytes = limit;
  r.unusable_memory_bytes = rule.unusable_bytes;
  r.per_plan_non_tensor = rule.stage_non_tensor;
  unsigned hw = std::thread::hardware_concurrency();
  int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, hw));
  threads = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(1, n_layouts)));
  r.threads = threads;

  std::vector<Worker> workers(static_cast<size_t>(threads), Worker(sh));
  // Runs body(worker, group index) over every group on the worker threads. A worker that throws
  // (a bug, or out of memory) stops taking groups; the first exception is rethrown after every
  // thread has joined.
  auto run_pass = [&](const std::function<void(Worker&, size_t)>& body) {
    std::atomic<size_t> next{0};
    std::mutex mu;
    std::condition_variable cv;
    int running = threads;
    std::vector<std::thread> pool;
    std::exception_ptr failure;
    for (auto& w : workers)
      pool.emplace_back([&, wp = &w] {
        try {
          for (size_t i; (i = next.fetch_add(1)) < n_layouts;) body(*wp, i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (!failure) failure = std::current_exception();
          next.store(n_layouts);
        }
        std::lock_guard<std::mutex> lock(mu);
        --running;
        cv.notify_all();
      });
    {
      std::unique_lock<std::mutex> lock(mu);
      const auto interval = std::chrono::duration<double>(std::max(0.01, o.progress_interval_s));
      while (!cv.wait_for(lock, interval, [&] { return running == 0; }))
        if (o.progress)
          o.progress({sh.done.load(), total, sh.calls.load(),
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
    }
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
  };
  // Branch and bound (ranking by time or tokens, a bounded top-k): first each group's preferred
  // layout without recompute at every micro batch size. Recompute, the EP overlap off and more
  // sharding only add time, so that time bounds the whole (group, mbs) from below; the k'-th best
  // feasible one of these plans bounds the answer from above (k' = the kept pool, and never below
  // the base plan's time, so that its rank stays exact). The bound is fixed before the main pass:
  // the result does not depend on the thread count.
  std::vector<double> lower_bounds;
  std::vector<Worker::SeedSlot> seed_slots;
  const size_t pool_size = o.keep == 0 ? 0 : static_cast<size_t>(o.keep) * (o.collapse_within > 0 ? kCollapsePool : 1);
  if (o.branch_and_bound && pool_size > 0 && o.rank_by != RankBy::Mfu) {
    lower_bounds.assign(n_layouts * space.mbs.size(), 0.0);
    seed_slots.resize(n_layouts * space.mbs.size());
    run_pass([&](Worker& w, size_t i) {
      w.seed(layouts[groups[i].first], groups[i].first, &lower_bounds[i * space.mbs.size()],
             &seed_slots[i * space.mbs.size()]);
    });
    std::vector<double> seeds;
    for (auto& w : workers) seeds.insert(seeds.end(), w.seeds().begin(), w.seeds().end());
    std::sort(seeds.begin(), seeds.end());
    if (seeds.size() >= pool_size) sh.bound = std::max(seeds[pool_size - 1], sh.base_time);
    r.time_bound_s = sh.bound;
  }
  run_pass([&](Worker& w, size_t i) {
    std::vector<std::array<bool, kRecomputeKinds>> ladder(space.mbs.size());
    w.set_lower_bounds(lower_bounds.empty() ? nullptr : &lower_bounds[i * space.mbs.size()]);
    for (size_t j = 0; j < groups[i].second; ++j)
      w.run_layout(layouts[groups[i].first + j], groups[i].first + j, ladder,
                   j == 0 && !seed_slots.empty() ? &seed_slots[i * space.mbs.size()] : nullptr);
  });

  size_t error_layout = SIZE_MAX;
  int64_t faster = 0;
  r.rejected_by_reason = pre_rejected;
  for (auto& w : workers) {
    faster += w.faster_than_base();
    std::move(w.front().begin(), w.front().end(), std::back_inserter(r.pareto));
    std::move(w.kept().begin(), w.kept().end(), std::back_inserter(r.candidates));
    for (const auto& [reason, n] : w.rejected()) r.rejected_by_reason[reason] += n;
    r.feasible += w.feasible();
    if (auto [index, message] = w.first_error(); index < error_layout) {
      error_layout = index;
      r.first_estimate_error = message;
    }
  }
  if (r.base.fits) r.base.rank = 1 + faster;
  // The merged fronts: fastest first, each plan using less memory than every faster one.
  std::sort(r.pareto.begin(), r.pareto.end(), Better{RankBy::Time});
  {
    std::vector<Candidate> front;
    for (auto& c : r.pareto)
      if (front.empty() || c.peak_bytes < front.back().peak_bytes) front.push_back(std::move(c));
    r.pareto = std::move(front);
  }
  std::sort(r.candidates.begin(), r.candidates.end(), Better{o.rank_by});
  // Diverse top-k: a plan with the same sizes and micro batch as a better kept one, within
  // collapse_within of its time, differs only in switches and is folded into it.
  if (o.collapse_within > 0) {
    std::vector<Candidate> diverse;
    auto core = [&](const Candidate& c) {
      const StrategyConfig& s = c.strategy;
      return std::make_tuple(s.tp_size, s.cp_size, s.pp_size, s.ep_size, s.etp_size, virtual_stages_per_rank(m, s),
                             s.micro_batch_size);
    };
    for (auto& c : r.candidates) {
      auto it = std::find_if(diverse.begin(), diverse.end(), [&](const Candidate& d) {
        return core(d) == core(c) && std::abs(c.iteration_time_s - d.iteration_time_s) <= o.collapse_within * d.iteration_time_s;
      });
      if (it != diverse.end()) {
        ++it->variants;
        ++r.collapsed;
      } else {
        diverse.push_back(std::move(c));
      }
    }
    r.candidates = std::move(diverse);
  }
  if (o.keep > 0 && r.candidates.size() > static_cast<size_t>(o.keep))
    r.candidates.resize(static_cast<size_t>(o.keep));
  // The plans reported are estimated once more as perf estimates them (no cache, the timeline's
  // events recorded): the search's estimates without events can differ from perf's in the last
  // bits (5.054803111003993 s against 5.054803111003995 s for a Llama 3 8B plan with CP 4 and
  // ZeRO 3), and the reported time and memory must be perf's exactly.
  auto cold = [&](Candidate& c) {
    Estimate e = estimate(m, c.strategy, sys, nullptr, o.mode);
    c.iteration_time_s = e.iteration_time_s;
    const Throughput t = o.mfu == MfuConvention::Megatron ? megatron_throughput(m, c.strategy, sys, e)
                                                          : Throughput{e.tflops_per_gpu, e.mfu};
    c.mfu = t.mfu;
    c.tflops_per_gpu = t.tflops_per_gpu;
    c.tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
    c.peak_bytes = rule.use_reserved ? e.peak_reserved_bytes() : e.peak_alloc_bytes();
    c.straggler_ratio = e.straggler_ratio;
    c.stage_times = std::move(e.stage_times);
    c.stages = std::move(e.stages);
  };
  for (Candidate& c : r.candidates) cold(c);
  for (Candidate& c : r.pareto) cold(c);
  std::stable_sort(r.candidates.begin(), r.candidates.end(), Better{o.rank_by});
  r.collapsed = 0;  // the variants folded into the plans shown
  for (const Candidate& c : r.candidates) r.collapsed += c.variants;
  r.evaluated = total;
  r.estimate_calls = sh.calls.load();
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  TRAINSIM_ASSERT(sh.done.load() == total, "every candidate is either kept or rejected");
  // Offloading only when nothing fits without it: the optimizer states go to host memory.
  if (r.feasible == 0 && o.offload_when_nothing_fits && o.mode == Mode::Default && !o.base.optimizer_cpu_offload) {
    SearchOptions off = o;
    off.base.optimizer_cpu_offload = true;
    off.base.optimizer_offload_fraction = 1.0;
    off.offload_when_nothing_fits = false;
    off.rank_base = false;
    SearchResult again = search(m, sys, space_in, off);
    again.base = std::move(r.base);
    if (again.base.fits) again.base.rank = 1 + static_cast<int64_t>(std::count_if(
        again.pareto.begin(), again.pareto.end(),
        [&](const Candidate& c) { return c.iteration_time_s < again.base.plan.iteration_time_s; }));
    again.offloaded = true;
    again.estimate_calls += r.estimate_calls;
    again.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return again;
  }
  return r;
}

}  // namespace trainsim
