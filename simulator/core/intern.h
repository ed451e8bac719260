// Process-wide interned text: composed leaf names (fp8 quantizers) are stored once, so leaves and
// their costs hold views that stay valid for the whole process and copy for free.
#pragma once

#include <string_view>

namespace trainsim {

/// The process-wide copy of `text`: equal text gives the same storage, which never moves or
/// dies. Thread-safe (searches build layer templates on several threads).
[[nodiscard]] std::string_view intern(std::string_view text);

}  // namespace trainsim
