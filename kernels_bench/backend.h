// The measuring side of kernels_bench: a device backend (CUDA when built with it; fakes in tests).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "calibration/kernels_file.h"
#include "plan.h"
#include "self_check.h"

namespace trainsim::kb {

/// Timing options shared by every item.
struct MeasureOptions {
  int warmup = 5;
  int samples = 20;
  double min_warmup_s = 0.2;  // device time of the warm-up (clock ramp), see TimingLoopOptions
  double workspace_bytes = 32.0 * 1024 * 1024;  // cuBLAS workspace (TE uses 32 MiB on Hopper)
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// Facts about the device the results come from (name, clocks, peaks, library versions).
  [[nodiscard]] virtual DeviceFacts device() = 0;
  /// Measurement method (L2 policy, timer, statistic) as a JSON object text.
  [[nodiscard]] virtual std::string method_json(const MeasureOptions& opt) = 0;
  /// Measures one item. A configuration the library refuses is a result with status
  /// "unsupported" and a reason; other failures throw Error.
  [[nodiscard]] virtual KernelResult measure(const BenchItem& item, const MeasureOptions& opt) = 0;
  /// --self-check: numerics of every op family on small problems against the CPU references,
  /// then timing sanity (efficiency <= 1 of the device peak, time growing with size).
  [[nodiscard]] virtual std::vector<CheckLine> self_check(const MeasureOptions& opt) = 0;
};

/// The CUDA backend; throws Error when the binary was built without CUDA or no GPU is usable.
[[nodiscard]] std::unique_ptr<Backend> make_device_backend();

}  // namespace trainsim::kb
