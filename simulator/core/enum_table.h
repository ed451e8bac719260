// One table per enum: its values and their names, for printing and for parsing user text.
//
// Every enum that is read from or written to text (JSON values, command-line options, report
// columns) has one `EnumTable`, so the names live in one place and an unknown string is
// rejected in one way: "unknown <what> 'x'; valid values: a, b; did you mean 'a'?".
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainsim {

/// The message for a text that names no value: "unknown <what> '<text>'; valid values: <names>"
/// and, when one name is close, "; did you mean '<name>'?".
[[nodiscard]] std::string unknown_name_message(std::string_view what, std::string_view text,
                                               const std::vector<std::string>& names);

template <class E, std::size_t N>
class EnumTable {
 public:
  /// `what` names the kind of value in messages ("mode", "convention", "level").
  constexpr EnumTable(std::string_view what, std::array<std::pair<E, std::string_view>, N> rows)
      : what_(what), rows_(rows) {}

  /// The name of `e`; "?" for a value the table does not list (a defect, never user input).
  [[nodiscard]] constexpr std::string_view name(E e) const {
    for (const auto& [v, n] : rows_)
      if (v == e) return n;
    return "?";
  }
  /// `name(e)` as a NUL-terminated string (the table holds literals).
  [[nodiscard]] constexpr const char* c_str(E e) const { return name(e).data(); }

  /// The value named `text` (exact match), if any.
  [[nodiscard]] constexpr std::optional<E> find(std::string_view text) const {
    for (const auto& [v, n] : rows_)
      if (n == text) return v;
    return std::nullopt;
  }

  /// Every name, in table order.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(N);
    for (const auto& row : rows_) out.emplace_back(row.second);
    return out;
  }

  /// The message for `text` naming no value (see unknown_name_message).
  [[nodiscard]] std::string unknown(std::string_view text) const {
    return unknown_name_message(what_, text, names());
  }

  /// The value named `text`; otherwise throws `Err(prefix + unknown(text))`.
  template <class Err>
  [[nodiscard]] E parse(std::string_view text, const std::string& prefix = "") const {
    if (auto v = find(text)) return *v;
    throw Err(prefix + unknown(text));
  }

  [[nodiscard]] constexpr std::string_view what() const { return what_; }
  [[nodiscard]] constexpr const std::array<std::pair<E, std::string_view>, N>& rows() const { return rows_; }

 private:
  std::string_view what_;
  std::array<std::pair<E, std::string_view>, N> rows_;
};

}  // namespace trainsim
