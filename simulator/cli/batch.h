// `trainsim batch` as a library: every DIR/<case>/{model,strategy}.json (or megatron_args.txt,
// with an optional config.json) estimated into one CSV row. The CLI and the Python module run it.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "inputs/mode.h"
#include "system/presets.h"
#include "system/system_config.h"

namespace trainsim {

struct BatchOptions {
  std::string dir;     // directory of cases
  std::string system;  // preset name or file
  std::string match;   // only cases whose name contains this ("" = all)
  bool keep_going = false;
  Mode mode = Mode::Default;
  std::optional<ConfigText> system_document;  // in place of `system` (the Python module)
};

/// The cases found (sorted) and the system loaded.
struct BatchRun {
  BatchOptions options;
  ConfigText system_text{"", ""};
  SystemConfig system;
  std::vector<std::string> cases;
};

struct BatchSummary {
  size_t cases = 0, ran = 0;  // ran: cases run, including failed ones
  int failed = 0;
  double total_us = 0;  // estimate time of the cases that succeeded
};

/// Checks the directory and loads the system (ConfigError naming them).
[[nodiscard]] BatchRun prepare_batch(const BatchOptions& o);

/// Writes the CSV (header, then rows a block of cases at a time) through `write`; a failing case
/// records its error in its row and stops the batch unless keep_going. Progress lines (at most
/// one a second) go to `progress`.
BatchSummary run_batch(const BatchRun& b, const std::function<void(const std::string&)>& write,
                       const std::function<void(const std::string&)>& progress);

/// "batch: N cases, F failed, U us per evaluated case[; stopped ...]\n".
[[nodiscard]] std::string batch_summary_line(const BatchSummary& s);

}  // namespace trainsim
