// Measured sweep: one nonblocking NCCL communicator per rank (creation under a deadline), split
// into the planned groups; per size, iterations timed back to back between two CUDA events as
// nccl-tests does (mean per call), max over ranks.
#include "nccl_runner.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include "calibration/cuda_driver.h"
#include "checks.h"
#include "collectives.h"
#include "inputs/output_file.h"
#include "groups.h"
#include "launch.h"
#include "nvml.h"
#include "results.h"
#include "watchdog.h"

namespace comm_bench {
namespace {

constexpr int kElemBytes = 2;  // bf16
constexpr uint64_t kSelfCheckMaxBytes = uint64_t{256} << 20;  // largest self-check all-reduce

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Waits until a nonblocking communicator finished its pending operation (init, split, a call
// that returned ncclInProgress); aborts the communicator after `timeout_s`.
void wait_comm(ncclComm_t comm, double timeout_s, const std::string& what) {
  ncclResult_t st = ncclSuccess;
  wait_ready(
      [&] {
        if (ncclCommGetAsyncError(comm, &st) != ncclSuccess) st = ncclInternalError;
        return st == ncclInProgress ? Poll::InProgress : st == ncclSuccess ? Poll::Ready : Poll::Failed;
      },
      [&] { return std::string(ncclGetErrorString(st)) + ": " + ncclGetLastError(comm); }, now_s,
      [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }, [&] { ncclCommAbort(comm); },
      timeout_s, what);
}

// A call on a nonblocking communicator: ncclInProgress means started, so wait for it.
void nb_check(ncclResult_t r, ncclComm_t comm, double timeout_s, const char* call, int line) {
  if (r == ncclInProgress) return wait_comm(comm, timeout_s, call);
  if (r != ncclSuccess) check_failed("NCCL", call, ncclGetErrorString(r), __FILE__, line);
}
#define CB_NCCL_NB(call, comm, timeout) nb_check((call), (comm), (timeout), #call, __LINE__)

// Waits for `ev` without blocking in the driver, so a hung collective can be detected:
// polls the event and the communicator's async error until `timeout_s`, then aborts the
// communicator and throws.
void wait_with_deadline(cudaEvent_t ev, ncclComm_t comm, double timeout_s, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const cudaError_t q = cudaEventQuery(ev);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) CB_CUDA_CHECK(q);
    ncclResult_t async = ncclSuccess;
    CB_NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(comm);
      check_failed("NCCL", what.c_str(), ncclGetErrorString(async), __FILE__, __LINE__);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ncclCommAbort(comm);
      throw RankError(rank_message("timeout: " + what + " did not finish within " +
                                   std::to_string(static_cast<int>(timeout_s)) + " s (--timeout-s)"));
    }
    std::this_thread::yield();
  }
}

void launch(Collective c, const CallShape& s, char* send, char* recv, int n, int me, ncclComm_t comm,
            cudaStream_t st, double timeout_s) {
  const size_t count = static_cast<size_t>(s.count);
  switch (c) {
    case Collective::AllReduce:
      CB_NCCL_NB(ncclAllReduce(send, recv, count, ncclBfloat16, ncclSum, comm, st), comm, timeout_s);
      return;
    case Collective::AllGather:
      CB_NCCL_NB(ncclAllGather(send, recv, count, ncclBfloat16, comm, st), comm, timeout_s);
      return;
    case Collective::ReduceScatter:
      CB_NCCL_NB(ncclReduceScatter(send, recv, count, ncclBfloat16, ncclSum, comm, st), comm, timeout_s);
      return;
    case Collective::AllToAll: {
      // Grouped send/recv to every peer (nccl-tests alltoall before ncclAlltoAll existed).
      const size_t chunk = count * kElemBytes;
      CB_NCCL_CHECK(ncclGroupStart());
      for (int p = 0; p < n; ++p) {
        CB_NCCL_NB(ncclSend(send + static_cast<size_t>(p) * chunk, count, ncclBfloat16, p, comm, st), comm, timeout_s);
        CB_NCCL_NB(ncclRecv(recv + static_cast<size_t>(p) * chunk, count, ncclBfloat16, p, comm, st), comm, timeout_s);
      }
      CB_NCCL_NB(ncclGroupEnd(), comm, timeout_s);
      return;
    }
    case Collective::P2P: {
      const int peer = 1 - me;  // pairs only (plan_collectives): never a rank with itself
      CB_NCCL_CHECK(ncclGroupStart());
      CB_NCCL_NB(ncclSend(send, count, ncclBfloat16, peer, comm, st), comm, timeout_s);
      CB_NCCL_NB(ncclRecv(recv, count, ncclBfloat16, peer, comm, st), comm, timeout_s);
      CB_NCCL_NB(ncclGroupEnd(), comm, timeout_s);
      return;
    }
  }
}

// The back-to-back loop's device side: one stream, two events, a deadline on every wait.
class NcclTimer : public CommTimerOps {
 public:
  NcclTimer(std::function<void()> launch, cudaStream_t st, cudaEvent_t start, cudaEvent_t stop, ncclComm_t comm,
            double timeout_s, std::string what)
      : launch_(std::move(launch)), st_(st), start_(start), stop_(stop), comm_(comm), timeout_s_(timeout_s),
        what_(std::move(what)) {}
  void launch() override { launch_(); }
  void record_start() override { CB_CUDA_CHECK(cudaEventRecord(start_, st_)); }
  void record_stop() override { CB_CUDA_CHECK(cudaEventRecord(stop_, st_)); }
  double elapsed_s() override {
    wait_with_deadline(stop_, comm_, timeout_s_, what_);
    float ms = 0;
    CB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms * 1e-3;
  }

 private:
  std::function<void()> launch_;
  cudaStream_t st_;
  cudaEvent_t start_, stop_;
  ncclComm_t comm_;
  double timeout_s_;
  std::string what_;
};

// A nonblocking communicator (so that creation can time out): init or split, then wait.
ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

std::string version_string(int v) {
  // CUDA encodes 1000·major + 10·minor.
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::map<std::string, std::string> nccl_env() {
  std::map<std::string, std::string> out;
  for (const char* k : {"NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
                        "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_NET_GDR_LEVEL", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS",
                        "NCCL_BUFFSIZE", "NCCL_NTHREADS", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_CUMEM_ENABLE"})
    if (const char* v = std::getenv(k)) out[k] = v;
  return out;
}

// Nonblocking communicators are finalized (which may be in progress), then destroyed.
void destroy_comm(ncclComm_t comm, double timeout_s) {
  CB_NCCL_NB(ncclCommFinalize(comm), comm, timeout_s);
  wait_comm(comm, timeout_s, "NCCL communicator finalize");
  CB_NCCL_CHECK(ncclCommDestroy(comm));
}

// --self-check: every collective on the world communicator (and send/recv between ranks 0 and
// 1) must deliver exactly the expected sums and copies (launch.h) on 64 KiB, and the all-reduce
// time must grow with size up to kSelfCheckMaxBytes (the buffers hold at least that). Every rank learns the verdict; a failure stops all of them.
void run_self_check(const World& w, ncclComm_t world, char* send, char* recv, cudaStream_t stream, cudaEvent_t start,
                    cudaEvent_t stop, const Options& o) {
  const int n = w.size(), me = w.rank();
  std::vector<std::string> lines;
  long long bad = 0;
  auto check = [&](Collective c, ncclComm_t comm, int group_n, int group_me) {
    const CallShape shape = call_shape(c, uint64_t{1} << 16, group_n, kElemBytes);
    std::vector<uint16_t> host(static_cast<size_t>(shape.send_bytes / kElemBytes));
    for (size_t i = 0; i < host.size(); ++i) host[i] = exact_bf16_bits(self_check_value(group_me, static_cast<int64_t>(i)));
    CB_CUDA_CHECK(cudaMemcpy(send, host.data(), shape.send_bytes, cudaMemcpyHostToDevice));
    CB_CUDA_CHECK(cudaMemset(recv, 0xff, shape.recv_bytes));
    launch(c, shape, send, recv, group_n, group_me, comm, stream, o.timeout_s);
    CB_CUDA_CHECK(cudaEventRecord(stop, stream));
    wait_with_deadline(stop, comm, o.timeout_s, std::string("self-check ") + info(c).name);
    std::vector<uint16_t> got(static_cast<size_t>(shape.recv_bytes / kElemBytes));
    CB_CUDA_CHECK(cudaMemcpy(got.data(), recv, shape.recv_bytes, cudaMemcpyDeviceToHost));
    const std::vector<float> want = self_check_expected(c, group_me, group_n, static_cast<int64_t>(shape.count));
    size_t wrong = 0, first = want.size();
    for (size_t i = 0; i < want.size() && i < got.size(); ++i)
      if (bf16_bits_to_float(got[i]) != want[i] && wrong++ == 0) first = i;
    if (got.size() != want.size()) wrong = std::max<size_t>(wrong, 1);
    const long long all_wrong = w.sum(static_cast<long long>(wrong));
    bad += all_wrong > 0 ? 1 : 0;
    std::string line = std::string(all_wrong > 0 ? "FAIL " : "PASS ") + info(c).name + " of " +
                       format_bytes(shape.size_bytes) + " on " + std::to_string(group_n) + " ranks: " +
                       std::to_string(all_wrong) + " wrong elements over all ranks";
    if (wrong > 0 && first < want.size())
      line += "; rank " + std::to_string(me) + " element " + std::to_string(first) + ": got " +
              std::to_string(bf16_bits_to_float(got[first])) + ", expected " + std::to_string(want[first]);
    lines.push_back(line);
  };
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll})
    check(c, world, n, me);
  if (n >= 2) {
    ncclComm_t pair = nullptr;
    ncclConfig_t config = nonblocking_config();
    CB_NCCL_NB(ncclCommSplit(world, me < 2 ? 0 : NCCL_SPLIT_NOCOLOR, me, &pair, &config), world, o.init_timeout_s);
    wait_comm(world, o.init_timeout_s, "NCCL communicator split for the self-check pair");
    if (pair) {
      wait_comm(pair, o.init_timeout_s, "NCCL communicator split for the self-check pair");
      check(Collective::P2P, pair, 2, me);
      destroy_comm(pair, o.init_timeout_s);
    } else {
      (void)w.sum(0);  // the pair's verdict is summed over every rank
      lines.push_back("PASS p2p: checked by ranks 0 and 1");
    }
  }
  // All-reduce of growing size on the world: time must grow (5 % tolerance).
  double prev = 0;
  std::string prev_name;
  for (uint64_t size = uint64_t{1} << 20; size <= kSelfCheckMaxBytes; size <<= 2) {
    const CallShape shape = call_shape(Collective::AllReduce, size, n, kElemBytes);
    NcclTimer timer([&] { launch(Collective::AllReduce, shape, send, recv, n, me, world, stream, o.timeout_s); },
                    stream, start, stop, world, o.timeout_s, "self-check all_reduce timing");
    const double t = w.max(time_back_to_back(timer, o.warmup, o.iters));
    const bool ok = prev == 0 || t >= prev * 0.95;
    bad += ok ? 0 : 1;
    lines.push_back(std::string(ok ? "PASS " : "FAIL ") + "timing all_reduce of " + format_bytes(size) + ": " +
                    std::to_string(t * 1e6) + " us" +
                    (ok ? "" : ", faster than " + prev_name + " (" + std::to_string(prev * 1e6) + " us)"));
    prev = t;
    prev_name = format_bytes(size);
  }
  if (me == 0) {
    for (const auto& l : lines) std::printf("%s\n", l.c_str());
    std::printf("self-check: %s\n", bad == 0 ? "passed" : "FAILED");
    std::fflush(stdout);
  }
  if (bad > 0) throw RankError(rank_message("comm_bench self-check failed (FAIL lines above): do not calibrate with it"));
}

}  // namespace

void run_sweep(const World& w, const Options& o, const std::string& command) {
  const bool root = w.rank() == 0;
  int driver = 0;
  (void)cudaDriverGetVersion(&driver);  // stays 0 when no driver is loaded
  trainsim::require_cuda_driver("comm_bench", CUDART_VERSION, driver);
  int devices = 0;
  CB_CUDA_CHECK(cudaGetDeviceCount(&devices));
  const int dev = select_device(w.local_rank(), w.local_size(), devices);
  CB_CUDA_CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop{};
  CB_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  char bus_id[32] = {};
  CB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, dev));

  // Topology: NVLink between every pair of GPUs on each node (NVML), unless forced.
  const std::vector<std::string> hosts = w.all_hosts();
  const std::vector<std::string> buses = w.all_gather(bus_id);
  IntraLink link = IntraLink::NVLink;
  std::string topo_source = "option";
  if (o.intra_link) {
    link = *o.intra_link;
  } else {
    double mine = 1;  // 1 NVLink to all local peers, 0 some PCIe-only peer, −1 unknown
    for (int r = 0; r < w.size(); ++r) {
      if (r == w.rank() || hosts[static_cast<size_t>(r)] != w.host()) continue;
      const std::optional<bool> nv = nvml_nvlink(bus_id, buses[static_cast<size_t>(r)]);
      mine = std::min(mine, nv ? (*nv ? 1.0 : 0.0) : -1.0);
    }
    const double all = w.min(mine);
    link = all == 0 ? IntraLink::PCIe : IntraLink::NVLink;
    topo_source = all < 0 ? "assumed" : "nvml";
    if (all < 0 && root)
      std::fprintf(stderr, "comm_bench: NVML unavailable: assuming NVLink inside nodes (set --intra-link)\n");
  }
  std::vector<std::string> notes;
  std::vector<GroupPlan> plans = plan_groups(node_ids(hosts), link, &notes);
  if (!o.kinds.empty())
    std::erase_if(plans, [&](const GroupPlan& p) { return std::find(o.kinds.begin(), o.kinds.end(), p.kind) == o.kinds.end(); });

  // Buffers: send and receive of max_bytes each, reduced while they do not fit.
  size_t free_b = 0, total_b = 0;
  CB_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  uint64_t max_bytes = o.max_bytes;
  while (max_bytes > o.min_bytes && 2.0 * static_cast<double>(max_bytes) > 0.9 * static_cast<double>(free_b))
    max_bytes /= 2;
  max_bytes = static_cast<uint64_t>(w.min(static_cast<double>(max_bytes)));
  if (max_bytes < o.max_bytes)
    notes.push_back("--max-bytes lowered to " + format_bytes(max_bytes) + " to fit GPU memory");
  const std::vector<uint64_t> sizes = size_sweep(o.min_bytes, max_bytes, o.factor);
  char* send = nullptr;
  char* recv = nullptr;
  // The self-check times all-reduce up to 256 MiB whatever the sweep's range.
  const uint64_t buffer_bytes = o.self_check ? std::max<uint64_t>(max_bytes, kSelfCheckMaxBytes) : max_bytes;
  CB_CUDA_CHECK(cudaMalloc(&send, buffer_bytes));
  CB_CUDA_CHECK(cudaMalloc(&recv, buffer_bytes));
  CB_CUDA_CHECK(cudaMemset(send, 0, buffer_bytes));
  CB_CUDA_CHECK(cudaMemset(recv, 0, buffer_bytes));
  cudaStream_t stream;
  CB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CB_CUDA_CHECK(cudaEventCreate(&start));
  CB_CUDA_CHECK(cudaEventCreate(&stop));

  // World communicator: rank 0 makes the unique id, MPI broadcasts it.
  ncclUniqueId id;
  if (root) CB_NCCL_CHECK(ncclGetUniqueId(&id));
  ncclComm_t world_comm;
  {
    // The broadcast cannot time out by itself: a rank that never arrives would hang the rest.
    const Watchdog setup(o.init_timeout_s, "unique id broadcast",
                         [&w](const std::string& what) {
                           std::fprintf(stderr, "comm_bench: error: %s\n",
                                        rank_message("timeout: " + what + " did not finish (--init-timeout-s)").c_str());
                           w.abort(1);
                         });
    w.broadcast(&id, sizeof id, 0);
  }
  ncclConfig_t config = nonblocking_config();
  // The handle exists once the call returns (ncclInProgress included); wait_comm polls it.
  const ncclResult_t init = ncclCommInitRankConfig(&world_comm, w.size(), id, w.rank(), &config);
  if (init != ncclSuccess && init != ncclInProgress)
    check_failed("NCCL", "ncclCommInitRankConfig", ncclGetErrorString(init), __FILE__, __LINE__);
  wait_comm(world_comm, o.init_timeout_s, "NCCL communicator init (" + std::to_string(w.size()) + " ranks)");
  if (o.self_check) run_self_check(w, world_comm, send, recv, stream, start, stop, o);

  CommResults res;
  Provenance& p = res.provenance;
  p.tool_version = TRAINSIM_VERSION;
  p.date = trainsim::utc_timestamp();
  p.command = command;
  p.host = w.host();
  p.hosts = hosts;
  p.world_size = w.size();
  p.ranks_per_node = w.local_size();
  p.nodes = static_cast<int>(std::set<std::string>(hosts.begin(), hosts.end()).size());
  p.gpu = prop.name;
  int v = 0;
  CB_NCCL_CHECK(ncclGetVersion(&v));
  p.nccl_version = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  CB_CUDA_CHECK(cudaRuntimeGetVersion(&v));
  p.cuda_runtime_version = version_string(v);
  CB_CUDA_CHECK(cudaDriverGetVersion(&v));
  p.cuda_driver_version = version_string(v);
  if (std::string d = nvml_driver_version(); !d.empty()) p.cuda_driver_version += " (driver " + d + ")";
  p.mpi_version = w.mpi_version();
  p.intra_link = link == IntraLink::NVLink ? "nvlink" : "pcie";
  p.topology_source = topo_source;
  p.timing = "cuda_events_around_iters_back_to_back_mean_max_over_ranks";
  p.warmup = o.warmup;
  p.iters = o.iters;
  p.env = nccl_env();
  res.notes = notes;
  for (const auto& plan : plans)
    res.groups.push_back({plan.name, plan.kind, plan.network, plan.size, static_cast<int>(plan.groups.size())});
  auto save = [&] {
    if (!root) return;
    fit_all(res, o.fit);
    trainsim::write_file_atomic(o.out, results_to_json_text(res));
  };
  save();

  for (const auto& plan : plans) {
    const int color = plan.color_of(w.rank());
    ncclComm_t comm = nullptr;
    ncclConfig_t split_config = nonblocking_config();
    CB_NCCL_NB(ncclCommSplit(world_comm, color >= 0 ? color : NCCL_SPLIT_NOCOLOR, w.rank(), &comm, &split_config),
               world_comm, o.init_timeout_s);
    wait_comm(world_comm, o.init_timeout_s, "NCCL communicator split for " + plan.name);
    if (comm) wait_comm(comm, o.init_timeout_s, "NCCL communicator split for " + plan.name);
    int me = 0;
    if (comm) CB_NCCL_CHECK(ncclCommUserRank(comm, &me));
    for (Collective c : plan_collectives(plan, o.ops)) {
      for (uint64_t size : sizes) {
        const CallShape shape = call_shape(c, size, plan.size, kElemBytes);
        if (shape.count == 0 || shape.send_bytes > max_bytes || shape.recv_bytes > max_bytes) continue;
        const std::string what = std::string(info(c).name) + " of " + format_bytes(size) + " on " + plan.name;
        double mean = 0;
        if (comm) {
          NcclTimer timer([&] { launch(c, shape, send, recv, plan.size, me, comm, stream, o.timeout_s); }, stream,
                          start, stop, comm, o.timeout_s, what);
          mean = time_back_to_back(timer, o.warmup, o.iters);
        }
        const double t = w.max(mean);  // the slowest group sets the step; also a barrier
        if (!root) continue;
        res.points.push_back({c, plan.name, plan.kind, plan.network, plan.size, shape.size_bytes, t, o.iters});
        const double busbw_gbs = algbw(static_cast<double>(shape.size_bytes), t) * busbw_factor(c, plan.size) / 1e9;
        std::fprintf(stderr, "[comm_bench] %-14s %-16s %12s %12.2f us %9.2f GB/s busbw\n", info(c).name,
                     plan.name.c_str(), format_bytes(shape.size_bytes).c_str(), t * 1e6, busbw_gbs);
        save();
      }
    }
    if (comm) destroy_comm(comm, o.init_timeout_s);
  }
  res.complete = true;
  save();
  if (root) std::printf("%s\nwrote %s\n", results_table(res).c_str(), o.out.c_str());

  destroy_comm(world_comm, o.init_timeout_s);
  CB_CUDA_CHECK(cudaEventDestroy(start));
  CB_CUDA_CHECK(cudaEventDestroy(stop));
  CB_CUDA_CHECK(cudaStreamDestroy(stream));
  CB_CUDA_CHECK(cudaFree(send));
  CB_CUDA_CHECK(cudaFree(recv));
}

}  // namespace comm_bench
