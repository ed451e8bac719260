#include "schedule/lower.h"

#include <algorithm>

#include "core/error.h"
#include "core/small_vector.h"
#include "core/text.h"

namespace trainsim {
namespace {

Engine::Label compute_label(const Step& s) {
  constexpr StepKind kKind[] = {StepKind::Forward, StepKind::Backward, StepKind::BackwardWeight};  // by Pass
  return {kKind[static_cast<size_t>(s.pass)], s.chunk, s.mb};
}

double step_time(const PipelineCosts& c, int64_t rank, const Step& s) {
  const ChunkTimes& t = c.chunks[static_cast<size_t>(rank)][static_cast<size_t>(s.chunk)];
  return s.pass == Pass::Forward ? t.fwd : s.pass == Pass::Backward ? t.bwd : t.bwd_weight;
}

// Working arrays of the lowering, kept per thread so that repeated estimates reuse their memory.
thread_local std::vector<Engine::OpId> scratch_ids;

// --- Blocking 1F1B: Megatron's send_forward / send_forward_recv_backward / ... calls. ---------
// Rank r's receive from rank r − 1 and its send back pair with rank r − 1's send and receive of the
// same micro-batch, added before them (ranks are lowered in order): each rendezvous is linked as
// its second side is added.
void lower_blocking_1f1b(const Program& p, const PipelineCosts& c, Engine& e, StepOps* out) {
  const int64_t pp = p.pp, mbc = p.mbc;
  e.reserve(static_cast<size_t>(pp * 6 * mbc), 0, static_cast<size_t>(2 * pp * mbc));
  // Per micro-batch: the previous rank's send to the next rank and receive from it, then this
  // rank's.
  std::vector<Engine::OpId>& ids = scratch_ids;
  ids.assign(static_cast<size_t>(4 * mbc), -1);
  Engine::OpId* prev_send = ids.data();
  Engine::OpId* prev_recv = prev_send + mbc;
  Engine::OpId* send = prev_recv + mbc;
  Engine::OpId* recv = send + mbc;
  for (int64_t r = 0; r < pp; ++r) {
    const auto rr = static_cast<int32_t>(r);
    const Step* step = p.ranks[static_cast<size_t>(r)].data();
    const Step* const end = step + p.ranks[static_cast<size_t>(r)].size();
    const std::vector<ChunkTimes>& times = c.chunks[static_cast<size_t>(r)];
    std::vector<Engine::OpId>* steps = out ? &(*out)[static_cast<size_t>(r)] : nullptr;
    const bool has_prev = r > 0, has_next = r < pp - 1, odd = r % 2 == 1;
    const int64_t warmup = std::min(pp - r - 1, mbc);
    const int64_t remaining = mbc - warmup;
    auto compute = [&] {
      TRAINSIM_ASSERT(step != end, "blocking 1F1B lowering needs a 1F1B program");
      const Step& s = *step++;
      const ChunkTimes& t = times[static_cast<size_t>(s.chunk)];
      const bool fwd = s.pass == Pass::Forward;  // no weight-gradient steps: the backward is whole
      const Engine::OpId id =
          e.add(rr, Stream::Compute, fwd ? t.fwd : t.bwd, {fwd ? StepKind::Forward : StepKind::Backward, s.chunk, s.mb});
      if (steps) steps->push_back(id);
    };
    // The transfers with the next rank are recorded for it; those with the previous rank pair.
    auto send_next = [&](int64_t mb) {
      if (has_next) send[mb] = e.add(rr, Stream::Compute, 0, {StepKind::P2P, 0, static_cast<int32_t>(mb)});
    };
    auto recv_next = [&](int64_t mb) {
      if (has_next) recv[mb] = e.add(rr, Stream::Compute, 0, {StepKind::P2P, 0, static_cast<int32_t>(mb)});
    };
    auto recv_prev = [&](int64_t mb) {
      if (has_prev) e.rendezvous(prev_send[mb], e.add(rr, Stream::Compute, 0, {StepKind::P2P, 0, static_cast<int32_t>(mb)}), c.p2p);
    };
    auto send_prev = [&](int64_t mb) {
      if (has_prev) e.rendezvous(e.add(rr, Stream::Compute, 0, {StepKind::P2P, 0, static_cast<int32_t>(mb)}), prev_recv[mb], c.p2p);
    };
    int64_t fmb = 0, bmb = 0;
    for (int64_t i = 0; i < warmup; ++i, ++fmb) {
      recv_prev(fmb);
      compute();
      send_next(fmb);
    }
    if (remaining > 0) recv_prev(fmb);
    for (int64_t i = 0; i < remaining; ++i) {
      compute();
      // Megatron orders a batched send/recv pair by rank parity to avoid deadlock.
      if (odd) {
        send_next(fmb);
        recv_next(bmb);
      } else {
        recv_next(bmb);
        send_next(fmb);
      }
      ++fmb;
      compute();
      if (i == remaining - 1) {
        send_prev(bmb);
      } else if (odd) {
        send_prev(bmb);
        recv_prev(fmb);
      } else {
        recv_prev(fmb);
        send_prev(bmb);
      }
      ++bmb;
    }
    for (int64_t i = 0; i < warmup; ++i, ++bmb) {
      recv_next(bmb);
      compute();
      send_prev(bmb);
    }
    TRAINSIM_ASSERT(step == end, "blocking 1F1B lowering needs a 1F1B program");
    std::swap(prev_send, send);
    std::swap(prev_recv, recv);
  }
}

// --- Blocking interleaved: batched isend/irecv bundles with Megatron's receive rules. ---------
// A bundle's sub-operations, at most one of each kind, issued in Megatron's batched order:
// send_prev, recv_prev, send_next, recv_next (bit k of a bundle's mask: kind k). Sends are the
// even kinds.
enum SubKind : uint8_t { kSendPrev, kRecvPrev, kSendNext, kRecvNext };

// The chunk of the k-th forward of Megatron's interleaved table (interleaved_table), without
// building it: micro-batches enter in groups of `group` per chunk, the last group maybe partial.
int64_t table_chunk(int64_t k, int64_t v, int64_t mbc, int64_t group) {
  const int64_t full = (mbc / group) * group * v;  // entries of the whole groups
  if (k < full) return k % (group * v) / group;
  return (k - full) / (mbc % group);
}

// Calls visit(r, step, 0) for every compute step and visit(r, -1, mask) for every bundle of
// rank r, in order, rank after rank.
template <class Visit>
void for_each_item(const Program& p, Visit visit) {
  const int64_t pp = p.pp, v = p.v, mbc = p.mbc, total = mbc * v;
  auto chunk_id = [&](int64_t k, bool forward) {
    const int64_t c = table_chunk(((k % total) + total) % total, v, mbc, p.group);
    return forward ? c : v - 1 - c;
  };
  for (int64_t r = 0; r < pp; ++r) {
    const auto rank = static_cast<size_t>(r);
    const bool first_rank = r == 0, last_rank = r == pp - 1;
    int64_t step = 0;
    auto comm = [&](bool send_prev, bool recv_prev, bool send_next, bool recv_next) {
      const unsigned mask = (send_prev ? 1u << kSendPrev : 0u) | (recv_prev ? 1u << kRecvPrev : 0u) |
                            (send_next ? 1u << kSendNext : 0u) | (recv_next ? 1u << kRecvNext : 0u);
      if (mask != 0) visit(rank, -1, mask);
    };
    auto compute = [&] { visit(rank, step++, 0u); };
    const int64_t warmup = std::min((pp - r - 1) * 2 + (v - 1) * p.group, total);
    const bool all_warmup = warmup == total;
    const int64_t remaining = total - warmup;
    comm(false, !first_rank, false, false);  // chunk 0's first input
    for (int64_t k = 0; k < warmup; ++k) {
      compute();
      bool recv_prev = !(first_rank && chunk_id(k + 1, true) == 0);
      if (k == total - 1) recv_prev = false;
      const bool send_next = !(last_rank && chunk_id(k, true) == v - 1);
      comm(false, recv_prev, send_next, k == warmup - 1 && !all_warmup && !last_rank);
    }
    for (int64_t k = 0; k < remaining; ++k) {
      const int64_t fk = k + warmup, bk = k;
      compute();
      compute();
      const bool send_next = !(last_rank && chunk_id(fk, true) == v - 1);
      const bool send_prev = !(first_rank && chunk_id(bk, false) == 0);
      bool recv_prev = !(first_rank && chunk_id(fk - (pp - 1), true) == v - 1);
      bool recv_next = !(last_rank && chunk_id(bk - (pp - 1), false) == 0);
      if (k == remaining - 1) recv_prev = false;
      comm(send_prev, recv_prev, send_next, recv_next);
    }
    if (all_warmup && !last_rank) comm(false, false, false, true);
    for (int64_t k = remaining; k < total; ++k) {
      compute();
      const bool send_prev = !(first_rank && chunk_id(k, false) == 0);
      bool recv_next = !(last_rank && chunk_id(k + 1, false) == v - 1);
      if (k == total - 1) recv_next = false;
      comm(send_prev, false, false, recv_next);
    }
  }
}

// The channel of rank r's sub-operation of kind k: (src·pp + dst)·2 + direction (1: towards the
// next rank).
size_t channel_of(int64_t r, unsigned k, int64_t pp) {
  const int64_t next = (r + 1) % pp, prev = (r - 1 + pp) % pp;
  switch (k) {
    case kSendPrev: return static_cast<size_t>((r * pp + prev) * 2);
    case kRecvPrev: return static_cast<size_t>((prev * pp + r) * 2 + 1);
    case kSendNext: return static_cast<size_t>((r * pp + next) * 2 + 1);
    default: return static_cast<size_t>((next * pp + r) * 2);
  }
}

// Every rank's channel per sub-operation kind: [r · 4 + kind].
SmallVector<size_t, 64> channels(int64_t pp) {
  SmallVector<size_t, 64> ch;
  for (int64_t r = 0; r < pp; ++r)
    for (unsigned k = 0; k < 4; ++k) ch.push_back(channel_of(r, k, pp));
  return ch;
}

thread_local std::vector<Engine::OpId> scratch_ends;

void lower_blocking_interleaved(const Program& p, const PipelineCosts& c, Engine& e, StepOps* out) {
  e.reserve(static_cast<size_t>(4 * p.pp * p.v * p.mbc), 0, static_cast<size_t>(2 * p.pp * p.v * p.mbc));
  // One op per item, in the items' order: item k is op base + k. On each channel (src, dst,
  // direction) the j-th send pairs with the j-th receive: both are listed by channel, in order
  // (a counting sort of the bundles' sub-operations).
  const auto base = static_cast<Engine::OpId>(e.size());
  const auto nch = static_cast<size_t>(p.pp * p.pp * 2);
  std::vector<int32_t>& next = scratch_ids;  // per channel: sends, then receives
  next.assign(2 * nch, 0);
  const SmallVector<size_t, 64> ch = channels(p.pp);
  for_each_item(p, [&](size_t r, int64_t step, unsigned mask) {
    const auto rr = static_cast<int32_t>(r);
    if (step >= 0) {
      const Step& s = p.ranks[r][static_cast<size_t>(step)];
      const Engine::OpId id = e.add(rr, Stream::Compute, step_time(c, static_cast<int64_t>(r), s), compute_label(s));
      if (out) (*out)[r].push_back(id);
      return;
    }
    e.add(rr, Stream::Compute, 0, {StepKind::P2P, -1, -1});
    for (unsigned k = 0; k < 4; ++k)
      if (mask >> k & 1u) ++next[(k % 2 == 0 ? 0 : nch) + ch[r * 4 + k]];
  });
  int32_t pairs = 0;
  for (size_t j = 0; j < nch; ++j) {
    TRAINSIM_ASSERT(next[j] == next[nch + j], "blocking interleaved bundles do not pair");
    const int32_t n = next[j];
    next[j] = next[nch + j] = pairs;
    pairs += n;
  }
  std::vector<Engine::OpId>& ends = scratch_ends;  // sends, then receives
  ends.resize(2 * static_cast<size_t>(pairs));
  Engine::OpId op = base;
  for_each_item(p, [&](size_t r, int64_t, unsigned mask) {
    for (unsigned k = 0; k < 4; ++k)
      if (mask >> k & 1u) {
        const bool send = k % 2 == 0;
        ends[(send ? 0 : static_cast<size_t>(pairs)) + static_cast<size_t>(next[(send ? 0 : nch) + ch[r * 4 + k]]++)] = op;
      }
    ++op;
  });
  for (size_t j = 0; j < static_cast<size_t>(pairs); ++j) e.rendezvous(ends[j], ends[static_cast<size_t>(pairs) + j], c.p2p);
}

// --- Asynchronous: data dependencies only. --------------------------------------------------
struct AsyncSlot {
  Engine::OpId fwd = -1, fwd_end = -1, bwd = -1, send_fwd = -1, send_bwd = -1;
};
thread_local std::vector<AsyncSlot> scratch_slots;

void lower_async(const Program& p, const PipelineCosts& c, Engine& e, StepOps* out) {
  const int64_t pp = p.pp, v = p.v, mbc = p.mbc, stages = pp * v;
  e.reserve(static_cast<size_t>(5 * stages * mbc), static_cast<size_t>(4 * stages * mbc), 0);
  // With one stage and no merged steps, each pass's input (a backward's: its forward's output) is
  // produced earlier on the same stream: nothing to link (the engine would drop the links).
  bool linked = stages > 1;
  for (size_t i = 0; !linked && i < p.ranks[0].size(); ++i) linked = p.ranks[0][i].merged;
  if (!linked) {
    for (const Step& s : p.ranks[0]) {
      const Engine::OpId id = e.add(0, Stream::Compute, step_time(c, 0, s), compute_label(s));
      if (out) (*out)[0].push_back(id);
    }
    return;
  }
  // Op ids per (virtual stage, micro-batch): where a pass's incoming data dependency hangs (its
  // first op), and the transfer it sends downstream (forward activations) or upstream (input
  // gradients) after its last op.
  const auto n = static_cast<size_t>(stages * mbc);
  std::vector<AsyncSlot>& slots = scratch_slots;
  slots.assign(n, {});
  auto at_of = [&](int64_t r, const Step& s) { return static_cast<size_t>((s.chunk * pp + r) * mbc + s.mb); };
  for (int64_t r = 0; r < pp; ++r) {
    const auto rr = static_cast<int32_t>(r);
    const auto& steps = p.ranks[static_cast<size_t>(r)];
    // A pass placed as ops [first, last]: record it and send its output.
    auto placed = [&](const Step& s, Engine::OpId first, Engine::OpId last) {
      const int64_t vs = s.chunk * pp + r;
      const size_t at = at_of(r, s);
      if (out) (*out)[static_cast<size_t>(r)].push_back(last);
      if (s.pass == Pass::Forward) {
        slots[at].fwd = first;
        slots[at].fwd_end = last;
        if (vs + 1 < stages) {
          slots[at].send_fwd = e.add(rr, Stream::PpForward, c.p2p, {StepKind::P2P, s.chunk, s.mb});
          e.depends(slots[at].send_fwd, last);
        }
      } else if (s.pass == Pass::Backward) {
        slots[at].bwd = first;
        if (vs > 0) {
          slots[at].send_bwd = e.add(rr, Stream::PpBackward, c.p2p, {StepKind::P2P, s.chunk, s.mb});
          e.depends(slots[at].send_bwd, last);
        }
      }
    };
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      if (s.merged) {
        TRAINSIM_ASSERT(i + 1 < steps.size() && steps[i + 1].pass == Pass::Backward, "a merged forward needs a backward after it");
        const Step& b = steps[++i];
        // Without the passes cut (unit costs in plan checks) the forward is one piece and the
        // backward two, around it: Megatron starts a merged step once both its inputs have
        // arrived, so the backward's output waits for the forward's input too. (The cut passes
        // need no more than that: their order only adds waits the two halves already make.)
        auto cut = [&](const Step& st, bool fwd_pass) {
          if (!c.a2a.empty()) {
            const ChunkA2a& a = c.a2a[static_cast<size_t>(r)][static_cast<size_t>(st.chunk)];
            return fwd_pass ? a.fwd : a.bwd;
          }
          const double t = step_time(c, r, st);
          return fwd_pass ? A2aPass{{t}, {}} : A2aPass{{t / 2, t / 2}, {}};
        };
        const MergedOps m =
            add_merged_step(e, rr, cut(s, true), compute_label(s), cut(b, false), compute_label(b), c.a2a_slowdown);
        placed(s, m.f_first, m.f_last);
        placed(b, m.b_first, m.b_last);
        continue;
      }
      const Engine::OpId id = e.add(rr, Stream::Compute, step_time(c, r, s), compute_label(s));
      placed(s, id, id);
    }
  }
  for (int64_t r = 0; r < pp; ++r)
    for (const Step& s : p.ranks[static_cast<size_t>(r)]) {
      const int64_t vs = s.chunk * pp + r;
      const size_t at = at_of(r, s);
      if (s.pass == Pass::Forward && vs > 0) {
        e.depends(slots[at].fwd, slots[at - static_cast<size_t>(mbc)].send_fwd);
      } else if (s.pass == Pass::Backward) {
        e.depends(slots[at].bwd, vs + 1 < stages ? slots[at + static_cast<size_t>(mbc)].send_bwd : slots[at].fwd_end);
      }
    }
  // A weight-gradient step follows its input-gradient step on the same stream: no link needed.
}

}  // namespace

std::string blocking_problem(const Program& p) {
  if (p.split_backward) return "a split-backward (zero-bubble) schedule needs asynchronous p2p";
  if (p.v == 1) return "";
  // Only the counts per channel matter here: sends less receives, both counted for a message.
  const auto nch = static_cast<size_t>(p.pp * p.pp * 2);
  const SmallVector<size_t, 64> ch = channels(p.pp);
  SmallVector<int64_t, 128> surplus;
  surplus.assign(nch, 0);
  for_each_item(p, [&](size_t r, int64_t, unsigned mask) {
    for (unsigned k = 0; k < 4; ++k)
      if (mask >> k & 1u) surplus[ch[r * 4 + k]] += k % 2 == 0 ? 1 : -1;
  });
  for (size_t j = 0; j < nch; ++j) {
    if (surplus[j] == 0) continue;
    size_t sends = 0, recvs = 0;
    for_each_item(p, [&](size_t r, int64_t, unsigned mask) {
      for (unsigned k = 0; k < 4; ++k)
        if (mask >> k & 1u && ch[r * 4 + k] == j) ++(k % 2 == 0 ? sends : recvs);
    });
    const size_t src = j / 2 / static_cast<size_t>(p.pp), dst = j / 2 % static_cast<size_t>(p.pp);
    return strprintf("Megatron's synchronous interleaved schedule posts %zu sends but %zu receives from "
                     "rank %zu to rank %zu for pp %lld, %lld chunks, %lld micro-batches in groups of %lld",
                     sends, recvs, src, dst, static_cast<long long>(p.pp), static_cast<long long>(p.v),
                     static_cast<long long>(p.mbc), static_cast<long long>(p.group));
  }
  return "";
}

void lower(const Program& p, const PipelineCosts& costs, P2PMode mode, Engine& e, StepOps* steps) {
  TRAINSIM_ASSERT(costs.chunks.size() == p.ranks.size(), "pipeline costs do not match the program");
  e.reset(static_cast<int32_t>(p.pp));
  if (steps) {
    steps->resize(p.ranks.size());
    for (size_t r = 0; r < steps->size(); ++r) {
      (*steps)[r].clear();
      (*steps)[r].reserve(p.ranks[r].size());
    }
  }
  if (mode == P2PMode::Async || p.pp == 1) {
    lower_async(p, costs, e, steps);
    return;
  }
  // What blocking_problem checks (the plan has): the interleaved lowering asserts the pairing
  // itself rather than building the bundles twice.
  TRAINSIM_ASSERT(!p.split_backward, "blocking lowering of a split-backward program");
  if (p.v == 1) {
    lower_blocking_1f1b(p, costs, e, steps);
  } else {
    lower_blocking_interleaved(p, costs, e, steps);
  }
}

Engine lower(const Program& p, const PipelineCosts& costs, P2PMode mode, StepOps* steps) {
  Engine e(static_cast<int32_t>(p.pp));
  lower(p, costs, mode, e, steps);
  return e;
}

}  // namespace trainsim
