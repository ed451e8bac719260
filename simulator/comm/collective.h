// Collective time on a network group (the peer's compute_net_op_time) and the choice of
// network group per parallel dimension (its analysis_net).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "compute/gemm_model.h"  // EfficiencySource
#include "inputs/mode.h"
#include "plan/settings.h"
#include "system/system_config.h"
#include "model/graph.h"
#include "plan/groups.h"

namespace trainsim {


/// Seconds for one collective over `n` ranks on `net` of `bytes` (the full tensor): the op's
/// collective model where `net` carries one (measured times over size, comm/collective_model.h),
/// else the α–β formula below.
/// `stage` is the peer's comm_stage tag ("dp_cp", "edp", "tp", "cp", "ep", ...). Throws
/// std::out_of_range when the system lacks the network or its collective. `how` (optional) says
/// how the model answered, Default for the formula.
[[nodiscard]] double collective_time(const SystemConfig& sys, const Settings& s, const NetworkRef& net,
                                     Collective kind, double bytes, int64_t n, const char* stage,
                                     EfficiencySource* how = nullptr);
/// The same on the network group named `net`, resolved for this call.
[[nodiscard]] double collective_time(const SystemConfig& sys, const Settings& s,
                                     const std::string& net, Collective kind, double bytes,
                                     int64_t n, const char* stage);

[[nodiscard]] const char* collective_name(Collective c);

}  // namespace trainsim
