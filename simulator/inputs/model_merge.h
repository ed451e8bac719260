// Fits efficiency models from measured grids and puts them into a system config
// (`trainsim system build --gemm-grid`).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compute/grouped_model.h"
#include "system/system_config.h"

namespace trainsim {

/// Reads a GEMM grid document (`kind` trainsim-gemm-grid: `op` matmul or fp8_matmul, `device`,
/// optional `dtype` and `provenance`, `points` [[m, n, k, time_s], ...]) and sets the op's model
/// in `sys`, its provenance naming the source, the device and the number of points. The op class
/// must exist in `sys`; its per-shape entries are dropped (the model answers every dense GEMM
/// key, its measured nodes exactly). Throws ConfigError naming `source` and the JSON path on bad input.
void merge_gemm_grid(SystemConfig& sys, const std::string& text, const std::string& source);

/// Reads a grouped-GEMM grid document (`kind` trainsim-grouped-grid: `op` group_matmul or
/// fp8_group_matmul, `device`, optional `dtype` and `provenance`, `series` [{experts, hidden,
/// inter, tokens: [...], time_s: [...]}, ...], the gated pair's time per tokens-per-expert count)
/// and sets the op's grouped-GEMM model (compute/grouped_model.h) in `sys`; the class's per-shape
/// entries and other model are dropped. Throws ConfigError naming `source` and the JSON path.
void merge_grouped_grid(SystemConfig& sys, const std::string& text, const std::string& source);

/// Sets aside the series of `series` that compute/grouped_screen.h screens out (every source of
/// a grouped-GEMM model: published tables, kernels_bench grids) and returns what the model's
/// provenance records of it: `series_set_aside` (each series, the smaller shape it was compared
/// to, the token count, the throughput ratio) and `screen` (the rule); an empty object when
/// none is.
nlohmann::json set_aside_screened(std::vector<GroupedSeries>& series);

/// Fits measured-points models (compute/point_model.h) in `sys` from the per-shape entries of
/// another system file `src` (e.g. SimuMax's calibrated files), one per op class in `ops` that
/// `src` measured (non-empty accurate_efficient_factor; empty `ops`: every keyed class). An
/// efficiency is carried over as the same time: eff · src peak / sys peak. The class's own
/// entries and model are replaced; its provenance names `source`, the file's sys_name and
/// description and the number of points. Returns the classes set. Throws ConfigError naming
/// `source` for a class in `ops` that `src` has no entries for or `sys` lacks.
std::vector<std::string> merge_measured_system(SystemConfig& sys, const SystemConfig& src, const std::string& source,
                                               const std::vector<std::string>& ops);

/// Takes the memory-bound bandwidth classes `classes` (accelerator.bandwidth: default,
/// permute_fwd, ...) from another system file `src` whose figures were measured (SimuMax's
/// calibrated files): the same effective bandwidth (gbps x efficient_factor) against the base's
/// gbps, and the source's latency per launch. Records both figures, old and new, under the
/// system's provenance `measured_bandwidths`. Returns the classes set. Throws ConfigError naming
/// `source` for a class either file lacks, or an effective bandwidth above the base's peak.
std::vector<std::string> merge_measured_bandwidths(SystemConfig& sys, const SystemConfig& src, const std::string& source,
                                                   const std::vector<std::string>& classes);

/// Takes op classes and networks whole from another system file `src` of the same GPU, so a system
/// can be composed family by family (e.g. a datasheet preset with a measured preset's GEMM models
/// and NVLink curves): each name in `names` is an op class (accelerator.op: its peak, efficiency,
/// per-shape entries and fitted model) or a network (networks: bandwidth, efficiencies, latencies
/// and collective curves), replacing the base's. Records `taken` (file, sys_name, names) in the
/// system's provenance. Returns the names taken. Throws ConfigError naming `source` and the path
/// for a name `src` does not have, listing the op classes and networks it has.
std::vector<std::string> take_from_system(SystemConfig& sys, const SystemConfig& src, const std::string& source,
                                          const std::vector<std::string>& names);

/// One line per op class with an efficiency model, naming what it was fitted on, e.g.
/// "matmul: GEMM model of 35,700 measured points (aiconfigurator-core 0.12.0, NVIDIA H100 80GB HBM3)".
[[nodiscard]] std::vector<std::string> model_summaries(const SystemConfig& sys);

}  // namespace trainsim
