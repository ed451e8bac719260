#include "engine/engine.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace trainsim {

Engine::Engine(int32_t ranks) : ranks_(ranks) { TRAINSIM_ASSERT(ranks > 0, "engine needs a rank"); }

Engine::OpId Engine::add(int32_t rank, Stream stream, double duration, Label label) {
  TRAINSIM_ASSERT(rank >= 0 && rank < ranks_, "op on an unknown rank");
  ops_.push_back({rank, stream, duration, label});
  return static_cast<OpId>(ops_.size() - 1);
}

void Engine::depends(OpId op, OpId on) { deps_.push_back({op, on, 0}); }

void Engine::rendezvous(OpId a, OpId b, double duration) {
  syncs_.push_back({a, b, duration});
  syncs_.push_back({b, a, duration});
}

namespace {

// Compressed adjacency: the links of op i are [first[i], first[i+1]).
struct Csr {
  std::vector<int32_t> first;
  std::vector<int32_t> other;
  std::vector<double> duration;
};

template <class LinkVec>
Csr compress(size_t n, const LinkVec& links) {
  Csr c;
  c.first.assign(n + 1, 0);
  for (const auto& l : links) ++c.first[static_cast<size_t>(l.from) + 1];
  for (size_t i = 0; i < n; ++i) c.first[i + 1] += c.first[i];
  c.other.resize(links.size());
  c.duration.resize(links.size());
  std::vector<int32_t> fill(c.first.begin(), c.first.end() - 1);
  for (const auto& l : links) {
    const auto at = static_cast<size_t>(fill[static_cast<size_t>(l.from)]++);
    c.other[at] = l.to;
    c.duration[at] = l.duration;
  }
  return c;
}

}  // namespace

Timeline Engine::run() const {
  std::optional<Timeline> tl = try_run();
  TRAINSIM_ASSERT(tl.has_value(), "schedule program deadlocked in the engine");
  return std::move(*tl);
}

std::optional<Timeline> Engine::try_run() const {
  const size_t n = ops_.size();
  const Csr deps = compress(n, deps_), syncs = compress(n, syncs_);
  // Per (rank, stream) queue in issue order.
  const size_t nq = static_cast<size_t>(ranks_) * kStreamCount;
  std::vector<int32_t> qfirst(nq + 1, 0), qops(n);
  for (const auto& op : ops_) ++qfirst[static_cast<size_t>(op.rank) * kStreamCount + static_cast<size_t>(op.stream) + 1];
  for (size_t q = 0; q < nq; ++q) qfirst[q + 1] += qfirst[q];
  {
    std::vector<int32_t> fill(qfirst.begin(), qfirst.end() - 1);
    for (size_t i = 0; i < n; ++i) {
      const size_t q = static_cast<size_t>(ops_[i].rank) * kStreamCount + static_cast<size_t>(ops_[i].stream);
      qops[static_cast<size_t>(fill[q]++)] = static_cast<int32_t>(i);
    }
  }
  std::vector<double> start(n, -1), end(n, -1);
  std::vector<int32_t> pos(qfirst.begin(), qfirst.end() - 1);
  std::vector<double> tail(nq, 0);
  size_t done = 0;
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t q = 0; q < nq; ++q) {
      while (pos[q] < qfirst[q + 1]) {
        const auto i = static_cast<size_t>(qops[static_cast<size_t>(pos[q])]);
        if (start[i] < 0) {
          double t = tail[q];
          bool ready = true;
          for (int32_t k = deps.first[i]; k < deps.first[i + 1]; ++k) {
            const double e = end[static_cast<size_t>(deps.other[static_cast<size_t>(k)])];
            if (e < 0) {
              ready = false;
              break;
            }
            t = std::max(t, e);
          }
          if (!ready) break;
          start[i] = t;
          progress = true;
        }
        double e = start[i] + ops_[i].duration;
        bool ready = true;
        for (int32_t k = syncs.first[i]; k < syncs.first[i + 1]; ++k) {
          const double peer = start[static_cast<size_t>(syncs.other[static_cast<size_t>(k)])];
          if (peer < 0) {
            ready = false;
            break;
          }
          e = std::max(e, std::max(start[i], peer) + syncs.duration[static_cast<size_t>(k)]);
        }
        if (!ready) break;
        end[i] = e;
        tail[q] = e;
        ++pos[q];
        ++done;
        progress = true;
      }
    }
  }
  if (done != n) return std::nullopt;
  Timeline tl;
  tl.ranks = ranks_;
  tl.events.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Op& op = ops_[i];
    tl.events.push_back({op.rank, op.stream, op.label.kind, op.label.chunk, op.label.mb, start[i], end[i]});
  }
  return tl;
}

}  // namespace trainsim
