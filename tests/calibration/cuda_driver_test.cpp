// The benches' driver check: CUDA version integers as text and the message for each case.
#include <gtest/gtest.h>

#include "calibration/cuda_driver.h"
#include "core/error.h"

namespace trainsim {
namespace {

TEST(CudaDriver, VersionText) {
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(12040), "12.4");
  EXPECT_EQ(cuda_version_text(12090), "12.9");
  EXPECT_EQ(cuda_version_text(11080), "11.8");
  EXPECT_EQ(cuda_version_text(13020), "13.2");
}

TEST(CudaDriver, NewEnoughDriverPasses) {
  EXPECT_EQ(cuda_driver_problem("kernels_bench", 13000, 13000), "");
  EXPECT_EQ(cuda_driver_problem("kernels_bench", 13000, 13020), "");
  EXPECT_EQ(cuda_driver_problem("comm_bench", 12040, 12080), "");
  EXPECT_NO_THROW(require_cuda_driver("comm_bench", 12040, 13000));
}

TEST(CudaDriver, CUDA13BuildOnCUDA12DriverPointsToTheCUDA12Build) {
  EXPECT_EQ(cuda_driver_problem("kernels_bench", 13000, 12040),
            "this kernels_bench was built with CUDA 13.0 and needs a driver for CUDA 13.0 or later; the driver "
            "supports CUDA 12.4: build with `make cuda12-benches` (CUDA 12.4)");
  EXPECT_EQ(cuda_driver_problem("comm_bench", 13000, 12080),
            "this comm_bench was built with CUDA 13.0 and needs a driver for CUDA 13.0 or later; the driver "
            "supports CUDA 12.8: build with `make cuda12-benches` (CUDA 12.4)");
}

TEST(CudaDriver, DriverOlderThanCUDA12_4NeedsAnUpdate) {
  const std::string update = "update the NVIDIA driver to one for CUDA 12.4 or later (then `make cuda12-benches` "
                             "builds for it)";
  EXPECT_EQ(cuda_driver_problem("comm_bench", 12040, 12020),
            "this comm_bench was built with CUDA 12.4 and needs a driver for CUDA 12.4 or later; the driver "
            "supports CUDA 12.2: " + update);
  EXPECT_EQ(cuda_driver_problem("kernels_bench", 13000, 11080),
            "this kernels_bench was built with CUDA 13.0 and needs a driver for CUDA 13.0 or later; the driver "
            "supports CUDA 11.8: " + update);
}

TEST(CudaDriver, NoDriver) {
  EXPECT_EQ(cuda_driver_problem("kernels_bench", 12040, 0),
            "no NVIDIA driver is loaded: this kernels_bench measures on a GPU and needs a driver for CUDA 12.4 or "
            "later (--dry-run needs neither)");
}

TEST(CudaDriver, RequireThrowsTheMessage) {
  try {
    require_cuda_driver("kernels_bench", 13000, 12040);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the driver supports CUDA 12.4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainsim
