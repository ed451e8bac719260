// Merges comm_bench fits (comm.json) into a system config.
#pragma once

#include <string>

#include "system/system_config.h"

namespace trainsim {

/// Adds the fitted collectives of a comm.json document to `sys` (networks section:
/// bandwidth, per-op efficiency, latency, fixed latency; provenance). Throws ConfigError
/// naming `source` on malformed input.
void merge_comm(SystemConfig& sys, const std::string& comm_json_text, const std::string& source);

}  // namespace trainsim
