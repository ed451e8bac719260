// libFuzzer target: measurement files: shapes.json, kernels.json and comm.json, the last two
// merged into a base system as `trainsim system build` does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "calibration/comm_merge.h"
#include "calibration/kernels_file.h"
#include "calibration/kernels_merge.h"
#include "system/presets.h"
#include "calibration/shapes_file.h"
#include "system/system_config.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const trainsim::SystemConfig base = [] {
    const trainsim::ConfigText t = trainsim::resolve_config("system", "h100-sxm-80g");
    return trainsim::load_system(t.text, t.source);
  }();
  try {
    (void)trainsim::load_shapes(text, "fuzz.json");
  } catch (const trainsim::Error&) {
  }
  try {
    (void)trainsim::load_kernels(text, "fuzz.json");
  } catch (const trainsim::Error&) {
  }
  try {
    trainsim::SystemConfig sys = base;
    trainsim::merge_kernels(sys, text, "fuzz.json");
    (void)trainsim::system_to_json_text(sys, 1);
  } catch (const trainsim::Error&) {
  }
  try {
    trainsim::SystemConfig sys = base;
    trainsim::merge_comm(sys, text, "fuzz.json");
    (void)trainsim::system_to_json_text(sys, 1);
  } catch (const trainsim::Error&) {
  }
  return 0;
}
