// A rank's program over many micro-batches read from a shorter program of the same schedule: the
// steady state is one block of steps repeated, so the walks over a rank's steps (activation
// memory) and sums over them (EP time hidden by merged steps) cost O(pp·v) whatever the
// micro-batch count.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "schedule/program.h"

namespace trainsim {

/// One rank's steps: `steps` with its block [at − period, at) run `repeats` more times at `at`, or
/// the whole program (period 0, at = steps.size()).
struct RankSteps {
  const std::vector<Step>* steps = nullptr;
  size_t at = 0, period = 0;
  int64_t repeats = 0;
};

[[nodiscard]] inline RankSteps whole_steps(const std::vector<Step>& steps) { return {&steps, steps.size(), 0, 0}; }

/// The rank's steps over a + k·g micro-batches from its programs of a and a + g micro-batches
/// (the same schedule, past the warm-up): `b` must be `a` with one of its blocks repeated
/// (compared by chunk, pass and merging; the walks do not read micro-batch numbers), which the
/// program of a + k·g then repeats k times. nullopt when it is not.
[[nodiscard]] std::optional<RankSteps> periodic_steps(const std::vector<Step>& a, const std::vector<Step>& b,
                                                      int64_t k);

/// Runs `visit(state, step)` over the rank's steps in order. A repeated block that leaves the whole
/// state bit for bit as it found it does so every time (the same steps from the same state), so
/// the remaining repeats are skipped: the result is that of visiting every step. `State` holds
/// 8-byte fields only (no padding in the comparison).
template <class State, class Visit>
[[nodiscard]] State walk(const RankSteps& rs, State st, Visit visit) {
  const std::vector<Step>& s = *rs.steps;
  for (size_t i = 0; i < rs.at; ++i) visit(st, s[i]);
  for (int64_t k = 0; k < rs.repeats; ++k) {
    const State before = st;
    for (size_t i = rs.at - rs.period; i < rs.at; ++i) visit(st, s[i]);
    if (std::memcmp(&before, &st, sizeof st) == 0) break;
  }
  for (size_t i = rs.at; i < s.size(); ++i) visit(st, s[i]);
  return st;
}

/// The sum of `term(key, step)` over the rank's steps in order; `term` may update `key` (8-byte
/// fields only), the state carried from step to step. A repeated block that leaves the key as it
/// found it adds the same amount every time, so the remaining repeats are multiplied out: equal to
/// the sum over every step up to rounding, at the cost of the short program.
template <class Key, class Term>
[[nodiscard]] double sum_steps(const RankSteps& rs, Key key, Term term) {
  const std::vector<Step>& s = *rs.steps;
  double total = 0;
  for (size_t i = 0; i < rs.at; ++i) total += term(key, s[i]);
  for (int64_t k = 0; k < rs.repeats; ++k) {
    const Key before = key;
    double block = 0;
    for (size_t i = rs.at - rs.period; i < rs.at; ++i) block += term(key, s[i]);
    total += block;
    if (std::memcmp(&before, &key, sizeof key) == 0) {
      total += block * static_cast<double>(rs.repeats - k - 1);
      break;
    }
  }
  for (size_t i = rs.at; i < s.size(); ++i) total += term(key, s[i]);
  return total;
}

}  // namespace trainsim
