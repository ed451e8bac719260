// One training step of a plan: the simulator's answer (pure function of the three configs).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compute/cost.h"
#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "plan/settings.h"
#include "system/system_config.h"
#include "plan/plan.h"
#include "timeline/timeline.h"

namespace trainsim {

/// Memory of one pipeline stage (first / middle / last, or pp_stage_<r> under sync VPP).
struct StageMemory {
  std::string name;
  double model_bytes = 0;          // weights + main grads + optimizer states (+ TE dummy wgrad)
  double weight_bytes = 0, grad_bytes = 0, state_bytes = 0;
  double activation_cache_per_mb_bytes = 0;  // saved activations of one micro-batch
  int64_t in_flight_micro_batches = 1;
  double peak_activation_bytes = 0;          // single-micro-batch liveness peak
  double peak_transient_bytes = 0;           // of the peak, the running op's working memory (not saved)
  double peak_alloc_bytes = 0;               // model + cached micro-batches + peak
  double peak_reserved_bytes = 0;            // peak_alloc / mem_factor (compat), × (1 + fragmentation) (default)
  /// Device memory outside PyTorch's allocator (default mode: CUDA context + NCCL buffers, or the
  /// system's unusable_mem_gbs when given; memory/non_tensor.h). 0 in compat mode, whose fit rule
  /// subtracts the system's flat margin instead.
  double non_tensor_bytes = 0;
  std::string peak_phase;                    // forward / backward / recompute_forward / ...
  double host_bytes = 0;                     // pinned host memory (optimizer / activation offload)
};

/// Time decomposition of one stage (seconds, whole iteration).
struct StageTime {
  std::string name;
  double fwd_compute_s = 0, bwd_compute_s = 0, recompute_s = 0;
  double tp_comm_s = 0;        // exposed TP/SP/CP/EP collectives
  double pp_comm_s = 0;        // p2p per micro-batch × mbc
  double dp_comm_s = 0;        // gradient reduce-scatter / all-gather (dense + MoE)
  double optimizer_s = 0;
  double pipeline_s = 0;       // replayed pipeline time incl. bubbles (before straggler)
  double bubble_s = 0;
  double total_s = 0;          // pipeline·straggler + dp + optimizer
  double fwd_per_mb_s = 0, bwd_per_mb_s = 0;
  /// Communication per parallel group (seconds per iteration; index = Group: tp, cp, dp, pp, ep,
  /// etp, edp). TP/CP/EP/ETP collectives include those recompute repeats; DP is the gradient
  /// reduction and parameter gather of this stage (dense and expert), PP the p2p transfer time.
  std::array<double, 7> comm_by_group_s{};
  /// The part of comm_by_group_s that runs under compute (tp_comm_overlap, overlapped DP buckets,
  /// EP all-to-alls: the time merged steps save).
  std::array<double, 7> hidden_comm_by_group_s{};
  double p2p_wait_s = 0;       // blocking p2p on the compute stream (transfer + waiting for the peer)
  double idle_s = 0;           // compute stream idle inside the pipeline (bubble as replayed)

  /// The part of a group's communication the compute stream waits for: the total less the hidden
  /// part (TP under tp_comm_overlap; DP/EDP buckets overlapped with the backward or the forward,
  /// default mode). PP: blocking p2p is exposed up to its transfer time; asynchronous p2p is
  /// hidden (a consumer waiting for data shows as idle time).
  [[nodiscard]] double exposed_comm_s(size_t group) const;
};

/// One leaf op of a chunk for one micro-batch (seconds, FLOPs, bytes): the costs the chunk's pass
/// times are summed from, kept so views can show where the time goes.
struct OpCost {
  std::string_view name;    // leaf name, e.g. "linear_qkv" (static text, see Leaf::name)
  const char* layer_type = "";  // "embedding", "dense_layer", "moe_layer" or "head"
  int32_t layer = -1;       // layer index within the chunk, -1 for embedding and head
  double fwd_s = 0, bwd_s = 0, recompute_s = 0;                // kernels (bwd: input + weight grads)
  double fwd_comm_s = 0, bwd_comm_s = 0, recompute_comm_s = 0;  // collectives on the compute stream
  double bwd_weight_s = 0, bwd_weight_comm_s = 0;              // the weight-gradient part of bwd
  std::array<double, 7> comm_by_group_s{};  // all phases' collectives, by Group (tp, cp, dp, pp, ep, etp, edp)
  std::array<double, 7> hidden_comm_by_group_s{};  // the part of comm_by_group_s overlapped with compute
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;
  double bytes = 0;           // memory traffic of all phases (recompute included)
  double efficiency = 0;      // FLOP-weighted FLOP efficiency of its kernels (0: no FLOPs)
  bool measured = false;      // every FLOP kernel with a shape key used a measured efficiency
  /// How those efficiencies were obtained, the least direct: measured, interpolated or
  /// extrapolated by a model (`measured` false: some took the op default).
  EfficiencySource source = EfficiencySource::Default;
  double cache_bytes = 0;     // activations it saves for the backward
  /// Host seconds to issue it (default mode with the system's host.framework; 0 where a CUDA
  /// graph holds it): forward, backward (weight gradients included, recompute not), and the
  /// weight-gradient part. `host_sync`: the host waits for the device before it (a sync point).
  double host_fwd_s = 0, host_bwd_s = 0, host_bwd_weight_s = 0, host_recompute_s = 0;
  bool host_sync = false;
  /// Forward and backward pass durations (kernels + collectives; backward includes recompute).
  [[nodiscard]] double fwd_total_s() const { return fwd_s + fwd_comm_s; }
  [[nodiscard]] double bwd_total_s() const { return bwd_s + bwd_comm_s + recompute_s + recompute_comm_s; }
};

/// What views need of one pipeline rank: its chunks' ops and the memory they hold.
struct RankProfile {
  double model_bytes = 0;                    // weights, grads, optimizer states (+ TE dummy wgrad)
  std::vector<std::vector<OpCost>> chunks;   // ops of each virtual chunk in call order
  std::vector<double> chunk_cache_bytes;     // activations one micro-batch of each chunk keeps
  std::vector<double> chunk_peak_bytes;      // that chunk's single-micro-batch liveness peak
};

/// Every micro-batch runs the same passes, so past the warm-up the pipeline is periodic: each
/// period adds the same time to every replayed total. Steady replays three shorter programs and,
/// when their totals grow linearly, extrapolates them to the plan's micro-batches (else replays
/// them all); Auto does so where it replays fewer ops than the whole program; Full never does.
/// Events are always the full replay.
enum class PipelineReplay { Auto, Full, Steady };

struct Estimate {
  Mode mode = Mode::Default;
  std::string schedule;        // 1f1b, interleaved_1f1b, zero_bubble_h1
  std::string p2p;             // blocking or async
  double iteration_time_s = 0;
  double mfu = 0;
  double tflops_per_gpu = 0;
  double tokens_per_s_per_gpu = 0;
  double straggler_ratio = 1;
  Straggler straggler;  // the ratio's basis
  int64_t dp = 1, edp = 1;
  int64_t global_batch_size = 0;
  int64_t padded_vocab = 0;
  std::vector<StageTime> stage_times;
  std::vector<StageMemory> stages;
  std::vector<EfficiencyMiss> misses;
  int64_t efficiency_hits = 0;
  /// Lookups a measured model answered between its points, and beyond them (held at the edge).
  int64_t efficiency_interpolated = 0, efficiency_extrapolated = 0;
  EfficiencyCounts efficiency_by_class{};  // the lookups per op class and source
  CollectiveCounts collectives_by_kind{};  // collective calls per kind and how they were timed
  double pipeline_s = 0;       // the replayed pipeline (max over ranks), before the straggler
  /// Every op of the step per rank and stream: the pipeline, then the straggler allowance, the
  /// data-parallel communication and the optimizer step.
  Timeline timeline;
  /// Every pipeline rank's ops and memory (filled when events are recorded).
  std::vector<RankProfile> ranks;
  int64_t micro_batches = 0;
  int64_t engine_ops = 0;  // ops the engine replayed for the pipeline (every replay summed)
  /// Network group chosen for tp, cp, dp, pp, ep, etp, edp (in that order); static text.
  std::array<std::pair<std::string_view, std::string_view>, 7> networks;

  [[nodiscard]] double peak_alloc_bytes() const;     // max over stages
  [[nodiscard]] double peak_reserved_bytes() const;  // max over stages
};

/// Reuses chunk results (per-layer costs, activation liveness, parameters) between estimates.
/// Exact: a chunk's results depend only on the model, the system, the strategy fields its ops
/// read, the chosen networks and its spec, and the key is a hash of exactly those contents
/// (plan/plan.h content_hash, chunk_strategy_hash). Not thread-safe: one per thread.
class EstimateCache {
 public:
  EstimateCache();
  ~EstimateCache();
  EstimateCache(const EstimateCache&);  // a copy starts empty
  EstimateCache& operator=(const EstimateCache&);
  struct Impl;
  [[nodiscard]] Impl& impl() { return *impl_; }
  /// Chunk results looked up / computed so far.
  [[nodiscard]] int64_t hits() const;
  [[nodiscard]] int64_t misses() const;
  /// Layer templates built and costed for the chunks (each kind once, shared by the chunks).
  [[nodiscard]] int64_t layer_builds() const;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Predicts one iteration of a resolved plan. `cache` (optional) shares chunk results with
/// earlier calls; its keys derive from the content of the model, system and strategy.
/// `events`: keep every op in `Estimate::timeline.events` (views need them; the search does not,
/// and skips their memory traffic). Every other field is the same either way.
/// `replay`: how the pipeline is replayed when no events are recorded (see PipelineReplay).
[[nodiscard]] Estimate estimate(const Plan& plan, EstimateCache* cache = nullptr, bool events = true,
                                PipelineReplay replay = PipelineReplay::Auto);

}  // namespace trainsim
