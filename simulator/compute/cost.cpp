// Roofline kernel cost with shape-keyed efficiencies (the peer's compute_op_accuracy_time,
// compute_mem_access_time and compute_end2end_time).
#include "compute/cost.h"

#include <algorithm>
#include <string_view>

namespace trainsim {

// A chunk misses a few distinct keys many times (every layer): compare key hashes first (the op
// classes of one key kind share them, e.g. matmul and fp8_matmul; their classes tell apart).
void EfficiencyLog::miss(OpClass op, const PackedKey& key, size_t hash, double flops, double used) {
  const auto h = static_cast<uint32_t>(hash >> 32);
  if (index_.empty()) {
    misses.reserve(16);
    index_.assign(32, Slot{});
  }
  size_t mask = index_.size() - 1;
  size_t i = h & mask;
  for (; index_[i].at != 0; i = (i + 1) & mask) {
    const Slot& s = index_[i];
    if (s.hash != h) continue;
    const EfficiencyMiss& m = misses[s.at - 1];
    if (m.key == key && m.op == op) return;
  }
  misses.push_back({op, key, flops, used});
  index_[i] = {h, static_cast<uint32_t>(misses.size())};
  if (4 * misses.size() <= 3 * index_.size()) return;
  // Rehash from the slots themselves: each keeps the hash bits that place it.
  const SmallVector<Slot, 32> old(std::move(index_));
  index_.assign(2 * old.size(), Slot{});
  mask = index_.size() - 1;
  for (const Slot& s : old) {
    if (s.at == 0) continue;
    size_t j = s.hash & mask;
    while (index_[j].at != 0) j = (j + 1) & mask;
    index_[j] = s;
  }
}

void EfficiencyLog::merge(const EfficiencyLog& other) {
  add_counts(other);
  if (misses.empty() && index_.empty()) {
    // Into an empty log (an estimate's first chunk): the other's misses and index as they are.
    if (other.misses.empty()) return;
    // Room for the templates' misses merged next (a golden estimate has about twenty).
    misses.reserve(std::max<size_t>(32, other.misses.size()));
    misses = other.misses;
    index_ = other.index_;
    return;
  }
  // The other's slots hold its misses' hash bits, all that `miss` reads of a hash: read them
  // back instead of hashing the keys again.
  SmallVector<uint32_t, 32> hashes;
  hashes.assign(other.misses.size(), 0);
  for (const Slot& s : other.index_)
    if (s.at != 0) hashes[s.at - 1] = s.hash;
  for (size_t i = 0; i < other.misses.size(); ++i) {
    const EfficiencyMiss& m = other.misses[i];
    miss(m.op, m.key, static_cast<size_t>(hashes[i]) << 32, m.flops, m.used_efficiency);
  }
}

namespace {

// Names are searched as string_view: one strlen per search, not one per node compared.
const BandwidthConfig& find_bandwidth(const SystemConfig& sys, std::string_view name) {
  auto it = sys.bandwidths.find(name);
  return it != sys.bandwidths.end() ? it->second : sys.bandwidths.at("default");
}

double stream_time(const BandwidthConfig& bw, double bytes, bool graphed = false) {
  return bytes / (bw.bytes_per_s * bw.efficient_factor) + bw.launch_floor_s(graphed);
}

// The efficiency of a dense GEMM key from the op's model: its FLOPs (2·b·m·n·k) at the
// predicted time. Key fields: b, m, k, n.
[[gnu::noinline]] EfficiencySource model_efficiency(const GemmModel& model, const PackedKey& key, double peak,
                                                    double& eff) {
  const double rows = key.num[0] * key.num[1], k = key.num[2], n = key.num[3];
  const GemmAnswer a = model.predict(rows, n, k);
  if (a.source != EfficiencySource::Default) eff = 2 * rows * n * k / (peak * a.time_s);
  return a.source;
}

// The efficiency of a key from the op's measured-points model (its efficiencies are against the
// op's peak already).
[[gnu::noinline]] EfficiencySource point_efficiency(const PointModel& model, const PackedKey& key, double& eff) {
  const EfficiencyAnswer a = model.predict(key);
  if (a.source != EfficiencySource::Default) eff = a.efficiency;
  return a.source;
}

// The efficiency of a grouped GEMM key from the op's grouped-GEMM model (its time per FLOP).
// Key fields: ng, M, N, K.
[[gnu::noinline]] EfficiencySource grouped_efficiency(const GroupedModel& model, const PackedKey& key, double peak,
                                                      double& eff) {
  const GroupedAnswer a = model.predict(key.num[1], key.num[0], key.num[2], key.num[3]);
  if (a.source != EfficiencySource::Default) eff = 1 / (a.s_per_flop * peak);
  return a.source;
}

}  // namespace

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

EfficiencySource efficiency_source_of(const ComputeOpConfig& op, const PackedKey& key) {
  if (key.empty()) return EfficiencySource::Default;
  if (op.accurate.find(key) != nullptr) return EfficiencySource::Measured;
  double eff = 0;
  if (op.gemm_model && key.kind == KeyKind::Matmul) return model_efficiency(*op.gemm_model, key, op.peak_flops, eff);
  if (op.point_model && key.kind == op.point_model->kind()) return point_efficiency(*op.point_model, key, eff);
  if (op.grouped_model && key.kind == KeyKind::Grouped)
    return grouped_efficiency(*op.grouped_model, key, op.peak_flops, eff);
  return EfficiencySource::Default;
}

double memory_time(ClassTable& classes, double bytes, const char* bw_name) {
  if (bytes == 0) return 0;
  return stream_time(classes.bandwidth(bw_name), bytes);
}

KernelCost kernel_cost(ClassTable& classes, const Kernel& k, EfficiencyLog* log, bool graphed) {
  const SystemConfig& sys = classes.system();
  KernelCost out;
  double compute = 0;
  if (k.flops != 0) {
    const ComputeOpConfig* found = classes.op(k.op);
    const bool known = found != nullptr;
    const ComputeOpConfig& op = known ? *found : sys.ops.known_at(op_index(OpClass::Default));
    double eff = op.efficient_factor;
    EfficiencySource source = EfficiencySource::Default;
    if (!k.key.empty() && (known || log)) {
      const size_t hash = PackedKeyHash{}(k.key);
      if (known) {
        if (const double* e = op.accurate.find(k.key, hash)) {
          eff = *e;
          source = EfficiencySource::Measured;
        } else if (op.gemm_model && k.key.kind == KeyKind::Matmul) {
          source = model_efficiency(*op.gemm_model, k.key, op.peak_flops, eff);
        } else if (op.point_model && k.key.kind == op.point_model->kind()) {
          source = point_efficiency(*op.point_model, k.key, eff);
        } else if (op.grouped_model && k.key.kind == KeyKind::Grouped) {
          source = grouped_efficiency(*op.grouped_model, k.key, op.peak_flops, eff);
        }
      }
      if (log) {
        ++log->by_class[op_index(k.op)][static_cast<size_t>(source)];
        switch (source) {
          case EfficiencySource::Measured: ++log->hits; break;
          case EfficiencySource::Interpolated: ++log->interpolated; break;
          case EfficiencySource::Extrapolated: ++log->extrapolated; break;
          case EfficiencySource::Default: log->miss(k.op, k.key, hash, k.flops, eff); break;
        }
      }
    }
    compute = k.flops / (op.peak_flops * eff);
    out.efficiency = eff;
    out.measured = source != EfficiencySource::Default;
    out.source = source;
  }
  double io = 0;
  if (k.bytes != 0) {
    const BandwidthConfig& bw = classes.bandwidth(k.bw);
    const double floor = bw.launch_floor_s(graphed);
    io = stream_time(bw, k.bytes, graphed) + (k.launches > 1 ? (k.launches - 1) * floor : 0);
  }
  out.time_s = sys.mode == CostMode::OnlyCompute ? (compute != 0 ? compute : io) : std::max(compute, io);
  return out;
}

}  // namespace trainsim
