// The one way every tool reads an input file: bounded, never blocking, UTF-8 checked.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trainsim {

/// Default cap on an input file (64 MiB), far above any config, log or result file.
inline constexpr size_t kDefaultMaxInputBytes = size_t{64} << 20;

/// The input size cap: TRAINSIM_MAX_INPUT_MIB (a whole number of MiB ≥ 1) when set, else
/// kDefaultMaxInputBytes. Throws Error naming the variable when it is not a valid number.
[[nodiscard]] size_t max_input_bytes();

/// Reads a whole input: `path` must be a regular file (symbolic links to one are fine), or "-" for
/// standard input. A FIFO, device or directory is rejected before anything is read (no hang), and
/// so is a file longer than max_input_bytes() or one that is not valid UTF-8. Throws ConfigError
/// naming the path.
[[nodiscard]] std::string read_file(const std::string& path);

/// The whole of a file (read_file), or of stdin when `path` is "-". Throws ConfigError naming the path.
[[nodiscard]] std::string read_input(const std::string& path);

/// Byte offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF), or std::string_view::npos when all of it is.
[[nodiscard]] size_t find_invalid_utf8(std::string_view text);

/// "line L, column C" (1-based; columns count bytes) of a byte offset, for messages.
[[nodiscard]] std::string text_position(std::string_view text, size_t offset);

/// Throws ConfigError(source) at the first invalid UTF-8 byte, naming its position.
void check_utf8(std::string_view text, const std::string& source);

}  // namespace trainsim
