// schema_version check shared by the result-file readers.
#pragma once

#include <nlohmann/json.hpp>

#include "inputs/json_reader.h"

namespace trainsim {

/// Records an issue at /schema_version when `doc` has a string schema_version whose major part
/// (the text before the first '.') is not `expected_major`; minor and patch additions stay
/// readable. A missing or non-string version is left to the ObjectReader that reads it.
void check_schema_major(const nlohmann::json& doc, const char* expected_major, IssueList& issues);

}  // namespace trainsim
