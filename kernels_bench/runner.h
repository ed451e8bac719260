// Runs a plan on a backend: resume, progress on stderr, results appended as they finish.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "backend.h"
#include "plan.h"

namespace trainsim::kb {

struct RunOptions {
  MeasureOptions measure;
  bool resume = false;          // reuse results of an earlier (possibly interrupted) run
  std::string out_path;         // kernels.json
  std::string provenance_json;  // JSON object text: tool, version, command, date, shapes file
  double deadline_s = 0;        // stop starting new items after this many seconds (0: none)
  std::function<double()> now_s;  // monotonic clock in seconds (default: steady_clock)
};

struct RunSummary {
  int64_t measured = 0, reused = 0, ok = 0, unsupported = 0, failed = 0;
  int64_t left = 0;  // items not measured because the deadline passed (kept for --resume)
};

/// Measures every item of `plan` not already measured (with --resume), appending each result
/// to the partial file as soon as it is known, then writes `out_path` atomically. Without
/// `resume`, an existing partial file is a UsageError (it holds an interrupted run). Results
/// marked failed are measured again on resume. Progress lines go to `progress`.
/// When `deadline_s` passes, the remaining items are left out of `out_path` (`left` counts
/// them) and --resume measures them later. A DeviceLostError from the backend stops the
/// run: its item is recorded as failed and an Error says what happened and how to go on.
RunSummary run_plan(const BenchPlan& plan, Backend& backend, const RunOptions& opt, std::FILE* progress);

/// Fills `peak` and the informational `efficiency` of an ok result from the device peaks
/// (memory results are reported without a latency deduction; merge applies the system's).
void fill_efficiency(KernelResult& r, const DeviceFacts& dev);

}  // namespace trainsim::kb
