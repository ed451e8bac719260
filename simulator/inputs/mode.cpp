#include "inputs/mode.h"

#include "core/error.h"
#include "core/text.h"

namespace trainsim {

const char* mode_name(Mode m) { return m == Mode::SimuMax12 ? "simumax-1.2" : "default"; }

std::optional<Mode> parse_mode(std::string_view text) {
  if (text == "default") return Mode::Default;
  if (text == "simumax-1.2") return Mode::SimuMax12;
  return std::nullopt;
}

Mode compat_mode(const std::string& value, const std::string& command) {
  if (value.empty()) return Mode::Default;
  if (auto m = parse_mode(value); m && *m == Mode::SimuMax12) return *m;
  std::string msg = command + ": --compat: unknown mode '" + value + "'; valid values: simumax-1.2";
  if (!suggest(value, {"simumax-1.2"}).empty()) msg += "; did you mean 'simumax-1.2'?";
  throw UsageError(msg);
}

}  // namespace trainsim
