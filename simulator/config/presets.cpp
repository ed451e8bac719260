// Preset resolution: file path first, then embedded preset by name.
#include "config/presets.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/text.h"

namespace trainsim {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> preset_names(const std::string& kind) {
  std::vector<std::string> out;
  for (const auto* p = detail::kEmbeddedPresets; p->kind; ++p)
    if (kind == p->kind) out.emplace_back(p->name);
  std::sort(out.begin(), out.end());
  return out;
}

ConfigText resolve_config(const std::string& kind, const std::string& arg) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(arg, ec)) return {read_file(arg), arg};
  std::string name = arg;
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") name.resize(name.size() - 5);
  for (const auto* p = detail::kEmbeddedPresets; p->kind; ++p)
    if (kind == p->kind && name == p->name) return {p->text, "preset:" + kind + "/" + name};
  auto names = preset_names(kind);
  std::string msg = "no such file, and no " + kind + " preset of that name";
  std::string s = suggest(name, names);
  if (!s.empty()) msg += "; did you mean '" + s + "'?";
  msg += "; presets: " + join(names);
  throw ConfigError(arg, "", msg);
}

}  // namespace trainsim
