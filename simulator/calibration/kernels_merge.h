// Merges kernels_bench measurements (kernels.json) into a system config.
#pragma once

#include <string>

#include "system/system_config.h"

namespace trainsim {

/// Adds the measured efficiencies of a kernels.json document to `sys` (accurate tables, op
/// fallbacks, memory-bound bandwidth classes, device facts, provenance). Throws ConfigError
/// naming `source` on malformed input.
void merge_kernels(SystemConfig& sys, const std::string& kernels_json_text, const std::string& source);

}  // namespace trainsim
