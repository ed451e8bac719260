// comm_bench: NCCL collective benchmark, nccl-tests importer and α–β fitter.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <unistd.h>

#include "checks.h"
#include "inputs/output_file.h"
#include "system/presets.h"
#include "core/error.h"
#include "groups.h"
#include "nccl_tests.h"
#include "options.h"
#include "results.h"
#include "watchdog.h"
#include "world.h"
#ifdef COMM_BENCH_HAVE_NCCL
#include "nccl_runner.h"
#endif

namespace comm_bench {
namespace {

constexpr int kIdBytes = 128;  // sizeof(ncclUniqueId)

int run_import(const Options& o, const std::string& command) {
  std::vector<NcclTestsRun> runs;
  for (const auto& path : o.import_files) {
    std::vector<NcclTestsRun> r = parse_nccl_tests(trainsim::read_file(path), path, o.import_op);
    runs.insert(runs.end(), r.begin(), r.end());
  }
  CommResults res = results_from_nccl_tests(runs, o.intra_link.value_or(IntraLink::NVLink), o.network, o.fit);
  res.provenance.tool_version = TRAINSIM_VERSION;
  res.provenance.date = trainsim::utc_timestamp();
  res.provenance.command = command;
  trainsim::write_file_atomic(o.out, results_to_json_text(res));
  std::printf("%s\nwrote %s (%zu runs, %zu points, %zu fits)\n", results_table(res).c_str(), o.out.c_str(),
              runs.size(), res.points.size(), res.fits.size());
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    throw trainsim::Error(std::string("standard output: cannot write: ") + std::strerror(errno));
  return 0;
}

// FNV-1a: every rank hashes the id it received and compares with rank 0's hash.
uint64_t fnv1a(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Rank discovery and the unique-id broadcast path, without a GPU.
int run_dry_run(const World& w, const Options& o) {
  unsigned char id[kIdBytes] = {};
  if (w.rank() == 0)
    for (int i = 0; i < kIdBytes; ++i) id[i] = static_cast<unsigned char>((::getpid() + 31 * i) & 0xff);
  uint64_t expected = fnv1a(id, kIdBytes);
  // A rank that never joins (it failed or was launched differently) would hang the others in
  // these collectives: end every rank after --timeout-s instead.
  const Watchdog setup(o.timeout_s, "dry-run collectives (id broadcast, all-reduce, barrier)",
                       [&w](const std::string& what) {
                         std::fprintf(stderr, "comm_bench: error: %s\n",
                                      rank_message("timeout: " + what + " did not finish (--timeout-s)").c_str());
                         w.abort(1);
                       });
  w.broadcast(id, kIdBytes, 0);
  w.broadcast(&expected, sizeof expected, 0);
  const bool ok = fnv1a(id, kIdBytes) == expected;
  std::printf("comm_bench dry-run: host %s rank %d/%d local %d/%d unique id %s\n", w.host().c_str(), w.rank(),
              w.size(), w.local_rank(), w.local_size(), ok ? "ok" : "MISMATCH");
  std::fflush(stdout);
  const long long bad = w.sum(ok ? 0 : 1);
  const std::vector<std::string> hosts = w.all_hosts();
  w.barrier();
  if (w.rank() != 0) return bad == 0 ? 0 : 1;
  std::vector<std::string> notes;
  const IntraLink link = o.intra_link.value_or(IntraLink::NVLink);
  const std::vector<GroupPlan> plans = plan_groups(node_ids(hosts), link, &notes);
  const size_t nodes = std::set<std::string>(hosts.begin(), hosts.end()).size();
  std::printf("planned groups (intra-node link %s%s):\n%s", link == IntraLink::NVLink ? "nvlink" : "pcie",
              o.intra_link ? "" : ", assumed; NVML is read in a real run", describe_plans(plans).c_str());
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
  const auto sizes = size_sweep(o.min_bytes, o.max_bytes, o.factor);
  std::printf("sweep: %zu sizes from %s to %s, %d warm-up + %d timed calls each\n", sizes.size(),
              format_bytes(sizes.front()).c_str(), format_bytes(sizes.back()).c_str(), o.warmup, o.iters);
  if (bad != 0) {
    std::printf("comm_bench dry-run FAILED: unique id differs on %lld rank(s)\n", bad);
    return 1;
  }
  std::printf("comm_bench dry-run OK: %d ranks on %zu node(s), unique id verified on every rank\n", w.size(), nodes);
  return 0;
}

}  // namespace
}  // namespace comm_bench

int main(int argc, char** argv) {
  using namespace comm_bench;
  const std::string command =
      trainsim::command_line("comm_bench", std::vector<std::string>(argv + 1, argv + argc));
  std::unique_ptr<World> world;
  try {
    world = std::make_unique<World>(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "comm_bench: error: %s\n", e.what());
    return 1;
  }
  const bool root = world->rank() == 0;
  // Ranks may be given different arguments (MPMD launches, per-rank wrappers): they agree on
  // whether any rank has a usage error before any rank enters a collective, and the first such
  // rank alone prints it.
  Options o;
  std::string usage_error;
  try {
    o = parse_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const trainsim::UsageError& e) {
    usage_error = e.what();
  }
  const int size = world->size();
  const double first_bad = size > 1 ? world->min(usage_error.empty() ? size : world->rank())
                                    : (usage_error.empty() ? 1 : 0);
  if (first_bad < size) {
    if (world->rank() == static_cast<int>(first_bad))
      std::fprintf(stderr, "comm_bench: usage error: %s\n",
                   size > 1 ? rank_message(usage_error).c_str() : usage_error.c_str());
    return 2;
  }
  try {
    if (o.help) {
      if (root) std::printf("%s", usage().c_str());
      return 0;
    }
    if (!o.import_files.empty()) return root ? run_import(o, command) : 0;
    if (o.dry_run) return run_dry_run(*world, o);
#ifdef COMM_BENCH_HAVE_NCCL
    run_sweep(*world, o, command);
    return 0;
#else
    throw trainsim::UsageError("this comm_bench was built without CUDA/NCCL: only --dry-run and --from-nccl-tests work");
#endif
  } catch (const trainsim::UsageError& e) {
    // A usage error found later may be on this rank only: end them all.
    std::fprintf(stderr, "comm_bench: usage error: %s\n", size > 1 ? rank_message(e.what()).c_str() : e.what());
    if (size > 1) world->abort(2);
    return 2;
  } catch (const RankError& e) {
    std::fprintf(stderr, "comm_bench: error: %s\n", e.what());
  } catch (const std::exception& e) {
    const std::string msg = world->size() > 1 ? rank_message(e.what()) : e.what();
    std::fprintf(stderr, "comm_bench: error: %s\n", msg.c_str());
  }
  // One failed rank must not leave the others waiting in a collective.
  if (world->size() > 1) world->abort(1);
  return 1;
}
