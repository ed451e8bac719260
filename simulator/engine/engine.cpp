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

// Compressed adjacency: the links of op i are at[first[i], first[i+1]), in the order added.
struct Csr {
  struct Target {
    int32_t other;
    double duration;
  };
  std::vector<int32_t> first;
  std::vector<Target> at;
};

template <class LinkVec>
void compress(size_t n, const LinkVec& links, Csr& c) {
  // Count per op, turn the counts into end offsets, then place the links from the last one back
  // so that each op's offset ends at its first link.
  c.first.assign(n + 1, 0);
  for (const auto& l : links) ++c.first[static_cast<size_t>(l.from)];
  for (size_t i = 1; i < n; ++i) c.first[i] += c.first[i - 1];
  c.first[n] = static_cast<int32_t>(links.size());
  c.at.resize(links.size());
  for (auto it = links.rbegin(); it != links.rend(); ++it)
    c.at[static_cast<size_t>(--c.first[static_cast<size_t>(it->from)])] = {it->to, it->duration};
}

// Working arrays of one replay, kept per thread so that repeated estimates (search) reuse
// their memory instead of faulting in fresh pages.
struct Scratch {
  Csr deps, syncs;
  // Per (rank, stream) queue: its ops are qops[first, end) in issue order, `pos` the next to
  // place; `wait` links the queues parked on one op; `tail` ends its last placed op. The totals
  // are summed per queue as its ops are placed, in issue order (as a pass over the ops would).
  struct Queue {
    int32_t first = 0, end = 0, pos = 0, wait = -1;
    double tail = 0, last_end = 0, busy = 0, compute = 0, p2p = 0;
  };
  std::vector<Queue> queue;
  std::vector<int32_t> qops, ready;
  // Per op: its times, and the queues parked until it starts or ends.
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
  // Queues in issue order (a counting sort of the ops by queue); only non-empty ones are visited.
  const size_t nq = static_cast<size_t>(ranks_) * kStreamCount;
  auto queue_of = [](const Op& op) {
    return static_cast<size_t>(op.rank) * kStreamCount + static_cast<size_t>(op.stream);
  };
  w.queue.assign(nq, {});
  auto& qs = w.queue;
  for (const auto& op : ops_) ++qs[queue_of(op)].end;
  w.ready.clear();
  int32_t at = 0;
  for (size_t q = 0; q < nq; ++q) {
    if (qs[q].end > 0) w.ready.push_back(static_cast<int32_t>(q));
    qs[q].first = qs[q].pos = at;
    at += qs[q].end;
    qs[q].end = qs[q].first;
  }
  w.qops.resize(n);
  for (size_t i = 0; i < n; ++i) w.qops[static_cast<size_t>(qs[queue_of(ops_[i])].end++)] = static_cast<int32_t>(i);
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
    for (; Q.pos < Q.end; ++Q.pos) {
      const auto i = static_cast<size_t>(w.qops[static_cast<size_t>(Q.pos)]);
      Scratch::OpState& o = st[i];
      if (o.start < 0) {
        double t = Q.tail;
        int32_t blocked = -1;
        const int32_t k1 = has_deps ? deps.first[i + 1] : 0;
        for (int32_t k = has_deps ? deps.first[i] : 0; k < k1; ++k) {
          const Csr::Target& l = deps.at[static_cast<size_t>(k)];
          const Scratch::OpState& d = st[static_cast<size_t>(l.other)];
          if (d.end < 0) {
            blocked = l.other;
            break;
          }
          t = std::max(t, l.duration >= 1 ? d.end : d.start + l.duration * ops_[static_cast<size_t>(l.other)].duration);
        }
        if (blocked >= 0) {
          park(st[static_cast<size_t>(blocked)].wait_end, q);
          break;
        }
        o.start = t;
        wake(o.wait_start);
      }
      const Op& op = ops_[i];
      double e = o.start + op.duration;
      int32_t blocked = -1;
      const int32_t k1 = has_syncs ? syncs.first[i + 1] : 0;
      for (int32_t k = has_syncs ? syncs.first[i] : 0; k < k1; ++k) {
        const Csr::Target& l = syncs.at[static_cast<size_t>(k)];
        const double peer = st[static_cast<size_t>(l.other)].start;
        if (peer < 0) {
          blocked = l.other;
          break;
        }
        e = std::max(e, std::max(o.start, peer) + l.duration);
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
      if (op.stream == Stream::Compute) (op.kind == StepKind::P2P ? Q.p2p : Q.compute) += d;
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
      tl.events.push_back({op.rank, op.stream, op.kind, op.chunk, op.mb, st[i].start, st[i].end});
    }
  }
  return tl;
}

}  // namespace trainsim
