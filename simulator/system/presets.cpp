// Preset resolution: file path first, then embedded preset by name.
#include "system/presets.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/text.h"

namespace trainsim {

std::vector<std::string> preset_names(const std::string& kind) {
  std::vector<std::string> out;
  for (const auto* p = detail::kEmbeddedPresets; p->kind; ++p)
    if (kind == p->kind) out.emplace_back(p->name);
  std::sort(out.begin(), out.end());
  return out;
}

ConfigText resolve_config(const std::string& kind, const std::string& arg) {
  // Anything that exists (or '-') is read as a file, so a FIFO or directory gets read_file's
  // message instead of "no such preset".
  std::error_code ec;
  if (arg == "-" || std::filesystem::exists(std::filesystem::symlink_status(arg, ec)))
    return {read_file(arg), arg == "-" ? "<stdin>" : arg};
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
