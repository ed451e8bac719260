// The CUDA device backend: device facts, the timing loop, dispatch to the per-family benches.
#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"
#include "cuda_context.h"
#include "efficiency.h"
#include "mem_kernels.h"
#include "stats.h"

namespace trainsim::kb {

void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  throw Error(strprintf("%s:%d: %s failed: %s (%s)", file, line, call, cudaGetErrorString(e), cudaGetErrorName(e)));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) KB_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
  }
  return *this;
}

size_t elem_bytes(Elem e) { return e == Elem::F32 ? 4 : e == Elem::BF16 ? 2 : 1; }

void fill_random(DeviceBuffer& buf, Elem e, uint32_t seed, float scale, cudaStream_t s) {
  launch_fill(buf.get(), buf.bytes() / elem_bytes(e), static_cast<int>(e), seed, scale, s);
  KB_CUDA_CHECK(cudaGetLastError());
}

Timing CudaContext::time(const MeasureOptions& opt, const std::function<void()>& launch, bool cold,
                         int calls_per_sample) {
  for (int i = 0; i < opt.warmup; ++i)
    for (int c = 0; c < calls_per_sample; ++c) launch();
  KB_CUDA_CHECK(cudaStreamSynchronize(stream));
  Timing t;
  std::vector<double> samples;
  for (int i = 0; i < opt.samples; ++i) {
    // The flush runs before the start event, so it is not timed.
    if (cold) KB_CUDA_CHECK(cudaMemsetAsync(flush.get(), i & 0xff, flush.bytes(), stream));
    KB_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int c = 0; c < calls_per_sample; ++c) launch();
    KB_CUDA_CHECK(cudaEventRecord(stop, stream));
    KB_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    KB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    samples.push_back(ms * 1e-3 / calls_per_sample);
    if (auto mhz = nvml->sm_clock_mhz()) {
      t.sm_clock_min_mhz = t.sm_clock_min_mhz == 0 ? *mhz : std::min(t.sm_clock_min_mhz, *mhz);
      t.sm_clock_max_mhz = std::max(t.sm_clock_max_mhz, *mhz);
    }
    if (auto r = nvml->clock_event_reasons()) t.clock_event_reasons |= *r;
  }
  KB_CUDA_CHECK(cudaGetLastError());
  t.stats = summarize(std::move(samples));
  return t;
}

std::string timing_details(const Timing& t, const std::string& extra_json) {
  nlohmann::json j = extra_json.empty() ? nlohmann::json::object() : nlohmann::json::parse(extra_json);
  if (t.sm_clock_max_mhz > 0) {
    j["sm_clock_mhz_min"] = t.sm_clock_min_mhz;
    j["sm_clock_mhz_max"] = t.sm_clock_max_mhz;
    j["clock_event_reasons"] = t.clock_event_reasons;
    j["slowdowns"] = NvmlProbe::slowdown_names(t.clock_event_reasons);
  }
  return j.dump();
}

KernelResult ok_result(const Timing& t, const std::string& impl, const std::string& extra_json) {
  KernelResult r;
  r.time = t.stats;
  r.impl = impl;
  r.details_json = timing_details(t, extra_json);
  return r;
}

KernelResult unsupported_result(const std::string& reason) {
  KernelResult r;
  r.status = "unsupported";
  r.reason = reason;
  return r;
}

namespace {

constexpr size_t kFlushBytes = size_t{256} << 20;  // as cudnn-frontend's SDPA benchmark

std::string format_uuid(const cudaUUID_t& u) {
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += strprintf("%02x", static_cast<unsigned char>(u.bytes[i]));
  }
  return s;
}

class CudaBackend : public Backend {
 public:
  CudaBackend() {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
      throw Error(std::string("no usable GPU: ") + (e == cudaSuccess ? "no CUDA device" : cudaGetErrorString(e)));
    KB_CUDA_CHECK(cudaGetDevice(&ctx_.device));
    KB_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking));
    KB_CUDA_CHECK(cudaEventCreate(&ctx_.start));
    KB_CUDA_CHECK(cudaEventCreate(&ctx_.stop));
    ctx_.flush = DeviceBuffer(kFlushBytes);
    char bus[32] = {};
    KB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, ctx_.device));
    ctx_.nvml = std::make_unique<NvmlProbe>(bus);
    KB_CUDA_CHECK(cudaDeviceGetAttribute(&ctx_.sm_count, cudaDevAttrMultiProcessorCount, ctx_.device));
  }
  ~CudaBackend() override {
    cudaEventDestroy(ctx_.start);
    cudaEventDestroy(ctx_.stop);
    cudaStreamDestroy(ctx_.stream);
  }

  DeviceFacts device() override {
    cudaDeviceProp p{};
    KB_CUDA_CHECK(cudaGetDeviceProperties(&p, ctx_.device));
    int clock_khz = 0, mem_khz = 0, bus_bits = 0;
    KB_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ctx_.device));
    KB_CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, ctx_.device));
    KB_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ctx_.device));
    DeviceFacts d;
    d.name = p.name;
    d.uuid = format_uuid(p.uuid);
    d.compute_capability = strprintf("%d.%d", p.major, p.minor);
    d.sm_count = p.multiProcessorCount;
    d.mem_bytes = static_cast<double>(p.totalGlobalMem);
    d.l2_bytes = p.l2CacheSize;
    d.sm_clock_max_hz = (ctx_.nvml->max_sm_clock_mhz() ? *ctx_.nvml->max_sm_clock_mhz() * 1e6 : clock_khz * 1e3);
    d.mem_clock_hz = mem_khz * 1e3;
    d.mem_bus_bits = bus_bits;
    d.peak_mem_bytes_per_s = d.mem_clock_hz * bus_bits * 2 / 8;  // DDR: two transfers per clock
    Peaks peaks = device_peaks(d.name, p.major, p.minor, p.multiProcessorCount, d.sm_clock_max_hz);
    d.peak_bf16_flops = peaks.bf16;
    d.peak_fp8_flops = peaks.fp8;
    int drv = 0, rt = 0;
    KB_CUDA_CHECK(cudaDriverGetVersion(&drv));
    KB_CUDA_CHECK(cudaRuntimeGetVersion(&rt));
    d.driver_version = ctx_.nvml->driver_version().value_or(strprintf("cuda %d.%d", drv / 1000, drv % 1000 / 10));
    d.cuda_runtime_version = strprintf("%d.%d", rt / 1000, rt % 1000 / 10);
    d.cublas_version = cublas_version_string();
    d.cudnn_version = cudnn_version_string();
    peaks_source_ = peaks.source;
    return d;
  }

  std::string method_json(const MeasureOptions& opt) override {
    nlohmann::json j;
    j["warmup"] = opt.warmup;
    j["samples"] = opt.samples;
    j["statistic"] = "median of the samples; p10, p90, min, max, mean and rel_stdev reported";
    j["timer"] = "CUDA events around each call, one synchronization per sample";
    j["l2"] = strprintf("flushed before every sample by an untimed %zu MiB cudaMemsetAsync (launch latency: warm)",
                        kFlushBytes >> 20);
    j["gemm"] = strprintf("cuBLASLt, top-1 heuristic algorithm, %.0f MiB workspace, FP32 compute; layouts TN fprop, "
                          "NN dgrad, NT wgrad (beta=1 into FP32 when accumulate=True); FP8 timed as TN",
                          opt.workspace_bytes / (1 << 20));
    j["grouped_gemm"] = "per-expert cuBLASLt calls round-robin over 4 streams (TransformerEngine default); "
                        "cublasGemmGroupedBatchedEx timed as an alternative where supported";
    j["attention"] = "cuDNN backend composite graph, causal (top-left), BHSD, bf16; bwd times dQ, dK, dV";
    j["memory"] = "bytes per the simulator's formulas; latency is deducted at merge time with the system's value";
    j["clocks"] = "not locked; SM clock and clock-event reasons sampled through NVML when available";
    j["peaks"] = peaks_source_;
    return j.dump();
  }

  KernelResult measure(const BenchItem& item, const MeasureOptions& opt) override {
    switch (item.family) {
      case Family::Gemm: return bench_matmul(ctx_, item, opt);
      case Family::GroupedGemm: return bench_grouped(ctx_, item, opt);
      case Family::SdpaFwd:
      case Family::SdpaBwd: return bench_sdpa(ctx_, item, opt);
      case Family::Memory:
      case Family::Latency: return bench_memory(ctx_, item, opt);
    }
    throw Error("unknown item family");
  }

 private:
  CudaContext ctx_;
  std::string peaks_source_;
};

}  // namespace

std::unique_ptr<Backend> make_device_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace trainsim::kb
