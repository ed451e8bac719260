// Sweep planning: what kernels_bench measures, in which order, and how long it should take.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibration/shape_key.h"
#include "calibration/shapes_file.h"

namespace trainsim::kb {

enum class Family { Gemm, GroupedGemm, SdpaFwd, SdpaBwd, Memory, Latency };

/// A memory-bound case. Patterns: copy (device-to-device copy of `copy_bytes`), permute_fwd /
/// permute_bwd (MoE token permutation of tokens x hidden with topk), ce_fusion (fused
/// cross-entropy forward + backward over tokens x vocab logits), launch (empty kernel),
/// launch_chain_eager / launch_chain_graph (256 tiny fills launched one by one, or replayed
/// from one captured CUDA graph: the launch floor of a memory-bound kernel, eager and graphed).
struct MemoryCase {
  std::string pattern;
  int64_t tokens = 0, hidden = 0, topk = 0, vocab = 0;
  double copy_bytes = 0;
  int64_t elem_bytes = 2;  // bf16 activations/logits
};

/// One measurement of the plan; (kind, op, key) identifies its result.
struct BenchItem {
  Family family = Family::Gemm;
  std::string kind, op, key;
  std::optional<ShapeKey> shape;  // compute items
  MemoryCase mem;                 // memory / latency items
  double flops = 0;               // compute: simulator-convention FLOP of one call
  double bytes = 0;               // memory: bytes under the simulator's byte formula
  int launches = 1;               // kernels per timed call
  double est_s = 0;               // estimated wall time of the whole item (setup + all runs)
  int level = -1;                 // a grid shape's refinement level (calibration/kernel_grid.h), else -1
  [[nodiscard]] std::string id() const { return kind + "|" + op + "|" + key; }
};

/// Assumptions for the run-time estimate (defaults: an H100 SXM at typical efficiencies).
struct PlanOptions {
  int warmup = 5;
  int samples = 20;
  bool memory = true;             // include memory-bound and launch-latency items
  bool launch_floor_only = false; // only the launch floors (eager and CUDA-graph chains)
  bool grid_memory = false;       // memory-bound items: the grid's sweeps (grid_memory_cases)
  bool item_lines = true;         // --dry-run prints one line per item (a grid: the summary only)
  double peak_bf16_flops = 989e12;
  double peak_fp8_flops = 1979e12;
  double mem_bytes_per_s = 3.35e12;
  double l2_bytes = 50.0 * (1 << 20);
  double min_warmup_s = 0.2;      // clock warm-up per item (MeasureOptions::min_warmup_s)
};

struct BenchPlan {
  std::vector<BenchItem> items;
  double est_total_s = 0;
};

/// The fixed memory-bound cases (SimuMax test_ce_permute_efficiency.py shapes).
[[nodiscard]] std::vector<MemoryCase> memory_cases();
/// The launch-floor cases (--launch-floor): launch_chain_eager, launch_chain_graph.
[[nodiscard]] std::vector<MemoryCase> launch_floor_cases();

/// The memory-bound grid (--grid memory): copies by bytes, permutation and fused cross-entropy
/// cases by tokens (calibration/kernel_grid.h), the empty kernel and both launch floors.
[[nodiscard]] std::vector<MemoryCase> grid_memory_cases();

/// Bytes of one timed call under the simulator's byte formulas (SimuMax
/// Permutation/UnPermutation/ParallelCE _comp_leaf_mem_accessed_info), and its kernel count.
[[nodiscard]] double memory_case_bytes(const MemoryCase& c);
[[nodiscard]] int memory_case_launches(const MemoryCase& c);
/// Exact key string of a memory case, e.g. "tokens=4096, hidden=7168, topk=8".
[[nodiscard]] std::string memory_case_key(const MemoryCase& c);
/// Bandwidth class a memory case calibrates (default, permute_fwd, permute_bwd, ce_fusion).
[[nodiscard]] std::string memory_case_class(const MemoryCase& c);

/// Builds the plan: every shape of `shapes` in file order, then the memory-bound cases.
/// Throws UsageError for options out of range.
[[nodiscard]] BenchPlan make_plan(const ShapesDoc& shapes, const PlanOptions& opt);

/// A grid run's order: the memory-bound and latency items (seconds in all), the grid's level-0
/// shapes of every family, the shapes of the --shapes files that are not on the grid, then grid
/// levels 1 and 2; within each, the plan's order (family by family). Sets each compute item's
/// `level` (grid_level). A run cut short by its budget has measured every family coarsely.
void order_coarse_to_fine(BenchPlan& plan);

/// Estimated seconds of one item: clock warm-up + setup + (warmup + samples) x (kernel +
/// per-sample overhead: L2 flush read and event sync).
[[nodiscard]] double estimate_item_seconds(const BenchItem& item, const PlanOptions& opt);

/// Human-readable plan for --dry-run: one line per item (unless opt.item_lines is off), the
/// items and estimated time per family, for a grid run (levels set) the items and time per step
/// of order_coarse_to_fine with the time elapsed at its end, and the estimated total (the last
/// line).
[[nodiscard]] std::string format_plan(const BenchPlan& plan, const PlanOptions& opt);

/// "1h02m03s" / "2m05s" / "7s".
[[nodiscard]] std::string format_duration(double seconds);

}  // namespace trainsim::kb
