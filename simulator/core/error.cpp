// Error formatting.
#include "core/error.h"

namespace trainsim {
namespace {

std::string join_issues(const std::vector<Issue>& issues) {
  std::string out;
  for (size_t i = 0; i < issues.size(); ++i) {
    if (i > 0) out += '\n';
    out += issues[i].str();
  }
  return out;
}

}  // namespace

std::string Issue::str() const {
  std::string out = source;
  if (!path.empty()) out += (out.empty() ? "" : ": ") + path;
  if (!out.empty()) out += ": ";
  return out + message;
}

ConfigError::ConfigError(std::vector<Issue> issues)
    : Error(join_issues(issues)), issues_(std::move(issues)) {}

ConfigError::ConfigError(std::string source, std::string path, std::string message)
    : ConfigError(std::vector<Issue>{{std::move(source), std::move(path), std::move(message)}}) {}

void assert_fail(const char* cond, const char* file, int line, const std::string& msg) {
  throw std::logic_error(std::string("internal error at ") + file + ":" + std::to_string(line) +
                         ": " + cond + ": " + msg);
}

}  // namespace trainsim
