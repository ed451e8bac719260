// Calibration grids: the shapes `kernels_bench --grid` measures for each efficiency model (so one
// run on a node calibrates every plan, not only the shapes of one), and the fit of those models
// from the grid's results in `trainsim system build --kernels` (docs/kernels-bench.md, "Grids").
//
// The axes mirror the models' (compute/gemm_model.h, grouped_model.h, point_model.h) and the
// published tables tools/measured imports: GEMM rows m from 1 to 64 Ki on powers of two (the
// aligned series of the GEMM model), n and k from 256 to 32 Ki on a half-octave grid; grouped
// GEMM: the expert shapes of common MoE models (the gated up projection n = 2I, k = h and the
// down projection n = h, k = I of each, timed apart and summed as the tables' fused pair) at
// tokens per expert from 8 to 8 Ki; attention: heads × GQA ratio × sequence × head dims, forward
// and backward, causal (the training mask; keys carry no mask); memory-bound: a byte sweep per
// bandwidth class and the launch floor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibration/kernels_file.h"
#include "calibration/shapes_file.h"
#include "system/system_config.h"

namespace trainsim {

/// What `--grid` and `--dtype` select. Families: gemm, grouped, attention, memory; dtypes: bf16,
/// fp8 (attention is measured in bf16 only: no fp8 attention class).
struct GridSpec {
  bool gemm = false, grouped = false, attention = false, memory = false;
  bool bf16 = false, fp8 = false;
};

/// Parses "gemm,grouped,attention,memory" (or "all") and "bf16,fp8". Throws UsageError naming
/// the flag and the valid values.
[[nodiscard]] GridSpec parse_grid_spec(const std::string& families, const std::string& dtypes);

/// GEMM axes (y[m, n] = x[m, k]·W[n, k]ᵀ, layout TN: the model keys no layout).
inline constexpr double kGridGemmM[] = {1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
inline constexpr double kGridGemmNK[] = {256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 32768};

/// An MoE model's expert: hidden h, intermediate I, experts in the model (bounds the experts
/// per rank timed for it).
struct GridExpertShape {
  const char* model;
  double hidden, inter, experts;
};
inline constexpr GridExpertShape kGridExpertShapes[] = {
    {"Mixtral-8x7B", 4096, 14336, 8},   {"Mixtral-8x22B", 6144, 16384, 8}, {"DeepSeek-V2", 5120, 1536, 160},
    {"DeepSeek-V3", 7168, 2048, 256},   {"Qwen3-30B-A3B", 2048, 768, 128}, {"Qwen3-235B-A22B", 4096, 1536, 128},
};
inline constexpr double kGridExpertsPerRank[] = {4, 8, 16, 32};
inline constexpr double kGridTokensPerExpert[] = {8, 32, 128, 256, 512, 1024, 2048, 4096, 8192};

/// Attention axes: batch 1, query heads, GQA ratio (heads / KV heads), sequence, (d_qk, d_v).
/// (192, 128) is multi-latent attention's, which has no GQA (ratio 1 only).
inline constexpr double kGridAttnHeads[] = {16, 32, 64};
inline constexpr double kGridAttnGqa[] = {1, 4, 8};
inline constexpr double kGridAttnSeq[] = {1024, 2048, 4096, 8192, 16384, 32768};
inline constexpr double kGridAttnDims[][2] = {{64, 64}, {128, 128}, {192, 128}};

/// Memory-bound sweeps: device copies (class default) by bytes moved per direction, and the MoE
/// permutation and fused cross-entropy cases by tokens (their hidden/topk and vocab as the
/// fixed cases of kernels_bench).
inline constexpr double kGridCopyBytes[] = {4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30};
inline constexpr double kGridMemTokens[] = {1024, 4096, 16384};

/// One grouped-GEMM series of the grid: E experts per rank of one expert shape.
struct GridSeries {
  double experts, hidden, inter;
};
/// The grouped grid's series (expert shapes × experts per rank ≤ the model's experts).
[[nodiscard]] std::vector<GridSeries> grid_series();

/// The forward grouped-GEMM key of E experts, M tokens each, n × k weights (the simulator's,
/// model/ops_moe.cpp).
[[nodiscard]] std::string grid_grouped_key(double experts, double tokens, double n, double k, bool fp8);

/// The compute shapes of the grid, family by family (gemm, grouped, attention), bf16 then fp8.
[[nodiscard]] std::vector<ShapeEntry> grid_compute_shapes(const GridSpec& spec);

/// Refinement level of a grid shape, so that a run cut short (by `--budget-min`, or a machine
/// lost) has measured a coarse grid of every family rather than a fine grid of the first: on each
/// numeric axis of more than four values, every fourth value and the last are level 0, every
/// second level 1, the rest level 2 (the GEMM's m, n and k; grouped tokens per expert; attention
/// sequence); shorter axes and categorical ones (expert shapes, head dims, dtype, direction) are
/// level 0 throughout. A shape's level is its highest axis level; -1 for a shape not on the grid.
[[nodiscard]] int grid_level(const ShapeKey& shape);

/// The grid as recorded in the results' provenance (`grid`): families, dtypes and every axis.
[[nodiscard]] std::string grid_description_json(const GridSpec& spec);

/// When `doc` is a grid run (provenance `grid`), fits the models of the families it names from
/// its ok results: the GEMM classes' gemm_grid (the results on the grid's m, n, k axes, b = 1,
/// layout TN), the grouped classes' grouped_grid (series of the provenance's expert shapes: up +
/// down time per tokens count), the attention classes' points (every attention result), each
/// with provenance naming `source`, the device, the command and the library versions. A class's
/// per-shape entries become this run's results off the grid (a plan's shapes measured besides
/// it with --shapes; looked up before the model). Memory-bound classes are fitted by
/// merge_kernels itself. Returns one line per model (and per grouped class whose series a run
/// cut by its budget left without a whole GEMM pair: its entries stay per shape). Throws
/// ConfigError naming `source` when a model cannot be built from the points.
std::vector<std::string> merge_kernel_grid(SystemConfig& sys, const KernelsDoc& doc, const std::string& source);

}  // namespace trainsim
