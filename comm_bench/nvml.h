// GPU link topology from NVML, loaded with dlopen at run time (never linked).
#pragma once

#include <optional>
#include <string>

namespace comm_bench {

/// NVLink between the GPUs with these PCI bus ids ("0000:18:00.0", as cudaDeviceGetPCIBusId
/// prints them): true or false, or nullopt when libnvidia-ml cannot be loaded or does not
/// know the devices.
[[nodiscard]] std::optional<bool> nvml_nvlink(const std::string& bus_a, const std::string& bus_b);

/// Driver version from NVML, or "" when unavailable.
[[nodiscard]] std::string nvml_driver_version();

}  // namespace comm_bench
