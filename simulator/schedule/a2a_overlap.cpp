#include "schedule/a2a_overlap.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <numeric>

namespace trainsim {

void A2aPass::add_compute(double seconds) {
  if (compute.size() == a2a.size()) compute.push_back(0);
  compute.back() += seconds;
}

void A2aPass::add_a2a(double seconds) {
  if (compute.size() == a2a.size()) compute.push_back(0);
  a2a.push_back(seconds);
}

double A2aPass::total() const {
  return std::accumulate(compute.begin(), compute.end(), 0.0) + std::accumulate(a2a.begin(), a2a.end(), 0.0);
}

double deepep_slowdown(int64_t num_sms, int64_t sm_count) {
  const double u = static_cast<double>(num_sms) / static_cast<double>(sm_count);
  return u / (1 - u);
}

namespace {

double a2a_at(const A2aPass& p, size_t i) { return i < p.a2a.size() ? p.a2a[i] : 0; }

}  // namespace

MergedOps add_merged_step(Engine& e, int32_t rank, const A2aPass& f, Engine::Label f_label, const A2aPass& b,
                          Engine::Label b_label, double slowdown) {
  const Engine::Label f_comm{StepKind::EpComm, f_label.chunk, f_label.mb};
  const Engine::Label b_comm{StepKind::EpComm, b_label.chunk, b_label.mb};
  MergedOps m{-1, -1, -1, -1};
  Engine::OpId f_wait = -1, b_wait = -1;  // the all-to-all the pass's next piece needs
  // Piece i of one pass (compute, then its all-to-all); `beside` is the other pass's all-to-all.
  // A pass of no pieces (a chunk without layers) is one empty piece: the step's first and last
  // ops exist for the links of the schedule around it.
  auto piece = [&](const A2aPass& p, size_t i, Engine::Label label, Engine::Label comm, double beside,
                   Engine::OpId& wait, Engine::OpId& first, Engine::OpId& last) {
    if (i >= std::max<size_t>(p.compute.size(), 1)) return;
    const double compute = i < p.compute.size() ? p.compute[i] : 0;
    const Engine::OpId c = e.add(rank, Stream::Compute, compute + slowdown * std::min(compute, beside), label);
    if (wait >= 0) e.depends(c, wait);
    if (first < 0) first = c;
    last = c;
    wait = -1;
    if (a2a_at(p, i) > 0) {
      wait = e.add(rank, Stream::Ep, p.a2a[i], comm);
      e.depends(wait, c);
      last = wait;
    }
  };
  const size_t n = std::max({f.compute.size(), b.compute.size(), size_t{1}});
  for (size_t i = 0; i < n; ++i) {
    // b's piece i runs beside f's all-to-all i−1, f's piece i beside b's all-to-all i.
    piece(b, i, b_label, b_comm, i > 0 ? a2a_at(f, i - 1) : 0, b_wait, m.b_first, m.b_last);
    piece(f, i, f_label, f_comm, a2a_at(b, i), f_wait, m.f_first, m.f_last);
  }
  return m;
}

double merged_step_time(const A2aPass& f, const A2aPass& b, double slowdown) {
  // The steps timed on this thread, by content: the stage times and the search's bounds time the
  // same (forward, backward) chunk pairs for every plan that holds them. Keyed by a hash of the
  // values' bits and checked bit for bit (the replay is a function of those bits).
  struct Timed {
    A2aPass f, b;
    double slowdown = 0, seconds = 0;
  };
  thread_local std::unordered_map<uint64_t, Timed> timed;
  uint64_t h = 0x9e3779b97f4a7c15ull;
  const auto mix_one = [&h](double x) {
    uint64_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    h = (h ^ bits ^ (h >> 29)) * 0xc4ceb9fe1a85ec53ull;
  };
  const auto mix = [&](const std::vector<double>& v) {
    h = (h ^ v.size()) * 0xff51afd7ed558ccdull;
    for (double x : v) mix_one(x);
  };
  const auto same = [](const std::vector<double>& x, const std::vector<double>& y) {
    return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0);
  };
  mix(f.compute);
  mix(f.a2a);
  mix(b.compute);
  mix(b.a2a);
  mix_one(slowdown);
  const auto it = timed.find(h);
  if (it != timed.end() && same(it->second.f.compute, f.compute) && same(it->second.f.a2a, f.a2a) &&
      same(it->second.b.compute, b.compute) && same(it->second.b.a2a, b.a2a) &&
      std::memcmp(&it->second.slowdown, &slowdown, sizeof slowdown) == 0)
    return it->second.seconds;
  Engine e(1);
  add_merged_step(e, 0, f, {StepKind::Forward, 0, 1}, b, {StepKind::Backward, 0, 0}, slowdown);
  const double seconds = e.run(false).totals[0].end;
  if (timed.size() >= 4096) timed.clear();  // bounded whatever the plans
  timed[h] = Timed{f, b, slowdown, seconds};
  return seconds;
}

}  // namespace trainsim
