#include "schedule/steady_steps.h"

namespace trainsim {

std::optional<RankSteps> periodic_steps(const std::vector<Step>& a, const std::vector<Step>& b, int64_t k) {
  auto same = [](const Step& x, const Step& y) { return x.chunk == y.chunk && x.pass == y.pass && x.merged == y.merged; };
  if (b.size() <= a.size()) return std::nullopt;
  const size_t period = b.size() - a.size();
  // Where they part: the block inserted there must be the one before it, and the rest must follow.
  size_t at = 0;
  while (at < a.size() && same(a[at], b[at])) ++at;
  if (at < period) return std::nullopt;
  for (size_t i = 0; i < period; ++i)
    if (!same(b[at + i], a[at - period + i])) return std::nullopt;
  for (size_t i = at; i < a.size(); ++i)
    if (!same(b[i + period], a[i])) return std::nullopt;
  return RankSteps{&a, at, period, k};
}

}  // namespace trainsim
