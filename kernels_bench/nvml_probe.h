// NVML, loaded at run time with dlopen (no NVML header or library is needed to build): SM clock
// and clock-event (throttle) reasons during measurements, driver version.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainsim::kb {

class NvmlProbe {
 public:
  /// Loads libnvidia-ml.so.1 and finds the device with PCI bus id `pci_bus_id` (as from
  /// cudaDeviceGetPCIBusId). available() is false when either fails; every query then returns
  /// nullopt.
  explicit NvmlProbe(const std::string& pci_bus_id);
  ~NvmlProbe();
  NvmlProbe(const NvmlProbe&) = delete;
  NvmlProbe& operator=(const NvmlProbe&) = delete;

  [[nodiscard]] bool available() const { return device_ != nullptr; }
  [[nodiscard]] std::optional<std::string> driver_version() const;
  [[nodiscard]] std::optional<unsigned> sm_clock_mhz() const;
  [[nodiscard]] std::optional<unsigned> max_sm_clock_mhz() const;
  /// Bit mask of nvmlClocksEventReasons (formerly throttle reasons).
  [[nodiscard]] std::optional<uint64_t> clock_event_reasons() const;

  /// Names of the reasons in `mask` that slow the GPU down (idle and the application-clock
  /// setting are not slowdowns and are left out).
  [[nodiscard]] static std::vector<std::string> slowdown_names(uint64_t mask);

 private:
  void* lib_ = nullptr;
  void* device_ = nullptr;
  int (*get_clock_)(void*, int, unsigned*) = nullptr;
  int (*get_max_clock_)(void*, int, unsigned*) = nullptr;
  int (*get_reasons_)(void*, unsigned long long*) = nullptr;
  int (*driver_version_)(char*, unsigned) = nullptr;
  int (*shutdown_)() = nullptr;
};

}  // namespace trainsim::kb
