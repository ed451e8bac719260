// NVML through dlopen. Prototypes and constants follow nvml.h (NVML_SUCCESS = 0,
// NVML_P2P_CAPS_INDEX_NVLINK = 2, NVML_P2P_STATUS_OK = 0); no header is needed at build time.
#include "nvml.h"

#include <dlfcn.h>

namespace comm_bench {
namespace {

using InitFn = int (*)();
using HandleByBusFn = int (*)(const char*, void**);
using P2PStatusFn = int (*)(void*, void*, int, int*);
using DriverVersionFn = int (*)(char*, unsigned);

constexpr int kNvmlSuccess = 0;
constexpr int kP2PCapsNvlink = 2;
constexpr int kP2PStatusOk = 0;

struct Nvml {
  InitFn init = nullptr;
  HandleByBusFn handle_by_bus = nullptr;
  P2PStatusFn p2p_status = nullptr;
  DriverVersionFn driver_version = nullptr;
  bool ok = false;

  Nvml() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
    handle_by_bus = reinterpret_cast<HandleByBusFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    p2p_status = reinterpret_cast<P2PStatusFn>(dlsym(lib, "nvmlDeviceGetP2PStatus"));
    driver_version = reinterpret_cast<DriverVersionFn>(dlsym(lib, "nvmlSystemGetDriverVersion"));
    ok = init && handle_by_bus && init() == kNvmlSuccess;
  }
};

Nvml& nvml() {
  static Nvml n;  // initialised once; left loaded for the life of the process
  return n;
}

}  // namespace

std::optional<bool> nvml_nvlink(const std::string& bus_a, const std::string& bus_b) {
  Nvml& n = nvml();
  if (!n.ok || !n.p2p_status) return std::nullopt;
  void* a = nullptr;
  void* b = nullptr;
  if (n.handle_by_bus(bus_a.c_str(), &a) != kNvmlSuccess || n.handle_by_bus(bus_b.c_str(), &b) != kNvmlSuccess)
    return std::nullopt;
  int status = -1;
  if (n.p2p_status(a, b, kP2PCapsNvlink, &status) != kNvmlSuccess) return std::nullopt;
  return status == kP2PStatusOk;
}

std::string nvml_driver_version() {
  Nvml& n = nvml();
  if (!n.ok || !n.driver_version) return "";
  char buf[96] = {};
  if (n.driver_version(buf, sizeof buf) != kNvmlSuccess) return "";
  return buf;
}

}  // namespace comm_bench
