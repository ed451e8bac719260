// The two modelling modes: Megatron-LM as it runs today (default), and bit-for-bit compatibility
// with the peer SimuMax v1.2 (`--compat simumax-1.2`), quirks included (docs/compat.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainsim {

enum class Mode : uint8_t { Default, SimuMax12 };

[[nodiscard]] const char* mode_name(Mode m);
/// "default" or "simumax-1.2"; nullopt for anything else.
[[nodiscard]] std::optional<Mode> parse_mode(std::string_view text);
/// The value of a `--compat` option: "" → default, "simumax-1.2"; anything else is a UsageError
/// naming `command` (perf, search, ...) with a suggestion.
[[nodiscard]] Mode compat_mode(const std::string& value, const std::string& command);

}  // namespace trainsim
