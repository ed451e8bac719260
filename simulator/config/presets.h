// Named presets (configs/<kind>/<name>.json), embedded in the binary at build time.
#pragma once

#include <string>
#include <vector>

namespace trainsim {

namespace detail {
struct EmbeddedPreset {
  const char* kind;  // "model", "strategy" or "system"
  const char* name;  // file stem
  const char* text;
};
extern const EmbeddedPreset kEmbeddedPresets[];
}  // namespace detail

/// A config document and the name to use for it in messages.
struct ConfigText {
  std::string text;
  std::string source;
};

/// Resolves `arg` for `kind`: an existing file path is read from disk; otherwise it is looked
/// up as a preset name. Throws ConfigError naming the close presets when neither exists.
[[nodiscard]] ConfigText resolve_config(const std::string& kind, const std::string& arg);

/// Names of the embedded presets of one kind, sorted.
[[nodiscard]] std::vector<std::string> preset_names(const std::string& kind);

/// Reads a whole file; throws ConfigError when it cannot be read.
[[nodiscard]] std::string read_file(const std::string& path);

}  // namespace trainsim
