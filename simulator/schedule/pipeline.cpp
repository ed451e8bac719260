// Event replay of pipeline schedules with blocking p2p (the peer's calculate_1f1b_bubble and
// _compute_interleaved_sync_schedule_from_ppschedule).
#include "schedule/pipeline.h"

#include <algorithm>

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

double run(const std::vector<std::vector<Op>>& queues) {
  const size_t n = queues.size();
  std::vector<double> t(n, 0);
  std::vector<size_t> pos(n, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < n; ++r) {
      const auto& q = queues[r];
      while (pos[r] < q.size()) {
        const Op& op = q[pos[r]];
        if (op.type == OpType::F || op.type == OpType::B) {
          t[r] += op.dur;
          ++pos[r];
          progress = true;
          continue;
        }
        const bool to_next = op.type == OpType::SendNext || op.type == OpType::RecvNext;
        const size_t p = to_next ? r + 1 : r - 1;
        if (pos[p] >= queues[p].size() || !matches(op, queues[p][pos[p]])) break;
        const double end = std::max(t[r], t[p]) + std::max(op.dur, queues[p][pos[p]].dur);
        t[r] = t[p] = end;
        ++pos[r];
        ++pos[p];
        progress = true;
      }
    }
  }
  for (size_t r = 0; r < n; ++r) TRAINSIM_ASSERT(pos[r] == queues[r].size(), "pipeline replay deadlocked");
  return *std::max_element(t.begin(), t.end());
}

}  // namespace

double replay_1f1b(const std::vector<StagePhases>& ranks, int64_t mbc) {
  const int64_t pp = static_cast<int64_t>(ranks.size());
  if (pp == 1) return static_cast<double>(mbc) * (ranks[0].fwd + ranks[0].bwd);
  std::vector<std::vector<Op>> q(static_cast<size_t>(pp));
  for (int64_t r = 0; r < pp; ++r) {
    const StagePhases& ph = ranks[static_cast<size_t>(r)];
    auto& ops = q[static_cast<size_t>(r)];
    ops.reserve(static_cast<size_t>(6 * mbc + 6));
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

namespace {

// One step of a rank's interleaved program: a chunk's forward/backward, or a batched p2p call.
struct Sub {
  bool send;
  bool to_next;  // forward activations go to the next rank, gradients to the previous one
  int64_t peer;
  double dur;
  // Filled by matching: the peer's step index and sub-op index.
  size_t peer_step = 0;
};
struct Step {
  bool compute = false;
  InterleavedPhase phase{0, true};
  double dur = 0;
  std::vector<Sub> subs;
  double submit = -1;
};

}  // namespace

double replay_interleaved(const std::vector<std::vector<StagePhases>>& chunks, int64_t mbc,
                          int64_t group, std::vector<std::vector<InterleavedPhase>>* order) {
  const int64_t pp = static_cast<int64_t>(chunks.size());
  const int64_t v = static_cast<int64_t>(chunks[0].size());
  const int64_t total = mbc * v;
  // Megatron's microbatch/chunk table: groups of `group` micro-batches run through every chunk.
  std::vector<std::pair<int64_t, int64_t>> table;
  for (int64_t min_mb = 0; min_mb < mbc; min_mb += group)
    for (int64_t c = 0; c < v; ++c)
      for (int64_t mb = min_mb; mb < std::min(mbc, min_mb + group); ++mb) table.emplace_back(mb, c);
  auto chunk_id = [&](int64_t k, bool forward) {
    const int64_t c = table[static_cast<size_t>(((k % total) + total) % total)].second;
    return forward ? c : v - 1 - c;
  };
  std::vector<std::vector<Step>> prog(static_cast<size_t>(pp));
  for (int64_t r = 0; r < pp; ++r) {
    auto& P = prog[static_cast<size_t>(r)];
    const bool first_rank = r == 0, last_rank = r == pp - 1;
    const int64_t next = (r + 1) % pp, prev = (r - 1 + pp) % pp;
    const double p2p = std::max({chunks[static_cast<size_t>(r)][0].fwd_recv, chunks[static_cast<size_t>(r)][0].fwd_send,
                                 chunks[static_cast<size_t>(r)][0].bwd_recv, chunks[static_cast<size_t>(r)][0].bwd_send});
    // Batched isend/irecv in Megatron's order: send_prev, recv_prev, send_next, recv_next.
    auto comm = [&](bool send_prev, bool recv_prev, bool send_next, bool recv_next) {
      Step st;
      if (send_prev) st.subs.push_back({true, false, prev, p2p});
      if (recv_prev) st.subs.push_back({false, true, prev, p2p});
      if (send_next) st.subs.push_back({true, true, next, p2p});
      if (recv_next) st.subs.push_back({false, false, next, p2p});
      if (!st.subs.empty()) P.push_back(st);
    };
    auto compute = [&](int64_t k, bool forward) {
      Step st;
      st.compute = true;
      const int64_t c = chunk_id(k, forward);
      st.phase = {static_cast<int>(c), forward};
      const StagePhases& ph = chunks[static_cast<size_t>(r)][static_cast<size_t>(c)];
      st.dur = forward ? ph.fwd : ph.bwd;
      P.push_back(st);
    };
    int64_t warmup = (pp - r - 1) * 2 + (v - 1) * group;
    bool all_warmup = false;
    if (warmup >= total) {
      warmup = total;
      all_warmup = true;
    }
    const int64_t remaining = total - warmup;
    comm(false, !first_rank, false, false);  // receive chunk 0's first input
    for (int64_t k = 0; k < warmup; ++k) {
      compute(k, true);
      const int64_t cur = chunk_id(k, true);
      bool recv_prev = !(first_rank && chunk_id(k + 1, true) == 0);
      if (k == total - 1) recv_prev = false;
      const bool send_next = !(last_rank && cur == v - 1);
      if (k == warmup - 1 && !all_warmup) {
        comm(false, recv_prev, send_next, !last_rank);
      } else {
        comm(false, recv_prev, send_next, false);
      }
    }
    for (int64_t k = 0; k < remaining; ++k) {
      const int64_t fk = k + warmup, bk = k;
      compute(fk, true);
      compute(bk, false);
      const bool send_next = !(last_rank && chunk_id(fk, true) == v - 1);
      const bool send_prev = !(first_rank && chunk_id(bk, false) == 0);
      bool recv_prev = true;
      if (first_rank && chunk_id(fk - (pp - 1), true) == v - 1) recv_prev = false;
      bool recv_next = true;
      if (last_rank && chunk_id(bk - (pp - 1), false) == 0) recv_next = false;
      if (k == remaining - 1) recv_prev = false;
      comm(send_prev, recv_prev, send_next, recv_next);
    }
    if (all_warmup && !last_rank) comm(false, false, false, true);
    for (int64_t k = remaining; k < total; ++k) {
      compute(k, false);
      const bool send_prev = !(first_rank && chunk_id(k, false) == 0);
      bool recv_next = true;
      if (last_rank && chunk_id(k + 1, false) == v - 1) recv_next = false;
      if (k == total - 1) recv_next = false;
      comm(send_prev, false, false, recv_next);
    }
  }
  // Match the k-th send on each channel (src, dst, direction) with the k-th receive.
  struct Ref {
    size_t rank, step, sub;
  };
  std::vector<std::vector<Ref>> sends(static_cast<size_t>(pp * pp * 2)), recvs(sends.size());
  for (int64_t r = 0; r < pp; ++r)
    for (size_t i = 0; i < prog[static_cast<size_t>(r)].size(); ++i)
      for (size_t j = 0; j < prog[static_cast<size_t>(r)][i].subs.size(); ++j) {
        const Sub& sb = prog[static_cast<size_t>(r)][i].subs[j];
        const int64_t src = sb.send ? r : sb.peer, dst = sb.send ? sb.peer : r;
        const size_t ch = static_cast<size_t>((src * pp + dst) * 2 + (sb.to_next ? 1 : 0));
        (sb.send ? sends : recvs)[ch].push_back({static_cast<size_t>(r), i, j});
      }
  for (size_t ch = 0; ch < sends.size(); ++ch) {
    TRAINSIM_ASSERT(sends[ch].size() == recvs[ch].size(), "interleaved schedule sends and receives differ");
    for (size_t k = 0; k < sends[ch].size(); ++k) {
      const Ref& a = sends[ch][k];
      const Ref& b = recvs[ch][k];
      prog[a.rank][a.step].subs[a.sub].peer_step = b.step;
      prog[b.rank][b.step].subs[b.sub].peer_step = a.step;
    }
  }
  // Replay: a bundle completes when every peer has submitted its matching bundle; each sub-op
  // ends at max(submit times) + max(durations); the rank resumes at the latest end.
  std::vector<size_t> pos(static_cast<size_t>(pp), 0);
  std::vector<double> t(static_cast<size_t>(pp), 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < static_cast<size_t>(pp); ++r) {
      auto& P = prog[r];
      while (pos[r] < P.size()) {
        Step& st = P[pos[r]];
        if (st.compute) {
          t[r] += st.dur;
          ++pos[r];
          progress = true;
          continue;
        }
        if (st.submit < 0) {
          st.submit = t[r];
          progress = true;
        }
        double end = t[r];
        bool ready = true;
        for (const Sub& sb : st.subs) {
          const Step& other = prog[static_cast<size_t>(sb.peer)][sb.peer_step];
          if (other.submit < 0) {
            ready = false;
            break;
          }
          end = std::max(end, std::max(st.submit, other.submit) + sb.dur);
        }
        if (!ready) break;
        t[r] = end;
        ++pos[r];
        progress = true;
      }
    }
  }
  for (size_t r = 0; r < static_cast<size_t>(pp); ++r)
    TRAINSIM_ASSERT(pos[r] == prog[r].size(), "interleaved pipeline replay deadlocked");
  if (order) {
    order->assign(static_cast<size_t>(pp), {});
    for (size_t r = 0; r < static_cast<size_t>(pp); ++r)
      for (const auto& st : prog[r])
        if (st.compute) (*order)[r].push_back(st.phase);
  }
  return *std::max_element(t.begin(), t.end());
}

}  // namespace trainsim
