// The efficiency-table keys a plan looks up (what kernels_bench must measure).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "inputs/model_config.h"
#include "plan/plan.h"
#include "system/system_config.h"

namespace trainsim {

/// One shape key used by a plan.
struct ShapeUse {
  std::string op;        // accelerator op class: matmul, fp8_matmul, group_matmul, sdp_fwd, sdp_bwd, ...
  std::string key;       // exact lookup key (the peer's format)
  double flops = 0;      // FLOP of one call under the simulator's convention
  bool in_system = false;  // the system file has a measured efficiency for it, or a model answering it
  int64_t count = 0;     // calls per micro-batch over all stages
};

/// Every distinct (op, key) the plan evaluates, in first-use order.
[[nodiscard]] std::vector<ShapeUse> list_shapes(const Plan& plan);

}  // namespace trainsim
