// The CUDA device backend: device facts, the timing loop, dispatch to the per-family benches.
#include <algorithm>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/cuda_driver.h"
#include "core/error.h"
#include "core/text.h"
#include "cuda_context.h"
#include "device_errors.h"
#include "efficiency.h"
#include "mem_kernels.h"
#include "reference.h"
#include "stats.h"
#include "timing_loop.h"

namespace trainsim::kb {

void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  std::string msg = strprintf("%s:%d: %s failed: %s (%s)", file, line, call, cudaGetErrorString(e), cudaGetErrorName(e));
  if (is_sticky_cuda_error(cudaGetErrorName(e))) throw DeviceLostError(msg);
  (void)cudaGetLastError();  // clear a recoverable error so the next item starts clean
  throw Error(msg);
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

std::vector<float> download(const void* ptr, size_t count, Elem e) {
  std::vector<unsigned char> raw(count * elem_bytes(e));
  KB_CUDA_CHECK(cudaMemcpy(raw.data(), ptr, raw.size(), cudaMemcpyDeviceToHost));
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    switch (e) {
      case Elem::F32: std::memcpy(&out[i], raw.data() + 4 * i, 4); break;
      case Elem::BF16: {
        uint16_t b;
        std::memcpy(&b, raw.data() + 2 * i, 2);
        out[i] = bf16_to_float(b);
        break;
      }
      case Elem::FP8E4M3: out[i] = e4m3_to_float(raw[i]); break;
      case Elem::FP8E5M2: out[i] = e5m2_to_float(raw[i]); break;
    }
  }
  return out;
}

namespace {

// The timing loop's device side: one stream, two events, the read flush; reads the SM clock
// and clock-event reasons after each timed sample (the warm-up ramp is left out).
class CudaTimerOps : public TimerOps {
 public:
  CudaTimerOps(CudaContext& ctx, const std::function<void()>& launch, Timing& t) : ctx_(ctx), launch_(launch), t_(t) {}
  void launch() override { launch_(); }
  void flush() override {
    launch_read_flush(ctx_.flush.get(), ctx_.flush.bytes(), static_cast<unsigned*>(ctx_.flush_sink.get()),
                      ctx_.sm_count, ctx_.stream);
  }
  void record_start() override { KB_CUDA_CHECK(cudaEventRecord(ctx_.start, ctx_.stream)); }
  void record_stop() override { KB_CUDA_CHECK(cudaEventRecord(ctx_.stop, ctx_.stream)); }
  double elapsed_s() override {
    KB_CUDA_CHECK(cudaEventSynchronize(ctx_.stop));
    float ms = 0;
    KB_CUDA_CHECK(cudaEventElapsedTime(&ms, ctx_.start, ctx_.stop));
    return ms * 1e-3;
  }
  void sampled() override {
    if (auto mhz = ctx_.nvml->sm_clock_mhz()) {
      t_.sm_clock_min_mhz = t_.sm_clock_min_mhz == 0 ? *mhz : std::min(t_.sm_clock_min_mhz, *mhz);
      t_.sm_clock_max_mhz = std::max(t_.sm_clock_max_mhz, *mhz);
    }
    if (auto r = ctx_.nvml->clock_event_reasons()) t_.clock_event_reasons |= *r;
  }

 private:
  CudaContext& ctx_;
  const std::function<void()>& launch_;
  Timing& t_;
};

}  // namespace

Timing CudaContext::time(const MeasureOptions& opt, const std::function<void()>& launch, bool cold,
                         int calls_per_sample) {
  Timing t;
  CudaTimerOps ops(*this, launch, t);
  TimingLoopOptions lo;
  lo.warmup = opt.warmup;
  lo.samples = opt.samples;
  lo.calls_per_sample = calls_per_sample;
  lo.cold = cold;
  lo.min_warmup_s = opt.min_warmup_s;
  std::vector<double> samples = run_timing_loop(ops, lo);
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
    int driver = 0;
    (void)cudaDriverGetVersion(&driver);  // stays 0 when no driver is loaded
    require_cuda_driver("kernels_bench", CUDART_VERSION, driver);
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
      throw Error(std::string("no usable GPU: ") + (e == cudaSuccess ? "no CUDA device" : cudaGetErrorString(e)));
    KB_CUDA_CHECK(cudaGetDevice(&ctx_.device));
    KB_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking));
    KB_CUDA_CHECK(cudaEventCreate(&ctx_.start));
    KB_CUDA_CHECK(cudaEventCreate(&ctx_.stop));
    int l2 = 0;
    KB_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ctx_.device));
    ctx_.flush = DeviceBuffer(l2_flush_bytes(static_cast<size_t>(l2)));
    fill_random(ctx_.flush, Elem::BF16, 99, 1.0f, ctx_.stream);
    ctx_.flush_sink = DeviceBuffer(sizeof(unsigned));
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
    j["timer"] = "CUDA events around each sample, one synchronization per sample";
    j["warmup_policy"] = strprintf("at least %d launches and %.2f s of device time before the first sample (clocks "
                                   "ramp up from idle)",
                                   opt.warmup, opt.min_warmup_s);
    j["l2"] = strprintf("flushed before every sample by an untimed read of %zu MiB (>= 2x L2; reads leave no dirty "
                        "lines to write back; launch latency: warm)",
                        ctx_.flush.bytes() >> 20);
    j["gemm"] = strprintf("cuBLASLt, top-1 heuristic algorithm, %.0f MiB workspace, FP32 compute; layouts TN fprop, "
                          "NN dgrad, NT wgrad (beta=1 into FP32 when accumulate=True); FP8 timed as TN",
                          opt.workspace_bytes / (1 << 20));
    j["grouped_gemm"] = "per-expert cuBLASLt calls round-robin over 4 streams (TransformerEngine default); "
                        "cublasGemmGroupedBatchedEx timed as an alternative where supported";
    j["attention"] = "cudnn-frontend SDPA graphs as TransformerEngine builds them: bf16 io, fp32 compute, causal "
                     "(top-left), sbhd strides; bwd times dQ, dK, dV (GQA reduction and fp32 dQ accumulation by "
                     "cudnn-frontend)";
    j["memory"] = "bytes per the simulator's formulas; latency is deducted at merge time with the system's value";
    j["clocks"] = "not locked; SM clock and clock-event reasons sampled through NVML when available";
    j["peaks"] = peaks_source_;
    return j.dump();
  }

  std::vector<CheckLine> self_check(const MeasureOptions& opt) override {
    const DeviceFacts d = device();
    std::vector<TimedPoint> timed;
    std::vector<CheckLine> lines = self_check_gemm(ctx_, opt, timed, d.peak_bf16_flops);
    for (auto& l : self_check_sdpa(ctx_)) lines.push_back(std::move(l));
    for (auto& l : self_check_memory(ctx_, opt, timed, d.peak_mem_bytes_per_s)) lines.push_back(std::move(l));
    for (auto& l : timing_checks(timed)) lines.push_back(std::move(l));
    return lines;
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
