// comm_bench command line.
#include "options.h"

#include <charconv>
#include <cmath>

#include "core/error.h"
#include "core/text.h"

namespace comm_bench {
namespace {

const std::vector<std::string> kFlags = {
    "--help", "--dry-run", "--from-nccl-tests", "--out", "--min-bytes", "--max-bytes", "--factor", "--iters",
    "--warmup", "--ops", "--groups", "--timeout-s", "--init-timeout-s", "--self-check", "--intra-link", "--op", "--network", "--fit-small-max-bytes",
    "--fit-large-min-bytes"};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(',', start);
    std::string item = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// Strict: digits only (strtol also took leading blanks, '+' and wrapped on overflow).
int parse_int(const std::string& flag, const std::string& v, int min) {
  long x = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() || x < min || x > 1000000)
    throw trainsim::UsageError(flag + ": expected an integer ≥ " + std::to_string(min) + ", got '" + v + "'");
  return static_cast<int>(x);
}

}  // namespace

uint64_t parse_bytes(const std::string& flag, const std::string& value) {
  uint64_t x = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
  const std::string suffix(end, value.data() + value.size());
  uint64_t mult = 0;
  if (suffix.empty() || suffix == "B") mult = 1;
  if (suffix == "K" || suffix == "KiB") mult = uint64_t{1} << 10;
  if (suffix == "M" || suffix == "MiB") mult = uint64_t{1} << 20;
  if (suffix == "G" || suffix == "GiB") mult = uint64_t{1} << 30;
  // At most 1 TiB: larger sweeps cannot fit any GPU, and the product cannot overflow.
  if (ec != std::errc() || end == value.data() || mult == 0 || x > (uint64_t{1} << 40) / mult)
    throw trainsim::UsageError(flag + ": expected a byte count up to 1024G like 8, 64K, 1M or 8G, got '" + value + "'");
  return x * mult;
}

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw trainsim::UsageError(a + " needs a value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--self-check") {
      o.self_check = true;
    } else if (a == "--init-timeout-s") {
      o.init_timeout_s = parse_int(a, value(), 1);
    } else if (a == "--dry-run") {
      o.dry_run = true;
    } else if (a == "--from-nccl-tests") {
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) o.import_files.push_back(args[++i]);
      if (o.import_files.empty()) throw trainsim::UsageError("--from-nccl-tests needs at least one file");
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--min-bytes") {
      o.min_bytes = parse_bytes(a, value());
    } else if (a == "--max-bytes") {
      o.max_bytes = parse_bytes(a, value());
    } else if (a == "--factor") {
      o.factor = static_cast<uint64_t>(parse_int(a, value(), 2));
    } else if (a == "--iters") {
      o.iters = parse_int(a, value(), 1);
    } else if (a == "--warmup") {
      o.warmup = parse_int(a, value(), 0);
    } else if (a == "--ops") {
      o.ops.clear();
      for (const auto& s : split_commas(value())) o.ops.push_back(parse_collective(s));
    } else if (a == "--groups") {
      o.kinds.clear();
      for (const auto& s : split_commas(value())) o.kinds.push_back(parse_kind(s));
    } else if (a == "--timeout-s") {
      o.timeout_s = parse_int(a, value(), 1);
    } else if (a == "--intra-link") {
      const std::string& v = value();
      if (v == "nvlink") {
        o.intra_link = IntraLink::NVLink;
      } else if (v == "pcie") {
        o.intra_link = IntraLink::PCIe;
      } else if (v != "auto") {
        throw trainsim::UsageError("--intra-link: expected auto, nvlink or pcie, got '" + v + "'");
      }
    } else if (a == "--op") {
      o.import_op = parse_collective(value());
    } else if (a == "--network") {
      o.network = value();
    } else if (a == "--fit-small-max-bytes") {
      o.fit.small_max_bytes = static_cast<double>(parse_bytes(a, value()));
    } else if (a == "--fit-large-min-bytes") {
      o.fit.large_min_bytes = static_cast<double>(parse_bytes(a, value()));
    } else {
      std::string msg = "unknown option '" + a + "'";
      if (std::string s = trainsim::suggest(a, kFlags); !s.empty()) msg += "; did you mean '" + s + "'?";
      throw trainsim::UsageError(msg + " (see --help)");
    }
  }
  if (o.ops.empty())
    for (const auto& row : collectives()) o.ops.push_back(row.kind);
  (void)size_sweep(o.min_bytes, o.max_bytes, o.factor);  // validates the sweep flags
  return o;
}

std::string usage() {
  return R"(usage: comm_bench [options]                 measure NCCL collectives (one process per GPU)
       comm_bench --dry-run [options]       check rank discovery and id broadcast (no GPU)
       comm_bench --self-check [options]    check every collective's result and timing sanity first
       comm_bench --from-nccl-tests FILE... --out comm.json   import nccl-tests output

Launch:  mpirun -np 16 -N 8 comm_bench --out comm.json   (or srun --ntasks-per-node=8 ...)
Sweep:   --min-bytes 8 --max-bytes 8G --factor 2 --iters 20 --warmup 5
         --ops all_reduce,all_gather,reduce_scatter,all2all,p2p
         --groups intra_node,inter_node,inter_node_pair,world,single
         --timeout-s 300           per timed loop; the run aborts after it
         --init-timeout-s 120      NCCL communicator creation (nonblocking init with a deadline)
         --intra-link auto|nvlink|pcie   GPU link class (auto: NVML, else nvlink)
Import:  --op NAME                 collective of logs that do not say
         --network CLASS           network class of the imported groups
Fit:     --fit-small-max-bytes 64K --fit-large-min-bytes 1M
Output:  --out comm.json           written by rank 0 after every size
)";
}

}  // namespace comm_bench
