// Shared CUDA plumbing of the device backend: error checks, device buffers, the timing loop.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "core/error.h"
#include "nvml_probe.h"
#include "self_check.h"

namespace trainsim::kb {

/// Throws trainsim::Error naming the call site and CUDA's message; DeviceLostError for a
/// sticky error (the context is unusable and the sweep must stop).
void cuda_check(cudaError_t e, const char* call, const char* file, int line);
#define KB_CUDA_CHECK(call) ::trainsim::kb::cuda_check((call), #call, __FILE__, __LINE__)

/// A configuration the library refuses (no algorithm, no engine): recorded as "unsupported".
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

/// An owned device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] void* get() const { return ptr_; }
  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// Element types the benches fill and time.
enum class Elem { F32, BF16, FP8E4M3, FP8E5M2 };
[[nodiscard]] size_t elem_bytes(Elem e);
/// Fills with deterministic pseudo-random values in [-scale, scale] (never all zeros: power
/// and clocks depend on the data).
void fill_random(DeviceBuffer& buf, Elem e, uint32_t seed, float scale, cudaStream_t s);

/// Copies `count` elements of type `e` at `ptr` (device) to the host as floats (synchronous).
[[nodiscard]] std::vector<float> download(const void* ptr, size_t count, Elem e);

/// Result of a timing loop.
struct Timing {
  SampleStats stats;
  unsigned sm_clock_min_mhz = 0, sm_clock_max_mhz = 0;  // 0 when NVML is unavailable
  uint64_t clock_event_reasons = 0;                     // OR over the samples
};

struct CudaContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  DeviceBuffer flush;       // read before each cold sample to evict L2 (timing_loop.h)
  DeviceBuffer flush_sink;  // the flush kernel's never-written output word
  std::unique_ptr<NvmlProbe> nvml;
  int sm_count = 0;

  /// Times `launch` (which enqueues on `stream`) with run_timing_loop: clock warm-up, then per
  /// sample an untimed L2 flush (when `cold`) and `calls_per_sample` launches between events.
  Timing time(const MeasureOptions& opt, const std::function<void()>& launch, bool cold = true,
              int calls_per_sample = 1);
};

/// Details object (JSON text) with the clock and throttling record of a timing plus `extra`
/// members (JSON object text, may be empty).
[[nodiscard]] std::string timing_details(const Timing& t, const std::string& extra_json);

/// Ok result from a timing.
[[nodiscard]] KernelResult ok_result(const Timing& t, const std::string& impl, const std::string& extra_json);
/// Result with status "unsupported" and a reason.
[[nodiscard]] KernelResult unsupported_result(const std::string& reason);

// Per-family measurements (gemm_bench.cpp, sdpa_bench.cpp / sdpa_none.cpp, memory_bench.cpp).
[[nodiscard]] KernelResult bench_matmul(CudaContext& ctx, const BenchItem& item, const MeasureOptions& opt);
[[nodiscard]] KernelResult bench_grouped(CudaContext& ctx, const BenchItem& item, const MeasureOptions& opt);
[[nodiscard]] KernelResult bench_sdpa(CudaContext& ctx, const BenchItem& item, const MeasureOptions& opt);
[[nodiscard]] KernelResult bench_memory(CudaContext& ctx, const BenchItem& item, const MeasureOptions& opt);
[[nodiscard]] std::string cublas_version_string();

// Self-check parts (--self-check): numerics on small problems against reference.h, and timed
// size series for timing_checks.
[[nodiscard]] std::vector<CheckLine> self_check_gemm(CudaContext& ctx, const MeasureOptions& opt,
                                                     std::vector<TimedPoint>& timed, double peak_bf16);
[[nodiscard]] std::vector<CheckLine> self_check_sdpa(CudaContext& ctx);  // sdpa_bench.cpp / sdpa_none.cpp
[[nodiscard]] std::vector<CheckLine> self_check_memory(CudaContext& ctx, const MeasureOptions& opt,
                                                       std::vector<TimedPoint>& timed, double peak_bytes_per_s);
[[nodiscard]] std::string cudnn_version_string();  // "" without cuDNN

}  // namespace trainsim::kb
