#include "schedule/program.h"

#include <algorithm>
#include <deque>

#include "plan/plan.h"

namespace trainsim {
namespace {

// Empties `p` for a program of pp ranks, keeping the memory of its step lists.
void reset_program(Program& p, int64_t pp, int64_t v, int64_t mbc) {
  p.pp = pp;
  p.v = v;
  p.mbc = mbc;
  p.group = 1;
  p.split_backward = false;
  p.ranks.resize(static_cast<size_t>(pp));
  for (auto& steps : p.ranks) steps.clear();
}

Step step(int64_t chunk, int64_t mb, Pass pass) {
  return {static_cast<int32_t>(chunk), static_cast<int32_t>(mb), pass};
}

}  // namespace

Program one_f_one_b(int64_t pp, int64_t mbc) {
  Program p;
  one_f_one_b(pp, mbc, p);
  return p;
}

void one_f_one_b(int64_t pp, int64_t mbc, Program& p) {
  reset_program(p, pp, 1, mbc);
  for (int64_t r = 0; r < pp; ++r) {
    auto& s = p.ranks[static_cast<size_t>(r)];
    s.reserve(static_cast<size_t>(2 * mbc));
    const int64_t warmup = std::min(pp - r - 1, mbc);
    for (int64_t i = 0; i < warmup; ++i) s.push_back(step(0, i, Pass::Forward));
    for (int64_t i = 0; i < mbc - warmup; ++i) {
      s.push_back(step(0, warmup + i, Pass::Forward));
      s.push_back(step(0, i, Pass::Backward));
    }
    for (int64_t i = mbc - warmup; i < mbc; ++i) s.push_back(step(0, i, Pass::Backward));
  }
}

std::vector<TableEntry> interleaved_table(int64_t v, int64_t mbc, int64_t group) {
  std::vector<TableEntry> table;
  table.reserve(static_cast<size_t>(mbc * v));
  for (int64_t min_mb = 0; min_mb < mbc; min_mb += group)
    for (int64_t c = 0; c < v; ++c)
      for (int64_t mb = min_mb; mb < std::min(mbc, min_mb + group); ++mb) table.push_back({mb, c});
  return table;
}

Program interleaved(int64_t pp, int64_t v, int64_t mbc, int64_t group, bool combined) {
  Program p;
  interleaved(pp, v, mbc, group, combined, p);
  return p;
}

void interleaved(int64_t pp, int64_t v, int64_t mbc, int64_t group, bool combined, Program& p) {
  reset_program(p, pp, v, mbc);
  p.group = group;
  const auto table = interleaved_table(v, mbc, group);
  const int64_t total = mbc * v;
  auto fwd = [&](int64_t k) {
    const TableEntry& t = table[static_cast<size_t>(k)];
    return step(t.chunk, t.mb, Pass::Forward);
  };
  auto bwd = [&](int64_t k) {
    const TableEntry& t = table[static_cast<size_t>(k)];
    return step(v - 1 - t.chunk, t.mb, Pass::Backward);
  };
  for (int64_t r = 0; r < pp; ++r) {
    auto& s = p.ranks[static_cast<size_t>(r)];
    s.reserve(static_cast<size_t>(2 * total));
    const int64_t warmup = std::min((pp - r - 1) * 2 + (v - 1) * group + (combined ? 1 : 0), total);
    for (int64_t k = 0; k < warmup; ++k) s.push_back(fwd(k));
    for (int64_t k = 0; k < total - warmup; ++k) {
      s.push_back(fwd(warmup + k));
      s.back().merged = combined;
      s.push_back(bwd(k));
    }
    for (int64_t k = total - warmup; k < total; ++k) s.push_back(bwd(k));
  }
}

Program zero_bubble_h1(int64_t pp, int64_t mbc) {
  Program p;
  zero_bubble_h1(pp, mbc, p);
  return p;
}

void zero_bubble_h1(int64_t pp, int64_t mbc, Program& p) {
  reset_program(p, pp, 1, mbc);
  p.split_backward = true;
  const Program base = one_f_one_b(pp, mbc);
  for (int64_t r = 0; r < pp; ++r) {
    auto& s = p.ranks[static_cast<size_t>(r)];
    s.reserve(static_cast<size_t>(3 * mbc));
    std::deque<int32_t> pending;
    for (const Step& st : base.ranks[static_cast<size_t>(r)]) {
      s.push_back(st);
      if (st.pass != Pass::Backward) continue;
      pending.push_back(st.mb);
      if (static_cast<int64_t>(pending.size()) > r) {
        s.push_back({0, pending.front(), Pass::BackwardWeight});
        pending.pop_front();
      }
    }
    for (int32_t mb : pending) s.push_back({0, mb, Pass::BackwardWeight});
  }
}

// The plan's schedule (plan/plan.h): its kind's program over the plan's micro-batches.
Program Plan::program() const { return program(batch.micro_batch_num); }

Program Plan::program(int64_t mbc) const {
  Program p;
  program(mbc, p);
  return p;
}

void Plan::program(int64_t mbc, Program& into) const {
  switch (schedule) {
    case ScheduleKind::Interleaved: return interleaved(par.pp, par.vpp, mbc, vp_group, ovl.a2a_overlap, into);
    case ScheduleKind::ZeroBubbleH1: return zero_bubble_h1(par.pp, mbc, into);
    case ScheduleKind::OneFOneB: break;
  }
  if (ovl.a2a_overlap) return interleaved(par.pp, 1, mbc, 1, true, into);  // pp 1 (validated)
  one_f_one_b(par.pp, mbc, into);
}

}  // namespace trainsim
