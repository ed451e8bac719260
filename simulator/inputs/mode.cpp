#include "inputs/mode.h"

#include "core/enum_table.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim {

namespace {
constexpr EnumTable<Mode, 2> kModes("mode", {{{Mode::Default, "default"}, {Mode::SimuMax12, "simumax-1.2"}}});
}  // namespace

const char* mode_name(Mode m) { return kModes.c_str(m); }

std::optional<Mode> parse_mode(std::string_view text) { return kModes.find(text); }

Mode compat_mode(const std::string& value, const std::string& command) {
  if (value.empty()) return Mode::Default;
  if (auto m = parse_mode(value); m && *m == Mode::SimuMax12) return *m;
  // --compat names the peer's mode only: the default mode is the absence of the option.
  throw UsageError(command + ": --compat: " + unknown_name_message("mode", value, {mode_name(Mode::SimuMax12)}));
}

}  // namespace trainsim
