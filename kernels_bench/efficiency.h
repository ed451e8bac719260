// Efficiency math (ideal / measured) and datasheet peaks.
#pragma once

#include <optional>
#include <string>

namespace trainsim::kb {

/// Compute efficiency: flops / (time_s * peak_flops) (SimuMax config.py time model inverted).
[[nodiscard]] double compute_efficiency(double flops, double time_s, double peak_flops);

/// Memory-bound efficiency as the peer fits it (test_ce_permute_efficiency.py):
/// bytes / (peak_bytes_per_s * (time_s - latency_s * launches)); nullopt when the time does not
/// exceed the latency budget.
[[nodiscard]] std::optional<double> memory_efficiency(double bytes, double time_s, double peak_bytes_per_s,
                                                      double latency_s, int launches);

/// Dense peaks (FLOP/s) of one device.
struct Peaks {
  double bf16 = 0, fp8 = 0;
  std::string source;  // "datasheet <name>" or "sm_count x clock x FLOP/clk/SM"
};

/// Datasheet dense BF16/FP8 peaks for known GPUs by name (H100 SXM 989/1979 TFLOPS, ...);
/// otherwise sm_count x sm_clock_hz x per-architecture dense FLOP/clk/SM. Zero when unknown.
[[nodiscard]] Peaks device_peaks(const std::string& name, int cc_major, int cc_minor, int sm_count,
                                 double sm_clock_hz);

}  // namespace trainsim::kb
