// Named presets (configs/<kind>/<name>.json), embedded in the binary at build time.
#pragma once

#include <string>
#include <vector>

#include "inputs/input_file.h"  // read_file, used by every caller of resolve_config

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

/// Resolves `arg` for `kind`: an existing path (or "-", standard input) is read with read_file; otherwise it is looked
/// up as a preset name. Throws ConfigError naming the close presets when neither exists.
[[nodiscard]] ConfigText resolve_config(const std::string& kind, const std::string& arg);

/// Names of the embedded presets of one kind, sorted.
[[nodiscard]] std::vector<std::string> preset_names(const std::string& kind);

}  // namespace trainsim
