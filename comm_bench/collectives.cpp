// Collective table, nccl-tests conventions and size sweeps.
#include "collectives.h"

#include <algorithm>

#include "core/error.h"
#include "core/text.h"

namespace comm_bench {

const std::vector<CollectiveInfo>& collectives() {
  // scale/offset: SimuMax canonical values (system JSON networks.*.op).
  static const std::vector<CollectiveInfo> table = {
      {Collective::AllReduce, "all_reduce", "all_reduce", 2, -1},
      {Collective::AllGather, "all_gather", "all_gather", 1, -1},
      {Collective::ReduceScatter, "reduce_scatter", "reduce_scatter", 1, -1},
      {Collective::AllToAll, "all2all", "alltoall", 1, -1},
      {Collective::P2P, "p2p", "sendrecv", 1, 0},
  };
  return table;
}

const CollectiveInfo& info(Collective c) {
  for (const auto& row : collectives())
    if (row.kind == c) return row;
  TRAINSIM_ASSERT(false, "collective missing from the table");
}

Collective parse_collective(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& row : collectives()) {
    if (name == row.name || name == row.nccl_tests) return row.kind;
    names.emplace_back(row.name);
  }
  std::string msg = "unknown collective '" + name + "'; valid values: " + trainsim::join(names);
  std::vector<std::string> all = names;
  for (const auto& row : collectives()) all.emplace_back(row.nccl_tests);
  if (std::string s = trainsim::suggest(name, all); !s.empty()) msg += "; did you mean '" + s + "'?";
  throw trainsim::UsageError(msg);
}

double busbw_factor(Collective c, int n) {
  if (n < 1) return 0;
  const auto& row = info(c);
  return row.scale * (n + row.offset) / n;
}

double model_bytes(Collective c, double size_bytes, int n) { return size_bytes * busbw_factor(c, n); }

CallShape call_shape(Collective c, uint64_t requested_bytes, int n, int elem_bytes) {
  TRAINSIM_ASSERT(n >= 1 && elem_bytes > 0, "bad group size or element size");
  const uint64_t e = static_cast<uint64_t>(elem_bytes);
  const uint64_t nn = static_cast<uint64_t>(n);
  CallShape s;
  switch (c) {
    case Collective::AllReduce:
    case Collective::P2P:
      s.count = requested_bytes / e;
      s.size_bytes = s.count * e;
      s.send_bytes = s.recv_bytes = s.size_bytes;
      return s;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll: {
      // nccl-tests: (count/nranks) & ~(16/eltSize − 1) — per-rank chunks of whole 16 bytes.
      const uint64_t align = std::max<uint64_t>(1, 16 / e);
      s.count = (requested_bytes / e / nn) & ~(align - 1);
      s.size_bytes = s.count * nn * e;
      const uint64_t chunk = s.count * e;
      s.send_bytes = c == Collective::AllGather ? chunk : s.size_bytes;
      s.recv_bytes = c == Collective::ReduceScatter ? chunk : s.size_bytes;
      return s;
    }
  }
  TRAINSIM_ASSERT(false, "unhandled collective");
}

std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, uint64_t factor) {
  if (min_bytes < 1) throw trainsim::UsageError("--min-bytes must be ≥ 1");
  if (max_bytes < min_bytes)
    throw trainsim::UsageError("--max-bytes (" + std::to_string(max_bytes) + ") must be ≥ --min-bytes (" +
                               std::to_string(min_bytes) + ")");
  if (factor < 2) throw trainsim::UsageError("--factor must be ≥ 2, got " + std::to_string(factor));
  std::vector<uint64_t> out;
  for (uint64_t s = min_bytes; s <= max_bytes; s *= factor) {
    out.push_back(s);
    if (s > max_bytes / factor) break;  // next step would overflow or pass max
  }
  return out;
}

double algbw(double size_bytes, double time_s) { return time_s > 0 ? size_bytes / time_s : 0; }

double median(std::vector<double> v) {
  TRAINSIM_ASSERT(!v.empty(), "median of an empty sample");
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lo + hi);
}

std::string format_bytes(uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  uint64_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + " " + units[u];
}

}  // namespace comm_bench
