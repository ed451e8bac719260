// Strategy search: enumerate legal plans for a model on N GPUs, find the recompute that fits in
// memory, and rank the feasible plans by step time, MFU or tokens per second.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "inputs/model_config.h"
#include "inputs/strategy_config.h"
#include "plan/settings.h"
#include "system/system_config.h"
#include "estimate/estimate.h"
#include "estimate/fit.h"
#include "estimate/throughput.h"

namespace trainsim {

/// Recompute choice of one candidate. The enumerator order is the tie-break order.
enum class RecomputeKind {
  None,
  FullBlock,      // full_block on the fewest layers per chunk that fit (binary search)
  SelectiveAll,   // selective: attn + mla_rms + mlp + mlp_rms on every layer (the peer's sets)
  SelectiveAttn,  // selective: attn + mla_rms
  SelectiveMlp,   // selective: mlp + mlp_rms
  // Megatron-LM's --recompute-granularity selective --recompute-modules sets (default mode):
  CoreAttn,            // core_attn
  CoreAttnMlp,         // core_attn mlp (the dense MLPs)
  MlaUpProjMlp,        // mla_up_proj mlp (MLA; Megatron-Bridge's DeepSeek-V3 recipe)
  MoeAct,              // moe_act (the experts' activation)
  LayernormMoeAct,     // layernorm moe_act
  Moe,                 // moe (the whole MoE layer)
  /// Full recompute, --recompute-method uniform with N layers per unit (N = 2, 4, 8: the first
  /// that fits): every layer is recomputed, as full_block on all layers, but each unit keeps only
  /// its input. Tried only where no full_block plan fits (it is never faster).
  FullUniform,
};
inline constexpr size_t kRecomputeKinds = 12;

/// How a pipeline splits layers when layer_num is not a multiple of pp (the peer's check_pp_valid):
/// every stage gets ceil(L/pp) layers except the last (UnevenLast) or the first (UnevenFirst).
/// Balanced: the embedding, the output layer + loss and each MTP layer count as one layer when the
/// layers are divided among the pp·vpp virtual stages (Megatron's
/// account_for_embedding/loss_in_pipeline_split when that divides evenly, else a
/// pipeline_model_parallel_layout such as Megatron-Bridge's DeepSeek-V3 "Et|(tt|)*30mL").
enum class PipelineSplit { Even, UnevenLast, UnevenFirst, Balanced };

enum class RankBy { Time, Mfu, Tokens };

/// Values tried per dimension. An empty list means the default (see default_search_space).
struct SearchSpace {
  std::vector<int64_t> tp, pp, cp, ep, etp, vpp, mbs, zero;
  std::vector<RecomputeKind> recompute;
  std::vector<bool> sp;  // sequence parallel on / off
  /// cp_comm_type where cp > 1: p2p, a2a, all_gather, a2a+p2p (cp ≥ 4; hierarchical sizes
  /// [a2a group, ring group] with the largest a2a group < cp that splits the heads).
  std::vector<std::string> cp_comm;
  /// MoE token dispatcher: alltoall, allgather, deepep (flex, DeepEP backend), hybridep (flex,
  /// HybridEP backend); "base" keeps the base strategy's. Dense models: one value, not varied.
  std::vector<std::string> dispatcher;
  /// The EP all-to-all overlap (overlap_moe_expert_parallel_comm) on / off; MoE models only.
  std::vector<bool> a2a_overlap;
  /// Pipeline splits tried (empty: every one that applies; balanced in the default mode only).
  std::vector<PipelineSplit> splits;
};

/// Counters passed to SearchOptions::progress while a search runs.
struct SearchProgress {
  int64_t done = 0;            // candidates decided so far
  int64_t total = 0;           // candidates in the space
  int64_t estimate_calls = 0;  // estimate() calls so far
  double elapsed_s = 0;
};

struct SearchOptions {
  int64_t world_size = 0;    // GPUs (required)
  int64_t global_batch = 0;  // sequences per step (required); mbc = global_batch / (dp·mbs)
  /// Switches every candidate inherits (dtype, fp8, te_version, ...); the searched fields
  /// (sizes, splits, micro batches, zero_state, recompute, sequence parallel) are overwritten.
  /// seq_len comes from here (0 → 4096).
  StrategyConfig base;
  /// Per-GPU memory the model does not see (GiB); unset: the system's `unusable_mem_gbs`.
  std::optional<double> gmi_error_gib;
  bool use_reserved = true;  // compare peak reserved (else peak allocated) memory
  /// TIGHT plans (estimate/fit.h: they fit only if the caching allocator frees its cache) are
  /// feasible, ranked by time like the others and marked; false (--no-tight): only FITS plans.
  bool tight = true;
  RankBy rank_by = RankBy::Time;
  int64_t keep = 10;  // best candidates returned (0 = every feasible one)
  int threads = 0;    // worker threads (0 = hardware concurrency)
  Mode mode = Mode::Default;
  /// The candidates' MFU and TFLOP/s: Megatron-LM's count (as `perf` shows it) or SimuMax's.
  MfuConvention mfu = MfuConvention::Megatron;
  /// Called from the calling thread about every progress_interval_s while workers run.
  std::function<void(const SearchProgress&)> progress;
  double progress_interval_s = 1.0;
  /// Every overlap Megatron can run at a candidate's sizes is switched on (overlap_grad_reduce,
  /// overlap_param_gather, tp_comm_overlap, moe_shared_expert_overlap, the interleaved p2p
  /// overlap); an overlap Megatron rejects at those sizes is off there. False: the base's switches.
  bool overlaps_on = true;
  /// Diverse top-k: a candidate that differs from a better kept one only in switches (split,
  /// cp_comm_type, dispatcher, ZeRO stage, sequence parallel, recompute, overlaps), within this
  /// fraction of its time, is folded into it (Candidate::variants). 0 keeps every variant.
  double collapse_within = 0.005;
  /// Estimate the base strategy itself (its sizes, micro batches and switches as given) and report
  /// its time, fit and rank among the candidates (SearchResult::base).
  bool rank_base = false;
  /// When no candidate fits, search again with the optimizer states in host memory
  /// (optimizer_cpu_offload, fraction 1) and report those plans (SearchResult::offloaded).
  bool offload_when_nothing_fits = true;
  /// Skip (layout, micro batch) groups whose time without recompute already exceeds the bound
  /// (docs/search.md, "Pruning"); ranking by time or tokens with a bounded --top only.
  bool branch_and_bound = true;
  /// Ladder: a layout that differs from a preferred one only in the ZeRO stage (1, 2, 3, then 0)
  /// or the EP overlap (on, then off) is estimated at a (micro batch, recompute) only where the
  /// preferred one does not fit (docs/search.md, "Pruning"). False: every one is estimated.
  bool ladder = true;
};

/// One feasible plan with its prediction.
struct Candidate {
  StrategyConfig strategy;  // complete, ready for estimate() or a strategy file
  PipelineSplit split = PipelineSplit::Even;
  RecomputeKind recompute = RecomputeKind::None;
  double iteration_time_s = 0, mfu = 0, tflops_per_gpu = 0, tokens_per_s_per_gpu = 0;
  double peak_bytes = 0;  // max over stages of the compared memory (reserved or allocated)
  /// Its verdict under the search's rule (estimate/fit.h): FITS or TIGHT for a feasible plan. A
  /// TIGHT plan is feasible and ranked like any other; its state is shown beside it.
  FitVerdict fit;
  std::vector<StageTime> stage_times;
  std::vector<StageMemory> stages;
  double straggler_ratio = 1;
  int64_t variants = 0;  // candidates folded into this one (diverse top-k)
  /// "tp2.sp.cp1..." (plan/settings.h parallelism_string) and the micro batch, for views.
  [[nodiscard]] std::string parallelism() const { return parallelism_string(strategy); }
  [[nodiscard]] int64_t micro_batch_size() const { return strategy.micro_batch_size; }
};

/// The base strategy as given (SearchOptions::rank_base).
struct BaseResult {
  bool evaluated = false;  // false: the base is no complete plan (error says why)
  bool fits = false;
  int64_t rank = 0;        // 1 + feasible candidates strictly faster (fits only)
  Candidate plan;          // its prediction (time and memory also when it does not fit)
  std::string error;
};

struct SearchResult {
  std::vector<Candidate> candidates;  // best first, at most SearchOptions::keep
  int64_t evaluated = 0;              // candidates in the space, each either feasible or rejected
  int64_t feasible = 0;
  int64_t estimate_calls = 0;  // estimate() calls (full_block binary searches make several)
  /// Rejected candidates per reason: illegal_<field> (first rule validate_plan reports),
  /// global_batch (dp·mbs does not divide it), duplicate (a twin of another candidate: sp with
  /// tp 1, a dispatcher or the EP overlap where they cannot act, a recompute set with nothing to
  /// act on), oom (estimated over the limit), oom_bound (skipped: the layout's weights, gradients
  /// and optimizer states, or the same recompute choice at a smaller mbs, already exceed the
  /// limit), recompute_not_needed (skipped: the plan fits without recompute), switch_not_needed
  /// (skipped: the same plan with the EP overlap on fits), time_bound (skipped: slower than the
  /// branch-and-bound bound), estimate_error (the estimator rejected a plan validate_plan accepted).
  std::map<std::string, int64_t> rejected_by_reason;
  std::string first_estimate_error;  // message of the first estimate_error, if any
  double memory_limit_bytes = 0;    // device memory − unusable_memory_bytes (estimate/fit.h)
  double unusable_memory_bytes = 0; // the margin: --gmi-error or the system's unusable_mem_gbs
  /// True when each plan's own memory outside PyTorch (default mode: CUDA context, NCCL
  /// buffers) is subtracted instead of a flat margin (estimate/fit.h).
  bool per_plan_non_tensor = false;
  double elapsed_s = 0;
  int threads = 1;
  BaseResult base;
  /// Time × memory Pareto front of every feasible candidate, fastest first.
  std::vector<Candidate> pareto;
  int64_t collapsed = 0;   // candidates folded into better kept ones (diverse top-k)
  bool offloaded = false;  // nothing fit without optimizer CPU offloading; these plans use it
  /// The branch-and-bound bound: no plan slower than this was estimated (infinity: no bound).
  double time_bound_s = std::numeric_limits<double>::infinity();
};

/// The default values of every empty dimension of `space` for this model and system (docs/search.md).
/// Compat mode keeps SimuMax's space: tp powers of two up to num_per_node (1 for MLA), pp
/// 1..min(layer_num, world_size), cp 1, ep powers of two up to min(expert_num, world_size),
/// etp 1, vpp 1, mbs 1,2,4, zero 1, recompute none/full_block/three selective sets, sp on.
[[nodiscard]] SearchSpace default_search_space(const ModelConfig& m, const SystemConfig& sys,
                                               int64_t world_size, SearchSpace space = {},
                                               Mode mode = Mode::Default, int64_t seq_len = 4096);

/// Most candidates (layouts × mbs × recompute choices) one search may visit.
inline constexpr int64_t kMaxSearchCandidates = int64_t{1} << 24;
/// Most candidates SearchOptions::keep may hold (keep 0, "all", only when the space is no larger).
inline constexpr int64_t kMaxKeep = int64_t{1} << 16;

/// Searches `space` (empty dimensions take their defaults). Deterministic for any thread count.
/// Throws ConfigError for unusable options (world size or global batch < 1, a value < 1, zero
/// outside 0..3); infeasible and illegal plans are counted, never thrown.
[[nodiscard]] SearchResult search(const ModelConfig& m, const SystemConfig& sys,
                                  const SearchSpace& space, const SearchOptions& options);

/// "none", "full_block", "selective_all", "selective_attn", "selective_mlp", "core_attn",
/// "core_attn+mlp", "mla_up_proj+mlp", "moe_act", "layernorm+moe_act", "moe", "full_uniform".
[[nodiscard]] const char* recompute_kind_name(RecomputeKind k);
/// "even", "uneven_last", "uneven_first", "balanced".
[[nodiscard]] const char* pipeline_split_name(PipelineSplit s);

}  // namespace trainsim
