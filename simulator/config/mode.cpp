#include "config/mode.h"

namespace trainsim {

const char* mode_name(Mode m) { return m == Mode::SimuMax12 ? "simumax-1.2" : "default"; }

std::optional<Mode> parse_mode(std::string_view text) {
  if (text == "default") return Mode::Default;
  if (text == "simumax-1.2") return Mode::SimuMax12;
  return std::nullopt;
}

}  // namespace trainsim
