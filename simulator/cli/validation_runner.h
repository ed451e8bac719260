// Accuracy suite: tables of real measurements (validation/<table>/), predictions and error summary.
//
// A table folder holds
//   cases.csv      one row per case: `case`, one `real_<metric>` column per compared metric,
//                  optional `peer_err_pct_<metric>` / `peer_tflops_err_pct` (the peer simulator's
//                  published signed error), any other columns are informational;
//   system.txt     one line: a system preset name, or a file path relative to the table folder;
//   cases/<case>/  model.json and strategy.json in the SimuMax-compatible format, or
//                  megatron_args.txt (a Megatron-LM command line) with an optional config.json
//                  (a Hugging Face config for the architecture).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inputs/mode.h"
#include "inputs/model_config.h"
#include "system/presets.h"
#include "inputs/strategy_config.h"
#include "system/system_config.h"
#include "estimate/fit.h"

namespace trainsim {

/// A compared quantity (CSV column `real_<name>`).
enum class ValidationMetric {
  IterationMs,  // iteration_ms: step time
  LayerFwdMs,   // layer_fwd_ms: forward time of one transformer layer, one micro-batch
  LayerBwdMs,   // layer_bwd_ms: backward (incl. recompute) of one layer, one micro-batch
  LayerMs,      // layer_ms: forward + backward of one layer, one micro-batch
  AllocGib,     // alloc_gib: peak memory allocated by PyTorch (torch.cuda.max_memory_allocated,
                //   max over ranks) vs Estimate::peak_alloc_bytes (max over stages), GiB
  ReservedGib,  // reserved_gib: peak reserved by the caching allocator (max_memory_reserved)
                //   vs Estimate::peak_reserved_bytes, GiB
};

[[nodiscard]] const char* metric_name(ValidationMetric m);
/// Every metric name, in enum order.
[[nodiscard]] std::vector<std::string> metric_names();
/// True for the memory metrics (GiB), false for the times (ms).
[[nodiscard]] bool is_memory_metric(ValidationMetric m);

struct ValidationCase {
  std::string name;
  int64_t line = 0;  // line in cases.csv (1-based)
  /// One per ValidationTable::metrics, same order.
  std::vector<double> real;
  std::vector<std::optional<double>> peer_err_pct;  // signed, on the same metric
  /// Informational columns (name, value), in CSV order.
  std::vector<std::pair<std::string, std::string>> info;
};

struct ValidationTable {
  std::string name;      // folder name
  std::string dir;       // folder path
  std::string csv_path;  // name used in messages
  std::string system;    // as written in system.txt (empty when parsed from text only)
  std::vector<ValidationMetric> metrics;
  std::vector<ValidationCase> cases;

  [[nodiscard]] std::string case_dir(const ValidationCase& c) const;
};

/// Parses cases.csv text (metrics and cases; name/dir/system left empty). Throws ConfigError
/// naming `source` and the line.
[[nodiscard]] ValidationTable parse_validation_csv(const std::string& text, const std::string& source);

/// Loads a table folder: cases.csv, system.txt, and checks that every row has a case folder
/// with model.json and strategy.json (or megatron_args.txt) and every case folder has a row.
[[nodiscard]] ValidationTable load_validation_table(const std::string& dir);

/// A table's name: the last component of its folder path ("a/b/" → "b").
[[nodiscard]] std::string validation_table_name(const std::string& dir);

/// The table folders under `root` (sorted), or `root` itself when it holds a cases.csv.
[[nodiscard]] std::vector<std::string> find_validation_tables(const std::string& root);

/// The table's system document: system.txt names a file relative to the table folder, else a
/// preset (or a path resolved by resolve_config).
[[nodiscard]] ConfigText resolve_table_system(const ValidationTable& t);

/// (predicted / real − 1)·100.
[[nodiscard]] double signed_error_pct(double predicted, double real);

/// The step-time error matching a TFLOPS error on the same FLOP count: time ∝ 1/TFLOPS, so
/// 100·(1/(1 + e/100) − 1). E.g. −1.46 % TFLOPS (too slow) → +1.4816 % time.
[[nodiscard]] double time_error_from_tflops_error(double tflops_err_pct);

/// Predicts the table's metrics for one plan (one value per ValidationTable::metrics).
/// iteration_ms = Estimate::iteration_time_s; alloc_gib / reserved_gib = the peak allocated /
/// reserved bytes of the stage that holds the most (a real run reports the max over ranks).
/// Per-layer metrics need pp_size 1 and an even
/// layer_num L: the plan is also estimated with L/2 layers (recompute_layer_num capped at L/2)
/// and per-layer = (x(L) − x(L/2)) / (L/2) with x the stage's fwd_per_mb_s / bwd_per_mb_s, so
/// embedding, LM head and loss cancel out.
[[nodiscard]] std::vector<double> predict_metrics(const std::vector<ValidationMetric>& metrics,
                                                  const ModelConfig& m, const StrategyConfig& s,
                                                  const SystemConfig& sys, Mode mode = Mode::Default);

struct CaseResult {
  std::string name;
  std::string error;               // non-empty when the case failed
  std::vector<double> predicted;   // one per metric when it did not
  /// The fit verdict of the whole plan (estimate/fit.h): every real run fit its GPUs, so a
  /// verdict of "does not fit" is a miss of the memory model.
  FitVerdict fit;
  double peak_reserved_bytes = 0;
  double peak_alloc_bytes = 0;
  [[nodiscard]] bool ok() const { return error.empty(); }
};

/// The model and strategy of a case: cases/<case>/model.json + strategy.json, or
/// megatron_args.txt (+ config.json when present) read as `trainsim batch` reads them.
struct ValidationPlan {
  ModelConfig model;
  StrategyConfig strategy;
  std::string model_source, strategy_source;
};
[[nodiscard]] ValidationPlan load_validation_plan(const ValidationTable& t, const ValidationCase& c,
                                                  Mode mode = Mode::Default);

/// Loads the case's model/strategy, checks the plan, predicts its metrics and its fit verdict
/// on `sys`; any error becomes
/// CaseResult::error (the run goes on). `system_source` names the system in messages.
[[nodiscard]] CaseResult run_validation_case(const ValidationTable& t, const ValidationCase& c,
                                             const SystemConfig& sys,
                                             const std::string& system_source = "system",
                                             Mode mode = Mode::Default);

/// Accuracy of one metric over a table.
struct MetricSummary {
  ValidationMetric metric = ValidationMetric::IterationMs;
  int64_t cases = 0;     // rows
  int64_t compared = 0;  // rows predicted without error
  double mean_abs_err_pct = 0, max_abs_err_pct = 0;
  std::string max_case;  // row of the max |error|
  /// The peer's published error on the compared rows that have one.
  int64_t peer_compared = 0;
  double peer_mean_abs_err_pct = 0, peer_max_abs_err_pct = 0;
  /// The peer's published error on every row that has one (compared or not).
  int64_t peer_published = 0;
  double peer_published_mean_abs_err_pct = 0, peer_published_max_abs_err_pct = 0;
};

/// Fit verdicts over a table's predicted cases.
struct FitSummary {
  int64_t predicted = 0;  // cases predicted without error and with a known verdict
  int64_t fits = 0;       // of those, predicted to fit (FITS or TIGHT)
  double least_headroom_gib = 0;
  std::string least_case;
  /// The cases predicted not to fit (every one of them ran: each is a miss), in table order.
  std::vector<std::string> not_fit;
  /// The cases predicted TIGHT (fit only if the caching allocator releases its cache), in table order.
  std::vector<std::string> tight;
  /// False for a table of per-layer metrics: its cases are the model as written around the timed
  /// layer (the runner differences two layer counts), not the runs that were timed, so their
  /// verdicts are shown but are not misses.
  bool whole_runs = true;
};
[[nodiscard]] FitSummary summarize_fit(const std::vector<CaseResult>& results);
/// The same, with `whole_runs` from the table: false when any of its metrics is per layer.
[[nodiscard]] FitSummary summarize_fit(const ValidationTable& t, const std::vector<CaseResult>& results);

/// True unless one of the table's metrics is a per-layer metric (layer_fwd_ms, layer_bwd_ms,
/// layer_ms): such a table measures layers, and its cases are not whole training runs.
[[nodiscard]] bool measures_whole_runs(const ValidationTable& t);

/// One summary per metric of the table; `results` are matched to cases by position.
[[nodiscard]] std::vector<MetricSummary> summarize(const ValidationTable& t,
                                                   const std::vector<CaseResult>& results);

}  // namespace trainsim
