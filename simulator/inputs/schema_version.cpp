// schema_version check.
#include "inputs/schema_version.h"

#include <string>

namespace trainsim {

void check_schema_major(const nlohmann::json& doc, const char* expected_major, IssueList& issues) {
  if (!doc.is_object()) return;
  const auto it = doc.find("schema_version");
  if (it == doc.end() || !it->is_string()) return;
  const std::string& version = it->get_ref<const std::string&>();
  if (version.substr(0, version.find('.')) != expected_major)
    issues.add("/schema_version",
               "unsupported schema_version '" + version + "'; this build reads " + expected_major + ".x.y");
}

}  // namespace trainsim
