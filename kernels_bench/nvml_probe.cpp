// NVML through dlopen, with locally declared prototypes (as NCCL's nvmlwrap does).
#include "nvml_probe.h"

#include <dlfcn.h>

namespace trainsim::kb {
namespace {

constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;  // nvmlClockType_t NVML_CLOCK_SM

template <typename F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(::dlsym(lib, name));
}

}  // namespace

NvmlProbe::NvmlProbe(const std::string& pci_bus_id) {
  lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) return;
  auto init = symbol<int (*)()>(lib_, "nvmlInit_v2");
  auto by_pci = symbol<int (*)(const char*, void**)>(lib_, "nvmlDeviceGetHandleByPciBusId_v2");
  shutdown_ = symbol<int (*)()>(lib_, "nvmlShutdown");
  get_clock_ = symbol<int (*)(void*, int, unsigned*)>(lib_, "nvmlDeviceGetClockInfo");
  get_max_clock_ = symbol<int (*)(void*, int, unsigned*)>(lib_, "nvmlDeviceGetMaxClockInfo");
  get_reasons_ = symbol<int (*)(void*, unsigned long long*)>(lib_, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!get_reasons_)
    get_reasons_ = symbol<int (*)(void*, unsigned long long*)>(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons");
  driver_version_ = symbol<int (*)(char*, unsigned)>(lib_, "nvmlSystemGetDriverVersion");
  if (!init || !by_pci || init() != kNvmlSuccess) {
    shutdown_ = nullptr;
    return;
  }
  void* dev = nullptr;
  if (by_pci(pci_bus_id.c_str(), &dev) == kNvmlSuccess) device_ = dev;
}

NvmlProbe::~NvmlProbe() {
  if (shutdown_) shutdown_();
  if (lib_) ::dlclose(lib_);
}

std::optional<std::string> NvmlProbe::driver_version() const {
  char buf[96] = {};
  if (!device_ || !driver_version_ || driver_version_(buf, sizeof buf) != kNvmlSuccess) return std::nullopt;
  return std::string(buf);
}

std::optional<unsigned> NvmlProbe::sm_clock_mhz() const {
  unsigned v = 0;
  if (!device_ || !get_clock_ || get_clock_(device_, kNvmlClockSm, &v) != kNvmlSuccess) return std::nullopt;
  return v;
}

std::optional<unsigned> NvmlProbe::max_sm_clock_mhz() const {
  unsigned v = 0;
  if (!device_ || !get_max_clock_ || get_max_clock_(device_, kNvmlClockSm, &v) != kNvmlSuccess) return std::nullopt;
  return v;
}

std::optional<uint64_t> NvmlProbe::clock_event_reasons() const {
  unsigned long long v = 0;
  if (!device_ || !get_reasons_ || get_reasons_(device_, &v) != kNvmlSuccess) return std::nullopt;
  return static_cast<uint64_t>(v);
}

std::vector<std::string> NvmlProbe::slowdown_names(uint64_t mask) {
  // nvml.h nvmlClocksEventReason* bits.
  static const std::pair<uint64_t, const char*> kBits[] = {
      {0x4, "sw_power_cap"},          {0x8, "hw_slowdown"},          {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},  {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"}};
  std::vector<std::string> out;
  for (const auto& [bit, name] : kBits)
    if (mask & bit) out.emplace_back(name);
  return out;
}

}  // namespace trainsim::kb
