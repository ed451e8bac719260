// Event replay of pipeline schedules with blocking p2p (the peer's calculate_1f1b_bubble and
// _compute_interleaved_sync_schedule_from_ppschedule).
#include "schedule/pipeline.h"

#include <algorithm>
#include <deque>

#include "core/error.h"

namespace trainsim {
namespace {

enum class OpType { F, B, SendNext, RecvPrev, SendPrev, RecvNext };

struct Op {
  OpType type;
  int64_t mb;
  double dur;
};

// The op a neighbour must be at for `op` of rank r to rendezvous, and that neighbour.
bool matches(const Op& a, const Op& b) {
  if (a.mb != b.mb) return false;
  switch (a.type) {
    case OpType::SendNext: return b.type == OpType::RecvPrev;
    case OpType::RecvPrev: return b.type == OpType::SendNext;
    case OpType::SendPrev: return b.type == OpType::RecvNext;
    case OpType::RecvNext: return b.type == OpType::SendPrev;
    default: return false;
  }
}

double run(std::vector<std::deque<Op>>& queues) {
  const size_t n = queues.size();
  std::vector<double> t(n, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < n; ++r) {
      while (!queues[r].empty()) {
        Op& op = queues[r].front();
        if (op.type == OpType::F || op.type == OpType::B) {
          t[r] += op.dur;
          queues[r].pop_front();
          progress = true;
          continue;
        }
        const bool to_next = op.type == OpType::SendNext || op.type == OpType::RecvNext;
        const size_t p = to_next ? r + 1 : r - 1;
        if (queues[p].empty() || !matches(op, queues[p].front())) break;
        const double end = std::max(t[r], t[p]) + std::max(op.dur, queues[p].front().dur);
        t[r] = t[p] = end;
        queues[r].pop_front();
        queues[p].pop_front();
        progress = true;
      }
    }
  }
  for (const auto& q : queues) TRAINSIM_ASSERT(q.empty(), "pipeline replay deadlocked");
  return *std::max_element(t.begin(), t.end());
}

}  // namespace

double replay_1f1b(const std::vector<StagePhases>& ranks, int64_t mbc) {
  const int64_t pp = static_cast<int64_t>(ranks.size());
  if (pp == 1) return static_cast<double>(mbc) * (ranks[0].fwd + ranks[0].bwd);
  std::vector<std::deque<Op>> q(static_cast<size_t>(pp));
  for (int64_t r = 0; r < pp; ++r) {
    const StagePhases& ph = ranks[static_cast<size_t>(r)];
    auto& ops = q[static_cast<size_t>(r)];
    const bool has_prev = r > 0, has_next = r < pp - 1, odd = r % 2 == 1;
    const int64_t warmup = std::min(pp - r - 1, mbc), remaining = mbc - warmup;
    int64_t fmb = 0, bmb = 0;
    auto bundle = [&](Op send, bool has_send, Op recv, bool has_recv) {
      // Megatron orders batched send/recv by rank parity to avoid deadlock.
      if (odd) {
        if (has_send) ops.push_back(send);
        if (has_recv) ops.push_back(recv);
      } else {
        if (has_recv) ops.push_back(recv);
        if (has_send) ops.push_back(send);
      }
    };
    for (int64_t i = 0; i < warmup; ++i, ++fmb) {
      if (has_prev) ops.push_back({OpType::RecvPrev, fmb, ph.fwd_recv});
      ops.push_back({OpType::F, fmb, ph.fwd});
      if (has_next) ops.push_back({OpType::SendNext, fmb, ph.fwd_send});
    }
    if (remaining > 0 && has_prev) ops.push_back({OpType::RecvPrev, fmb, ph.fwd_recv});
    for (int64_t i = 0; i < remaining; ++i) {
      ops.push_back({OpType::F, fmb, ph.fwd});
      bundle({OpType::SendNext, fmb, ph.fwd_send}, has_next, {OpType::RecvNext, bmb, ph.bwd_recv}, has_next);
      ++fmb;
      ops.push_back({OpType::B, bmb, ph.bwd});
      if (i == remaining - 1) {
        if (has_prev) ops.push_back({OpType::SendPrev, bmb, ph.bwd_send});
      } else {
        bundle({OpType::SendPrev, bmb, ph.bwd_send}, has_prev, {OpType::RecvPrev, fmb, ph.fwd_recv}, has_prev);
      }
      ++bmb;
    }
    for (int64_t i = 0; i < warmup; ++i, ++bmb) {
      if (has_next) ops.push_back({OpType::RecvNext, bmb, ph.bwd_recv});
      ops.push_back({OpType::B, bmb, ph.bwd});
      if (has_prev) ops.push_back({OpType::SendPrev, bmb, ph.bwd_send});
    }
  }
  return run(q);
}

double replay_interleaved(const std::vector<std::vector<StagePhases>>&, int64_t, int64_t,
                          std::vector<std::vector<InterleavedPhase>>*) {
  throw Error("the interleaved pipeline replay is not implemented yet");
}

}  // namespace trainsim
