#include "engine/engine.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace trainsim {

Engine::Engine(int32_t ranks) : ranks_(ranks) { TRAINSIM_ASSERT(ranks > 0, "engine needs a rank"); }

void Engine::reset(int32_t ranks) {
  TRAINSIM_ASSERT(ranks > 0, "engine needs a rank");
  ranks_ = ranks;
  ops_.clear();
  deps_.clear();
  syncs_.clear();
}

void Engine::depends_at(OpId op, OpId on, double fraction) {
  TRAINSIM_ASSERT(fraction >= 0 && fraction <= 1, "dependency fraction outside [0, 1]");
  deps_.push_back({op, on, fraction});
}

namespace {

// Compressed adjacency: the links of op i are [first[i], first[i+1]).
struct Csr {
  std::vector<int32_t> first, fill, other;
  std::vector<double> duration;
};

template <class LinkVec>
void compress(size_t n, const LinkVec& links, Csr& c) {
  c.first.assign(n + 1, 0);
  for (const auto& l : links) ++c.first[static_cast<size_t>(l.from) + 1];
  for (size_t i = 0; i < n; ++i) c.first[i + 1] += c.first[i];
  c.other.resize(links.size());
  c.duration.resize(links.size());
  c.fill.assign(c.first.begin(), c.first.end() - 1);
  for (const auto& l : links) {
    const auto at = static_cast<size_t>(c.fill[static_cast<size_t>(l.from)]++);
    c.other[at] = l.to;
    c.duration[at] = l.duration;
  }
}

// Working arrays of one replay, kept per thread so that repeated estimates (search) reuse
// their memory instead of faulting in fresh pages.
struct Scratch {
  Csr deps, syncs;
  std::vector<int32_t> qfirst, qops, fill, pos, active;
  std::vector<int32_t> next_wait, ready;
  std::vector<double> tail;
  // Per op, filled in one pass: its times, and the streams parked until it starts or ends.
  struct OpState {
    double start = -1, end = -1;
    int32_t wait_start = -1, wait_end = -1;
  };
  std::vector<OpState> op;
};

}  // namespace

void Engine::reserve(size_t ops, size_t deps, size_t syncs) {
  ops_.reserve(ops);
  deps_.reserve(deps);
  syncs_.reserve(2 * syncs);
}

Timeline Engine::run(bool events) const {
  std::optional<Timeline> tl = try_run(events);
  TRAINSIM_ASSERT(tl.has_value(), "schedule program deadlocked in the engine");
  return std::move(*tl);
}

std::optional<Timeline> Engine::try_run(bool events) const {
  thread_local Scratch w;
  const size_t n = ops_.size();
  // Blocking programs have no dependencies, asynchronous ones no rendezvous: an empty kind is
  // neither compressed nor visited.
  const bool has_deps = !deps_.empty(), has_syncs = !syncs_.empty();
  if (has_deps) compress(n, deps_, w.deps);
  if (has_syncs) compress(n, syncs_, w.syncs);
  const Csr& deps = w.deps;
  const Csr& syncs = w.syncs;
  // Per (rank, stream) queue in issue order; only non-empty queues are visited.
  const size_t nq = static_cast<size_t>(ranks_) * kStreamCount;
  auto queue_of = [](const Op& op) {
    return static_cast<size_t>(op.rank) * kStreamCount + static_cast<size_t>(op.stream);
  };
  w.qfirst.assign(nq + 1, 0);
  for (const auto& op : ops_) ++w.qfirst[queue_of(op) + 1];
  w.active.clear();
  for (size_t q = 0; q < nq; ++q) {
    if (w.qfirst[q + 1] > 0) w.active.push_back(static_cast<int32_t>(q));
    w.qfirst[q + 1] += w.qfirst[q];
  }
  w.qops.resize(n);
  w.fill.assign(w.qfirst.begin(), w.qfirst.end() - 1);
  for (size_t i = 0; i < n; ++i) w.qops[static_cast<size_t>(w.fill[queue_of(ops_[i])]++)] = static_cast<int32_t>(i);
  w.op.assign(n, {});
  w.pos.assign(w.qfirst.begin(), w.qfirst.end() - 1);
  w.tail.assign(nq, 0);
  auto& st = w.op;
  // Event-driven: a stream runs until its head op waits for another op to start (rendezvous) or
  // to end (dependency); it is then parked on that op and woken when the op gets there, so every
  // op is visited a bounded number of times.
  w.next_wait.assign(nq, -1);
  w.ready.assign(w.active.begin(), w.active.end());
  auto park = [&](int32_t& list, size_t q) {
    w.next_wait[q] = list;
    list = static_cast<int32_t>(q);
  };
  auto wake = [&](int32_t& list) {
    for (int32_t q = list; q >= 0;) {
      const int32_t next = w.next_wait[static_cast<size_t>(q)];
      w.ready.push_back(q);
      q = next;
    }
    list = -1;
  };
  size_t done = 0;
  while (!w.ready.empty()) {
    const auto q = static_cast<size_t>(w.ready.back());
    w.ready.pop_back();
    while (w.pos[q] < w.qfirst[q + 1]) {
      const auto i = static_cast<size_t>(w.qops[static_cast<size_t>(w.pos[q])]);
      if (st[i].start < 0) {
        double t = w.tail[q];
        int32_t blocked = -1;
        const int32_t k1 = has_deps ? deps.first[i + 1] : 0;
        for (int32_t k = has_deps ? deps.first[i] : 0; k < k1; ++k) {
          const auto d = static_cast<size_t>(deps.other[static_cast<size_t>(k)]);
          if (st[d].end < 0) {
            blocked = static_cast<int32_t>(d);
            break;
          }
          const double f = deps.duration[static_cast<size_t>(k)];
          t = std::max(t, f >= 1 ? st[d].end : st[d].start + f * ops_[d].duration);
        }
        if (blocked >= 0) {
          park(st[static_cast<size_t>(blocked)].wait_end, q);
          break;
        }
        st[i].start = t;
        wake(st[i].wait_start);
      }
      double e = st[i].start + ops_[i].duration;
      int32_t blocked = -1;
      const int32_t k1 = has_syncs ? syncs.first[i + 1] : 0;
      for (int32_t k = has_syncs ? syncs.first[i] : 0; k < k1; ++k) {
        const auto peer = static_cast<size_t>(syncs.other[static_cast<size_t>(k)]);
        if (st[peer].start < 0) {
          blocked = static_cast<int32_t>(peer);
          break;
        }
        e = std::max(e, std::max(st[i].start, st[peer].start) + syncs.duration[static_cast<size_t>(k)]);
      }
      if (blocked >= 0) {
        park(st[static_cast<size_t>(blocked)].wait_start, q);
        break;
      }
      st[i].end = e;
      wake(st[i].wait_end);
      w.tail[q] = e;
      ++w.pos[q];
      ++done;
    }
  }
  if (done != n) return std::nullopt;
  Timeline tl;
  tl.ranks = ranks_;
  tl.totals.resize(static_cast<size_t>(ranks_));
  for (size_t i = 0; i < n; ++i) {
    const Op& op = ops_[i];
    RankTotals& t = tl.totals[static_cast<size_t>(op.rank)];
    t.end = std::max(t.end, st[i].end);
    auto& se = t.stream_end[static_cast<size_t>(op.stream)];
    se = std::max(se, st[i].end);
    const double d = st[i].end - st[i].start;
    t.stream_busy[static_cast<size_t>(op.stream)] += d;
    if (op.stream != Stream::Compute) continue;
    if (op.label.kind == StepKind::P2P) {
      t.p2p_blocking += d;
    } else {
      t.compute_busy += d;
    }
  }
  if (events) {
    tl.events.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const Op& op = ops_[i];
      tl.events.push_back({op.rank, op.stream, op.label.kind, op.label.chunk, op.label.mb, st[i].start, st[i].end});
    }
  }
  return tl;
}

}  // namespace trainsim
