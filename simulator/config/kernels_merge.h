// Merges kernels_bench measurements (kernels.json) into a system config.
#pragma once

#include <string>

#include "config/system_config.h"

namespace trainsim {}  // namespace trainsim
