// Time of one kernel on one accelerator: roofline over the op's FLOP rate (shape-keyed
// measured efficiency, else the op's fallback) and its bandwidth class (the peer's SystemConfig).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "system/system_config.h"
#include "core/small_vector.h"
#include "model/graph.h"

namespace trainsim {

/// A shape key looked up without a measured efficiency.
struct EfficiencyMiss {
  OpClass op = OpClass::Default;  // the kernel's op class
  PackedKey key;                  // views print format_packed_key(key)
  double flops = 0;
  double used_efficiency = 0;
};

/// Lookups per op class (op_index) and how each was answered (index: EfficiencySource).
using EfficiencyCounts = std::array<std::array<int64_t, 4>, kOpClassCount>;
/// Collective calls per kind (Collective) and how each was timed: a collective model's measured
/// size, between or beyond its sizes, or (index Default) the network formula.
inline constexpr size_t kCollectiveKinds = 5;
using CollectiveCounts = std::array<std::array<int64_t, 4>, kCollectiveKinds>;

/// Records efficiency lookups: measured (table entry or measured model node), answered by a
/// model between or beyond its measured points, and misses (deduplicated by op and key, in the
/// order first met), which took the op's default.
struct EfficiencyLog {
  std::vector<EfficiencyMiss> misses;
  int64_t hits = 0;
  int64_t interpolated = 0, extrapolated = 0;
  EfficiencyCounts by_class{};  // the same lookups per op class, misses counted at every lookup
  CollectiveCounts collectives{};  // the chunks' collective calls (and the tail's DP ones)
  void collective(Collective kind, EfficiencySource how) {
    ++collectives[static_cast<size_t>(kind)][static_cast<size_t>(how)];
  }
  /// `hash` is PackedKeyHash{}(key), computed once per kernel for the table lookup and the log.
  void miss(OpClass op, const PackedKey& key, size_t hash, double flops, double used);
  /// Adds `other`'s counts and the misses not recorded yet (a chunk's log into its estimate's).
  void merge(const EfficiencyLog& other);
  /// Adds `other`'s counts only (a layer template's, already merged once).
  void add_counts(const EfficiencyLog& other) {
    hits += other.hits;
    interpolated += other.interpolated;
    extrapolated += other.extrapolated;
    for (size_t c = 0; c < kOpClassCount; ++c)
      for (size_t s = 0; s < 4; ++s) by_class[c][s] += other.by_class[c][s];
    for (size_t c = 0; c < kCollectiveKinds; ++c)
      for (size_t s = 0; s < 4; ++s) collectives[c][s] += other.collectives[c][s];
  }

 private:
  // Open addressing over `misses`: a slot holds the upper half of a key's hash and 1 + the index
  // of its miss (0: empty). A power of two, at most three quarters full, so that a lookup probes
  // a few slots instead of scanning every miss. Inline up to the misses of a whole estimate (a
  // golden case has about twenty): no allocation for the index of a layer's, chunk's or
  // estimate's log.
  struct Slot {
    uint32_t hash = 0, at = 0;
  };
  SmallVector<Slot, 32> index_;
};

/// One kernel's time and the FLOP efficiency it used (0 for a kernel without FLOPs).
struct KernelCost {
  double time_s = 0;
  double efficiency = 0;
  bool measured = false;  // the efficiency came from the table or the op's model, not its default
  EfficiencySource source = EfficiencySource::Default;
};

/// The op and bandwidth classes that kernels name, resolved against one system. Op classes are
/// OpClass values, found by their index in the system (system/system_config.h ComputeOps);
/// bandwidth classes are static strings, so an estimate searches the system's map once per class
/// and string address instead of once per kernel. The system must not change meanwhile.
class ClassTable {
 public:
  explicit ClassTable(const SystemConfig& sys) : sys_(sys) {}
  [[nodiscard]] const SystemConfig& system() const { return sys_; }
  /// The system's op class `c`, or null when the system has none.
  [[nodiscard]] const ComputeOpConfig* op(OpClass c) const { return sys_.ops.known(op_index(c)); }
  /// The bandwidth class `name`, else `default`.
  [[nodiscard]] const BandwidthConfig& bandwidth(const char* name);

 private:
  // The first meeting of a name: searched in the system and recorded. Out of line, so that the
  // lookups (every kernel) stay short leaf functions.
  [[gnu::noinline]] const BandwidthConfig& add_bandwidth(const char* name);

  const SystemConfig& sys_;
  SmallVector<std::pair<const char*, const BandwidthConfig*>, 8> bandwidths_;
};

/// How op class `op` answers `key` without running an estimate: Measured (a table entry or a
/// model's measured node), Interpolated or Extrapolated (its model), else Default.
[[nodiscard]] EfficiencySource efficiency_source_of(const ComputeOpConfig& op, const PackedKey& key);

/// Seconds for one kernel: max(flops/(peak·eff), bytes/(bw·eff) + latency) in roofline mode,
/// the latency once per launch. `graphed`: the kernel is replayed from a captured CUDA graph and
/// pays its class's graph floor (BandwidthConfig::launch_floor_s). `log` may be null.
[[nodiscard]] KernelCost kernel_cost(ClassTable& classes, const Kernel& k, EfficiencyLog* log, bool graphed = false);

/// Seconds to stream `bytes` through the bandwidth class `bw` (latency included; 0 for 0 bytes).
[[nodiscard]] double memory_time(ClassTable& classes, double bytes, const char* bw = "default");

}  // namespace trainsim
