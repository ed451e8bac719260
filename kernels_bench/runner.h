// Runs a plan on a backend: resume, progress on stderr, results appended as they finish.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "backend.h"
#include "plan.h"

namespace trainsim::kb {

struct RunOptions {
  MeasureOptions measure;
  bool resume = false;          // reuse results of an earlier (possibly interrupted) run
  std::string out_path;         // kernels.json
  std::string provenance_json;  // JSON object text: tool, version, command, date, shapes file
};

struct RunSummary {
  int64_t measured = 0, reused = 0, ok = 0, unsupported = 0, failed = 0;
};

/// Measures every item of `plan` not already measured (with --resume), appending each result
/// to the partial file as soon as it is known, then writes `out_path` atomically. Without
/// `resume`, an existing partial file is a UsageError (it holds an interrupted run). Results
/// marked failed are measured again on resume. Progress lines go to `progress`.
RunSummary run_plan(const BenchPlan& plan, Backend& backend, const RunOptions& opt, std::FILE* progress);

/// Fills `peak` and the informational `efficiency` of an ok result from the device peaks
/// (memory results are reported without a latency deduction; merge applies the system's).
void fill_efficiency(KernelResult& r, const DeviceFacts& dev);

}  // namespace trainsim::kb
