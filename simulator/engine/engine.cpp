#include "engine/engine.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace trainsim {

Engine::Engine(int32_t ranks) { reset(ranks); }

void Engine::reset(int32_t ranks) {
  TRAINSIM_ASSERT(ranks > 0 && ranks <= 65536 / kStreamCount, "engine needs a rank (and at most 13107)");
  ranks_ = ranks;
  nops_ = nlinks_ = 0;
  queues_.assign(static_cast<size_t>(ranks) * kStreamCount, {});
}

void Engine::depends_at(OpId op, OpId on, double fraction) {
  TRAINSIM_ASSERT(fraction >= 0 && fraction <= 1, "dependency fraction outside [0, 1]");
  link(op, false, on, fraction);
}

void Engine::reserve(size_t ops, size_t deps, size_t syncs) {
  if (ops_.size() < ops) ops_.resize(ops);
  if (links_.size() < deps + 2 * syncs) links_.resize(deps + 2 * syncs);
}

void Engine::make_room(int32_t rank, double duration) {
  TRAINSIM_ASSERT(rank >= 0 && rank < ranks_, "op on an unknown rank");
  TRAINSIM_ASSERT(duration >= 0, "op of negative duration");
  if (nops_ == ops_.size()) ops_.resize(std::max<size_t>(64, 2 * nops_));
}

void Engine::make_link_room(OpId op, OpId other) {
  TRAINSIM_ASSERT(op >= 0 && other >= 0 && static_cast<size_t>(op) < nops_ && static_cast<size_t>(other) < nops_,
                  "link between ops not added to the engine");
  if (nlinks_ == links_.size()) links_.resize(std::max<size_t>(64, 2 * nlinks_));
}

Timeline Engine::run(bool events) const {
  std::optional<Timeline> tl = try_run(events);
  TRAINSIM_ASSERT(tl.has_value(), "schedule program deadlocked in the engine");
  return std::move(*tl);
}

namespace {

// Working arrays of one replay, kept per thread so that repeated estimates (search) reuse
// their memory instead of faulting in fresh pages.
struct Scratch {
  // Per (rank, stream): the next op to place (-1: none left), the next queue parked on the same
  // op, the end of its last placed op, and its totals, summed as its ops are placed (in issue
  // order, as a pass over the ops would).
  struct Queue {
    int32_t pos = -1, wait = -1;
    double tail = 0, last_end = 0, busy = 0, compute = 0, p2p = 0;
  };
  std::vector<Queue> queue;
  std::vector<int32_t> ready;
  // Per op: its times, and the queues parked until it starts or ends.
  struct OpState {
    double start = -1, end = -1;
    int32_t wait_start = -1, wait_end = -1;
  };
  std::vector<OpState> op;
};

}  // namespace

std::optional<Timeline> Engine::try_run(bool events) const {
  thread_local Scratch w;
  const size_t n = nops_, nq = queues_.size();
  auto& qs = w.queue;
  qs.assign(nq, {});
  w.ready.clear();
  for (size_t q = 0; q < nq; ++q) {
    qs[q].pos = queues_[q].first;
    if (qs[q].pos >= 0) w.ready.push_back(static_cast<int32_t>(q));
  }
  w.op.assign(n, {});
  auto& st = w.op;
  // Event-driven: a stream runs until its head op waits for another op to start (rendezvous) or
  // to end (dependency); it is then parked on that op and woken when the op gets there, so every
  // op is visited a bounded number of times.
  auto park = [&](int32_t& list, size_t q) {
    qs[q].wait = list;
    list = static_cast<int32_t>(q);
  };
  auto wake = [&](int32_t& list) {
    for (int32_t q = list; q >= 0; q = qs[static_cast<size_t>(q)].wait) w.ready.push_back(q);
    list = -1;
  };
  size_t done = 0;
  while (!w.ready.empty()) {
    const auto q = static_cast<size_t>(w.ready.back());
    w.ready.pop_back();
    Scratch::Queue& Q = qs[q];
    const bool compute_stream = q % kStreamCount == static_cast<size_t>(Stream::Compute);
    while (Q.pos >= 0) {
      const auto i = static_cast<size_t>(Q.pos);
      const Op& op = ops_[i];
      Scratch::OpState& o = st[i];
      if (o.start < 0) {
        double t = Q.tail;
        int32_t blocked = -1;
        for (int32_t k = op.deps; k >= 0;) {
          const Link& l = links_[static_cast<size_t>(k)];
          const Scratch::OpState& d = st[static_cast<size_t>(l.other)];
          if (d.end < 0) {
            blocked = l.other;
            break;
          }
          t = std::max(t, l.duration >= 1 ? d.end : d.start + l.duration * ops_[static_cast<size_t>(l.other)].duration);
          k = l.next;
        }
        if (blocked >= 0) {
          park(st[static_cast<size_t>(blocked)].wait_end, q);
          break;
        }
        o.start = t;
        wake(o.wait_start);
      }
      double e = o.start + op.duration;
      int32_t blocked = -1;
      for (int32_t k = op.syncs; k >= 0;) {
        const Link& l = links_[static_cast<size_t>(k)];
        const double peer = st[static_cast<size_t>(l.other)].start;
        if (peer < 0) {
          blocked = l.other;
          break;
        }
        e = std::max(e, std::max(o.start, peer) + l.duration);
        k = l.next;
      }
      if (blocked >= 0) {
        park(st[static_cast<size_t>(blocked)].wait_start, q);
        break;
      }
      o.end = e;
      wake(o.wait_end);
      Q.tail = e;
      Q.last_end = std::max(Q.last_end, e);
      const double d = e - o.start;
      Q.busy += d;
      if (compute_stream) (op.kind == StepKind::P2P ? Q.p2p : Q.compute) += d;
      Q.pos = op.next;
      ++done;
    }
  }
  if (done != n) return std::nullopt;
  Timeline tl;
  tl.ranks = ranks_;
  tl.totals.resize(static_cast<size_t>(ranks_));
  for (size_t q = 0; q < nq; ++q) {
    const Scratch::Queue& Q = qs[q];
    RankTotals& t = tl.totals[q / kStreamCount];
    const size_t stream = q % kStreamCount;
    t.end = std::max(t.end, Q.last_end);
    t.stream_end[stream] = Q.last_end;
    t.stream_busy[stream] = Q.busy;
    if (stream != static_cast<size_t>(Stream::Compute)) continue;
    t.compute_busy = Q.compute;
    t.p2p_blocking = Q.p2p;
  }
  if (events) {
    tl.events.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const Op& op = ops_[i];
      tl.events.push_back({op.queue / kStreamCount, static_cast<Stream>(op.queue % kStreamCount), op.kind, op.chunk,
                           op.mb, st[i].start, st[i].end});
    }
  }
  return tl;
}

}  // namespace trainsim
