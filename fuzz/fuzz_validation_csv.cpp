// libFuzzer target: the measurement table (cases.csv) reader of `trainsim validate`.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "cli/validation_runner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)trainsim::parse_validation_csv(text, "fuzz.csv");
  } catch (const trainsim::Error&) {
  }
  return 0;
}
