// libFuzzer target: the nccl-tests importer (text logs and -J JSON) and the fit of its runs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "nccl_tests.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto runs = comm_bench::parse_nccl_tests(text, "fuzz.log");
    (void)comm_bench::results_to_json_text(
        comm_bench::results_from_nccl_tests(runs, comm_bench::IntraLink::NVLink, ""));
  } catch (const trainsim::Error&) {
  }
  return 0;
}
