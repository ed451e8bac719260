// comm.json: measured points, fits and provenance; written atomically by rank 0.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "collectives.h"
#include "fit.h"
#include "groups.h"

namespace comm_bench {

inline constexpr const char* kCommSchemaVersion = "1.0.0";

/// Median time of one (collective, plan, size).
struct Point {
  Collective op = Collective::AllReduce;
  std::string group;    // plan name
  GroupKind kind = GroupKind::Single;
  std::string network;  // "" when not fitted
  int n = 1;
  uint64_t size_bytes = 0;
  double time_s = 0;    // median over iterations, max over ranks
  int iters = 0;
};

struct Fit {
  Collective op = Collective::AllReduce;
  std::string group;
  GroupKind kind = GroupKind::Single;
  std::string network;
  int n = 1;
  AlphaBetaFit fit;
};

struct Skip {
  std::string op;     // may be "" for a whole plan
  std::string group;
  std::string reason;
};

struct GroupInfo {
  std::string name;
  GroupKind kind = GroupKind::Single;
  std::string network;
  int size = 0;
  int count = 0;  // concurrent groups
};

/// Where and how the numbers were taken (nccl-tests `args`/`nccl_version`, style §9.7).
struct Provenance {
  std::string tool = "comm_bench";
  std::string tool_version;
  std::string date;          // ISO 8601 UTC
  std::string command;
  std::string host;
  std::vector<std::string> hosts;
  int world_size = 0;
  int ranks_per_node = 0;
  int nodes = 0;
  std::string gpu;
  std::string nccl_version;
  std::string cuda_runtime_version;
  std::string cuda_driver_version;
  std::string mpi_version;
  std::string intra_link;      // nvlink | pcie
  std::string topology_source; // nvml | option | assumed | nccl-tests
  std::string dtype = "bf16";
  std::string timing;          // e.g. "cuda_events_per_call_median"
  int warmup = 0;
  int iters = 0;
  std::vector<std::string> sources;  // imported nccl-tests files
  std::map<std::string, std::string> env;  // NCCL_* variables
};

struct CommResults {
  Provenance provenance;
  bool complete = false;
  std::vector<GroupInfo> groups;
  std::vector<Point> points;
  std::vector<Fit> fits;
  std::vector<Skip> skipped;
  std::vector<std::string> notes;  // planning and import remarks
};

/// Replaces `r.fits` with one fit per (collective, group) that has a network class and n ≥ 2;
/// series that cannot be fitted go to `r.skipped` (earlier fit skips are replaced).
void fit_all(CommResults& r, const FitOptions& opt = {});

/// The comm.json document (schema_version 1.0.0; times in µs, bandwidths in GB/s = 1e9 B/s
/// as in nccl-tests).
[[nodiscard]] std::string results_to_json_text(const CommResults& r);

/// Readable table of the points (time, algbw, busbw) and the fits.
[[nodiscard]] std::string results_table(const CommResults& r);

}  // namespace comm_bench
