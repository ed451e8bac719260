// Strict JSON object reader.
#include "inputs/json_reader.h"

#include <cmath>
#include <limits>
#include <map>

#include "inputs/input_file.h"
#include "core/text.h"

namespace trainsim {

void IssueList::add(std::string path, std::string message) {
  issues_.push_back({source_, std::move(path), std::move(message)});
}

void IssueList::throw_if_any() const {
  if (!issues_.empty()) throw ConfigError(issues_);
}

namespace {

// Appends code point `cp` to `out` as UTF-8.
void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Four hex digits at text[i..i+4), or -1.
int32_t hex4(std::string_view text, size_t i) {
  if (i + 4 > text.size()) return -1;
  int32_t v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    const char c = text[k];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// Scans the string starting at text[i] == '"'; returns the index after the closing quote (npos if
// unterminated) and its decoded value in `value` (escapes resolved, so "a" and "\u0061" compare
// equal as nlohmann sees them).
size_t scan_string(std::string_view text, size_t i, std::string& value) {
  value.clear();
  for (++i; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') return i + 1;
    if (c != '\\') {
      value += c;
      continue;
    }
    if (++i >= text.size()) break;
    switch (text[i]) {
      case 'b': value += '\b'; break;
      case 'f': value += '\f'; break;
      case 'n': value += '\n'; break;
      case 'r': value += '\r'; break;
      case 't': value += '\t'; break;
      case 'u': {
        int32_t cp = hex4(text, i + 1);
        if (cp < 0) break;  // a syntax error: nlohmann reports it
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 2 < text.size() && text[i + 1] == '\\' && text[i + 2] == 'u') {
          const int32_t lo = hex4(text, i + 3);
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
          }
        }
        append_utf8(value, static_cast<uint32_t>(cp));
        break;
      }
      default: value += text[i];  // \" \\ \/ (anything else is a syntax error nlohmann reports)
    }
  }
  return std::string_view::npos;
}

// What nlohmann::json::parse does not check: nesting depth and repeated keys. Grammar errors are
// left to the parser (the scan stops quietly when the text stops making sense).
void check_json_structure(std::string_view text, const std::string& source) {
  struct Frame {
    bool object;
    std::string path;
    std::map<std::string, size_t> keys;  // key → offset of its first occurrence
    bool expect_key = true;
    int64_t index = 0;
    std::string key;  // last key read (objects)
  };
  std::vector<Frame> stack;
  std::string str;
  auto child_path = [&]() {
    const Frame& f = stack.back();
    return f.path + "/" + (f.object ? f.key : std::to_string(f.index));
  };
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {
      const size_t end = scan_string(text, i, str);
      if (end == std::string_view::npos) return;
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        Frame& f = stack.back();
        auto [it, inserted] = f.keys.emplace(str, i);
        if (!inserted)
          throw ConfigError(source, f.path + "/" + str,
                            "duplicate key at " + text_position(text, i) + "; first at " +
                                text_position(text, it->second));
        f.key = str;
        f.expect_key = false;
      }
      i = end;
      continue;
    }
    if (c == '{' || c == '[') {
      if (stack.size() >= static_cast<size_t>(kMaxJsonDepth))
        throw ConfigError(source, "", strprintf("nesting deeper than %d levels at %s", kMaxJsonDepth,
                                                text_position(text, i).c_str()));
      std::string path = stack.empty() ? "" : child_path();
      stack.push_back({c == '{', std::move(path), {}, true, 0, {}});
    } else if (c == '}' || c == ']') {
      if (stack.empty()) return;
      stack.pop_back();
    } else if (c == ',' && !stack.empty()) {
      stack.back().expect_key = true;
      ++stack.back().index;
    }
    ++i;
  }
}

}  // namespace

nlohmann::json parse_json(const std::string& text, const std::string& source) {
  check_utf8(text, source);
  check_json_structure(text, source);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(source, "", strprintf("invalid JSON at byte %zu: %s", e.byte, e.what()));
  } catch (const nlohmann::json::exception& e) {
    // e.g. a number literal out of double range (1e400)
    throw ConfigError(source, "", std::string("invalid JSON: ") + e.what());
  }
}

namespace {
const char* type_name(const nlohmann::json& j) {
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  return "null";
}
}  // namespace

ObjectReader::ObjectReader(const nlohmann::json& obj, std::string path, IssueList& issues)
    : obj_(obj), path_(std::move(path)), issues_(issues) {
  if (!obj_.is_object()) {
    issues_.add(path_.empty() ? "/" : path_, std::string("expected an object, got ") + type_name(obj_));
    valid_ = false;
  }
}

std::string ObjectReader::child_path(const std::string& key) const { return path_ + "/" + key; }

bool ObjectReader::has(const char* key) const {
  return valid_ && obj_.contains(key) && !obj_.at(key).is_null();
}

const nlohmann::json* ObjectReader::find(const char* key) {
  known_.emplace_back(key);
  if (!valid_) return nullptr;
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

void ObjectReader::type_issue(const char* key, const char* expected, const nlohmann::json& got) {
  std::string shown = got.dump();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  issues_.add(child_path(key), std::string("expected ") + expected + ", got " + type_name(got) +
                                   " (" + shown + ")");
}

void ObjectReader::ignore(const char* key) { known_.emplace_back(key); }

void ObjectReader::opt(const char* key, double& out) {
  const auto* j = find(key);
  if (!j) return;
  if (!j->is_number()) return type_issue(key, "a number", *j);
  out = j->get<double>();
}

void ObjectReader::opt(const char* key, int64_t& out) {
  const auto* j = find(key);
  if (!j) return;
  // An unsigned literal above INT64_MAX would wrap to a negative number in get<int64_t>().
  if (j->is_number_unsigned() && j->get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()})
    return type_issue(key, "an integer below 2^63", *j);
  if (j->is_number_integer()) {
    out = j->get<int64_t>();
    return;
  }
  if (j->is_number_float()) {
    double v = j->get<double>();
    if (std::floor(v) == v && std::fabs(v) < 9e15) {
      out = static_cast<int64_t>(v);
      return;
    }
  }
  type_issue(key, "an integer", *j);
}

void ObjectReader::opt(const char* key, bool& out) {
  const auto* j = find(key);
  if (!j) return;
  if (!j->is_boolean()) return type_issue(key, "true or false", *j);
  out = j->get<bool>();
}

void ObjectReader::opt(const char* key, std::string& out) {
  const auto* j = find(key);
  if (!j) return;
  if (!j->is_string()) return type_issue(key, "a string", *j);
  out = j->get<std::string>();
}

void ObjectReader::opt(const char* key, std::optional<double>& out) {
  double v = 0;
  if (!has(key)) {
    known_.emplace_back(key);
    return;
  }
  opt(key, v);
  if (obj_.at(key).is_number()) out = v;
}

void ObjectReader::opt(const char* key, std::optional<int64_t>& out) {
  if (!has(key)) {
    known_.emplace_back(key);
    return;
  }
  int64_t v = 0;
  opt(key, v);
  const auto& j = obj_.at(key);
  if (j.is_number_integer() || (j.is_number_float() && std::floor(j.get<double>()) == j.get<double>()))
    out = v;
}

void ObjectReader::opt(const char* key, std::optional<std::string>& out) {
  if (!has(key)) {
    known_.emplace_back(key);
    return;
  }
  std::string v;
  opt(key, v);
  if (obj_.at(key).is_string()) out = v;
}

void ObjectReader::opt(const char* key, std::vector<std::string>& out) {
  const auto* j = find(key);
  if (!j) return;
  if (!j->is_array()) return type_issue(key, "an array of strings", *j);
  out.clear();
  for (size_t i = 0; i < j->size(); ++i) {
    const auto& e = (*j)[i];
    if (!e.is_string()) {
      issues_.add(child_path(key) + "/" + std::to_string(i),
                  std::string("expected a string, got ") + type_name(e));
      continue;
    }
    out.push_back(e.get<std::string>());
  }
}

void ObjectReader::opt(const char* key, std::vector<int64_t>& out) {
  const auto* j = find(key);
  if (!j) return;
  if (!j->is_array()) return type_issue(key, "an array of integers", *j);
  out.clear();
  for (size_t i = 0; i < j->size(); ++i) {
    const auto& e = (*j)[i];
    if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<uint64_t>() > uint64_t{1} << 62)) {
      issues_.add(child_path(key) + "/" + std::to_string(i),
                  std::string("expected an integer, got ") + type_name(e));
      continue;
    }
    out.push_back(e.get<int64_t>());
  }
}

void ObjectReader::opt(const char* key, std::map<std::string, double>& out) {
  const auto* j = find(key);
  if (!j) return;
  if (!j->is_object()) return type_issue(key, "an object of numbers", *j);
  for (auto it = j->begin(); it != j->end(); ++it) {
    if (!it.value().is_number()) {
      issues_.add(child_path(key) + "/" + it.key(),
                  std::string("expected a number, got ") + type_name(it.value()));
      continue;
    }
    out[it.key()] = it.value().get<double>();
  }
}

void ObjectReader::req(const char* key, double& out) {
  if (valid_ && !has(key)) issues_.add(child_path(key), "required number is missing");
  opt(key, out);
}

void ObjectReader::req(const char* key, int64_t& out) {
  if (valid_ && !has(key)) issues_.add(child_path(key), "required integer is missing");
  opt(key, out);
}

void ObjectReader::req(const char* key, std::string& out) {
  if (valid_ && !has(key)) issues_.add(child_path(key), "required string is missing");
  opt(key, out);
}

const nlohmann::json* ObjectReader::object(const char* key, bool required) {
  const auto* j = find(key);
  if (!j) {
    if (required && valid_) issues_.add(child_path(key), "required object is missing");
    return nullptr;
  }
  if (!j->is_object()) {
    type_issue(key, "an object", *j);
    return nullptr;
  }
  return j;
}

void ObjectReader::finish() {
  if (!valid_) return;
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    const std::string& k = it.key();
    bool known = false;
    for (const auto& kk : known_) known = known || kk == k;
    if (known) continue;
    std::string msg = "unknown key";
    std::string s = suggest(k, known_);
    if (!s.empty()) msg += "; did you mean '" + s + "'?";
    issues_.add(child_path(k), msg);
  }
}

}  // namespace trainsim
