// Op builder: core attention (flash / fused, MLA, context-parallel flavours).
#include "model/graph_ops.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/error.h"
#include "core/text.h"
#include "model/context_parallel.h"
#include "model/moe_dispatch.h"
#include "model/moe_kernels.h"
#include "passes/fp8.h"
#include "passes/offload.h"
#include "passes/recompute.h"

namespace trainsim::graph_ops {

// Fused attention (flash / cuDNN SDPA). FLOPs: 2·base fwd, 5·base bwd with
// base = B·h'·S_q·S·(d_qk + d_v), no causal halving (the peer's convention, also its calibration):
// h' heads after the CP all-to-all, S_q the queries a rank holds after it (S with a2a, S/cp with
// p2p and all_gather) against all S keys. The key has the shape of one kernel call (one ring
// step: S_q keys). `k_heads`/`k_dim` size K and V for memory: GQA uses kv heads of the head
// size; MLA uses all heads with K like Q and V of v_head_dim.
void core_attention(Leaf& l, const Ctx& c, double d_qk, double d_v, bool mla) {
  l.name = "core_attention";
  l.te_module = true;  // TE DotProductAttention
  const double h = static_cast<double>(c.m.head_num), kv = static_cast<double>(c.m.kv_head_num);
  const CpSplit split = c.cp > 1 ? cp_split(c.s) : CpSplit{};
  const double a2a = static_cast<double>(split.a2a);
  const double hp = h / c.tp / a2a, Sq = c.S_l * a2a, S = c.S_l * c.cp;
  const double base = c.B * hp * Sq * S * (d_qk + d_v) * (1 - c.s.fuse.attention_sparse_ratio);
  const double q_el = c.B * hp * Sq * d_qk, o_el = c.B * hp * Sq * d_v, lse_el = c.B * hp * Sq;
  const double kv_reads = S / Sq;  // every rank reads all S keys and values (1 with a2a)
  Kernel f, b;
  f.flops = 2 * base;
  f.op = OpClass::SdpFwd;
  const double v_el = mla ? c.B * hp * Sq * d_v : q_el;  // the peer sizes K (and MHA's V) like Q
  f.bytes = (q_el + kv_reads * (q_el + v_el) + o_el + lse_el) * c.e;
  b.flops = 5 * base;
  b.op = OpClass::SdpBwd;
  b.bytes = (2 * q_el + 2 * kv_reads * (q_el + v_el) + o_el + lse_el) * c.e;
  b.key = f.key = sdpa_key(c.B, Sq, hp, kv / c.tp / a2a, d_qk, d_v, true);
  l.kernels[kFwd] = {f};
  l.kernels[kBwdAct] = {b};
  // Activation sizes per TP rank over the local sequence (the peer sizes lse in 2 bytes).
  const double hl = h / c.tp, kvl = mla ? hl : kv / c.tp;
  const double q = c.B * hl * c.S_l * d_qk * 2, k = c.B * kvl * c.S_l * d_qk * 2;
  const double v = c.B * kvl * c.S_l * (mla ? d_v : d_qk) * 2, lse = c.B * hl * c.S_l * 2;
  const double o = c.B * c.S_l * hl * d_v * 2;
  const bool te28 = c.s.fuse.te.at_least(2, 8);
  const CpFlavor flavor = c.s.par.cp_comm;
  const bool cp_a2a = c.cp > 1 && flavor == CpFlavor::A2A;
  const bool save_o = (c.fp8 && c.s.fuse.flash_sdp) || (cp_a2a && te28);
  const double saved_o = save_o ? o : 0;
  l.cache = q + k + v + lse + saved_o;
  l.cache_inputs_cached = lse + saved_o;
  l.input_bytes = q + k + v;
  l.fpk = q + k + v + lse + o;
  l.bpk = 2 * q + 2 * k + 2 * v + lse + o - saved_o;
  if (!c.s.fuse.flash_sdp) {
    // Unfused (math) attention materializes the B·h·S×S score matrix P: it is saved with q, k,
    // v, and the softmax forward / backward hold two / four copies (the peer's math path with
    // the CUDA backend). Streaming P costs write+read of scores and probabilities forward and
    // three such passes backward (our estimate; the peer leaves math-SDP bytes unspecified).
    const double P = c.B * hl * c.S_l * c.S_l * 2;
    l.cache = q + k + v + P;
    l.cache_inputs_cached = P;
    l.fpk = 2 * P;
    l.bpk = 4 * P;
    l.kernels[kFwd][0].bytes += 4 * P;
    l.kernels[kBwdAct][0].bytes += 6 * P;
    if (c.s.fuse.dropout) {
      // Attention dropout (Megatron's attention_dropout): forward reads P, writes the dropped P
      // and a 1-byte mask; backward reads the gradient and the mask, writes the gradient. The
      // mask and the dropped P are saved: Korthikanti et al. 2022's 5as/h term = P, mask, dropped
      // P (2 + 1 + 2 bytes per element). Flash attention drops inside its kernel (no mask).
      l.cache += 1.5 * P;
      l.cache_inputs_cached += 1.5 * P;
      l.kernels[kFwd][0].bytes += 2.5 * P;
      l.kernels[kBwdAct][0].bytes += 2.5 * P;
    }
  }
  if (cp_a2a) {
    // Ulysses all-to-all: q, k, v before and o after; backward the gradients, plus O again
    // before TE 2.8 (which then saves the post-a2a output instead).
    const double qa = c.B * hl * c.S_l * d_qk * c.e, ka = c.B * kvl * c.S_l * d_qk * c.e;
    const double va = c.B * kvl * c.S_l * d_v * c.e, oa = c.B * hl * c.S_l * d_v * c.e;
    for (double bytes : {qa, ka, va, oa})
      add_comm(l, kFwd, Collective::AllToAll, Group::CP, bytes, c.cp, "cp");
    for (double bytes : {qa, ka, va, oa})
      add_comm(l, kBwdAct, Collective::AllToAll, Group::CP, bytes, c.cp, "cp");
    if (!te28) add_comm(l, kBwdAct, Collective::AllToAll, Group::CP, oa, c.cp, "cp");
    if (c.s.fuse.flash_sdp) {
      // Stage-local peaks around the all-to-alls (the peer's _comp_cp_a2a_flash_peak_info).
      const bool async = c.s.par.cp_a2a_async;
      auto three = [&](double x, double y, double z) {
        return async ? 4 * (x + y + z) : 2 * (x + y + z) + (y + z) + (x + y);
      };
      auto two = [&](double x, double y) { return async ? 4 * (x + y) : 3 * (x + y) + std::max(x, y); };
      auto one = [](double x) { return 4 * x; };
      const double qkv = q + k + v, saved = l.cache;
      l.fpk = std::max({three(q, k, v), 3 * qkv + o, 2 * qkv + 4 * o, qkv + saved});
      double bwd_pre, base_m;
      if (te28) {
        bwd_pre = saved + one(o);
        base_m = saved + 2 * o;
      } else {
        bwd_pre = two(o, o);
        base_m = 4 * o;
      }
      const double bwd_fa = std::max(qkv + base_m, 2 * qkv + base_m + q + k);
      const double bwd_post = base_m + three(q, k, v);
      l.bpk = std::max({bwd_pre, bwd_fa, bwd_post}) - saved;
    }
  }
  if (c.cp > 1 && flavor == CpFlavor::A2AP2P) {
    // Hierarchical: Ulysses all-to-all of q, k, v and o inside the inner group (its gradients
    // in backward), then the ring below over the outer group.
    const double qa = c.B * hl * c.S_l * d_qk * c.e, ka = c.B * kvl * c.S_l * d_qk * c.e;
    const double va = c.B * kvl * c.S_l * d_v * c.e, oa = c.B * hl * c.S_l * d_v * c.e;
    for (Phase p : {kFwd, kBwdAct})
      for (double bytes : {qa, ka, va, oa}) add_comm(l, p, Collective::AllToAll, Group::CP, bytes, split.a2a, "cp");
  }
  if (c.cp > 1 && split.ring > 1) {
    // Ring: one KV block (the keys and values a rank holds after the all-to-all) per step; the
    // received block and the one in flight are live in forward, K, V, dK and dV blocks in
    // backward (TE double-buffers its P2P receives).
    l.ring_steps = split.ring;
    l.ring_block_bytes = c.B * (kvl / a2a) * Sq * (d_qk + (mla ? d_v : d_qk)) * c.e;
    l.fpk += 2 * (k + v);
    l.bpk += 4 * (k + v);
  }
  if (c.cp > 1 && flavor == CpFlavor::AllGather) {
    // TE AttnFuncWithCPAndKVAllGather: all-gather K and V before attention (and again in
    // backward, the gathered copies are not saved), reduce-scatter dK and dV after it.
    const double kv_full = (k + v) * c.cp / 2 * c.e;  // k, v are 2-byte sizes of the local part
    add_comm(l, kFwd, Collective::AllGather, Group::CP, kv_full, c.cp, "cp");
    add_comm(l, kBwdAct, Collective::AllGather, Group::CP, kv_full, c.cp, "cp");
    add_comm(l, kBwdAct, Collective::ReduceScatter, Group::CP, kv_full, c.cp, "cp");
    l.fpk += (k + v) * c.cp;
    l.bpk += 2 * (k + v) * c.cp;
  }
}

}  // namespace trainsim::graph_ops
