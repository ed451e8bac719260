// Roofline kernel cost with shape-keyed efficiencies (the peer's compute_op_accuracy_time,
// compute_mem_access_time and compute_end2end_time).
#include "compute/cost.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace trainsim {

bool EfficiencyLog::recorded(size_t hash, const char* op, const PackedKey& key) const {
  for (size_t i = 0; i < seen_.size(); ++i)
    if (seen_[i] == hash && misses[i].key == key && std::strcmp(op, misses[i].op) == 0) return true;
  return false;
}

void EfficiencyLog::miss(const char* op, const PackedKey& key, double flops, double used) {
  // A chunk misses a few distinct keys many times (every layer): compare key hashes first (the
  // op classes of one key kind share them, e.g. matmul and fp8_matmul; their names tell apart).
  const size_t h = PackedKeyHash{}(key);
  if (recorded(h, op, key)) return;
  seen_.push_back(h);
  misses.push_back({op, key, flops, used});
}

void EfficiencyLog::merge(const EfficiencyLog& other) {
  hits += other.hits;
  for (size_t j = 0; j < other.misses.size(); ++j) {
    const Miss& m = other.misses[j];
    if (recorded(other.seen_[j], m.op, m.key)) continue;
    seen_.push_back(other.seen_[j]);
    misses.push_back(m);
  }
}

namespace {

// Names are searched as string_view: one strlen per search, not one per node compared.
const BandwidthConfig& find_bandwidth(const SystemConfig& sys, std::string_view name) {
  auto it = sys.bandwidths.find(name);
  return it != sys.bandwidths.end() ? it->second : sys.bandwidths.at("default");
}

double stream_time(const BandwidthConfig& bw, double bytes) {
  return bytes / (bw.bytes_per_s * bw.efficient_factor) + bw.latency_s;
}

}  // namespace

const ComputeOpConfig* ClassTable::op(const char* name) {
  for (const auto& [n, c] : ops_)
    if (n == name) return c;
  return add_op(name);
}

const ComputeOpConfig* ClassTable::add_op(const char* name) {
  auto it = sys_.ops.find(std::string_view(name));
  const ComputeOpConfig* c = it != sys_.ops.end() ? &it->second : nullptr;
  ops_.push_back({name, c});
  return c;
}

const BandwidthConfig& ClassTable::bandwidth(const char* name) {
  for (const auto& [n, c] : bandwidths_)
    if (n == name) return *c;
  return add_bandwidth(name);
}

const BandwidthConfig& ClassTable::add_bandwidth(const char* name) {
  const BandwidthConfig& c = find_bandwidth(sys_, name);
  bandwidths_.push_back({name, &c});
  return c;
}

double memory_time(ClassTable& classes, double bytes, const char* bw_name) {
  if (bytes == 0) return 0;
  return stream_time(classes.bandwidth(bw_name), bytes);
}

KernelCost kernel_cost(ClassTable& classes, const Kernel& k, EfficiencyLog* log) {
  const SystemConfig& sys = classes.system();
  KernelCost out;
  double compute = 0;
  if (k.flops != 0) {
    const ComputeOpConfig* found = classes.op(k.op);
    const bool known = found != nullptr;
    const ComputeOpConfig& op = known ? *found : sys.ops.at("default");
    double eff = op.efficient_factor;
    bool hit = false;
    if (known && !k.key.empty()) {
      if (const double* e = op.accurate.find(k.key)) {
        eff = *e;
        hit = true;
      }
    }
    if (log && !k.key.empty()) {
      if (hit) {
        ++log->hits;
      } else {
        log->miss(k.op, k.key, k.flops, eff);
      }
    }
    compute = k.flops / (op.peak_flops * eff);
    out.efficiency = eff;
    out.measured = hit;
  }
  const double io = k.bytes == 0 ? 0 : stream_time(classes.bandwidth(k.bw), k.bytes);
  out.time_s = sys.mode == CostMode::OnlyCompute ? (compute != 0 ? compute : io) : std::max(compute, io);
  return out;
}

}  // namespace trainsim
