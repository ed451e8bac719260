// Measured sweep: one NCCL communicator per rank, split into the planned groups; CUDA events
// around every call; median over iterations, max over ranks.
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

#include "checks.h"
#include "collectives.h"
#include "config/output_file.h"
#include "groups.h"
#include "nvml.h"
#include "results.h"
#include "watchdog.h"

namespace comm_bench {
namespace {

constexpr int kElemBytes = 2;  // bf16

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
            cudaStream_t st) {
  const size_t count = static_cast<size_t>(s.count);
  switch (c) {
    case Collective::AllReduce:
      CB_NCCL_CHECK(ncclAllReduce(send, recv, count, ncclBfloat16, ncclSum, comm, st));
      return;
    case Collective::AllGather:
      CB_NCCL_CHECK(ncclAllGather(send, recv, count, ncclBfloat16, comm, st));
      return;
    case Collective::ReduceScatter:
      CB_NCCL_CHECK(ncclReduceScatter(send, recv, count, ncclBfloat16, ncclSum, comm, st));
      return;
    case Collective::AllToAll: {
      // Grouped send/recv to every peer (nccl-tests alltoall before ncclAlltoAll existed).
      const size_t chunk = count * kElemBytes;
      CB_NCCL_CHECK(ncclGroupStart());
      for (int p = 0; p < n; ++p) {
        CB_NCCL_CHECK(ncclSend(send + static_cast<size_t>(p) * chunk, count, ncclBfloat16, p, comm, st));
        CB_NCCL_CHECK(ncclRecv(recv + static_cast<size_t>(p) * chunk, count, ncclBfloat16, p, comm, st));
      }
      CB_NCCL_CHECK(ncclGroupEnd());
      return;
    }
    case Collective::P2P: {
      const int peer = 1 - me;  // pairs only (plan_collectives): never a rank with itself
      CB_NCCL_CHECK(ncclGroupStart());
      CB_NCCL_CHECK(ncclSend(send, count, ncclBfloat16, peer, comm, st));
      CB_NCCL_CHECK(ncclRecv(recv, count, ncclBfloat16, peer, comm, st));
      CB_NCCL_CHECK(ncclGroupEnd());
      return;
    }
  }
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

}  // namespace

void run_sweep(const World& w, const Options& o, const std::string& command) {
  const bool root = w.rank() == 0;
  int devices = 0;
  CB_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (w.local_rank() >= devices)
    throw RankError(rank_message("local rank " + std::to_string(w.local_rank()) + " has no GPU: " +
                                 std::to_string(devices) + " visible on this node, " +
                                 std::to_string(w.local_size()) + " ranks (one GPU per rank)"));
  CB_CUDA_CHECK(cudaSetDevice(w.local_rank()));
  cudaDeviceProp prop{};
  CB_CUDA_CHECK(cudaGetDeviceProperties(&prop, w.local_rank()));
  char bus_id[32] = {};
  CB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, w.local_rank()));

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
  CB_CUDA_CHECK(cudaMalloc(&send, max_bytes));
  CB_CUDA_CHECK(cudaMalloc(&recv, max_bytes));
  CB_CUDA_CHECK(cudaMemset(send, 0, max_bytes));
  CB_CUDA_CHECK(cudaMemset(recv, 0, max_bytes));
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
    // Neither call can time out by itself: a rank that never arrives would hang the rest.
    const Watchdog setup(o.timeout_s, "communicator set-up (id broadcast, ncclCommInitRank)",
                         [&w](const std::string& what) {
                           std::fprintf(stderr, "comm_bench: error: %s\n",
                                        rank_message("timeout: " + what + " did not finish (--timeout-s)").c_str());
                           w.abort(1);
                         });
    w.broadcast(&id, sizeof id, 0);
    CB_NCCL_CHECK(ncclCommInitRank(&world_comm, w.size(), id, w.rank()));
  }

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
  p.timing = "cuda_events_per_call_median_max_over_ranks";
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
    CB_NCCL_CHECK(ncclCommSplit(world_comm, color >= 0 ? color : NCCL_SPLIT_NOCOLOR, w.rank(), &comm, nullptr));
    int me = 0;
    if (comm) CB_NCCL_CHECK(ncclCommUserRank(comm, &me));
    for (Collective c : plan_collectives(plan, o.ops)) {
      for (uint64_t size : sizes) {
        const CallShape shape = call_shape(c, size, plan.size, kElemBytes);
        if (shape.count == 0 || shape.send_bytes > max_bytes || shape.recv_bytes > max_bytes) continue;
        const std::string what = std::string(info(c).name) + " of " + format_bytes(size) + " on " + plan.name;
        double med = 0;
        if (comm) {
          std::vector<double> times;
          for (int it = 0; it < o.warmup + o.iters; ++it) {
            CB_CUDA_CHECK(cudaEventRecord(start, stream));
            launch(c, shape, send, recv, plan.size, me, comm, stream);
            CB_CUDA_CHECK(cudaEventRecord(stop, stream));
            wait_with_deadline(stop, comm, o.timeout_s, what);
            float ms = 0;
            CB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
            if (it >= o.warmup) times.push_back(ms * 1e-3);
          }
          med = median(times);
        }
        const double t = w.max(med);  // the slowest group sets the step; also a barrier
        if (!root) continue;
        res.points.push_back({c, plan.name, plan.kind, plan.network, plan.size, shape.size_bytes, t, o.iters});
        const double busbw_gbs = algbw(static_cast<double>(shape.size_bytes), t) * busbw_factor(c, plan.size) / 1e9;
        std::fprintf(stderr, "[comm_bench] %-14s %-16s %12s %12.2f us %9.2f GB/s busbw\n", info(c).name,
                     plan.name.c_str(), format_bytes(shape.size_bytes).c_str(), t * 1e6, busbw_gbs);
        save();
      }
    }
    if (comm) CB_NCCL_CHECK(ncclCommDestroy(comm));
  }
  res.complete = true;
  save();
  if (root) std::printf("%s\nwrote %s\n", results_table(res).c_str(), o.out.c_str());

  CB_NCCL_CHECK(ncclCommDestroy(world_comm));
  CB_CUDA_CHECK(cudaEventDestroy(start));
  CB_CUDA_CHECK(cudaEventDestroy(stop));
  CB_CUDA_CHECK(cudaStreamDestroy(stream));
  CB_CUDA_CHECK(cudaFree(send));
  CB_CUDA_CHECK(cudaFree(recv));
}

}  // namespace comm_bench
