// Strict JSON object reader: tracks the JSON path, records consumed keys, reports unknown ones.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"

namespace trainsim {

/// Collects issues for one source file; throws them all at once.
class IssueList {
 public:
  explicit IssueList(std::string source) : source_(std::move(source)) {}
  void add(std::string path, std::string message);
  [[nodiscard]] bool empty() const { return issues_.empty(); }
  [[nodiscard]] const std::string& source() const { return source_; }
  /// Throws ConfigError with every issue when there is at least one.
  void throw_if_any() const;

 private:
  std::string source_;
  std::vector<Issue> issues_;
};

/// Deepest nesting of arrays and objects accepted: copying and dumping a document recurse once per
/// level, so a 100,000-deep input would overflow the stack.
inline constexpr int kMaxJsonDepth = 64;

/// Parses text as JSON. Rejects, with a ConfigError naming the source and the position: syntax
/// errors, invalid UTF-8, nesting deeper than kMaxJsonDepth, and a key repeated in one object
/// (both positions are named; JSON parsers differ on which one wins).
[[nodiscard]] nlohmann::json parse_json(const std::string& text, const std::string& source);

/// Reads fields of one JSON object. Type errors are recorded (not thrown) so that every
/// problem in a file is reported together; finish() adds the unknown keys.
class ObjectReader {
 public:
  ObjectReader(const nlohmann::json& obj, std::string path, IssueList& issues);

  void opt(const char* key, double& out);
  void opt(const char* key, int64_t& out);
  void opt(const char* key, bool& out);
  void opt(const char* key, std::string& out);
  void opt(const char* key, std::optional<double>& out);
  void opt(const char* key, std::optional<int64_t>& out);
  void opt(const char* key, std::optional<std::string>& out);
  void opt(const char* key, std::vector<std::string>& out);
  void opt(const char* key, std::vector<int64_t>& out);
  /// Like opt, but a missing (or null) key is an issue.
  void req(const char* key, double& out);
  void req(const char* key, int64_t& out);
  void req(const char* key, std::string& out);
  /// Object of numbers keyed by string (e.g. {"2": 4.0}).
  void opt(const char* key, std::map<std::string, double>& out);

  /// The member if present and an object (records a type issue otherwise); marks it consumed.
  [[nodiscard]] const nlohmann::json* object(const char* key, bool required);
  /// Marks a key as known without reading it.
  void ignore(const char* key);
  [[nodiscard]] bool has(const char* key) const;
  [[nodiscard]] std::string child_path(const std::string& key) const;
  /// Records unknown keys with a suggestion from the known ones.
  void finish();

 private:
  const nlohmann::json* find(const char* key);
  void type_issue(const char* key, const char* expected, const nlohmann::json& got);

  const nlohmann::json& obj_;
  std::string path_;
  IssueList& issues_;
  std::vector<std::string> known_;
  bool valid_ = true;
};

}  // namespace trainsim
