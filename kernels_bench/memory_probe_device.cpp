// kernels_bench --memory-probe on a GPU: device-memory growth (cudaMemGetInfo) over each step of a
// training process's start-up. Run it alone on an idle GPU: the used bytes are the whole
// device's.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef KB_HAVE_NCCL
#include <nccl.h>
#endif

#include <string>
#include <vector>

#include "calibration/cuda_driver.h"
#include "core/error.h"
#include "memory_probe.h"

namespace trainsim::kb {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("memory probe: ") + what + ": " + cudaGetErrorString(e));
}

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("memory probe: ") + what + " failed (cuBLAS status " + std::to_string(static_cast<int>(s)) + ")");
}

double used_bytes(int device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return static_cast<double>(total - free);
}

constexpr int kN = 256;                              // GEMM size of the first calls
constexpr size_t kLtWorkspace = 32u * 1024 * 1024;  // TransformerEngine's cuBLASLt workspace on sm90+

}  // namespace

MemoryProbe run_memory_probe(int nccl_ranks) {
  int driver = 0;
  (void)cudaDriverGetVersion(&driver);  // stays 0 when no driver is loaded
  require_cuda_driver("kernels_bench", CUDART_VERSION, driver);
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < 1) throw Error("memory probe: no GPU visible");
  MemoryProbe p;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  p.device = prop.name;
  // The context: used bytes of the idle device once the primary context exists.
  check(cudaSetDevice(0), "cudaSetDevice");
  check(cudaFree(nullptr), "cudaFree(0)");
  p.context_bytes = used_bytes(0);

  void *a = nullptr, *b = nullptr, *c = nullptr, *ws = nullptr;
  const size_t bytes = static_cast<size_t>(kN) * kN * 2;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMalloc(&c, bytes), "cudaMalloc");
  check(cudaMemset(a, 0, bytes), "cudaMemset");
  check(cudaMemset(b, 0, bytes), "cudaMemset");
  const float alpha = 1, beta = 0;

  // cuBLAS: a handle and its first bf16 GEMM (its default workspace and kernel images).
  double base = used_bytes(0);
  cublasHandle_t h = nullptr;
  check_blas(cublasCreate(&h), "cublasCreate");
  check_blas(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &alpha, a, CUDA_R_16BF, kN, b, CUDA_R_16BF, kN,
                          &beta, c, CUDA_R_16BF, kN, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "cublasGemmEx");
  p.cublas_workspace_bytes = used_bytes(0) - base;

  // cuBLASLt as TransformerEngine calls it: its own workspace of 32 MiB and a first matmul.
  base = used_bytes(0);
  cublasLtHandle_t lt = nullptr;
  check_blas(cublasLtCreate(&lt), "cublasLtCreate");
  check(cudaMalloc(&ws, kLtWorkspace), "cudaMalloc(workspace)");
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  check_blas(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  check_blas(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, kN, kN, kN), "cublasLtMatrixLayoutCreate");
  check_blas(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, kN, kN, kN), "cublasLtMatrixLayoutCreate");
  check_blas(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, kN, kN, kN), "cublasLtMatrixLayoutCreate");
  check_blas(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, c, lc, c, lc, nullptr, ws, kLtWorkspace, nullptr),
             "cublasLtMatmul");
  p.cublaslt_workspace_bytes = used_bytes(0) - base;
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);

#ifdef KB_HAVE_NCCL
  if (nccl_ranks > 1) {
    if (nccl_ranks > devices)
      throw Error("memory probe: --nccl-ranks " + std::to_string(nccl_ranks) + " needs as many GPUs; " +
                  std::to_string(devices) + " visible");
    std::vector<int> list(static_cast<size_t>(nccl_ranks));
    std::vector<float*> buf(list.size(), nullptr);
    std::vector<cudaStream_t> streams(list.size(), nullptr);
    for (int i = 0; i < nccl_ranks; ++i) {
      list[static_cast<size_t>(i)] = i;
      check(cudaSetDevice(i), "cudaSetDevice");
      check(cudaFree(nullptr), "cudaFree(0)");
      check(cudaMalloc(&buf[static_cast<size_t>(i)], 1 << 20), "cudaMalloc");
      check(cudaStreamCreate(&streams[static_cast<size_t>(i)]), "cudaStreamCreate");
    }
    base = used_bytes(0);
    std::vector<ncclComm_t> comms(list.size(), nullptr);
    if (ncclCommInitAll(comms.data(), nccl_ranks, list.data()) != ncclSuccess)
      throw Error("memory probe: ncclCommInitAll failed");
    // The first all-reduce connects the peers (NCCL_RUNTIME_CONNECT allocates buffers there).
    ncclGroupStart();
    for (size_t i = 0; i < list.size(); ++i)
      ncclAllReduce(buf[i], buf[i], (1 << 20) / 4, ncclFloat, ncclSum, comms[i], streams[i]);
    if (ncclGroupEnd() != ncclSuccess) throw Error("memory probe: ncclAllReduce failed");
    for (size_t i = 0; i < list.size(); ++i) {
      check(cudaSetDevice(static_cast<int>(i)), "cudaSetDevice");
      check(cudaStreamSynchronize(streams[i]), "cudaStreamSynchronize");
    }
    p.nccl_ranks = nccl_ranks;
    p.nccl_communicator_bytes = used_bytes(0) - base;
    for (size_t i = 0; i < list.size(); ++i) ncclCommDestroy(comms[i]);
  }
#else
  if (nccl_ranks > 1) throw Error("memory probe: this kernels_bench was built without NCCL; rerun with --nccl-ranks 0");
#endif
  cublasLtDestroy(lt);
  cublasDestroy(h);
  cudaFree(ws);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return p;
}

}  // namespace trainsim::kb
