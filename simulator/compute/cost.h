// Time of one kernel on one accelerator: roofline over the op's FLOP rate (shape-keyed
// measured efficiency, else the op's fallback) and its bandwidth class (the peer's SystemConfig).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/system_config.h"
#include "core/small_vector.h"
#include "model/graph.h"

namespace trainsim {

/// Records efficiency-table hits and misses (deduplicated by op and key).
struct EfficiencyLog {
  struct Miss {
    const char* op;  // the kernel's op class, a static name
    PackedKey key;   // views print format_packed_key(key)
    double flops = 0, used = 0;
  };
  std::vector<Miss> misses;
  int64_t hits = 0;
  void miss(const char* op, const PackedKey& key, double flops, double used);
  /// Adds `other`'s hits and the misses not recorded yet (a chunk's log into its estimate's).
  void merge(const EfficiencyLog& other);

 private:
  [[nodiscard]] bool recorded(size_t hash, const char* op, const PackedKey& key) const;
  std::vector<size_t> seen_;  // hash of each recorded miss's key (misses[i]), for a cheap dedup
};

/// One kernel's time and the FLOP efficiency it used (0 for a kernel without FLOPs).
struct KernelCost {
  double time_s = 0;
  double efficiency = 0;
  bool measured = false;  // the efficiency came from the shape-keyed table, not the op default
};

/// The op and bandwidth classes that kernels name, resolved against one system as first met.
/// Kernels name their classes by static strings, so an estimate searches the system's maps once
/// per class and string address instead of once per kernel. The system must not change meanwhile.
class ClassTable {
 public:
  explicit ClassTable(const SystemConfig& sys) : sys_(sys) {}
  [[nodiscard]] const SystemConfig& system() const { return sys_; }
  /// The op class `name`, or null when the system has none of that name.
  [[nodiscard]] const ComputeOpConfig* op(const char* name);
  /// The bandwidth class `name`, else `default`.
  [[nodiscard]] const BandwidthConfig& bandwidth(const char* name);

 private:
  // The first meeting of a name: searched in the system and recorded. Out of line, so that the
  // lookups (every kernel) stay short leaf functions.
  [[gnu::noinline]] const ComputeOpConfig* add_op(const char* name);
  [[gnu::noinline]] const BandwidthConfig& add_bandwidth(const char* name);

  const SystemConfig& sys_;
  SmallVector<std::pair<const char*, const ComputeOpConfig*>, 8> ops_;
  SmallVector<std::pair<const char*, const BandwidthConfig*>, 8> bandwidths_;
};

/// Seconds for one kernel: max(flops/(peak·eff), bytes/(bw·eff) + latency) in roofline mode.
/// `log` may be null.
[[nodiscard]] KernelCost kernel_cost(ClassTable& classes, const Kernel& k, EfficiencyLog* log);

/// Seconds to stream `bytes` through the bandwidth class `bw` (latency included; 0 for 0 bytes).
[[nodiscard]] double memory_time(ClassTable& classes, double bytes, const char* bw = "default");

}  // namespace trainsim
