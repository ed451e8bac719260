// Reader of a grouped-GEMM model in a system file (`accelerator.op.<op>.model`, kind
// grouped_grid; compute/grouped_model.h), for system_config.cpp.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "calibration/op_class.h"
#include "compute/grouped_model.h"
#include "inputs/json_reader.h"

namespace trainsim {

/// The model of `j` (at JSON path `path`, op class `cls`), or nullptr with the problems added to
/// `issues`.
std::shared_ptr<const GroupedModel> read_grouped_model(const nlohmann::json& j, const std::string& path, OpClass cls,
                                                       IssueList& issues);

}  // namespace trainsim
