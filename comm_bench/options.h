// comm_bench command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives.h"
#include "fit.h"
#include "groups.h"

namespace comm_bench {

struct Options {
  bool help = false;
  bool dry_run = false;
  bool self_check = false;                   // --self-check: verify collectives before measuring
  std::vector<std::string> import_files;  // --from-nccl-tests
  std::string out = "comm.json";
  uint64_t min_bytes = 8;
  uint64_t max_bytes = uint64_t{8} << 30;
  uint64_t factor = 2;
  int iters = 20;
  int warmup = 5;
  std::vector<Collective> ops;               // default: all
  std::vector<GroupKind> kinds;              // default: all
  double timeout_s = 300;                    // per timed loop of one size
  double init_timeout_s = 120;               // communicator creation (init, split)
  std::optional<IntraLink> intra_link;       // default: NVML, else NVLink
  std::optional<Collective> import_op;       // --op, for logs that do not say
  std::string network;                       // --network, override for imports
  FitOptions fit;
};

/// Parses the arguments after the program name. Throws trainsim::UsageError naming the flag
/// (with a suggestion for misspelt flags).
[[nodiscard]] Options parse_options(const std::vector<std::string>& args);

/// "8", "64K", "1M", "8G" (powers of 1024; "KiB" etc. also accepted). Throws UsageError.
[[nodiscard]] uint64_t parse_bytes(const std::string& flag, const std::string& value);

[[nodiscard]] std::string usage();

}  // namespace comm_bench
