// Small text helpers: spelling suggestions, number parsing and formatting.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainsim {

/// Closest candidate by edit distance, or "" when none is close (distance > max(2, len/3)).
[[nodiscard]] std::string suggest(std::string_view word, const std::vector<std::string>& candidates);

/// Joins values with ", ".
[[nodiscard]] std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

/// Formats a double like Python's repr for the values we print in keys and messages:
/// shortest round-trip representation ("0.5", "3", "1e-05").
[[nodiscard]] std::string format_number(double v);

/// Parses the whole of `s` as a finite decimal number ("12", "-0.5", "1e-3"; no spaces, no
/// leading '+', no hex). Returns false, leaving `out` alone, on anything else or on overflow.
[[nodiscard]] bool parse_double(std::string_view s, double& out);

/// The parts of `text` between `sep`s, empty parts kept ("a,,b" → a, "", b; "" → one empty part).
[[nodiscard]] std::vector<std::string> split(const std::string& text, char sep);

/// One CSV field (RFC 4180): quoted when it holds a comma or a quote (quotes doubled); newlines
/// become spaces so that a row stays one line.
[[nodiscard]] std::string csv_escape(std::string v);

/// printf-style formatting into a std::string.
[[nodiscard]] std::string strprintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace trainsim
