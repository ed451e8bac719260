// Error types: invalid input is a ConfigError/UsageError; bugs are TRAINSIM_ASSERT.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim {

/// Base of every error trainsim throws on bad input.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One problem found in a config: where (file and JSON path) and what is wrong.
struct Issue {
  std::string source;   // file name or "<string>"
  std::string path;     // JSON pointer, e.g. "/tp_size"
  std::string message;  // lowercase, no trailing period
  /// "source: path: message".
  [[nodiscard]] std::string str() const;
};

/// Invalid configuration: carries every issue found, message lists them one per line.
class ConfigError : public Error {
 public:
  explicit ConfigError(std::vector<Issue> issues);
  ConfigError(std::string source, std::string path, std::string message);
  [[nodiscard]] const std::vector<Issue>& issues() const { return issues_; }

 private:
  std::vector<Issue> issues_;
};

/// Bad command-line usage (exit code 2).
class UsageError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void assert_fail(const char* cond, const char* file, int line, const std::string& msg);

}  // namespace trainsim

/// Internal invariant check, kept in release builds; never used on user input.
#define TRAINSIM_ASSERT(cond, msg) \
  do { \
    if (!(cond)) ::trainsim::assert_fail(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
