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

  /// Appends an op to the end of `stream` of `rank`. (Inline, as depends and rendezvous: the
  /// lowering calls them once per op.)
  OpId add(int32_t rank, Stream stream, double duration, Label label) {
    TRAINSIM_ASSERT(rank >= 0 && rank < ranks_, "op on an unknown rank");
    const auto id = static_cast<OpId>(ops_.size());
    ops_.push_back({duration, rank, label.chunk, label.mb, stream, label.kind});
    Queue& q = queues_[static_cast<size_t>(rank) * kStreamCount + static_cast<size_t>(stream)];
    (q.last >= 0 ? ops_[static_cast<size_t>(q.last)].next : q.first) = id;
    q.last = id;
    return id;
  }
  /// `op` starts only after `on` has ended.
  void depends(OpId op, OpId on) { link(op, false, on, 1); }
  /// `op` starts no earlier than `fraction` (0–1) of the way through `on`: the point where an
  /// op running on another stream has produced part of its output (e.g. the gradients of the
  /// last layers of a backward pass). `op` is still replayed after `on` has been placed.
  void depends_at(OpId op, OpId on, double fraction);
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

  [[nodiscard]] int32_t ranks() const { return ranks_; }
  [[nodiscard]] size_t size() const { return ops_.size(); }

 private:
  // The replay walks each stream's ops and each op's links as lists threaded through the ops as
  // they are added, so it sorts nothing. An op's links run from the latest added to the first:
  // the replay takes maxima over them, which do not depend on the order.
  struct Op {
    double duration;
    int32_t rank, chunk, mb;  // the label's fields unpacked
    Stream stream;
    StepKind kind;
    OpId next = -1;             // the next op of its stream
    int32_t deps = -1, syncs = -1;  // its latest dependency and rendezvous (index in links_)
  };
  struct Link {
    OpId other;
    int32_t next;     // the op's link added before this one, or -1
    double duration;  // rendezvous: the transfer time; dependency: the fraction of `other`
  };
  struct Queue {
    OpId first = -1, last = -1;
  };
  // Links `op` (a dependency, or a rendezvous when `sync`) to `other`; both already added.
  void link(OpId op, bool sync, OpId other, double duration) {
    TRAINSIM_ASSERT(op >= 0 && other >= 0 && static_cast<size_t>(op) < ops_.size() &&
                        static_cast<size_t>(other) < ops_.size(),
                    "link between ops not added to the engine");
    int32_t& head = sync ? ops_[static_cast<size_t>(op)].syncs : ops_[static_cast<size_t>(op)].deps;
    links_.push_back({other, head, duration});
    head = static_cast<int32_t>(links_.size() - 1);
  }
  int32_t ranks_ = 0;
  std::vector<Op> ops_;
  std::vector<Link> links_;
  std::vector<Queue> queues_;  // per (rank, stream)
};

}  // namespace trainsim
