// Time of one kernel on one accelerator: roofline over the op's FLOP rate (shape-keyed
// measured efficiency, else the op's fallback) and its bandwidth class (the peer's SystemConfig).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/system_config.h"
#include "model/graph.h"

namespace trainsim {

/// Records efficiency-table hits and misses (deduplicated by op and key).
struct EfficiencyLog {
  struct Miss {
    std::string op, key;
    double flops = 0, used = 0;
  };
  std::vector<Miss> misses;
  int64_t hits = 0;
  void miss(std::string_view op, const std::string& key, double flops, double used);
  /// Adds `other`'s hits and the misses not recorded yet (a chunk's log into its estimate's).
  void merge(const EfficiencyLog& other);

 private:
  [[nodiscard]] bool recorded(size_t hash, std::string_view op, std::string_view key) const;
  std::vector<size_t> seen_;  // hash of each recorded miss's op and key (misses[i]), for a cheap dedup
};

/// One kernel's time and the FLOP efficiency it used (0 for a kernel without FLOPs).
struct KernelCost {
  double time_s = 0;
  double efficiency = 0;
  bool measured = false;  // the efficiency came from the shape-keyed table, not the op default
};

/// Seconds for one kernel: max(flops/(peak·eff), bytes/(bw·eff) + latency) in roofline mode.
/// `log` may be null.
[[nodiscard]] KernelCost kernel_cost(const SystemConfig& sys, const Kernel& k, EfficiencyLog* log);
[[nodiscard]] double kernel_time(const SystemConfig& sys, const Kernel& k, EfficiencyLog* log);

/// Seconds to stream `bytes` through the `default` bandwidth class (latency included; 0 for 0 bytes).
[[nodiscard]] double memory_time(const SystemConfig& sys, double bytes, const char* bw = "default");

}  // namespace trainsim
