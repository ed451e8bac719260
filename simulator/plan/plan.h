// The Plan: (model, strategy, system, mode) resolved and validated once. Every later stage (op
// graph, passes, schedule, engine, views) reads the Plan and nothing else of the strategy: its
// typed settings (plan/settings.h: parallel sizes, precision, recompute, overlaps, MoE, ...), the
// networks of its groups, the chunks of every rank with their layers, the schedule and its p2p
// mode, the straggler factor.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "system/system_config.h"
#include "plan/groups.h"
#include "plan/settings.h"
#include "plan/validate.h"
#include "core/small_vector.h"

namespace trainsim {

/// The straggler allowance on the pipeline time, with its basis (shown in the summary and JSON).
struct Straggler {
  double ratio = 1;       // pipeline time × ratio before the DP/optimizer tail
  int64_t nodes = 1;      // ⌈world_size / num_per_node⌉
  int64_t replicas = 1;   // what must all arrive: the job's nodes (compat mode: min(nodes, dp, edp))
  int64_t dp = 1, edp = 1;
  double jitter = 0;      // coefficient: system straggler_jitter, or the default (0.055; compat 0.09)
  bool enabled = true;         // strategy enable_straggler_model
  bool system_jitter = false;  // jitter from the system's straggler_jitter
  bool peer_rule = false;      // SimuMax v1.2's n = min(nodes, dp, edp) (compat mode)
  /// One line: where the ratio comes from (formed only where shown, not per estimate).
  [[nodiscard]] std::string basis() const;
};

/// What a chunk holds: the embedding and/or the head, its layers, how many of them are leading
/// dense layers (MoE models) and how many are recomputed.
struct ChunkSpec {
  bool embedding = false, head = false;
  int64_t layers = 0, dense_layers = 0, recompute_layers = 0;
  int64_t mtp_layers = 0;  // MTP layers (after the decoder layers, before the head)
  bool operator==(const ChunkSpec&) const = default;
};

/// What a chunk's leaves read beyond the model and the strategy (resolved from the Plan).
struct ChunkEnv {
  int64_t gpus_per_node = 8;  // nodes an EP group spans (DeepEP's node dedupe)
  double moe_imbalance = 1;   // busiest EP rank's expert tokens over the mean (model/moe_dispatch.h)
  Mode mode = Mode::Default;  // compat mode leaves out what SimuMax v1.2 does not run
  bool blackwell = false;     // the system's GPU is a Blackwell part (fp8 GEMMs in any layout)
};

/// How pipeline stages exchange activations: Megatron's batched send/recv that both ranks wait
/// for (blocking), or transfers on their own streams that only the consumer waits for (async,
/// `overlap_p2p_comm`).
enum class P2PMode { Blocking, Async };

struct Program;  // schedule/program.h: the plan's schedule as steps per rank

/// What each virtual chunk of each pipeline rank holds: grid[rank][chunk], a row per rank. One
/// block of pp·vpp specs, inline up to 8 (no allocation for most plans).
class ChunkGrid {
 public:
  ChunkGrid() = default;
  /// `ranks` rows of `per_rank` empty specs.
  ChunkGrid(size_t ranks, size_t per_rank) : ranks_(ranks), per_rank_(per_rank) {
    specs_.assign(ranks * per_rank, ChunkSpec{});
  }
  ChunkGrid(const ChunkGrid&) = default;
  // A moved-from grid has no rows (its specs went with the move); a copy that throws half-way
  // leaves the grid as it was.
  ChunkGrid(ChunkGrid&& o) noexcept
      : specs_(std::move(o.specs_)), ranks_(std::exchange(o.ranks_, 0)), per_rank_(std::exchange(o.per_rank_, 0)) {}
  ChunkGrid& operator=(const ChunkGrid& o) {
    if (this != &o) *this = ChunkGrid(o);
    return *this;
  }
  ChunkGrid& operator=(ChunkGrid&& o) noexcept {
    if (this != &o) {
      specs_ = std::move(o.specs_);
      ranks_ = std::exchange(o.ranks_, 0);
      per_rank_ = std::exchange(o.per_rank_, 0);
    }
    return *this;
  }
  ~ChunkGrid() = default;
  [[nodiscard]] size_t size() const { return ranks_; }
  [[nodiscard]] std::span<const ChunkSpec> operator[](size_t rank) const {
    return {specs_.begin() + rank * per_rank_, per_rank_};
  }
  [[nodiscard]] std::span<ChunkSpec> operator[](size_t rank) { return {specs_.begin() + rank * per_rank_, per_rank_}; }

  /// Rows in rank order.
  class Rows {
   public:
    Rows(const ChunkGrid* grid, size_t rank) : grid_(grid), rank_(rank) {}
    std::span<const ChunkSpec> operator*() const { return (*grid_)[rank_]; }
    Rows& operator++() {
      ++rank_;
      return *this;
    }
    bool operator==(const Rows& o) const { return rank_ == o.rank_; }

   private:
    const ChunkGrid* grid_;
    size_t rank_;
  };
  [[nodiscard]] Rows begin() const { return {this, 0}; }
  [[nodiscard]] Rows end() const { return {this, ranks_}; }

 private:
  SmallVector<ChunkSpec, 8> specs_;
  size_t ranks_ = 0, per_rank_ = 0;
};

enum class ScheduleKind : uint8_t { OneFOneB, Interleaved, ZeroBubbleH1 };
[[nodiscard]] const char* schedule_name(ScheduleKind k);

/// A resolved plan: its settings (the base), and what resolution derived from them.
struct Plan : Settings {
  // The validated inputs; a Plan must not outlive them.
  const ModelConfig* model = nullptr;
  const SystemConfig* system = nullptr;
  Mode mode = Mode::Default;

  NetworkChoice nets;  // per group: tp, cp, dp, pp, ep, etp, edp (estimate() finds the entries again)

  int64_t vp_group = 1;  // micro-batches per chunk group (interleaved)
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  P2PMode p2p = P2PMode::Blocking;
  int64_t padded_vocab = 0;
  /// What every chunk is built with: node size, MoE imbalance, mode, Blackwell GPU.
  ChunkEnv chunk_env;
  /// chunks[rank][chunk]: what each virtual chunk of each pipeline rank holds.
  ChunkGrid chunks;
  Straggler straggler;
  /// Hash of the strategy fields a chunk's ops read (chunk_strategy_hash), the key of the chunk
  /// results an EstimateCache shares: set by key_chunks, 0 until then (a plan estimated through a
  /// cache must carry it; one estimated alone does not pay for it).
  uint64_t chunk_key = 0;

  /// The schedule as a program of steps per rank.
  [[nodiscard]] Program program() const;
  /// The same schedule over `mbc` micro-batches (the pipeline replay's extrapolation points).
  /// (The three are defined in schedule/program.cpp, with the programs they build.)
  [[nodiscard]] Program program(int64_t mbc) const;
  /// The same into `into`, keeping the memory of its step lists.
  void program(int64_t mbc, Program& into) const;
  /// Whether the program splits the backward (Program::split_backward), without building it.
  [[nodiscard]] bool split_backward() const { return schedule == ScheduleKind::ZeroBubbleH1; }
  /// Micro-batches of one period of the program's steady state: the interleaved group, else 1.
  [[nodiscard]] int64_t steady_period() const { return schedule == ScheduleKind::Interleaved ? vp_group : 1; }
  /// The fewest micro-batches past the warm-up (2·pp·vpp + 2 periods) with micro_batch_num's
  /// remainder modulo the period: the plan's program is that program with its steady block
  /// repeated (when micro_batch_num is larger).
  [[nodiscard]] int64_t steady_base() const {
    const int64_t g = steady_period(), least = 2 * par.pp * par.vpp + 2 * g;
    return least + ((batch.micro_batch_num - least) % g + g) % g;
  }
  /// The pp·vpp virtual stages in stage order (stage i = chunks[i mod pp][i / pp]).
  [[nodiscard]] std::vector<VirtualStage> virtual_stages() const;
  /// Stage names used in reports: "stage" (pp 1), first/middle/last (1F1B), or one per rank.
  [[nodiscard]] const char* stage_kind(int64_t rank) const;
};

/// Resolves and validates; throws ConfigError listing every problem (naming `src` files).
[[nodiscard]] Plan resolve_plan(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys,
                                Mode mode, const PlanSources& src = {});

/// The straggler factor of a plan: the peer's empirical tail model over the number n of nodes the
/// step waits on, 1 + j·log2 n/(log2 n + 1)·sqrt(log2 n), j = the system's straggler_jitter
/// (default kNodeStragglerJitter; compat mode kDefaultStragglerJitter); 1 when disabled or n = 1. n is the job's node count (every
/// node joins the step's synchronising collectives), the same for every plan on the same GPUs;
/// compat mode keeps SimuMax v1.2's n = min(nodes, dp, edp).
[[nodiscard]] Straggler straggler_model(const StrategyConfig& s, const SystemConfig& sys,
                                        Mode mode = Mode::Default);

/// 64-bit content hashes (FNV-1a over the canonical JSON of the config; the system's is its
/// fingerprint, computed at load). Cache keys derive from these, never from addresses.
[[nodiscard]] uint64_t content_hash(const ModelConfig& m);
[[nodiscard]] uint64_t content_hash(const SystemConfig& sys);
/// Hash of the strategy fields the op graph of one chunk can read: every field, with the ones
/// that only shape the pipeline, data parallelism or the optimizer reset to their defaults
/// (forgetting one there costs cache hits, never correctness).
[[nodiscard]] uint64_t chunk_strategy_hash(const StrategyConfig& s);
/// Sets `p.chunk_key` from the strategy `p` was resolved from (before an estimate with a cache).
inline void key_chunks(Plan& p, const StrategyConfig& s) { p.chunk_key = chunk_strategy_hash(s) | 1; }
/// resolve_plan with the chunk key (key_chunks): a plan to estimate through an EstimateCache.
[[nodiscard]] inline Plan keyed_plan(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys,
                                     Mode mode = Mode::Default) {
  Plan p = resolve_plan(m, s, sys, mode);
  key_chunks(p, s);
  return p;
}

}  // namespace trainsim
