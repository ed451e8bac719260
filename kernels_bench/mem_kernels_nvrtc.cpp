// The launchers of mem_kernels.h in a build without nvcc (the CUDA toolkit from PyPI's wheels has
// none): the device code (mem_kernels_device.cuh, embedded) is compiled once per process by
// NVRTC for the current GPU, loaded with the driver API and launched with the grids of
// mem_kernels.cu. The driver API is opened at run time (libcuda.so.1 is the driver's: a binary
// linked to it would not start on a machine without one, where --dry-run must work).
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "launch_shapes.h"
#include "mem_kernels.h"
#include "mem_kernels_nvrtc.h"

namespace trainsim::detail {
extern const char* const kMemKernelsSource;
}

namespace trainsim::kb {
namespace {

constexpr unsigned kThreads = 256;    // as mem_kernels_device.cuh
constexpr int64_t kMaxBlocks = 8192;  // as mem_kernels.cu

unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

// The kernels by the C++ names NVRTC resolves (nvrtcAddNameExpression).
enum Kernel { Fill, MakeIndex, Gather, Unpermute, CeFwd8, CeFwd1, CeBwd8, CeBwd1, ReadFlush, Empty, kKernels };
constexpr const char* kNames[kKernels] = {
    "trainsim::kb::fill_kernel",           "trainsim::kb::make_index_kernel",     "trainsim::kb::gather_kernel",
    "trainsim::kb::unpermute_kernel",      "trainsim::kb::ce_forward_kernel<8>",  "trainsim::kb::ce_forward_kernel<1>",
    "trainsim::kb::ce_backward_kernel<8>", "trainsim::kb::ce_backward_kernel<1>", "trainsim::kb::read_flush_kernel",
    "trainsim::kb::empty_kernel"};

void check_nvrtc(nvrtcResult r, const char* call, const std::string& log = "") {
  if (r != NVRTC_SUCCESS)
    throw Error(std::string("NVRTC: ") + call + ": " + nvrtcGetErrorString(r) + (log.empty() ? "" : "\n" + log));
}

// The driver API calls used here, from libcuda.so.1.
struct Driver {
  decltype(&cuGetErrorString) get_error_string = nullptr;
  decltype(&cuCtxGetDevice) ctx_get_device = nullptr;
  decltype(&cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&cuModuleLoadData) module_load_data = nullptr;
  decltype(&cuModuleGetFunction) module_get_function = nullptr;
  decltype(&cuLaunchKernel) launch_kernel = nullptr;
};

template <class F>
void bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) throw Error(std::string("libcuda.so.1 has no ") + name + ": the NVIDIA driver is too old");
}

const Driver& driver() {
  static const Driver d = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw Error("cannot open libcuda.so.1 (the NVIDIA driver's library): a GPU run needs the driver");
    Driver r;
    bind(lib, "cuGetErrorString", r.get_error_string);
    bind(lib, "cuCtxGetDevice", r.ctx_get_device);
    bind(lib, "cuDeviceGetAttribute", r.device_get_attribute);
    bind(lib, "cuModuleLoadData", r.module_load_data);
    bind(lib, "cuModuleGetFunction", r.module_get_function);
    bind(lib, "cuLaunchKernel", r.launch_kernel);
    return r;
  }();
  return d;
}

void check_cu(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) {
    const char* msg = nullptr;
    driver().get_error_string(r, &msg);
    throw Error(std::string(call) + ": " + (msg ? msg : "unknown CUDA driver error"));
  }
}

}  // namespace

CompiledKernels compile_mem_kernels(int arch, bool sass) {
  nvrtcProgram prog = nullptr;
  check_nvrtc(nvrtcCreateProgram(&prog, detail::kMemKernelsSource, "mem_kernels_device.cuh", 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  struct Guard {
    nvrtcProgram& p;
    ~Guard() { nvrtcDestroyProgram(&p); }
  } guard{prog};
  for (const char* name : kNames) check_nvrtc(nvrtcAddNameExpression(prog, name), "nvrtcAddNameExpression");
  const std::string arch_opt = std::string("--gpu-architecture=") + (sass ? "sm_" : "compute_") + std::to_string(arch);
  const std::string include_opt = std::string("--include-path=") + KB_CUDA_INCLUDE;
  const char* opts[] = {arch_opt.c_str(), include_opt.c_str(), "--std=c++17"};
  const nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    check_nvrtc(r, "nvrtcCompileProgram", log);
  }
  CompiledKernels out;
  size_t size = 0;
  if (sass) {
    check_nvrtc(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    out.image.resize(size);
    check_nvrtc(nvrtcGetCUBIN(prog, out.image.data()), "nvrtcGetCUBIN");
  } else {
    check_nvrtc(nvrtcGetPTXSize(prog, &size), "nvrtcGetPTXSize");
    out.image.resize(size);
    check_nvrtc(nvrtcGetPTX(prog, out.image.data()), "nvrtcGetPTX");
  }
  for (const char* name : kNames) {
    const char* lowered = nullptr;
    check_nvrtc(nvrtcGetLoweredName(prog, name, &lowered), "nvrtcGetLoweredName");
    out.names.emplace_back(lowered);
  }
  return out;
}

std::vector<int> nvrtc_archs() {
  int n = 0;
  check_nvrtc(nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<size_t>(n));
  check_nvrtc(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

namespace {

struct Module {
  CUmodule module = nullptr;
  CUfunction fn[kKernels] = {};
};

// Compiles for the current device: SASS when NVRTC knows its architecture, else PTX of the newest
// one NVRTC knows (the driver compiles it).
Module build_module() {
  CUdevice dev = 0;
  check_cu(driver().ctx_get_device(&dev), "cuCtxGetDevice");
  int major = 0, minor = 0;
  check_cu(driver().device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
  check_cu(driver().device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
  const int arch = major * 10 + minor;
  bool sass = false;
  int target = 0;
  for (int a : nvrtc_archs()) {
    if (a == arch) sass = true;
    if (a <= arch && a > target) target = a;
  }
  if (target == 0) throw Error("NVRTC supports no architecture up to the GPU's sm_" + std::to_string(arch));
  const CompiledKernels c = compile_mem_kernels(target, sass);
  Module m;
  check_cu(driver().module_load_data(&m.module, c.image.data()), "cuModuleLoadData");
  for (int k = 0; k < kKernels; ++k)
    check_cu(driver().module_get_function(&m.fn[k], m.module, c.names[static_cast<size_t>(k)].c_str()),
             "cuModuleGetFunction");
  return m;
}

// One module per process (the benches use one GPU), built at the first launch.
CUfunction kernel(Kernel k) {
  static std::once_flag once;
  static Module m;
  std::call_once(once, [] { m = build_module(); });
  return m.fn[k];
}

template <class... Args>
void launch(Kernel k, unsigned gx, unsigned gy, unsigned block, cudaStream_t s, Args... args) {
  void* params[] = {static_cast<void*>(&args)..., nullptr};
  check_cu(driver().launch_kernel(kernel(k), gx, gy, 1, block, 1, 1, 0, reinterpret_cast<CUstream>(s), params, nullptr),
           "cuLaunchKernel");
}

}  // namespace

void launch_fill(void* ptr, size_t count, int elem, uint32_t seed, float scale, cudaStream_t s) {
  const auto n = static_cast<int64_t>(count);
  launch(Fill, blocks_for(n), 1, kThreads, s, ptr, n, elem, seed, scale);
}

void launch_gather_rows(const void* in, void* out, const int32_t* index, int64_t rows, int64_t row_bytes,
                        cudaStream_t s) {
  const LaunchShape l = row_launch(rows, row_bytes);
  launch(Gather, l.grid_x, l.grid_y, l.block, s, in, out, index, rows, static_cast<int64_t>(l.vec));
}

void launch_unpermute_reduce(const void* in, void* out, const int32_t* index, int64_t tokens, int64_t topk,
                             int64_t hidden, cudaStream_t s) {
  const LaunchShape l = row_launch(tokens, hidden * 2);
  launch(Unpermute, l.grid_x, l.grid_y, l.block, s, in, out, index, tokens, topk, static_cast<int64_t>(l.vec));
}

void launch_make_index(int32_t* index, int64_t rows, int64_t divisor, cudaStream_t s) {
  launch(MakeIndex, blocks_for(rows), 1, kThreads, s, index, rows, divisor);
}

void launch_ce_forward(const void* logits, const int32_t* target, float* lse, float* loss, int64_t rows,
                       int64_t vocab, cudaStream_t s) {
  const LaunchShape l = ce_launch(rows, vocab);
  launch(l.vec == 8 ? CeFwd8 : CeFwd1, l.grid_x, 1, l.block, s, logits, target, lse, loss, vocab);
}

void launch_ce_backward(const void* logits, const int32_t* target, const float* lse, void* grad, int64_t rows,
                        int64_t vocab, cudaStream_t s) {
  const LaunchShape l = ce_launch(rows, vocab);
  launch(l.vec == 8 ? CeBwd8 : CeBwd1, l.grid_x, 1, l.block, s, logits, target, lse, grad, vocab);
}

void launch_read_flush(const void* buf, size_t bytes, unsigned* sink, int sm_count, cudaStream_t s) {
  const auto n = static_cast<int64_t>(bytes / 16);
  launch(ReadFlush, static_cast<unsigned>(4 * sm_count), 1, 512, s, buf, n, sink);
}

void launch_empty(cudaStream_t s) { launch(Empty, 1, 1, 1, s); }

}  // namespace trainsim::kb
