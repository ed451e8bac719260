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
#include <memory>
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
#include "search/thread_pool.h"
#include "search/worker.h"

namespace trainsim {
namespace {

using search_detail::Better;
using search_detail::kAllLayers;
using search_detail::kCollapsePool;
using search_detail::Layout;
using search_detail::megatron_modules;
using search_detail::Shared;
using search_detail::ThreadPool;
using search_detail::Worker;

[[noreturn]] void bad(const std::string& path, const std::string& msg) {
  throw ConfigError("search", path, msg);
}

// The options checked, and the fit rule they give.
FitRule checked_rule(const SystemConfig& sys, const SearchOptions& o) {
  // The same bounds as the strategy reader, so products of sizes cannot overflow.
  if (o.world_size < 1 || o.world_size > (int64_t{1} << 24))
    bad("/world_size", "must be in 1..16777216, got " + std::to_string(o.world_size));
  if (o.global_batch < 1 || o.global_batch > (int64_t{1} << 30))
    bad("/global_batch", "must be in 1..1073741824, got " + std::to_string(o.global_batch));
  if (o.keep < 0) bad("/keep", "must be 0 (all) or more, got " + std::to_string(o.keep));
  // The fit rule of perf (estimate/fit.h), with the search's margin when one is given.
  FitRule rule = fit_rule(sys, o.mode);
  rule.use_reserved = o.use_reserved;
  rule.cache_release = rule.cache_release && o.tight;
  if (o.gmi_error_gib) {
    if (!(*o.gmi_error_gib >= 0)) bad("/gmi_error", "must be a non-negative number of GiB");
    rule.unusable_bytes = *o.gmi_error_gib * kGiB;
    rule.stage_non_tensor = false;  // the given margin replaces the estimate's terms
  }
  if (rule.limit_bytes() <= 0)
    bad("/gmi_error", strprintf("%g GiB leaves no memory on a %g GiB device", rule.unusable_bytes / kGiB,
                                sys.mem_bytes / kGiB));
  return rule;
}

// The space searched: every empty dimension at its default, sorted, without repeats, checked.
SearchSpace checked_space(const ModelConfig& m, const SystemConfig& sys, const SearchSpace& space_in,
                          const SearchOptions& o, int64_t seq_len) {
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
  auto tidy = [](std::vector<int64_t>& v, const char* name, int64_t lo, int64_t hi) {
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
  auto tidy_names = [](std::vector<std::string>& v, const char* name, const std::vector<std::string>& valid) {
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
  return space;
}

// The layouts of a space in ladder groups, and the candidates decided without one.
struct LayoutSet {
  std::vector<Layout> layouts;
  std::vector<std::pair<size_t, size_t>> groups;  // [start, count) in `layouts`
  std::map<std::string, int64_t> pre_rejected;
  int64_t total = 0;  // candidates in the space
};

LayoutSet enumerate_layouts(const ModelConfig& m, const SearchSpace& space, const SearchOptions& o) {
  LayoutSet set;
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
  int64_t& total = set.total;  // counted below: each switch only where it can act
  // keep 0 keeps every feasible candidate: only for spaces small enough to hold in memory.
  if ((o.keep == 0 || o.keep > kMaxKeep) && sized * static_cast<uint64_t>(switches) > static_cast<uint64_t>(kMaxKeep))
    bad("/keep", strprintf("keeping %s of %llu candidates; at most %lld can be kept",
                           o.keep == 0 ? "all" : std::to_string(o.keep).c_str(),
                           static_cast<unsigned long long>(sized * static_cast<uint64_t>(switches)),
                           static_cast<long long>(kMaxKeep)));
  // The layouts worth deciding: a switch is varied only where it can act (cp_comm_type with CP,
  // the dispatcher with experts exchanged, the EP overlap with EP, sequence parallel with TP); the
  // other combinations are twins (duplicate), and sizes that do not factor the world are illegal.
  std::vector<Layout>& layouts = set.layouts;
  std::map<std::string, int64_t>& pre_rejected = set.pre_rejected;
  const bool sp_on_in_space = space.sp.front();
  // Ladder groups: layouts that differ only in the EP overlap, on before off: the later one is
  // estimated at a (micro batch, recompute) only where the earlier one does not fit
  // (switch_not_needed). ZeRO stages are not laddered: ZeRO 3 can be faster than ZeRO 1 (its
  // optimizer step updates a shard).
  std::vector<int64_t> zero_order;
  for (int64_t z : {1, 2, 3, 0})
    if (std::find(space.zero.begin(), space.zero.end(), z) != space.zero.end()) zero_order.push_back(z);
  std::vector<std::pair<size_t, size_t>>& groups = set.groups;  // [start, count) in `layouts`
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
  return set;
}

// Groups a worker takes at a time.
constexpr size_t kBlock = 16;

// What the passes over the groups share: the workers, the count of groups, the progress report.
struct Passes {
  std::vector<Worker>& workers;
  size_t n_layouts;  // groups
  const SearchOptions& o;
  Shared& sh;
  int64_t total;
  std::chrono::steady_clock::time_point t0;
  ThreadPool& pool;  // one thread per worker

  // Runs body(worker, group index) over every group on the worker threads (body(worker, i) for
  // i < n when n is given), `block` consecutive indices at a time. A worker that throws (a bug,
  // or out of memory) stops taking groups; the first exception is rethrown after every thread
  // has returned. `taken_by` (every group): records the worker that took each group; `affinity`
  // (every group): each worker takes the groups an earlier pass gave it first, whose chunk
  // results its cache holds, then the others'. Which worker decides a group changes no result,
  // count or estimate call.
  void run(const std::function<void(Worker&, size_t)>& body, size_t n = SIZE_MAX,
           std::vector<uint32_t>* taken_by = nullptr, const std::vector<uint32_t>* affinity = nullptr,
           size_t block = kBlock) const {
    if (n == SIZE_MAX) n = n_layouts;
    const size_t nw = workers.size();
    // The groups in lists, one per worker (one list without affinity), each with its cursor.
    std::vector<std::vector<size_t>> lists(affinity ? nw : 1);
    for (size_t i = 0; i < n; ++i) lists[affinity ? (*affinity)[i] % nw : 0].push_back(i);
    const std::unique_ptr<std::atomic<size_t>[]> next(new std::atomic<size_t>[lists.size()]);
    for (size_t l = 0; l < lists.size(); ++l) next[l] = 0;
    if (taken_by) taken_by->assign(n, 0);
    std::mutex mu;
    std::exception_ptr failure;
    const std::function<void(size_t)> job = [&](size_t wi) {
      try {
        for (size_t k = 0; k < lists.size(); ++k) {
          const size_t l = (wi + k) % lists.size();
          // Blocks of consecutive groups: neighbours (ZeRO stages, pipeline depths) share chunk
          // results, which the worker's cache then holds once.
          for (size_t b; (b = next[l].fetch_add(block)) < lists[l].size();)
            for (size_t j = b; j < std::min(b + block, lists[l].size()); ++j) {
              if (taken_by) (*taken_by)[lists[l][j]] = static_cast<uint32_t>(wi);
              body(workers[wi], lists[l][j]);
            }
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failure) failure = std::current_exception();
        for (size_t l = 0; l < lists.size(); ++l) next[l].store(lists[l].size());
      }
    };
    pool.run(job, std::chrono::duration<double>(std::max(0.01, o.progress_interval_s)), [&] {
      if (o.progress)
        o.progress({sh.done.load(), total, sh.calls.load(),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
    });
    if (failure) std::rethrow_exception(failure);
  }
};

// Branch and bound (ranking by time or tokens, a bounded top-k). Each group's preferred layout
// without recompute at a micro batch size (its seed) bounds the whole (group, mbs) from below:
// recompute, the EP overlap off and more sharding only add time. The k'-th best feasible seed time
// bounds the answer from above (k' = the kept pool, and never below the base plan's time, so that
// its rank stays exact); the main pass skips every (group, mbs) whose seed is slower.
//
// Estimating every seed would cost one estimate per (group, mbs). Instead, a lower bound of each
// seed's time and its memory, without the pipeline replay (estimate/bound.h), order the seeds
// that fit by their bound, and they are estimated in that order, in batches of kSeedBatch, until
// the k'-th best feasible time so far is at most the next seed's lower bound (or the base plan's
// time): no seed left can change the upper bound, which is therefore the one all seeds give. The
// main pass estimates a seed only where its lower bound does not exceed the upper bound, and skips
// the (group, mbs) where the estimate does: the same plans are skipped as with every seed
// estimated. The batches, the upper bound and the estimates are independent of the thread count.
constexpr size_t kSeedBatch = 64;

void bound_pass(const Passes& p, const LayoutSet& ls, size_t n_mbs, std::vector<double>& lower_bounds,
                std::vector<Worker::SeedSlot>& seed_slots, std::vector<uint32_t>& taken_by, SearchResult& r) {
  const SearchOptions& o = p.o;
  const size_t pool_size = o.keep == 0 ? 0 : static_cast<size_t>(o.keep) * (o.collapse_within > 0 ? kCollapsePool : 1);
  if (!o.branch_and_bound || pool_size == 0 || o.rank_by == RankBy::Mfu) return;
  lower_bounds.assign(p.n_layouts * n_mbs, 0.0);
  seed_slots.resize(p.n_layouts * n_mbs);
  // Groups whose chunks are alike (the same sizes but the pipeline depth, split, virtual stages
  // and ZeRO stage) go to one worker first, whose cache then computes them once.
  std::vector<uint32_t> alike(p.n_layouts);
  for (size_t i = 0; i < p.n_layouts; ++i) {
    const Layout& l = ls.layouts[ls.groups[i].first];
    uint64_t h = 0;
    for (uint64_t x : {static_cast<uint64_t>(l.tp), static_cast<uint64_t>(l.cp), static_cast<uint64_t>(l.ep),
                       static_cast<uint64_t>(l.etp), static_cast<uint64_t>(l.sp), static_cast<uint64_t>(l.cp_comm),
                       static_cast<uint64_t>(l.dispatcher)})
      h = h * 1000003 + x;
    alike[i] = static_cast<uint32_t>(h % p.workers.size());
  }
  p.run([&](Worker& w, size_t i) {
    w.bound(ls.layouts[ls.groups[i].first], ls.groups[i].first, &lower_bounds[i * n_mbs], &seed_slots[i * n_mbs]);
  }, SIZE_MAX, &taken_by, &alike);
  std::vector<size_t> order;  // the seeds that may fit, by lower bound (then by index)
  for (size_t k = 0; k < seed_slots.size(); ++k)
    if (seed_slots[k].plan && !seed_slots[k].oom) order.push_back(k);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return std::tie(lower_bounds[a], a) < std::tie(lower_bounds[b], b); });
  std::vector<double> feasible;  // the feasible seeds' times
  for (size_t next = 0; next < order.size();) {
    const size_t n = std::min(kSeedBatch, order.size() - next);
    p.run(
        [&](Worker& w, size_t j) {
          const size_t k = order[next + j], i = k / n_mbs;
          w.seed(ls.layouts[ls.groups[i].first], ls.groups[i].first, k % n_mbs, lower_bounds[k], seed_slots[k]);
        },
        n, nullptr, nullptr, /*block=*/1);  // seeds in bound order, one at a time: no neighbours to share
    for (size_t j = next; j < next + n; ++j)
      if (seed_slots[order[j]].out == Worker::Outcome::Fits) feasible.push_back(lower_bounds[order[j]]);
    next += n;
    if (feasible.size() < pool_size) continue;
    std::nth_element(feasible.begin(), feasible.begin() + static_cast<std::ptrdiff_t>(pool_size - 1), feasible.end());
    const double kth = feasible[pool_size - 1];
    if (next == order.size() || kth <= std::max(lower_bounds[order[next]], p.sh.base_time)) break;
  }
  if (feasible.size() >= pool_size) {
    std::nth_element(feasible.begin(), feasible.begin() + static_cast<std::ptrdiff_t>(pool_size - 1), feasible.end());
    p.sh.bound = std::max(feasible[pool_size - 1], p.sh.base_time);
  }
  r.time_bound_s = p.sh.bound;
}

// The workers' results merged: kept plans, rejections, the first estimate error, the Pareto front.
void collect_workers(std::vector<Worker>& workers, const std::map<std::string, int64_t>& pre_rejected,
                     SearchResult& r) {
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
}

// The kept plans best first, variants folded (diverse top-k), at most keep of them.
void rank_kept(const ModelConfig& m, const SearchOptions& o, SearchResult& r) {
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
}

// The plans reported are estimated once more as perf estimates them (no cache, the timeline's
// events recorded): the search's estimates without events can differ from perf's in the last
// bits (5.054803111003993 s against 5.054803111003995 s for a Llama 3 8B plan with CP 4 and
// ZeRO 3), and the reported time and memory must be perf's exactly.
// A candidate's reported figures from the estimate of its strategy (time, MFU in the search's
// convention, throughput, peak memory under the fit rule, straggler, stages).
void take_figures(const ModelConfig& m, const SystemConfig& sys, const SearchOptions& o, const FitRule& rule,
                  Estimate& e, Candidate& c) {
  c.iteration_time_s = e.iteration_time_s;
  const Throughput t = o.mfu == MfuConvention::Megatron ? megatron_throughput(m, settings_of(c.strategy), sys, e)
                                                        : Throughput{e.tflops_per_gpu, e.mfu};
  c.mfu = t.mfu;
  c.tflops_per_gpu = t.tflops_per_gpu;
  c.tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
  c.peak_bytes = rule.use_reserved ? e.peak_reserved_bytes() : e.peak_alloc_bytes();
  c.fit = fit_verdict(e, rule);
  c.straggler_ratio = e.straggler_ratio;
  c.stage_times = std::move(e.stage_times);
  c.stages = std::move(e.stages);
}

void reestimate(const ModelConfig& m, const SystemConfig& sys, const SearchOptions& o, const FitRule& rule,
                Candidate& c) {
  Estimate e = estimate(resolve_plan(m, c.strategy, sys, o.mode));
  take_figures(m, sys, o, rule, e, c);
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
    Estimate e = estimate(resolve_plan(m, s, sys, o.mode));
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
    take_figures(m, sys, o, rule, e, c);
  } catch (const std::exception& err) {
    b.error = err.what();
  }
  return b;
}

}  // namespace

SearchResult search(const ModelConfig& m, const SystemConfig& sys, const SearchSpace& space_in,
                    const SearchOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const FitRule rule = checked_rule(sys, o);
  const int64_t seq_len = o.base.seq_len > 0 ? o.base.seq_len : 4096;
  const SearchSpace space = checked_space(m, sys, space_in, o, seq_len);
  const LayoutSet ls = enumerate_layouts(m, space, o);
  const size_t n_layouts = ls.groups.size();
  const int64_t total = ls.total;

  Shared sh{m, sys, o, space, seq_len, rule, space.sp.front()};
  for (const auto& [reason, n] : ls.pre_rejected) sh.done += n;
  SearchResult r;
  if (o.rank_base) {
    r.base = evaluate_base(m, sys, o, rule, seq_len);
    if (r.base.fits) sh.base_time = r.base.plan.iteration_time_s;
  }
  r.memory_limit_bytes = rule.limit_bytes();
  r.unusable_memory_bytes = rule.unusable_bytes;
  r.per_plan_non_tensor = rule.stage_non_tensor;
  unsigned hw = std::thread::hardware_concurrency();
  int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, hw));
  threads = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(1, n_layouts)));
  r.threads = threads;

  std::vector<Worker> workers(static_cast<size_t>(threads), Worker(sh));
  ThreadPool pool(workers.size());
  const Passes passes{workers, n_layouts, o, sh, total, t0, pool};
  std::vector<double> lower_bounds;
  std::vector<Worker::SeedSlot> seed_slots;
  std::vector<uint32_t> taken_by;  // the worker that bounded each group (its cache holds the chunks)
  bound_pass(passes, ls, space.mbs.size(), lower_bounds, seed_slots, taken_by, r);
  passes.run([&](Worker& w, size_t i) {
    const size_t n_mbs = space.mbs.size();
    std::vector<std::array<bool, kRecomputeKinds>> ladder(n_mbs);
    // The seeds the bound pass did not estimate and its lower bound cannot skip.
    for (size_t mi = 0; mi < n_mbs && !seed_slots.empty(); ++mi) {
      Worker::SeedSlot& slot = seed_slots[i * n_mbs + mi];
      if (slot.plan && !slot.estimated && lower_bounds[i * n_mbs + mi] <= sh.bound)
        w.seed(ls.layouts[ls.groups[i].first], ls.groups[i].first, mi, lower_bounds[i * n_mbs + mi], slot);
    }
    w.set_lower_bounds(lower_bounds.empty() ? nullptr : &lower_bounds[i * n_mbs]);
    for (size_t j = 0; j < ls.groups[i].second; ++j)
      w.run_layout(ls.layouts[ls.groups[i].first + j], ls.groups[i].first + j, ladder,
                   seed_slots.empty() ? nullptr : &seed_slots[i * n_mbs]);
  }, SIZE_MAX, nullptr, taken_by.empty() ? nullptr : &taken_by);
  collect_workers(workers, ls.pre_rejected, r);
  rank_kept(m, o, r);
  for (Candidate& c : r.candidates) reestimate(m, sys, o, rule, c);
  for (Candidate& c : r.pareto) reestimate(m, sys, o, rule, c);
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