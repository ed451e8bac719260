// One engine for every schedule: ops on per-rank streams, replayed with their dependencies.
// An op starts when its stream's previous op and every op it depends on have ended. Blocking
// point-to-point is a rendezvous: each side ends at max(both starts) + the transfer time, so the
// host of a rank that sends waits until the peer posts the matching receive (batched isend/irecv
// followed by wait, as Megatron's blocking p2p calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/error.h"
#include "timeline/timeline.h"

namespace trainsim {

class Engine {
 public:
  using OpId = int32_t;
  struct Label {
    StepKind kind = StepKind::Forward;
    int32_t chunk = -1, mb = -1;
  };

  explicit Engine(int32_t ranks);
  /// Capacity hints: ops, dependencies and rendezvous pairs about to be added.
  void reserve(size_t ops, size_t deps, size_t syncs);
  /// Drops every op and link (keeping their memory) for a program over `ranks` ranks.
  void reset(int32_t ranks);

  /// Appends an op of `duration` seconds to the end of `stream` of `rank`. A negative duration
  /// (a system whose fitted times go below zero) is replayed as issued: the op ends before it
  /// starts, the stream's next op starts at that end. (Inline, as depends and rendezvous: the
  /// lowering calls them once per op.)
  OpId add(int32_t rank, Stream stream, double duration, Label label) {
    if (nops_ == ops_cap_ || static_cast<uint32_t>(rank) >= static_cast<uint32_t>(ranks_) || !(duration >= 0))
      make_room(rank, duration);
    const auto id = static_cast<OpId>(nops_++);
    const auto q = static_cast<uint16_t>(rank * kStreamCount + static_cast<int32_t>(stream));
    ops_[static_cast<size_t>(id)] = {duration, -1, -1, -1, label.chunk, label.mb, q, label.kind};
    Queue& qu = queues_[q];
    (qu.last >= 0 ? ops_[static_cast<size_t>(qu.last)].next : qu.first) = id;
    qu.last = id;
    return id;
  }
  /// `op` starts only after `on` has ended. (Nothing to record when `on` is an earlier op of the
  /// same stream: the stream's order already has it end first.)
  void depends(OpId op, OpId on) { link(op, false, on, 1); }
  /// `op` starts no earlier than `fraction` (0–1) of the way through `on`: the point where an
  /// op running on another stream has produced part of its output (e.g. the gradients of the
  /// last layers of a backward pass). `op` is still replayed after `on` has been placed.
  void depends_at(OpId op, OpId on, double fraction) {
    if (!(fraction >= 0 && fraction <= 1)) bad_fraction();
    link(op, false, on, fraction);
  }
  /// `a` and `b` rendezvous: each ends no earlier than max(start a, start b) + `duration`.
  void rendezvous(OpId a, OpId b, double duration) {
    link(a, true, b, duration);
    link(b, true, a, duration);
  }

  /// Replays every op. Throws an internal error if the program can never finish (a schedule
  /// builder bug: programs are built by trainsim, never read from input).
  /// `events`: record every op (the totals per rank are always kept).
  [[nodiscard]] Timeline run(bool events = true) const;
  /// Like run(), but returns nullopt when the program cannot finish (a cyclic wait).
  [[nodiscard]] std::optional<Timeline> try_run(bool events = true) const;
  /// The same into `into` (replaced): false when the program cannot finish.
  [[nodiscard]] bool try_run(Timeline& into, bool events = true) const;

  /// Walking a stream: its first op (-1: none), the op after `op` on its stream (-1: the last),
  /// an op's label and duration.
  [[nodiscard]] OpId first_op(int32_t rank, Stream stream) const {
    return queues_[static_cast<size_t>(rank * kStreamCount + static_cast<int32_t>(stream))].first;
  }
  [[nodiscard]] OpId next_op(OpId op) const { return ops_[static_cast<size_t>(op)].next; }
  [[nodiscard]] Label label(OpId op) const {
    const Op& o = ops_[static_cast<size_t>(op)];
    return {o.kind, o.chunk, o.mb};
  }
  [[nodiscard]] double duration(OpId op) const { return ops_[static_cast<size_t>(op)].duration; }

  [[nodiscard]] int32_t ranks() const { return ranks_; }
  [[nodiscard]] size_t size() const { return nops_; }

 private:
  // The replay walks each stream's ops and each op's links as lists threaded through the ops as
  // they are added, so it sorts nothing. An op's links run from the latest added to the first:
  // the replay takes maxima over them, which do not depend on the order.
  struct Op {
    double duration;
    OpId next;                // the next op of its stream
    int32_t deps, syncs;      // its latest dependency and rendezvous (index in links_)
    int32_t chunk, mb;        // the label's fields unpacked
    uint16_t queue;           // rank · kStreamCount + stream
    StepKind kind;
  };
  struct Link {
    OpId other;
    int32_t next;     // the op's link added before this one, or -1
    double duration;  // rendezvous: the transfer time; dependency: the fraction of `other`
  };
  struct Queue {
    OpId first = -1, last = -1;
  };
  // Links `op` (a dependency, or a rendezvous when `sync`) to `other`; both already added. A
  // dependency on an earlier op of the same stream is dropped while no op has a negative
  // duration: that op has ended before the stream's next one starts, so the link changes nothing.
  void link(OpId op, bool sync, OpId other, double duration) {
    if (nlinks_ == links_cap_ || static_cast<uint32_t>(op) >= nops_ || static_cast<uint32_t>(other) >= nops_)
      make_link_room(op, other);
    Op& o = ops_[static_cast<size_t>(op)];
    if (!sync && other < op && ops_[static_cast<size_t>(other)].queue == o.queue && !unordered_) return;
    int32_t& head = sync ? o.syncs : o.deps;
    links_[nlinks_] = {other, head, duration};
    head = static_cast<int32_t>(nlinks_++);
  }
  // The slow paths of add and link, out of line: check the arguments, grow the arrays.
  void make_room(int32_t rank, double duration);
  [[noreturn]] static void bad_fraction();
  void make_link_room(OpId op, OpId other);
  int32_t ranks_ = 0;
  bool unordered_ = false;  // an op of negative (or NaN) duration was added: ends are not in stream order
  // Ops and links in arrays used up to nops_ / nlinks_ (grown out of line, never shrunk), so that
  // adding one is a few stores.
  std::vector<Op> ops_;
  std::vector<Link> links_;
  size_t nops_ = 0, nlinks_ = 0, ops_cap_ = 0, links_cap_ = 0;  // used, and the arrays' sizes
  std::vector<Queue> queues_;  // per (rank, stream)
};

}  // namespace trainsim
