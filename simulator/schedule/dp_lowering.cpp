// Data-parallel traffic lowered onto the engine (default mode).
#include "schedule/dp_lowering.h"

#include <algorithm>

#include "comm/collective.h"
#include "passes/fp8.h"

namespace trainsim {

ChunkBuckets chunk_buckets_of(const Plan& plan, bool split_backward, int64_t r, const RankBackward& backward_of) {
  const auto ri = static_cast<size_t>(r);
  ChunkBuckets out(plan.chunks[ri].size());
  for (size_t c = 0; c < out.size(); ++c)
    for (size_t si = 0; si < 2; ++si) {
      const int64_t n = kDpSides[si].n(plan);
      if (n <= 1) continue;
      const auto& backward = *backward_of[c];
      std::vector<GradSegment> segs;
      segs.reserve(backward.size());
      for (const auto& b : backward)
        segs.push_back({kDpSides[si].moe ? b.moe : b.dense, split_backward ? b.bwd_w_s : b.bwd_s});
      out[c][si] = grad_buckets(segs, default_bucket_params(n));
    }
  return out;
}

namespace {

// The DP ops of one rank: parameter all-gathers (distributed optimizer, FSDP) and gradient
// reductions on the dp stream, with the dependencies on the compute steps they serve.
class DpLowering {
 public:
  DpLowering(Engine& engine, const Plan& p, const NetworkChoice& networks, const Program& program, const StepOps& step_ops,
             int64_t r, const RankBackward& backward, const ChunkBuckets& buckets)
      : e(engine), plan(p), s(p), nets(networks), ops(step_ops), backward_of(backward),
        chunk_buckets(buckets), ri(static_cast<size_t>(r)), rr(static_cast<int32_t>(r)), steps(program.ranks[ri]),
        v(p.chunks[ri].size()), grad_pass(program.split_backward ? Pass::BackwardWeight : Pass::Backward),
        grad_bytes((s.prec.grad_reduce_in_bf16 || !s.prec.fp32_accum_grad) ? 2 : 4), sharded(s.ovl.zero_state >= 1) {}

  RankDp run() {
    if (steps.empty()) return out;
    first_fwd.assign(v, -1);
    last_index.assign(v, 0);
    for (size_t i = 0; i < steps.size(); ++i) {
      const auto c = static_cast<size_t>(steps[i].chunk);
      if (steps[i].pass == Pass::Forward && first_fwd[c] < 0) first_fwd[c] = ops[ri][i];
      if (steps[i].pass == grad_pass) last_index[c] = i;
    }
    param_gathers();
    fsdp_gathers();
    in_step_order();
    return out;
  }

 private:
  Engine& e;
  const Plan& plan;
  const Settings& s;
  const NetworkChoice& nets;
  const StepOps& ops;
  const RankBackward& backward_of;
  const ChunkBuckets& chunk_buckets;
  const size_t ri;
  const int32_t rr;
  const std::vector<Step>& steps;
  const size_t v;
  const Pass grad_pass;
  const double grad_bytes;
  const bool sharded;
  const DpSide* sides = kDpSides;
  RankDp out;
  std::vector<Engine::OpId> first_fwd;
  std::vector<size_t> last_index;
  // Full buckets share one size: a side's collective is costed again only when its kind or size
  // changes (a 70B model on few ranks fills thousands of buckets).
  struct LastCall {
    Collective kind = Collective::AllReduce;
    double bytes = -1, t = 0;
  };
  LastCall last[2];
    // optim_grads_params (ZeRO-3 / Megatron FSDP): every forward and backward step gathers its
    // chunk's parameters again (bf16); the step waits for its first layer's share, the rest of the
    // gather runs ahead of the layers that need it (Megatron FSDP prefetches the next module). The
    // two all-gathers are the same for every micro-batch: costed once per chunk, pass and side.
  struct Gather {
    double first = 0, rest = 0;
    bool any = false;
  };
  std::vector<std::array<std::array<Gather, 2>, 2>> gathers;  // [chunk][bwd, fwd][side]

  double time_of(const DpSide& side, Collective kind, double bytes) {
    LastCall& l = last[side.moe ? 1 : 0];
    if (l.kind != kind || l.bytes != bytes) {
      EfficiencySource how;
      l = {kind, bytes, collective_time(*plan.system, s, nets.net(side.group), kind, bytes, side.n(plan), side.stage, &how)};
      ++out.collectives[static_cast<size_t>(kind)][static_cast<size_t>(how)];
    }
    return l.t;
  }
  void count(const DpSide& side, double t) { (side.moe ? out.moe_s : out.dense_s) += t; }

  void param_gathers() {
    // Parameter all-gather (distributed optimizer: bf16 parameters, fp8 with fp8_param_gather).
    for (size_t c = 0; c < v; ++c)
      for (size_t si = 0; si < 2; ++si) {
        const DpSide& side = sides[si];
        const auto& bs = chunk_buckets[c][si];
        for (auto it = bs.rbegin(); sharded && s.ovl.zero_state < 3 && it != bs.rend(); ++it) {
          const double t = time_of(side, Collective::AllGather, it->params * param_gather_bytes(s));
          count(side, t);
          if (!s.ovl.overlap_param_gather) {
            out.after_optimizer_s += t;
            continue;
          }
          const Engine::OpId id = e.add(rr, Stream::Dp, t, {StepKind::DpComm, static_cast<int32_t>(c), -1});
          if (it == bs.rbegin()) {
            e.depends(first_fwd[c], id);
            if (c == 0) out.param_gather_first_s += t;
          }
        }
      }
  }

  void fsdp_gathers() {
    gathers.resize(s.ovl.zero_state >= 3 ? v : 0);
    for (size_t c = 0; c < gathers.size(); ++c) {
      const auto& segs = *backward_of[c];
      for (size_t si = 0; si < 2; ++si) {
        const DpSide& side = sides[si];
        if (side.n(plan) <= 1) continue;
        double total = 0;
        for (const auto& b : segs) total += side.moe ? b.moe : b.dense;
        if (total <= 0) continue;
        for (size_t fwd = 0; fwd < 2; ++fwd) {
          // Forward needs the first layer (or the embedding) first, the backward the head or last layer.
          double first = 0;
          for (size_t k = 0; k < segs.size() && first == 0; ++k) {
            const auto& b = fwd ? segs[segs.size() - 1 - k] : segs[k];
            first = side.moe ? b.moe : b.dense;
          }
          gathers[c][fwd][si] = {time_of(side, Collective::AllGather, first * 2),
                                 time_of(side, Collective::AllGather, (total - first) * 2), true};
        }
      }
    }
  }

  void gather(size_t i) {
    const auto c = static_cast<size_t>(steps[i].chunk);
    const size_t fwd = steps[i].pass == Pass::Forward ? 1 : 0;
    for (size_t si = 0; si < 2; ++si) {
      const Gather& g = gathers[c][fwd][si];
      if (!g.any) continue;
      count(sides[si], g.first + g.rest);
      const Engine::OpId id = e.add(rr, Stream::Dp, g.first, {StepKind::DpComm, static_cast<int32_t>(c), steps[i].mb});
      e.depends(ops[ri][i], id);
      if (g.rest > 0) e.add(rr, Stream::Dp, g.rest, {StepKind::DpComm, static_cast<int32_t>(c), steps[i].mb});
    }
  }

    // Gradient reduction after each chunk's last backward, or, with sharded gradients (optim_grads,
    // optim_grads_params), after every one: Megatron FSDP keeps no full gradient buffer to
    // accumulate into, so each micro-batch's backward reduce-scatters its gradients into the shard
    // (Megatron core 0.15 megatron_fsdp.py: grad_reduce_every_bprop for optim_grads and
    // optim_grads_params, whatever is_last_microbatch says). Without overlap_grad_reduce the last
    // reductions wait for the rank's last compute and the earlier ones hold the next step.

  void reduce(size_t i) {
    const auto c = static_cast<size_t>(steps[i].chunk);
    const bool final_reduce = i == last_index[c];
    for (size_t si = 0; si < 2; ++si)
      for (const GradBucket& b : chunk_buckets[c][si]) {
        const DpSide& side = sides[si];
        const double t = time_of(side, sharded ? Collective::ReduceScatter : Collective::AllReduce, b.params * grad_bytes);
        count(side, t);
        const Engine::OpId id =
            e.add(rr, Stream::Dp, t, {StepKind::DpComm, static_cast<int32_t>(c), final_reduce ? -1 : steps[i].mb});
        if (s.ovl.overlap_grad_reduce) {
          e.depends_at(id, ops[ri][i], b.ready);
        } else if (final_reduce) {
          e.depends(id, ops[ri].back());  // the rank's last compute
        } else {
          e.depends(id, ops[ri][i]);
          e.depends(ops[ri][i + 1], id);
        }
      }
  }

  void in_step_order() {
    // The dp stream runs them in step order, except that without overlap_grad_reduce a chunk's
    // last reductions, which wait for the rank's last compute, go after everything else: queued in
    // step order they would hold the gathers and per-micro-batch reductions that later steps of
    // other chunks (interleaving) wait for, and the step could never finish.
    std::vector<size_t> after_compute;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (s.ovl.zero_state >= 3 && steps[i].pass != Pass::BackwardWeight) gather(i);
      if (steps[i].pass != grad_pass) continue;
      const bool final_reduce = i == last_index[static_cast<size_t>(steps[i].chunk)];
      if (final_reduce && !s.ovl.overlap_grad_reduce)
        after_compute.push_back(i);
      else if (final_reduce || s.ovl.zero_state >= 2)
        reduce(i);
    }
    for (size_t i : after_compute) reduce(i);
  }
};

}  // namespace

RankDp add_dp_ops(Engine& e, const Plan& plan, const NetworkChoice& nets, const Program& program, const StepOps& ops,
                  int64_t r, const RankBackward& backward_of, const ChunkBuckets& chunk_buckets) {
  return DpLowering(e, plan, nets, program, ops, r, backward_of, chunk_buckets).run();
}

}  // namespace trainsim
