// Unit constants. Inside trainsim: seconds, bytes, FLOP; conversions only at the JSON boundary.
#pragma once

namespace trainsim {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;  // the peer's "GB"/"gbps" base
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kTera = 1e12;
inline constexpr double kMicro = 1e-6;
inline constexpr double kMilli = 1e-3;

}  // namespace trainsim
