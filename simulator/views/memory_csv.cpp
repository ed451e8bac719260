// Memory timeline CSV (a view of memory_track).
#include "views/memory_csv.h"

#include "core/text.h"
#include "core/units.h"
#include "views/step_ops.h"

namespace trainsim {

namespace {
// A CSV field: quoted when it holds a separator, quote or line break.
std::string field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
}  // namespace

std::string memory_timeline_csv(const Estimate& e, int64_t detail) {
  std::string out = "pp_rank,time_ms,allocated_gib,after,chunk,micro_batch,peak,live_at_peak\n";
  for (int32_t r = 0; r < static_cast<int32_t>(e.ranks.size()); ++r) {
    const MemoryTrack t = memory_track(e, r, detail);
    bool peak_written = false;
    for (const MemoryPoint& p : t.points) {
      const bool peak = !peak_written && p.bytes == t.peak_bytes && p.time == t.peak_time;
      std::string live;
      if (peak) {
        peak_written = true;
        for (const auto& [c, mb] : t.live_at_peak)
          live += strprintf("%sc%d/mb%d", live.empty() ? "" : " ", static_cast<int>(c), static_cast<int>(mb));
      }
      out += strprintf("%d,%.6f,%.6f,%s,%d,%d,%s,%s\n", static_cast<int>(r), p.time * 1e3, p.bytes / kGiB,
                       field(p.what).c_str(), static_cast<int>(p.chunk), static_cast<int>(p.mb), peak ? "peak" : "",
                       live.c_str());
    }
  }
  return out;
}

}  // namespace trainsim
