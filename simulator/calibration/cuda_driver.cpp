#include "calibration/cuda_driver.h"

#include "core/error.h"

namespace trainsim {

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string cuda_driver_problem(const std::string& bench, int built_for, int driver) {
  const std::string need = "a driver for CUDA " + cuda_version_text(built_for) + " or later";
  if (driver <= 0)
    return "no NVIDIA driver is loaded: this " + bench + " measures on a GPU and needs " + need +
           " (--dry-run needs neither)";
  if (driver >= built_for) return "";
  std::string text = "this " + bench + " was built with CUDA " + cuda_version_text(built_for) + " and needs " + need +
                     "; the driver supports CUDA " + cuda_version_text(driver) + ": ";
  if (driver >= kCuda12BenchVersion && built_for > kCuda12BenchVersion)
    text += "build with `make cuda12-benches` (CUDA " + cuda_version_text(kCuda12BenchVersion) + ")";
  else
    text += "update the NVIDIA driver to one for CUDA " + cuda_version_text(kCuda12BenchVersion) +
            " or later (then `make cuda12-benches` builds for it)";
  return text;
}

void require_cuda_driver(const std::string& bench, int built_for, int driver) {
  std::string problem = cuda_driver_problem(bench, built_for, driver);
  if (!problem.empty()) throw Error(problem);
}

}  // namespace trainsim
