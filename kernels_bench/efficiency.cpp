// Efficiency math and peaks.
#include "efficiency.h"

#include "core/text.h"

namespace trainsim::kb {

double compute_efficiency(double flops, double time_s, double peak_flops) {
  if (time_s <= 0 || peak_flops <= 0) return 0;
  return flops / (time_s * peak_flops);
}

std::optional<double> memory_efficiency(double bytes, double time_s, double peak_bytes_per_s,
                                        double latency_s, int launches) {
  double net = time_s - latency_s * launches;
  if (net <= 0 || peak_bytes_per_s <= 0) return std::nullopt;
  return bytes / (peak_bytes_per_s * net);
}

Peaks device_peaks(const std::string& name, int cc_major, int cc_minor, int sm_count, double sm_clock_hz) {
  // NVIDIA datasheets, dense (no sparsity) tensor-core TFLOPS.
  struct Row {
    const char* substr;
    double bf16_tflops, fp8_tflops;
  };
  static const Row kRows[] = {
      {"H100 PCIe", 756, 1513}, {"H100 NVL", 835, 1671}, {"H100", 989, 1979}, {"H200", 989, 1979},
      {"H20", 148, 296},        {"GH200", 989, 1979},    {"B200", 2250, 4500}, {"B100", 1750, 3500},
      {"A100", 312, 0},         {"A800", 312, 0}};
  for (const auto& r : kRows)
    if (name.find(r.substr) != std::string::npos)
      return {r.bf16_tflops * 1e12, r.fp8_tflops * 1e12, std::string("datasheet ") + r.substr};
  // Dense BF16 FLOP/clk/SM: Ampere 1024 (sm_80), Ada 512 (sm_89), Hopper 2048 x 2 = 4096,
  // Blackwell 8192; FP8 doubles where supported (Ada, Hopper, Blackwell).
  int cc = cc_major * 10 + cc_minor;
  double per_clk = cc >= 100 ? 8192 : cc >= 90 ? 4096 : cc == 89 ? 512 : cc >= 80 ? 1024 : 0;
  double bf16 = per_clk * sm_count * sm_clock_hz;
  double fp8 = cc >= 89 ? 2 * bf16 : 0;
  return {bf16, fp8, strprintf("%d SMs x %.0f MHz x %.0f FLOP/clk/SM", sm_count, sm_clock_hz / 1e6, per_clk)};
}

}  // namespace trainsim::kb
