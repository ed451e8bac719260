// `trainsim validate` as a library: the accuracy tables of a folder (validation/) predicted case
// by case, and the JSON and CSV reports. The CLI and the Python module run the same code.
#pragma once

#include <string>
#include <vector>

#include "inputs/mode.h"
#include "cli/validation_runner.h"

namespace trainsim {

/// One table's results.
struct TableRun {
  ValidationTable table;
  std::string system_source;
  std::string system_error;  // the table's system could not be loaded
  std::vector<CaseResult> results;
  std::vector<MetricSummary> summary;
};

/// The tables of `root` (a folder of table folders, or one table folder), only those named in
/// `wanted` when given (ConfigError with a suggestion for an unknown one); `system_swaps`
/// ("NAME=SYSTEM", as --system) change the system of the tables that name NAME (UsageError when
/// malformed or unused). Input errors in the tables are thrown before any prediction.
[[nodiscard]] std::vector<ValidationTable> load_validation_tables(const std::string& root,
                                                                  const std::vector<std::string>& wanted,
                                                                  const std::vector<std::string>& system_swaps);

/// Predicts every case of a table (a system that cannot be loaded fails each case).
[[nodiscard]] TableRun run_validation_table(ValidationTable t, Mode mode);

/// `validate --json` (with its final newline) and the `--csv` file.
[[nodiscard]] std::string validate_json(const std::vector<TableRun>& runs);
[[nodiscard]] std::string validate_csv(const std::vector<TableRun>& runs);

}  // namespace trainsim
