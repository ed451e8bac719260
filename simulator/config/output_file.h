// Writing result files: atomic replacement and provenance fields.
#pragma once

#include <string>
#include <vector>

namespace trainsim {

/// Writes `text` to `path` through a temporary file in the same directory and rename(2), so a
/// reader (or an interrupted run) sees either the old or the new content. Throws Error naming
/// the path and the system error.
void write_file_atomic(const std::string& path, const std::string& text);

/// Current UTC time as ISO 8601, e.g. "2026-01-31T12:00:00Z".
[[nodiscard]] std::string utc_timestamp();

/// The command line as one shell-readable string (arguments with spaces are single-quoted).
[[nodiscard]] std::string command_line(const std::string& program, const std::vector<std::string>& args);

}  // namespace trainsim
