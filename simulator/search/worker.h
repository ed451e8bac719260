// Internal to search/: the parallel layout a worker decides, the inputs the workers share, the
// worker itself, and the strategy setters they and search() use.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "estimate/estimate.h"
#include "estimate/fit.h"
#include "plan/validate.h"
#include "search/search.h"

namespace trainsim::search_detail {

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
std::string dispatcher_of(const StrategyConfig& s);
void set_dispatcher(StrategyConfig& s, const std::string& d);
// The a2a group of a2a+p2p (0: none).
int64_t hierarchical_a2a(const ModelConfig& m, int64_t tp, int64_t cp);
// The balanced split of the decoder layers over pp·vpp virtual stages; false when some stage would
// hold a negative count.
bool set_balanced(StrategyConfig& s, const ModelConfig& m, int64_t pp, int64_t vpp);
std::vector<int64_t> powers_of_two_up_to(int64_t n);

// Orders candidates by the ranking metric, then by a total order on the searched parameters.
struct Better {
  RankBy by;
  bool operator()(const Candidate& a, const Candidate& b) const;
};

// Megatron's --recompute-modules of a selective kind (empty for the others).
std::vector<std::string> megatron_modules(RecomputeKind k);
void set_recompute(StrategyConfig& s, RecomputeKind k, int64_t layers);
// "illegal_<field>" of the first issue.
std::string illegal_reason(const std::vector<Issue>& issues);
// Normalizes `s` (moot switches off) and turns off the overlaps Megatron rejects at its sizes;
// returns the issues left (empty: `s` is a legal, normalized plan).
std::vector<Issue> legalize(const ModelConfig& m, const SystemConfig& sys, StrategyConfig& s, Mode mode);

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

class Worker {
 public:
  enum class Outcome { Fits, Oom, Error };
  /// The bound pass's lower bound and estimate of a group's first layout without recompute at
  /// one micro batch size, reused by the main pass for the same plan (same strategy hash).
  struct SeedSlot {
    bool plan = false;       // the layout is a plan at this mbs (or the twin of one): it has a bound
    bool oom = false;        // provably over the memory limit (estimate/bound.h): not feasible
    bool estimated = false;  // seed() ran
    bool valid = false;      // estimated without error, not used yet
    uint64_t hash = 0;
    Outcome out = Outcome::Error;
    bool static_oom = false;
    std::unique_ptr<Candidate> c;  // the plan when it fits (held apart: most slots have none)
  };
  explicit Worker(Shared& sh) : sh_(sh) {}

  /// Decides every candidate of layout number `index`.
  /// The plan of layout `l` at micro batch size `mbs`, legal and normalized, or the reason it is none.
  std::string prepare(const Layout& l, int64_t mbs, StrategyConfig& out) const;
  /// The bound pass, first part: a lower bound of the time of `l` (a group's preferred layout)
  /// without recompute at every micro batch size into lb[mbs index], from its chunk costs alone
  /// (estimate/bound.h; 0 where it is no plan or the bound cannot be computed); slots[mbs index]
  /// .plan where it is a plan, .oom where its memory bound is over the limit.
  void bound(const Layout& l, size_t index, double* lb, SeedSlot* slots);
  /// The bound pass, second part (and the main pass, for the groups the first part cannot
  /// prune): the estimate of `l` without recompute at mbs index `mi` into `slot`; its time into
  /// `lb` (0 on an estimate error).
  void seed(const Layout& l, size_t index, size_t mi, double& lb, SeedSlot& slot);
  void set_lower_bounds(const double* lb) { lb_ = lb; }
  /// `ladder[mbs index][recompute kind]`: an earlier layout of the ladder group fits there.
  /// `seeds`: the bound pass's slots of this layout's group, per mbs, or nullptr: the layout whose
  /// plan without recompute a slot holds (same strategy hash) uses it instead of an estimate.
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
  /// Layers of the largest chunk of `s` (at least 1).
  int64_t largest_chunk(const Layout& l, const StrategyConfig& s) const;
  /// The reserve factor on the static memory under the fit rule.
  [[nodiscard]] double static_scale(const StrategyConfig& s) const;
  /// Whether the memory bound of `s` (estimate/bound.h) is over the limit, where static_oom is
  /// set as evaluate() sets it.
  bool over_memory_bound(const StrategyConfig& s, bool& static_oom);
  /// Estimates `s`; fills `out` when it fits. Sets static_oom when weights, gradients and
  /// optimizer states alone exceed the limit. Without `time`, a plan over its memory bound is
  /// Oom without an estimate.
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
  const double* lb_ = nullptr;  // lower bounds of the current group per mbs (bound pass)
  size_t layout_ = 0, error_layout_ = SIZE_MAX;
  std::string first_error_;
};

}  // namespace trainsim::search_detail
