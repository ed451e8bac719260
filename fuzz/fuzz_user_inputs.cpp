// libFuzzer target: the user-input readers — Hugging Face config.json and Megatron-LM command
// lines (split, parsed, turned into model and strategy). Bad input must end in trainsim::Error;
// anything else (crash, other exception, sanitizer report, timeout, memory blow-up) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "inputs/hf_config.h"
#include "inputs/megatron_args.h"
#include "inputs/plan_request.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)trainsim::load_hf_config(text, "config.json");
  } catch (const trainsim::Error&) {
  }
  try {
    (void)trainsim::parse_megatron_args(text, "args.sh");
  } catch (const trainsim::Error&) {
  }
  try {
    // The command line alone (model flags and strategy), as `perf --megatron-args` reads it.
    trainsim::PlanRequest r;
    r.megatron = trainsim::ConfigText{text, "args.sh"};
    (void)trainsim::build_plan(r, "", "");
  } catch (const trainsim::Error&) {
  }
  return 0;
}
