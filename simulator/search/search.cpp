// Strategy search. Work unit = one parallel layout (tp, cp, pp, split, ep, etp, vpp, zero, sp);
// inside it micro batch sizes go up and recompute is tried only when the plan does not fit
// without it, so most candidates are decided without an estimate() call.
#include "search/search.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <iterator>
#include <mutex>
#include <thread>
#include <tuple>

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
};

std::vector<int64_t> powers_of_two_up_to(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= n; v *= 2) out.push_back(v);
  return out;
}

// Total order on the searched parameters: the tie-break that makes results independent of
// evaluation order.
auto plan_key(const Candidate& c) {
  const StrategyConfig& s = c.strategy;
  return std::make_tuple(s.tp_size, s.cp_size, s.pp_size, static_cast<int>(c.split), s.ep_size,
                         s.etp_size, s.interleaving_size, s.zero_state, !s.enable_sequence_parallel,
                         s.micro_batch_size, static_cast<int>(c.recompute), s.recompute_layer_num);
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

void set_recompute(StrategyConfig& s, RecomputeKind k, int64_t layers) {
  s.enable_recompute = true;
  s.megatron_recompute = false;
  s.megatron_recompute_modules.clear();
  s.attn_recompute = s.mla_rms_recompute = s.mlp_recompute = s.mlp_rms_recompute = false;
  s.recompute_granularity.reset();
  s.recompute_layer_num = 0;
  if (k == RecomputeKind::None) return;
  s.recompute_layer_num = layers;
  if (k == RecomputeKind::FullBlock) {
    s.recompute_granularity = "full_block";
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
  std::atomic<int64_t> done{0}, calls{0};
};

class Worker {
 public:
  explicit Worker(Shared& sh) : sh_(sh) {}

  /// Decides every candidate of layout number `index`.
  void run_layout(const Layout& l, size_t index);
  std::vector<Candidate>& kept() { return kept_; }
  std::map<std::string, int64_t>& rejected() { return rejected_; }
  [[nodiscard]] int64_t feasible() const { return feasible_; }
  /// Layout index and message of this worker's first estimate error (index SIZE_MAX if none).
  [[nodiscard]] std::pair<size_t, std::string> first_error() const {
    return {error_layout_, first_error_};
  }

 private:
  enum class Outcome { Fits, Oom, Error };
  StrategyConfig layout_strategy(const Layout& l, int64_t mbs, bool& expressible) const;
  /// Estimates `s`; fills `out` when it fits. Sets static_oom when weights, gradients and
  /// optimizer states alone exceed the limit.
  Outcome evaluate(const StrategyConfig& s, RecomputeKind k, PipelineSplit split, bool& static_oom,
                   Candidate& out);
  void keep(Candidate c);
  void reject(const std::string& reason, int64_t n) {
    rejected_[reason] += n;
    sh_.done.fetch_add(n, std::memory_order_relaxed);
  }

  Shared& sh_;
  EstimateCache cache_;  // chunk results shared by this worker's candidates
  std::vector<Candidate> kept_;  // heap (worst on top) when keep > 0
  std::map<std::string, int64_t> rejected_;
  int64_t feasible_ = 0;
  size_t layout_ = 0, error_layout_ = SIZE_MAX;
  std::string first_error_;
};

StrategyConfig Worker::layout_strategy(const Layout& l, int64_t mbs, bool& expressible) const {
  StrategyConfig s = sh_.o.base;
  s.world_size = sh_.o.world_size;
  s.seq_len = sh_.seq_len;
  s.tp_size = l.tp;
  s.cp_size = l.cp;
  s.pp_size = l.pp;
  s.ep_size = l.ep;
  s.etp_size = l.etp;
  s.interleaving_size = l.vpp;
  if (l.cp == 1) {
    // A CP flavour changes nothing without CP (compat mode rejects it there).
    s.cp_comm_type = "a2a";
    s.hierarchical_context_parallel_sizes.clear();
  } else if (sh_.o.mode == Mode::Default && s.cp_comm_type == "a2a") {
    // Where all-to-all CP cannot split the heads (TP8 × CP2 on 8 KV heads), Megatron's default
    // ring (p2p) runs.
    const ModelConfig& m = sh_.m;
    const bool tp_ok = m.head_num % l.tp == 0 && m.kv_head_num % l.tp == 0;
    if (tp_ok && ((m.head_num / l.tp) % l.cp != 0 || (m.kv_head_num / l.tp) % l.cp != 0)) s.cp_comm_type = "p2p";
  }
  s.microbatch_group_size_per_vp_stage.reset();
  // SimuMax 1.2 models only the synchronous interleaved schedule; Megatron overlaps its p2p.
  if (l.vpp > 1 && sh_.o.mode == Mode::SimuMax12) s.pp_comm_async = false;
  s.zero_state = l.zero;
  s.enable_sequence_parallel = l.sp;
  s.micro_batch_size = mbs;
  s.micro_batch_num = 1;
  s.num_layers_in_first_pipeline_stage.reset();
  s.num_layers_in_last_pipeline_stage.reset();
  // The search chooses the split and the virtual stages itself.
  s.pipeline_model_parallel_layout.reset();
  s.num_layers_per_virtual_pipeline_stage.reset();
  set_recompute(s, RecomputeKind::None, 0);
  expressible = true;
  if (l.split != PipelineSplit::Even) {
    const int64_t layers = sh_.m.layer_num, per = (layers + l.pp - 1) / l.pp;
    const int64_t rest = layers - per * (l.pp - 1);
    expressible = rest > 0;
    if (l.split == PipelineSplit::UnevenLast)
      s.num_layers_in_last_pipeline_stage = rest;
    else
      s.num_layers_in_first_pipeline_stage = rest;
  }
  return s;
}

void Worker::keep(Candidate c) {
  ++feasible_;
  const Better better{sh_.o.rank_by};
  const auto keep_n = static_cast<size_t>(sh_.o.keep);
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
                                 bool& static_oom, Candidate& out) {
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
  out.stage_times = std::move(e.stage_times);
  out.stages = std::move(e.stages);
  return Outcome::Fits;
}

void Worker::run_layout(const Layout& l, size_t index) {
  layout_ = index;
  const std::vector<RecomputeKind>& kinds = sh_.space.recompute;
  const auto n_kinds = static_cast<int64_t>(kinds.size());
  // Sequence parallel has no effect with tp 1: the sp-off twin of an sp-on plan is skipped.
  if (!l.sp && l.tp == 1 && sh_.sp_on_in_space) {
    reject("duplicate", n_kinds * static_cast<int64_t>(sh_.space.mbs.size()));
    return;
  }
  // Memory grows with the micro batch size for a fixed recompute choice, so what was over the
  // limit at a smaller mbs stays over it (the brute-force test checks this pruning).
  bool static_oom = false;          // weights, grads and optimizer states alone do not fit
  std::array<bool, 5> oom_below{};  // per RecomputeKind: over the limit at a smaller mbs
  int64_t full_block_min = 1;       // fewest full_block layers that fit at a smaller mbs
  for (int64_t mbs : sh_.space.mbs) {
    bool expressible = true;
    StrategyConfig s = layout_strategy(l, mbs, expressible);
    if (!expressible) {
      reject("illegal_pp_size", n_kinds);
      continue;
    }
    // Megatron's interleaving rules read micro_batch_num: validate with the count this layout gets.
    if (s.world_size % (l.tp * l.cp * l.pp) == 0 && sh_.o.global_batch % (s.dp_size() * mbs) == 0)
      s.micro_batch_num = sh_.o.global_batch / (s.dp_size() * mbs);
    // A switch of the base strategy with no effect at this layout is turned off, not a reason
    // to reject it (each recompute variant below starts from `s` again and is normalized on its own).
    StrategyConfig normal = s;
    (void)normalize_strategy(sh_.m, normal, sh_.o.mode);
    std::vector<Issue> issues = validate_plan(sh_.m, normal, sh_.sys, PlanSources{}, sh_.o.mode);
    if (!issues.empty()) {
      reject(illegal_reason(issues), n_kinds);
      continue;
    }
    const int64_t dp = s.dp_size();
    if (sh_.o.global_batch % (dp * mbs) != 0) {
      reject("global_batch", n_kinds);
      continue;
    }
    s.micro_batch_num = sh_.o.global_batch / (dp * mbs);
    normal = s;
    (void)normalize_strategy(sh_.m, normal, sh_.o.mode);
    // The derived micro-batch count must respect the plan bounds (pipeline replay memory).
    if (std::vector<Issue> bound = validate_plan(sh_.m, normal, sh_.sys, PlanSources{}); !bound.empty()) {
      reject(illegal_reason(bound), n_kinds);
      continue;
    }
    // Layers of the largest chunk: selective recompute covers them all and bounds the
    // full_block binary search (the peer uses ceil(L/pp)).
    StageLayers split;
    const bool split_ok = split_layers(sh_.m.layer_num, s, split, nullptr);
    TRAINSIM_ASSERT(split_ok, "validate_plan accepted the pipeline split");
    const int64_t chunk_layers = l.vpp > 1 ? sh_.m.layer_num / (l.pp * l.vpp)
                                           : std::max({split.first, split.middle, split.last});

    bool none_fits = false;
    for (RecomputeKind k : kinds) {  // sorted: None first
      StrategyConfig v = s;
      set_recompute(v, k, chunk_layers);
      (void)normalize_strategy(sh_.m, v, sh_.o.mode);
      if (k != RecomputeKind::None) {
        std::vector<Issue> vi = validate_plan(sh_.m, v, sh_.sys, PlanSources{}, sh_.o.mode);
        if (!vi.empty()) {
          reject(illegal_reason(vi), 1);
          continue;
        }
      }
      if (static_oom || oom_below[static_cast<size_t>(k)]) {
        reject("oom_bound", 1);
        continue;
      }
      if (none_fits) {
        reject("recompute_not_needed", 1);
        continue;
      }
      Candidate c;
      const Outcome out = evaluate(v, k, l.split, static_oom, c);
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
  }
  return "?";
}

const char* pipeline_split_name(PipelineSplit s) {
  switch (s) {
    case PipelineSplit::Even:
      return "even";
    case PipelineSplit::UnevenLast:
      return "uneven_last";
    case PipelineSplit::UnevenFirst:
      return "uneven_first";
  }
  return "?";
}

SearchSpace default_search_space(const ModelConfig& m, const SystemConfig& sys, int64_t world_size,
                                 SearchSpace space, Mode mode) {
  // SimuMax v1.2 models MLA with tp 1 only; Megatron splits it like any attention.
  if (space.tp.empty())
    space.tp = m.is_mla() && mode == Mode::SimuMax12 ? std::vector<int64_t>{1} : powers_of_two_up_to(sys.num_per_node);
  if (space.pp.empty())
    for (int64_t p = 1; p <= std::min(m.layer_num, world_size); ++p) space.pp.push_back(p);
  if (space.cp.empty()) space.cp = {1};
  if (space.ep.empty())
    space.ep = m.is_moe() ? powers_of_two_up_to(std::min(m.expert_num, world_size))
                          : std::vector<int64_t>{1};
  if (space.etp.empty()) space.etp = {1};
  if (space.vpp.empty()) space.vpp = {1};
  if (space.mbs.empty()) space.mbs = {1, 2, 4};
  if (space.zero.empty()) space.zero = {1};
  if (space.recompute.empty())
    space.recompute = {RecomputeKind::None, RecomputeKind::FullBlock, RecomputeKind::SelectiveAll,
                       RecomputeKind::SelectiveAttn, RecomputeKind::SelectiveMlp};
  if (space.sp.empty()) space.sp = {true};
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

  SearchSpace space = default_search_space(m, sys, o.world_size, space_in, o.mode);
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

  // Layouts are decoded from their index (tp outermost, sp innermost) rather than stored, so
  // memory stays bounded whatever the space; the space itself is capped.
  std::vector<std::pair<int64_t, PipelineSplit>> pp_splits;
  for (int64_t pp : space.pp) {
    if (pp == 1 || m.layer_num % pp == 0) {
      pp_splits.emplace_back(pp, PipelineSplit::Even);
      continue;
    }
    const int64_t per = (m.layer_num + pp - 1) / pp;
    pp_splits.emplace_back(pp, PipelineSplit::UnevenLast);
    if (m.layer_num - per * (pp - 1) > 0) pp_splits.emplace_back(pp, PipelineSplit::UnevenFirst);
  }
  const size_t radix[] = {space.tp.size(),  space.cp.size(),  pp_splits.size(),   space.ep.size(),
                          space.etp.size(), space.vpp.size(), space.zero.size(), space.sp.size(),
                          space.mbs.size(), std::max<size_t>(1, space.recompute.size())};
  uint64_t candidates = 1;  // each factor ≤ 2^17 and the product stops at the cap: no overflow
  for (size_t n : radix) {
    candidates *= n;
    if (candidates > kMaxSearchCandidates)
      bad("/space", strprintf("more than %lld candidates; give fewer values to --tp, --pp, --cp, --ep, "
                              "--etp, --vpp, --mbs, --zero or --recompute",
                              static_cast<long long>(kMaxSearchCandidates)));
  }
  // keep 0 keeps every feasible candidate: only for spaces small enough to hold in memory.
  if ((o.keep == 0 || o.keep > kMaxKeep) && candidates > static_cast<uint64_t>(kMaxKeep))
    bad("/keep", strprintf("keeping %s of %llu candidates; at most %lld can be kept",
                           o.keep == 0 ? "all" : std::to_string(o.keep).c_str(),
                           static_cast<unsigned long long>(candidates), static_cast<long long>(kMaxKeep)));
  size_t n_layouts = 1;
  for (size_t d = 0; d < 8; ++d) n_layouts *= radix[d];  // the first 8 radices describe a layout
  auto layout_at = [&](size_t i) {
    Layout l{};
    l.sp = space.sp[i % radix[7]];
    i /= radix[7];
    l.zero = space.zero[i % radix[6]];
    i /= radix[6];
    l.vpp = space.vpp[i % radix[5]];
    i /= radix[5];
    l.etp = space.etp[i % radix[4]];
    i /= radix[4];
    l.ep = space.ep[i % radix[3]];
    i /= radix[3];
    std::tie(l.pp, l.split) = pp_splits[i % radix[2]];
    i /= radix[2];
    l.cp = space.cp[i % radix[1]];
    i /= radix[1];
    l.tp = space.tp[i];
    return l;
  };

  Shared sh{m, sys, o, space, o.base.seq_len > 0 ? o.base.seq_len : 4096, rule, space.sp.front()};
  SearchResult r;
  r.memory_limit_bytes = limit;
  r.unusable_memory_bytes = rule.unusable_bytes;
  r.per_plan_non_tensor = rule.stage_non_tensor;
  const int64_t per_layout = static_cast<int64_t>(space.mbs.size() * space.recompute.size());
  const int64_t total = static_cast<int64_t>(n_layouts) * per_layout;
  unsigned hw = std::thread::hardware_concurrency();
  int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, hw));
  threads = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(1, n_layouts)));
  r.threads = threads;

  std::vector<Worker> workers(static_cast<size_t>(threads), Worker(sh));
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  int running = threads;
  std::vector<std::thread> pool;
  // A worker that throws (a bug, or out of memory) stops taking layouts; the first exception is
  // rethrown after every thread has joined.
  std::exception_ptr failure;
  for (auto& w : workers)
    pool.emplace_back([&, wp = &w] {
      try {
        for (size_t i; (i = next.fetch_add(1)) < n_layouts;) wp->run_layout(layout_at(i), i);
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

  size_t error_layout = SIZE_MAX;
  for (auto& w : workers) {
    std::move(w.kept().begin(), w.kept().end(), std::back_inserter(r.candidates));
    for (const auto& [reason, n] : w.rejected()) r.rejected_by_reason[reason] += n;
    r.feasible += w.feasible();
    if (auto [index, message] = w.first_error(); index < error_layout) {
      error_layout = index;
      r.first_estimate_error = message;
    }
  }
  std::sort(r.candidates.begin(), r.candidates.end(), Better{o.rank_by});
  if (o.keep > 0 && r.candidates.size() > static_cast<size_t>(o.keep))
    r.candidates.resize(static_cast<size_t>(o.keep));
  r.evaluated = total;
  r.estimate_calls = sh.calls.load();
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  TRAINSIM_ASSERT(sh.done.load() == total, "every candidate is either kept or rejected");
  return r;
}

}  // namespace trainsim
