// Self-check verdicts.
#include "self_check.h"

#include <algorithm>
#include <map>

#include "core/text.h"

namespace trainsim::kb {

std::vector<CheckLine> timing_checks(const std::vector<TimedPoint>& points, double tolerance) {
  std::vector<CheckLine> out;
  std::map<std::string, std::vector<const TimedPoint*>> series;
  for (const auto& p : points) {
    CheckLine l{"timing " + p.name, true, ""};
    const double eff = p.time_s > 0 && p.peak > 0 ? p.work / (p.time_s * p.peak) : 0;
    l.detail = strprintf("%.4g s, efficiency %.3f of the device peak", p.time_s, eff);
    if (!(eff > 0 && eff <= 1)) {
      l.ok = false;
      l.detail += eff > 1 ? " (above 1: the timer or the peak is wrong)" : " (no positive time)";
    }
    out.push_back(l);
    series[p.series].push_back(&p);
  }
  for (auto& [name, pts] : series) {
    std::stable_sort(pts.begin(), pts.end(), [](const TimedPoint* a, const TimedPoint* b) { return a->work < b->work; });
    CheckLine l{"monotone " + name, true, strprintf("%zu sizes, time grows with work", pts.size())};
    for (size_t i = 1; i < pts.size(); ++i) {
      if (pts[i]->work > pts[i - 1]->work && pts[i]->time_s < pts[i - 1]->time_s * (1 - tolerance)) {
        l.ok = false;
        l.detail = strprintf("%s (%.4g s) is faster than the smaller %s (%.4g s) beyond %.0f %%", pts[i]->name.c_str(),
                             pts[i]->time_s, pts[i - 1]->name.c_str(), pts[i - 1]->time_s, tolerance * 100);
        break;
      }
    }
    out.push_back(l);
  }
  return out;
}

std::string format_checks(const std::vector<CheckLine>& lines) {
  std::string out;
  size_t failed = 0;
  for (const auto& l : lines) {
    out += (l.ok ? "PASS " : "FAIL ") + l.name + ": " + l.detail + "\n";
    failed += l.ok ? 0 : 1;
  }
  out += strprintf("self-check: %zu passed, %zu failed\n", lines.size() - failed, failed);
  return out;
}

bool all_passed(const std::vector<CheckLine>& lines) {
  return std::all_of(lines.begin(), lines.end(), [](const CheckLine& l) { return l.ok; });
}

}  // namespace trainsim::kb
