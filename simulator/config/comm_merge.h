// Merges comm_bench fits (comm.json) into a system config.
#pragma once

#include <string>

#include "config/system_config.h"

namespace trainsim {}  // namespace trainsim
