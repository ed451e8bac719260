// Merges kernels_bench measurements into a system config.
#include "config/kernels_merge.h"

#include "core/error.h"

namespace trainsim {

void merge_kernels(SystemConfig&, const std::string&, const std::string& source) {
  throw ConfigError(source, "", "merging kernel measurements is not implemented yet");
}

}  // namespace trainsim
