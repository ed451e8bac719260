#include "engine/engine.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

#include "core/error.h"

namespace trainsim {

Engine::Engine(int32_t ranks) { reset(ranks); }

void Engine::reset(int32_t ranks) {
  TRAINSIM_ASSERT(ranks > 0 && ranks <= 65536 / kStreamCount, "engine needs a rank (and at most 13107)");
  ranks_ = ranks;
  unordered_ = false;
  nops_ = nlinks_ = 0;
  queues_.assign(static_cast<size_t>(ranks) * kStreamCount, {});
}

void Engine::bad_fraction() {
  TRAINSIM_ASSERT(false, "dependency fraction outside [0, 1]");
  std::abort();
}

void Engine::reserve(size_t ops, size_t deps, size_t syncs) {
  if (ops_.size() < ops) ops_.resize(ops);
  if (links_.size() < deps + 2 * syncs) links_.resize(deps + 2 * syncs);
  ops_cap_ = ops_.size();
  links_cap_ = links_.size();
}

void Engine::make_room(int32_t rank, double duration) {
  TRAINSIM_ASSERT(rank >= 0 && rank < ranks_, "op on an unknown rank");
  if (!(duration >= 0)) unordered_ = true;
  if (nops_ == ops_cap_) ops_.resize(std::max<size_t>(64, 2 * nops_));
  ops_cap_ = ops_.size();
}

void Engine::make_link_room(OpId op, OpId other) {
  TRAINSIM_ASSERT(op >= 0 && other >= 0 && static_cast<size_t>(op) < nops_ && static_cast<size_t>(other) < nops_,
                  "link between ops not added to the engine");
  if (nlinks_ == links_cap_) links_.resize(std::max<size_t>(64, 2 * nlinks_));
  links_cap_ = links_.size();
}

Timeline Engine::run(bool events) const {
  Timeline tl;
  const bool ran = try_run(tl, events);
  TRAINSIM_ASSERT(ran, "schedule program deadlocked in the engine");
  return tl;
}

namespace {

// Working arrays of one replay, kept per thread so that repeated estimates (search) reuse
// their memory instead of faulting in fresh pages.
constexpr double kUnplaced = -std::numeric_limits<double>::infinity();

struct Scratch {
  // Per (rank, stream): the next op to place (-1: none left), the next queue parked on the same
  // op, the end of its last placed op (where the next one may start), the latest end of its ops
  // (the same unless a duration is negative) and its totals, summed as its ops are placed (in
  // issue order, as a pass over the ops would). The split of the busy time into passes and
  // blocking p2p is read on the compute stream only.
  struct Queue {
    int32_t pos = -1, wait = -1;
    double tail = 0, last_end = 0, busy = 0, compute = 0, p2p = 0;
  };
  std::vector<Queue> queue;
  // Queues ready to run: each is there at most once (it leaves to run, and parks only while
  // running), so the stack never holds more than the queues.
  std::vector<int32_t> ready;
  // Per op: its times (kUnplaced until placed: any finite time, negative ones too, is a time),
  // and the queues parked until it starts or ends.
  struct OpState {
    double start = kUnplaced, end = kUnplaced;
    int32_t wait_start = -1, wait_end = -1;
  };
  std::vector<OpState> op;
};

}  // namespace

std::optional<Timeline> Engine::try_run(bool events) const {
  Timeline tl;
  if (!try_run(tl, events)) return std::nullopt;
  return tl;
}

bool Engine::try_run(Timeline& tl, bool events) const {
  thread_local Scratch w;
  const size_t n = nops_, nq = queues_.size();
  auto& qs = w.queue;
  if (qs.size() < nq) qs.resize(nq);
  if (w.ready.size() < nq) w.ready.resize(nq);
  int32_t* const ready = w.ready.data();
  size_t top = 0;
  for (size_t q = 0; q < nq; ++q) {
    qs[q] = {queues_[q].first, -1, 0, 0, 0, 0, 0};
    if (qs[q].pos >= 0) ready[top++] = static_cast<int32_t>(q);
  }
  w.op.assign(n, {});
  Scratch::OpState* const st = w.op.data();
  const Op* const ops = ops_.data();
  const Link* const links = links_.data();
  // Event-driven: a stream runs until its head op waits for another op to start (rendezvous) or
  // to end (dependency); it is then parked on that op and woken when the op gets there, so every
  // op is visited a bounded number of times.
  auto wake = [&](int32_t& list) {
    for (int32_t q = list; q >= 0; q = qs[static_cast<size_t>(q)].wait) ready[top++] = q;
    list = -1;
  };
  while (top > 0) {
    const auto q = static_cast<size_t>(ready[--top]);
    Scratch::Queue& Q = qs[q];
    while (Q.pos >= 0) {
      const Op& op = ops[Q.pos];
      Scratch::OpState& o = st[Q.pos];
      if (o.start == kUnplaced) {
        double t = Q.tail;
        int32_t k = op.deps;
        for (; k >= 0; k = links[k].next) {
          const Link& l = links[k];
          const Scratch::OpState& d = st[l.other];
          if (d.end == kUnplaced) break;
          t = std::max(t, l.duration >= 1 ? d.end : d.start + l.duration * ops[l.other].duration);
        }
        if (k >= 0) {  // parked until the dependency ends
          int32_t& list = st[links[k].other].wait_end;
          Q.wait = list;
          list = static_cast<int32_t>(q);
          break;
        }
        o.start = t;
        if (o.wait_start >= 0) wake(o.wait_start);
      }
      double e = o.start + op.duration;
      int32_t k = op.syncs;
      for (; k >= 0; k = links[k].next) {
        const Link& l = links[k];
        const double peer = st[l.other].start;
        if (peer == kUnplaced) break;
        e = std::max(e, std::max(o.start, peer) + l.duration);
      }
      if (k >= 0) {  // parked until the peer starts
        int32_t& list = st[links[k].other].wait_start;
        Q.wait = list;
        list = static_cast<int32_t>(q);
        break;
      }
      o.end = e;
      if (o.wait_end >= 0) wake(o.wait_end);
      Q.tail = e;
      Q.last_end = std::max(Q.last_end, e);
      const double d = e - o.start;
      Q.busy += d;
      (op.kind == StepKind::P2P ? Q.p2p : Q.compute) += d;
      Q.pos = op.next;
    }
  }
  tl.ranks = ranks_;
  tl.totals.assign(static_cast<size_t>(ranks_), {});
  tl.events.clear();
  const Scratch::Queue* Q = qs.data();
  for (RankTotals& t : tl.totals) {
    t.compute_busy = Q[static_cast<size_t>(Stream::Compute)].compute;
    t.p2p_blocking = Q[static_cast<size_t>(Stream::Compute)].p2p;
    for (size_t stream = 0; stream < static_cast<size_t>(kStreamCount); ++stream, ++Q) {
      if (Q->pos >= 0) return false;  // a cyclic wait left ops unplaced
      t.end = std::max(t.end, Q->last_end);
      t.stream_end[stream] = Q->last_end;
      t.stream_busy[stream] = Q->busy;
    }
  }
  if (events) {
    tl.events.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const Op& op = ops_[i];
      tl.events.push_back({op.queue / kStreamCount, static_cast<Stream>(op.queue % kStreamCount), op.kind, op.chunk,
                           op.mb, st[i].start, st[i].end});
    }
  }
  return true;
}

}  // namespace trainsim
