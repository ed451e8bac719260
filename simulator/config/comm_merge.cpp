// Merges comm_bench fits into a system config.
#include "config/comm_merge.h"

#include "core/error.h"

namespace trainsim {

void merge_comm(SystemConfig&, const std::string&, const std::string& source) {
  throw ConfigError(source, "", "merging collective fits is not implemented yet");
}

}  // namespace trainsim
