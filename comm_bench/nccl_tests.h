// Import of nccl-tests output (text logs of any header dialect, and `-J` JSON).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives.h"

namespace comm_bench {

struct NcclTestsRow {
  uint64_t size_bytes = 0;
  uint64_t count = 0;
  std::string type;
  double oop_time_s = 0;           // out-of-place time
  double oop_algbw_gbs = 0;        // GB/s as printed
  double oop_busbw_gbs = 0;
  std::optional<double> ip_time_s; // in-place time, when the log has it
};

/// One test run (one "Collective test starting" section or one JSON document).
struct NcclTestsRun {
  std::string source;
  Collective op = Collective::AllReduce;
  int nranks = 0;
  std::vector<std::string> hosts;  // host of each rank, when the log lists ranks
  std::string gpu;                 // device name of rank 0, when listed
  std::string tests_version;       // nccl-tests version
  std::string nccl_version;        // e.g. "22809" (NCCL_VERSION_CODE) as printed
  std::vector<NcclTestsRow> rows;
  std::vector<std::string> notes;  // how ambiguous details were resolved
};

/// Parses nccl-tests output: JSON when the text starts with '{', else the text log. Handles
/// headers with or without `redop`/`root`, `#wrong` or `error` columns, in-place columns,
/// `-I` and `-S` extras, and launcher prefixes like "[1,0]<stdout>:". The collective comes from
/// the log, else from the file name (e.g. all_gather_perf.log), else `fallback_op`; the rank
/// count from the rank lines, else from busbw/algbw. Throws trainsim::ConfigError naming
/// `source` and the line when the input cannot be understood.
[[nodiscard]] std::vector<NcclTestsRun> parse_nccl_tests(const std::string& text, const std::string& source,
                                                         std::optional<Collective> fallback_op = std::nullopt);

}  // namespace comm_bench

#include "results.h"

namespace comm_bench {

/// How an imported run maps onto comm_bench's groups.
struct RunPlacement {
  GroupKind kind = GroupKind::World;
  int n = 0;           // group size the points are fitted with
  int nodes = 1;
  int concurrent = 1;  // equal groups running at once (one per NIC when merged per node)
  double size_scale = 1;  // point size / printed size: busbw_factor(N) / (busbw_factor(n) * concurrent)
};

/// Single host → intra_node; one rank per host → inter_node; k hosts with r ranks each
/// (all_reduce, all_gather, reduce_scatter) → merged per node: inter_node with n = k, r
/// concurrent groups and sizes scaled so each group's busbw is the run's busbw / r; anything
/// else → world (reported, not merged).
[[nodiscard]] RunPlacement classify_run(const NcclTestsRun& run);

/// comm.json results from imported runs: each run becomes one group placed by classify_run,
/// out-of-place times become points, and every series is fitted. `network` (when not empty) overrides
/// the class. Throws trainsim::UsageError for an unknown class.
[[nodiscard]] CommResults results_from_nccl_tests(const std::vector<NcclTestsRun>& runs, IntraLink link,
                                                  const std::string& network, const FitOptions& fit = {});

}  // namespace comm_bench
