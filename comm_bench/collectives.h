// The measured collectives: names, nccl-tests size and bus-bandwidth conventions, size sweeps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace comm_bench {

enum class Collective { AllReduce, AllGather, ReduceScatter, AllToAll, P2P };

/// One table row per collective (nccl-tests `testColl` style).
struct CollectiveInfo {
  Collective kind;
  const char* name;         // simulator spelling (system JSON `networks.*.op` key)
  const char* nccl_tests;   // nccl-tests binary stem, e.g. "all_reduce" for all_reduce_perf
  double scale;             // SimuMax scale: AR 2, others 1
  double offset;            // SimuMax offset: collectives −1, p2p 0
};

/// All collectives in sweep order.
[[nodiscard]] const std::vector<CollectiveInfo>& collectives();
[[nodiscard]] const CollectiveInfo& info(Collective c);
/// Parses a simulator or nccl-tests name ("all2all", "alltoall", "sendrecv"...). Throws
/// trainsim::UsageError listing the valid names (with a suggestion) when unknown.
[[nodiscard]] Collective parse_collective(const std::string& name);

/// busbw / algbw for a group of n ranks (nccl-tests PERFORMANCE.md): AR 2(n−1)/n,
/// AG/RS/a2a (n−1)/n, sendrecv 1. Equals scale·(n+offset)/n; 0 for collectives with n = 1.
[[nodiscard]] double busbw_factor(Collective c, int n);

/// Bytes the simulator formula moves for a collective of `size_bytes` (SimuMax
/// compute_net_op_time: size·scale·(n+offset)/n) — the fit's x axis.
[[nodiscard]] double model_bytes(Collective c, double size_bytes, int n);

/// Element counts and byte sizes of one call, following nccl-tests: `size_bytes` is the
/// printed size (AR buffer; AG total received; RS total sent; a2a total sent per rank;
/// sendrecv bytes per rank). Per-rank chunks of AG/RS/a2a are rounded down to 16 bytes.
struct CallShape {
  uint64_t count = 0;        // elements passed to NCCL (per-rank chunk for AG/RS/a2a peers)
  uint64_t size_bytes = 0;   // actual nccl-tests size after rounding
  uint64_t send_bytes = 0;   // per-rank send buffer
  uint64_t recv_bytes = 0;   // per-rank receive buffer
};
[[nodiscard]] CallShape call_shape(Collective c, uint64_t requested_bytes, int n, int elem_bytes);

/// Sizes min, min·factor, ... ≤ max. Throws trainsim::UsageError unless
/// 1 ≤ min ≤ max and factor ≥ 2.
[[nodiscard]] std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, uint64_t factor);

/// algbw in bytes/s (size / time); 0 when time is not positive.
[[nodiscard]] double algbw(double size_bytes, double time_s);

/// Median of a non-empty sample (mean of the middle two for even counts).
[[nodiscard]] double median(std::vector<double> v);

/// "8 B", "64 KiB", "8 GiB" for exact powers of 1024, else bytes.
[[nodiscard]] std::string format_bytes(uint64_t bytes);

}  // namespace comm_bench
