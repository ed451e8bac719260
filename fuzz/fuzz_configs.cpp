// libFuzzer target: the model, strategy and system JSON readers (each reads every input).
// Bad input must end in trainsim::Error; anything else (crash, other exception, sanitizer report,
// timeout, memory blow-up) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "inputs/model_config.h"
#include "inputs/strategy_config.h"
#include "system/system_config.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)trainsim::load_model(text, "fuzz.json");
  } catch (const trainsim::Error&) {
  }
  try {
    // A strategy that loads must also write back out (the search writes strategy files).
    (void)trainsim::strategy_to_json_text(trainsim::load_strategy(text, "fuzz.json"));
  } catch (const trainsim::Error&) {
  }
  try {
    (void)trainsim::system_to_json_text(trainsim::load_system(text, "fuzz.json"), 1);
  } catch (const trainsim::Error&) {
  }
  return 0;
}
