// Leaf ops of a chunk (the peer's dense_module / moe_module leaves, see docs/cost-model.md).
// Shapes per rank: S_l = S/cp, S_sp = S_l/tp under sequence parallelism; the Linear input is
// viewed as [b, m, in] with m = S_l after the SP all-gather.
#include "model/graph.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/error.h"
#include "core/text.h"
#include "model/context_parallel.h"
#include "model/moe_dispatch.h"
#include "passes/fp8.h"
#include "passes/offload.h"
#include "passes/recompute.h"

namespace trainsim {
namespace {

struct Ctx {
  const ModelConfig& m;
  const StrategyConfig& s;
  double B, S, S_l, S_sp, H;
  int64_t tp, cp;
  double e;          // activation element bytes
  double a;          // Linear activation bytes (1 under fp8)
  double w;          // Linear weight bytes in a GEMM (1 under fp8)
  bool sp;
  bool fp8;
  KeyDtype wgrad_dtype;  // the weight gradient's output dtype (bf16 or fp32)
  bool dummy_wgrad;  // TE ≥ 2.3 allocates a dummy wgrad per unique Linear weight shape
  bool megatron;     // default mode: the tensors Megatron/TE save (else the peer's bookkeeping)
  const ChunkEnv& env;
};

Kernel mem_kernel(double bytes, const char* bw = "default") {
  Kernel k;
  k.bytes = bytes;
  k.bw = bw;
  return k;
}

void add_comm(Leaf& l, Phase p, Collective c, Group g, double bytes, int64_t n, const char* stage) {
  if (n <= 1) return;
  l.comms[p].push_back({c, g, bytes, n, stage});
}

// The leaf builders below fill a leaf that their caller constructed in place in its vector: a
// leaf is about 1 KB, so building it elsewhere and moving it in costs as much as filling it.

// Extra bytes per element of SimuMax v1.2's unfused RMSNorm over the fused kernel (compat mode;
// fitted, see layer_norm).
constexpr double kUnfusedNormFwdBytes = 26, kUnfusedNormBwdBytes = 56;

// Fused RMSNorm over [B, S_sp, H] (TE LayerNorm bytes: in + gamma + out; bwd adds rstd).
void layer_norm(Leaf& l, const Ctx& c, std::string_view name, double width = 0) {
  l.name = name;
  l.te_module = true;  // TENorm (or the norm of a fused LayerNormLinear)
  const double Hn = width > 0 ? width : c.H;
  const double X = c.B * c.S_sp * Hn, rstd = c.B * c.S_sp;
  l.kernels[kFwd] = {mem_kernel(X * c.e + Hn * c.e + X * c.e)};
  l.kernels[kBwdAct] = {mem_kernel(X * c.e + Hn * c.e + X * c.e + rstd * c.e)};
  l.kernels[kBwdW] = {mem_kernel(X * c.e + 2 * Hn * c.e)};
  l.params = Hn;
  l.weight_elem_bytes = c.e;  // parameters in the training dtype (4 bytes with fp32)
  l.input_bytes = X * c.e;
  if (c.s.use_fused_norm) {
    l.cache = X * c.e;
    l.fpk = 2 * X * c.e;
    l.bpk = 2 * X * c.e + rstd * 2;
  } else {
    // Unfused: fp32 intermediates (x, normalized x) and rstd saved.
    const double rstd4 = rstd * 4;
    if (!c.megatron) {
      // SimuMax v1.2's unfused RMSNorm moves 26 more bytes per normalized element forward and 56
      // more backward than the fused kernel (fitted on its 6 unfused-norm variants, 3 models on
      // 2 systems: residual <= 0.02 ms; the split between the two backward kernels is not
      // observable in its step time, so it goes to the input gradient).
      l.kernels[kFwd][0].bytes += kUnfusedNormFwdBytes * X;
      l.kernels[kBwdAct][0].bytes += kUnfusedNormBwdBytes * X;
    }
    l.cache = 2 * X * 4 + 2 * rstd4 + X * c.e;
    l.fpk = 3 * X * 4 + 2 * rstd4;
    l.bpk = l.fpk;
  }
}

void linear_common(const Ctx& c, Leaf& l, double m_rows, double in, double out, double flops,
                   double x_in, double x_out, double wt, bool fp8) {
  l.te_module = true;  // TE Linear / LayerNormLinear
  const double a = fp8 ? 1 : c.e, w = fp8 ? 1 : c.e;
  const char* op = fp8 ? "fp8_matmul" : "matmul";
  const double bytes = x_in * a + wt * w + x_out * 2;
  for (int p = 0; p < 3; ++p) {
    Kernel k;
    k.flops = flops;
    k.op = op;
    k.bytes = bytes;
    l.kernels[p] = {k};
  }
  if (c.s.use_fused_grad_accumulation) l.kernels[kBwdW][0].bytes += wt * 4;
  l.kernels[kFwd][0].key = matmul_key(c.B, m_rows, in, out, KeyLayout::TN, false, KeyDtype::bf16);
  l.kernels[kBwdAct][0].key = matmul_key(c.B, m_rows, out, in, KeyLayout::NN, false, KeyDtype::bf16);
  l.kernels[kBwdW][0].key = matmul_key(1, out, c.B * m_rows, in, KeyLayout::NT, true, c.wgrad_dtype);
  l.params = wt;
  l.weight_elem_bytes = fp8 && c.megatron ? fp8_weight_bytes(c.s.fp8_recipe, c.s.fp8_param_gather, c.env.blackwell) : w;
  l.recompute_repeats_comm = true;
  if (c.dummy_wgrad) {
    l.dummy_rows = static_cast<int64_t>(out);
    l.dummy_cols = static_cast<int64_t>(in);
    l.dummy_wgrad_bytes = wt * 2;
  }
}

// Bytes a Linear saves per input element for its weight gradient: under fp8 TE's saved copy and
// its scales per recipe (passes/fp8), the peer's 1 byte in compat mode.
double saved_input_bytes(const Ctx& c, bool fp8) {
  if (!fp8) return c.e;
  return c.megatron ? fp8_saved_input_bytes(c.s.fp8_recipe) : 1;
}

// Whether TE's forward cast of a Linear's fp8 input also writes the transpose the weight gradient
// needs (per-tensor recipes on Hopper, whose fp8 GEMMs take only the TN layout): TE fuses cast and
// transpose (1.x fp8_cast_transpose_fused, 2.x both usages of the quantizer) unless the input
// is all-gathered in fp8 under sequence parallelism, which only the row-wise data can be: every
// SP Linear in TE 1.x ("not sequence_parallel"; also taken when te_version is not given), the
// column-parallel ones in TE 2.x (linear.py: Float8Quantizer set_usage(columnwise=False)); those
// transpose in the backward. Blackwell needs no transpose; blockwise and mxfp8 always write both.
bool fp8_cast_transpose(const Ctx& c, bool column_parallel, bool sequence_parallel) {
  if (!c.megatron || c.env.blackwell) return false;
  if (!sequence_parallel) return true;
  return !column_parallel && version_at_least(c.s.te_version, "2.0.0");
}

// Column-parallel Linear (Megatron ColumnParallelLinear): SP all-gathers its input.
void linear_col(Leaf& l, const Ctx& c, std::string_view name, double in, double out, bool allow_fp8 = true) {
  l.name = name;
  const bool fp8 = c.fp8 && allow_fp8;
  const double a = fp8 ? 1 : c.e;
  const double out_l = out / c.tp, X_in = c.B * c.S_l * in, X_out = c.B * c.S_l * out_l;
  const double W = in * out_l;
  linear_common(c, l, c.S_l, in, out_l, 2 * X_in * out_l, X_in, X_out, W, fp8);
  const double ag_bytes = c.B * c.S_l * in * c.e;
  if (c.sp) {
    add_comm(l, kFwd, Collective::AllGather, Group::TP, ag_bytes, c.tp, "tp");
    add_comm(l, kBwdAct, Collective::ReduceScatter, Group::TP, ag_bytes, c.tp, "tp");
    add_comm(l, kBwdW, Collective::AllGather, Group::TP, ag_bytes, c.tp, "tp");
  } else {
    add_comm(l, kBwdAct, Collective::AllReduce, Group::TP, ag_bytes, c.tp, "tp");
  }
  // With SP, TE saves the local input shard and all-gathers it again for the weight gradient;
  // under fp8 the peer keeps the gathered fp8 copy instead.
  l.cache = c.B * c.S_l * in * saved_input_bytes(c, fp8) / ((c.sp && (!fp8 || c.megatron)) ? c.tp : 1);
  l.cache_inputs_cached = 0;
  l.fpk = c.B * c.S_l * in * a + c.B * c.S_l * out_l * 2 + (c.s.use_accm_weight ? 0 : W * (fp8 ? 1 : 2));
  l.bpk = l.fpk;
  l.input_bytes = c.B * c.S_sp * in * c.e;
  l.fp8_cast_transpose = fp8_cast_transpose(c, true, c.sp);
}

// Row-parallel Linear (Megatron RowParallelLinear): SP reduce-scatters its output.
void linear_row(Leaf& l, const Ctx& c, std::string_view name, double in, double out) {
  l.name = name;
  const bool fp8 = c.fp8;
  const double a = fp8 ? 1 : c.e;
  const double in_l = in / c.tp, X_in = c.B * c.S_l * in_l, X_out = c.B * c.S_l * out;
  const double W = in_l * out;
  linear_common(c, l, c.S_l, in_l, out, 2 * X_in * out, X_in, X_out, W, fp8);
  // The peer's row-parallel wgrad bytes omit the weight read: out + in (+ fp32 main grad).
  l.kernels[kBwdW][0].bytes = X_out * 2 + X_in * a + (c.s.use_fused_grad_accumulation ? W * 4 : 0);
  const double bytes = c.B * c.S_l * out * c.e;
  if (c.sp) {
    add_comm(l, kFwd, Collective::ReduceScatter, Group::TP, bytes, c.tp, "tp");
    add_comm(l, kBwdAct, Collective::AllGather, Group::TP, bytes, c.tp, "tp");
  } else {
    add_comm(l, kFwd, Collective::AllReduce, Group::TP, bytes, c.tp, "tp");
  }
  l.cache = X_in * saved_input_bytes(c, fp8);
  l.fpk = X_in * a + X_out * 2 + (c.s.use_accm_weight ? 0 : W * (fp8 ? 1 : 2));
  l.bpk = l.fpk;
  l.input_bytes = X_in * c.e;
  l.fp8_cast_transpose = fp8_cast_transpose(c, false, c.sp);
}

// Replicated Linear (TE parallel_mode "duplicated", MLA's q/kv down projections): every TP
// rank holds the whole weight and runs it on its own tokens (S/tp under sequence parallelism);
// the up projection then all-gathers the small latent. Megatron all-reduces these weight
// gradients over TP once per step (not modeled: latent weights are ~1 % of the layer).
void linear_dup(Leaf& l, const Ctx& c, std::string_view name, double in, double out) {
  l.name = name;
  const bool fp8 = c.fp8;
  const double a = fp8 ? 1 : c.e;
  const double X_in = c.B * c.S_sp * in, X_out = c.B * c.S_sp * out, W = in * out;
  linear_common(c, l, c.S_sp, in, out, 2 * X_in * out, X_in, X_out, W, fp8);
  l.cache = X_in * saved_input_bytes(c, fp8);
  l.fpk = X_in * a + X_out * 2 + (c.s.use_accm_weight ? 0 : W * (fp8 ? 1 : 2));
  l.bpk = l.fpk;
  l.input_bytes = X_in * c.e;
  l.fp8_cast_transpose = fp8_cast_transpose(c, false, false);  // TE sees no TP group
}

// Per-head RMSNorm of q and k (Megatron --qk-layernorm, Qwen3): one memory pass over the local
// q and k (read, write; backward also the gradient), inputs saved for backward, 2·d weights.
void qk_layernorm(Leaf& l, const Ctx& c, double d) {
  l.name = "qk_layernorm";
  l.te_module = true;
  const double heads = static_cast<double>(c.m.head_num + c.m.kv_head_num) / static_cast<double>(c.tp);
  const double X = c.B * c.S_l * heads * d * c.e;
  l.kernels[kFwd] = {mem_kernel(2 * X)};
  l.kernels[kBwdAct] = {mem_kernel(3 * X)};
  l.params = 2 * d;
  l.weight_elem_bytes = c.e;  // parameters in the training dtype (4 bytes with fp32)
  l.cache = X;
  l.fpk = 2 * X;
  l.bpk = 3 * X;
  l.input_bytes = X;
}

void zero_leaf(Leaf& l, std::string_view name) {
  l.name = name;
}

// Megatron's bias-dropout-add after the attention projection and after the MLP (self_attn_bda,
// mlp_bda; bias_dropout_add_fused_train): out = residual + dropout(x + bias) over the [B, S_sp, H]
// activation, which every TP rank holds whole without sequence parallelism. Forward reads x and
// the residual and writes the output and a 1-byte mask; backward reads the gradient and the mask
// and writes the input gradient (the residual's gradient is the same tensor). The mask is saved:
// the sbh dropout-mask terms of Korthikanti et al. 2022's 34·s·b·h per layer.
void bias_dropout_add(Leaf& l, const Ctx& c, std::string_view name) {
  l.name = name;
  const double X = c.B * c.S_sp * c.H;
  l.kernels[kFwd] = {mem_kernel(X * (3 * c.e + 1))};
  l.kernels[kBwdAct] = {mem_kernel(X * (2 * c.e + 1))};
  l.cache = X;
  l.input_bytes = X * c.e;
}

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
  const double base = c.B * hp * Sq * S * (d_qk + d_v) * (1 - c.s.attention_sparse_ratio);
  const double q_el = c.B * hp * Sq * d_qk, o_el = c.B * hp * Sq * d_v, lse_el = c.B * hp * Sq;
  const double kv_reads = S / Sq;  // every rank reads all S keys and values (1 with a2a)
  Kernel f, b;
  f.flops = 2 * base;
  f.op = "sdp_fwd";
  const double v_el = mla ? c.B * hp * Sq * d_v : q_el;  // the peer sizes K (and MHA's V) like Q
  f.bytes = (q_el + kv_reads * (q_el + v_el) + o_el + lse_el) * c.e;
  b.flops = 5 * base;
  b.op = "sdp_bwd";
  b.bytes = (2 * q_el + 2 * kv_reads * (q_el + v_el) + o_el + lse_el) * c.e;
  f.key = sdpa_key(c.B, Sq, hp, kv / c.tp / a2a, d_qk, d_v, true);
  b.key = f.key;
  l.kernels[kFwd] = {f};
  l.kernels[kBwdAct] = {b};
  // Activation sizes per TP rank over the local sequence (the peer sizes lse in 2 bytes).
  const double hl = h / c.tp, kvl = mla ? hl : kv / c.tp;
  const double q = c.B * hl * c.S_l * d_qk * 2, k = c.B * kvl * c.S_l * d_qk * 2;
  const double v = c.B * kvl * c.S_l * (mla ? d_v : d_qk) * 2, lse = c.B * hl * c.S_l * 2;
  const double o = c.B * c.S_l * hl * d_v * 2;
  const bool te28 = version_at_least(c.s.te_version, "2.8.0");
  const CpFlavor flavor = cp_flavor(c.s.cp_comm_type);
  const bool cp_a2a = c.cp > 1 && flavor == CpFlavor::A2A;
  const bool save_o = (c.fp8 && c.s.use_flash_sdp) || (cp_a2a && te28);
  const double saved_o = save_o ? o : 0;
  l.cache = q + k + v + lse + saved_o;
  l.cache_inputs_cached = lse + saved_o;
  l.input_bytes = q + k + v;
  l.fpk = q + k + v + lse + o;
  l.bpk = 2 * q + 2 * k + 2 * v + lse + o - saved_o;
  if (!c.s.use_flash_sdp) {
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
    if (c.s.enable_dropout) {
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
    if (c.s.use_flash_sdp) {
      // Stage-local peaks around the all-to-alls (the peer's _comp_cp_a2a_flash_peak_info).
      const bool async = c.s.cp_a2a_mode == "async_cp";
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

// Bytes a SwiGLU moves, `out` the bytes of its output. Fused: its input and output. Unfused, as
// PyTorch runs silu(x1) * x2: forward silu reads x1 and writes its output, mul reads both and
// writes the product (5 × out); backward mul reads the gradient, x2 and silu(x1) and writes two
// gradients, silu's backward reads its gradient and x1 and writes dx1 (8 × out). SimuMax v1.2's
// unfused variants move the same bytes (its 4 unfused-SwiGLU cases, dense and expert).
double swiglu_bytes(const Ctx& c, double out, bool backward) {
  if (c.s.use_fused_swiglu) return 3 * out;
  return (backward ? 8 : 5) * out;
}

void swiglu(Leaf& l, const Ctx& c, double out_l) {
  l.name = "swiglu";
  const double out = c.B * c.S_l * out_l * c.e, in = 2 * out;
  l.kernels[kFwd] = {mem_kernel(swiglu_bytes(c, out, false))};
  l.kernels[kBwdAct] = {mem_kernel(swiglu_bytes(c, out, true))};
  l.cache = c.s.use_fused_swiglu ? in : 3 * out;
  l.fpk = in + out;
  l.bpk = in + out;
  l.input_bytes = in;
}

void gelu(Leaf& l, const Ctx& c, double width_l) {
  l.name = "gelu";
  const double in = c.B * c.S_l * width_l * c.e;
  l.kernels[kFwd] = {mem_kernel(2 * in)};
  l.kernels[kBwdAct] = {mem_kernel(2 * in)};
  // Megatron's bias-GELU saves its input only (its output is fc2's input, saved by fc2); the
  // peer counts three copies.
  l.cache = c.megatron ? in : 3 * in;
  l.fpk = 2 * in;
  l.bpk = 2 * in;
  l.input_bytes = in;
}

// Vocab-parallel embedding: reads the whole local table; the forward all-reduce is sized at the
// SP-local sequence even with SP (the peer's "all reduce + slice").
void embedding(Leaf& l, const Ctx& c, double Vt) {
  l.name = "embedding";
  l.kernels[kFwd] = {mem_kernel(c.B * c.S_l * 4 + Vt * c.H * c.e + c.B * c.S_l * c.H * c.e)};
  l.kernels[kBwdW] = {mem_kernel(2 * Vt * c.H * 4)};
  add_comm(l, kFwd, Collective::AllReduce, Group::TP, c.B * c.S_sp * c.H * c.e, c.tp, "tp");
  if (c.sp) add_comm(l, kBwdW, Collective::AllGather, Group::TP, c.B * c.S_sp * c.H * c.e, c.tp, "tp");
  l.params = Vt * c.H;
  l.weight_elem_bytes = c.e;  // parameters in the training dtype (4 bytes with fp32)
  l.cache = 0;
  l.fpk = c.B * c.S_l * 4 + c.B * c.S_l * c.H * 2 + (c.s.use_accm_weight ? 0 : Vt * c.H * 2);
  l.bpk = Vt * c.H * 2;
  l.input_bytes = c.B * c.S_l * 4;
}

// Vocab-parallel cross entropy: fused (TE) or Megatron's fp32 pipeline.
void cross_entropy(Leaf& l, const Ctx& c, double Vt) {
  l.name = "cross_entropy";
  const double tokens = c.B * c.S_l, logits = tokens * Vt;
  if (c.s.cross_entropy_loss_fusion) {
    l.kernels[kFwd] = {mem_kernel(2 * logits * c.e + tokens * 4, "ce_fusion")};
    l.kernels[kBwdAct] = {mem_kernel(2 * logits * c.e + tokens * 4, "ce_fusion")};
    add_comm(l, kFwd, Collective::AllReduce, Group::TP, 4 * tokens, c.tp, "tp");
    add_comm(l, kFwd, Collective::AllReduce, Group::TP, 8 * tokens, c.tp, "tp");
    l.cache = logits * 2;
    l.fpk = logits * 2 + 4 * tokens * 4 + (c.tp > 1 ? 3 * tokens * c.tp * 4 : 0);
    l.bpk = 0;
  } else {
    // fp32 logits, max, exp, sum, log-softmax and their gathers (Megatron
    // vocab_parallel_cross_entropy), bytes per logit 4+2+4+8+8+4+8 forward, 4+4+4+2 backward.
    l.kernels[kFwd] = {mem_kernel(38 * logits + 4 * tokens * 4, "ce")};
    l.kernels[kBwdAct] = {mem_kernel(14 * logits + 2 * tokens * 4, "ce")};
    add_comm(l, kFwd, Collective::AllReduce, Group::TP, 4 * tokens, c.tp, "tp");
    add_comm(l, kFwd, Collective::AllReduce, Group::TP, 4 * tokens, c.tp, "tp");
    add_comm(l, kFwd, Collective::AllReduce, Group::TP, 4 * tokens, c.tp, "tp");
    l.cache = logits * 4;
    l.fpk = logits * 4 + logits * c.e;  // the fp32 copy beside the logits in the training dtype
    l.bpk = 0;
  }
  l.input_bytes = logits * c.e;
}


// Megatron's cross_entropy_fusion_impl 'linear': the output projection and the loss run over
// vocabulary chunks of lce_vocab_split_size columns, so the [tokens, V/t] logits never exist in
// full. The projection keeps its FLOPs, keyed as one chunk's GEMM; backward re-runs each chunk's
// forward GEMM before its dgrad and wgrad (one more forward GEMM: our model of the chunked
// kernel). Saved for backward: the hidden input (the projection's cache) and fp32 max and sum-exp
// per token; in flight: one fp32 chunk (forward), a recomputed chunk and its gradient (backward).
void fuse_linear_cross_entropy(const Ctx& c, Leaf& out, Leaf& ce, double Vt) {
  const double tokens = c.B * c.S_l, split = std::min(Vt, static_cast<double>(c.s.lce_vocab_split_size));
  const double chunk = tokens * split, x = tokens * c.H * c.e;
  out.kernels[kFwd][0].key = matmul_key(c.B, c.S_l, c.H, split, KeyLayout::TN, false, KeyDtype::bf16);
  out.kernels[kBwdAct][0].key = matmul_key(c.B, c.S_l, split, c.H, KeyLayout::NN, false, KeyDtype::bf16);
  out.kernels[kBwdW][0].key = matmul_key(1, split, tokens, c.H, KeyLayout::NT, true, c.wgrad_dtype);
  out.kernels[kBwdAct].push_back(out.kernels[kFwd][0]);
  const double weight = c.s.use_accm_weight ? 0 : out.params * 2;
  out.fpk = x + chunk * 2 + weight;
  out.bpk = 2 * x + chunk * 2 + weight;
  ce.cache = tokens * 8;
  ce.cache_inputs_cached = 0;
  ce.fpk = chunk * 4 + tokens * 8;
  ce.bpk = chunk * 8;
}

// MoE router: a replicated Linear(H → N_E) with softmax/top-k over the local tokens. Its key uses
// the SP-gathered sequence, its FLOPs the local one (the peer's Router).
void router(Leaf& l, const Ctx& c) {
  l.name = "router";
  const double NE = static_cast<double>(c.m.expert_num), T = c.B * c.S_sp;
  const double Ls = T * NE * c.e * (c.sp ? static_cast<double>(c.tp) : 1.0);
  const double lin = (c.H * NE + T * c.H + T * NE) * c.e;
  for (int p = 0; p < 3; ++p) {
    Kernel k;
    k.flops = 2 * T * c.H * NE;
    k.op = "matmul";
    k.bytes = lin + (p == kFwd ? 2 * Ls : (p == kBwdAct ? 3 * Ls : 0));
    l.kernels[p] = {k};
  }
  l.kernels[kFwd][0].key = matmul_key(c.B, c.S_l, c.H, NE, KeyLayout::TN, false, KeyDtype::bf16);
  l.kernels[kBwdAct][0].key = matmul_key(c.B, c.S_l, NE, c.H, KeyLayout::NN, false, KeyDtype::bf16);
  l.kernels[kBwdW][0].key = matmul_key(1, NE, c.B * c.S_l, c.H, KeyLayout::NT, true, c.wgrad_dtype);
  l.params = c.H * NE;
  l.weight_elem_bytes = c.e;  // parameters in the training dtype (4 bytes with fp32)
  l.cache = T * c.H * 2;
  l.fpk = T * c.H * 2 + T * NE * 2 + c.H * NE * 2;
  l.bpk = l.fpk;
  l.input_bytes = T * c.H * c.e;
}

struct MoeShape {
  double T;       // local tokens B·S_sp
  double P;       // permuted tokens on this rank (balanced routing, capacity padded)
  double El;      // local experts
  double M;       // tokens per local expert after dispatch and the ETP all-gather
};

MoeShape moe_shape(const Ctx& c) {
  const double NE = static_cast<double>(c.m.expert_num), k = static_cast<double>(c.m.topk.value_or(1));
  const double ep = static_cast<double>(c.s.ep_size), T = c.B * c.S_sp;
  // Expert tensor parallelism all-gathers the dispatched tokens over the ETP group before the
  // expert GEMMs (each rank holds 1/etp of every local expert): they see etp× the tokens.
  const double etp = static_cast<double>(c.s.etp_size);
  MoeShape sh;
  sh.T = T;
  sh.El = NE / ep;
  if (c.m.moe_pad_expert_input_to_capacity) {
    sh.P = std::ceil(k * T / NE) * NE * c.m.capacity;
    sh.M = std::ceil(k * T / NE) * c.m.capacity * ep * etp;
  } else {
    // Dropless: the busiest EP rank's experts get `moe_imbalance` times the mean and set the pace.
    sh.P = k * T;
    sh.M = k * T / NE * ep * etp * c.env.moe_imbalance;
  }
  return sh;
}

// Bytes one rank's dispatch (or combine) moves per micro-batch, by dispatcher (Megatron
// token_dispatcher.py): `alltoall` sends its k·T routed copies and the busiest rank receives
// `imbalance` times that; `allgather` gathers every token of the EP×ETP group (the full tensor);
// DeepEP (`flex`) sends a token once per destination node across nodes (forwarded inside the
// node over NVLink, hidden under the RDMA transfer) and like alltoall inside one node.
struct DispatchComm {
  Collective fwd, bwd;
  double bytes;
  int64_t n;
  bool etp_separate;  // alltoall: the ETP all-gather / reduce-scatter follows the all-to-all
};

DispatchComm dispatch_comm(const Ctx& c, const MoeShape& sh, bool combine) {
  const int64_t ep = c.s.ep_size, etp = c.s.etp_size;
  const double tok = c.H * c.e;
  switch (moe_dispatcher(c.s)) {
    case MoeDispatcher::AllGather:
      return {combine ? Collective::ReduceScatter : Collective::AllGather,
              combine ? Collective::AllGather : Collective::ReduceScatter,
              sh.T * tok * static_cast<double>(ep * etp), ep * etp, false};
    case MoeDispatcher::Flex: {
      const int64_t group = ep * etp, nodes = (group + c.env.gpus_per_node - 1) / c.env.gpus_per_node;
      if (nodes <= 1) return {Collective::AllToAll, Collective::AllToAll, sh.P * tok * c.env.moe_imbalance * static_cast<double>(etp), group, false};
      const double per_token = expected_token_nodes(c.m.expert_num, c.m.topk.value_or(1), nodes);
      return {Collective::AllToAll, Collective::AllToAll,
              sh.T * tok * per_token * c.env.moe_imbalance * static_cast<double>(etp), group, false};
    }
    case MoeDispatcher::AllToAll: break;
  }
  return {Collective::AllToAll, Collective::AllToAll, sh.P * tok * c.env.moe_imbalance, ep, true};
}

// Token permutation around the dispatch: two kernels (the peer's Permutation), one pass with
// TE's fused permute (`moe_permute_fusion`).
void permutation(Leaf& l, const Ctx& c, const MoeShape& sh) {
  l.name = "permutation";
  // Without padding to capacity the experts' token counts are data: every dispatcher copies
  // them to the host before it sizes the permuted buffers (Megatron's MoEAlltoAllTokenDispatcher
  // and MoEAllGatherTokenDispatcher `.cpu()` / `.tolist()`, DeepEP's dispatch waiting for the
  // received counts), so the host waits for the router here.
  l.host_sync = c.env.mode == Mode::Default && !c.m.moe_pad_expert_input_to_capacity;
  const double NE = static_cast<double>(c.m.expert_num);
  const double k1 = (sh.T * c.H + sh.P * c.H) * c.e, k2 = 2 * sh.P * c.H * c.e;
  l.kernels[kFwd] = {mem_kernel(k1, "permute_fwd"), mem_kernel(k2, "permute_fwd")};
  l.kernels[kBwdAct] = {mem_kernel(k1, "permute_bwd"), mem_kernel(k2, "permute_bwd")};
  if (c.s.moe_permute_fusion) {
    l.kernels[kFwd].pop_back();
    l.kernels[kBwdAct].pop_back();
  }
  const int64_t ep = c.s.ep_size, etp = c.s.etp_size;
  const DispatchComm d = dispatch_comm(c, sh, false);
  add_comm(l, kFwd, d.fwd, Group::EP, d.bytes, d.n, "Dispatch_FWD_EP");
  add_comm(l, kBwdAct, d.bwd, Group::EP, d.bytes, d.n, "Dispatch_FWD_EP");
  for (Phase p : {kFwd, kBwdAct})
    if (c.s.dispatch_probs) add_comm(l, p, Collective::AllToAll, Group::EP, sh.T * NE * c.e, ep, "Dispatch_FWD_EP");
  if (d.etp_separate) {
    add_comm(l, kFwd, Collective::AllGather, Group::ETP, sh.P * c.H * c.e * static_cast<double>(etp), etp, "etp");
    add_comm(l, kBwdAct, Collective::ReduceScatter, Group::ETP, sh.P * c.H * c.e * static_cast<double>(etp), etp, "etp");
  }
  l.recompute_repeats_comm = true;
  l.cache = sh.T * NE * 8;  // routing probs and indices
  l.input_bytes = sh.T * c.H * c.e;
}

void unpermutation(Leaf& l, const Ctx& c, const MoeShape& sh) {
  l.name = "unpermutation";
  const double Pp = sh.P;
  const double k1 = 2 * Pp * c.H * c.e, k2 = (Pp * c.H + sh.T * c.H) * c.e;
  l.kernels[kFwd] = {mem_kernel(k1, "permute_fwd"), mem_kernel(k2, "permute_fwd")};
  l.kernels[kBwdAct] = {mem_kernel(k1, "permute_bwd"), mem_kernel(k2, "permute_bwd")};
  if (c.s.moe_permute_fusion) {
    l.kernels[kFwd].erase(l.kernels[kFwd].begin());
    l.kernels[kBwdAct].erase(l.kernels[kBwdAct].begin());
  }
  const int64_t etp = c.s.etp_size;
  const DispatchComm d = dispatch_comm(c, sh, true);
  if (d.etp_separate) {
    add_comm(l, kFwd, Collective::ReduceScatter, Group::ETP, Pp * c.H * c.e * static_cast<double>(etp), etp, "etp");
    add_comm(l, kBwdAct, Collective::AllGather, Group::ETP, Pp * c.H * c.e * static_cast<double>(etp), etp, "etp");
  }
  add_comm(l, kFwd, d.fwd, Group::EP, d.bytes, d.n, "Combine_FWD_EP");
  add_comm(l, kBwdAct, d.bwd, Group::EP, d.bytes, d.n, "Combine_FWD_EP");
  l.recompute_repeats_comm = true;
  if (c.s.dispatch_probs) {
    l.cache = 0;
    l.fpk = std::max(Pp, sh.T) * c.H * 2;
    l.bpk = 0;
  } else {
    l.cache = Pp * c.H * 2;
    l.fpk = (Pp + sh.T) * c.H * 2;
    l.bpk = l.fpk;
  }
  l.input_bytes = Pp * c.H * c.e;
}

// Expert GEMMs: grouped GEMM over the local experts (TE GroupedLinear), or one Linear per expert.
void grouped_linear(Leaf& l, const Ctx& c, const MoeShape& sh, std::string_view name, double in, double out, bool col) {
  l.name = name;
  l.grouped = true;
  l.te_module = true;  // TE GroupedLinear
  const bool fp8 = c.fp8;
  const double a = fp8 ? 1 : c.e, w = fp8 ? 1 : c.e;
  const double Tl = sh.M * sh.El;
  const double flops = 2 * Tl * in * out;
  const double bytes = Tl * in * a + sh.El * in * out * w + Tl * out * 2;
  const KeyDtype mg = c.s.grad_reduce_in_bf16 ? KeyDtype::bf16 : KeyDtype::fp32;
  const KeyStage stages[3] = {KeyStage::fwd, KeyStage::bwd_grad_act, KeyStage::bwd_grad_w};
  // grad, accumulate, use_split_accumulator, single_output per phase.
  const bool flags[3][4] = {{false, false, false, true}, {true, false, true, false}, {true, true, true, false}};
  const bool serial = c.m.group_linear_mode == "serial";
  for (int p = 0; p < 3; ++p) {
    const double extra = (p == kBwdW && c.s.use_fused_grad_accumulation) ? in * out * 4 : 0;
    if (serial) {
      // One Linear per local expert: the peer's serial mode runs El matmuls of M tokens.
      Kernel k;
      k.flops = flops / sh.El;
      k.op = fp8 ? "fp8_matmul" : "matmul";
      k.bytes = (bytes + extra) / sh.El;
      if (p == kFwd) k.key = matmul_key(1, sh.M, in, out, KeyLayout::TN, false, KeyDtype::bf16);
      if (p == kBwdAct) k.key = matmul_key(1, sh.M, out, in, KeyLayout::NN, false, KeyDtype::bf16);
      if (p == kBwdW) k.key = matmul_key(1, out, sh.M, in, KeyLayout::NT, true, c.wgrad_dtype);
      l.kernels[p].assign(static_cast<size_t>(sh.El), k);
      continue;
    }
    Kernel k;
    k.flops = flops;
    k.op = fp8 ? "fp8_group_matmul" : "group_matmul";
    k.bytes = bytes + extra;
    k.key = grouped_key(sh.El, sh.M, out, in, fp8 ? KeyDtype::fp8 : KeyDtype::bf16, KeyDtype::bf16, mg,
                        stages[p], flags[p][0], flags[p][1], flags[p][2], flags[p][3]);
    l.kernels[p] = {k};
  }
  l.params = sh.El * in * out;
  l.moe_params = true;
  l.weight_elem_bytes = fp8 && c.megatron ? fp8_weight_bytes(c.s.fp8_recipe, c.s.fp8_param_gather, c.env.blackwell) : w;
  const bool offload = col && c.s.offload_groupgemm_col_inputs;
  l.cache = offload ? 0 : Tl * in * saved_input_bytes(c, fp8);
  l.fpk = Tl * in * a + Tl * out * 2 + (c.s.use_accm_weight ? 0 : sh.El * in * out * w);
  l.bpk = Tl * in * a + Tl * out * 2 + (fp8 ? sh.El * in * out * 4 : 0) + (offload ? Tl * in * a : 0);
  l.input_bytes = Tl * in * c.e;
  // cache_groupgemm_col_fp8_inputs: the checkpoint of a recomputed segment starting here is the
  // fp8 input the GEMM keeps (passes/recompute.cpp makes it a segment start).
  if (col && fp8 && c.s.cache_groupgemm_col_fp8_inputs) l.input_bytes = Tl * in;
  if (c.s.use_fused_grad_accumulation && version_at_least(c.s.te_version, "2.10.0")) {
    l.dummy_rows = static_cast<int64_t>(out);
    l.dummy_cols = static_cast<int64_t>(in);
    l.dummy_wgrad_bytes = in * out * 2;
  }
  l.fp8_cast_transpose = fp8_cast_transpose(c, col, false);  // dispatched tokens: no SP gather
}

// Expert activation; with dispatch_probs the routing weights are applied inside (weighted SiLU).
void expert_swiglu(Leaf& l, const Ctx& c, const MoeShape& sh, double width) {
  l.name = "expert_swiglu";
  const double Tl = sh.M * sh.El;
  const double out = Tl * width * c.e, in = 2 * out;
  const double probs = c.s.dispatch_probs ? Tl : 0;
  l.kernels[kFwd] = {mem_kernel(swiglu_bytes(c, out, false) + probs * 2)};
  l.kernels[kBwdAct] = {mem_kernel(swiglu_bytes(c, out, true) + probs * 2)};
  l.cache = c.s.use_fused_swiglu ? in : 3 * out;  // unfused: the two halves and the SiLU output
  l.fpk = in + out + probs * 8;
  l.bpk = in + out + probs * 8;
  l.input_bytes = in;
}

}  // namespace

const char* group_name(Group g) {
  static const char* kNames[] = {"tp", "cp", "dp", "pp", "ep", "etp", "edp"};
  return kNames[static_cast<size_t>(g)];
}

namespace {

Ctx make_ctx(const ModelConfig& m, const StrategyConfig& s, const ChunkEnv& env) {
  const double e = s.dtype == "fp32" ? 4 : 2;
  return Ctx{m,
             s,
             static_cast<double>(s.micro_batch_size),
             static_cast<double>(s.seq_len),
             static_cast<double>(s.seq_len / s.cp_size),
             static_cast<double>(s.seq_len / s.cp_size / (s.sp() ? s.tp_size : 1)),
             static_cast<double>(m.hidden_size),
             s.tp_size,
             s.cp_size,
             e,
             s.fp8 ? 1.0 : e,
             s.fp8 ? 1.0 : 2.0,
             s.sp(),
             s.fp8,
             s.grad_reduce_in_bf16 ? KeyDtype::bf16 : KeyDtype::fp32,
             s.use_fused_grad_accumulation && version_at_least(s.te_version, "2.3.0"),
             env.mode == Mode::Default,
             env};
}

// `continues`: a recomputed layer inside a multi-layer checkpoint unit (not its first layer):
// its first leaf continues the unit's segment, so the unit keeps one input and re-runs whole.
LayerTemplate make_layer(const Ctx& c, LayerKind kind) {
  const ModelConfig& m = c.m;
  const StrategyConfig& s = c.s;
  const ChunkEnv& env = c.env;
  const double H = c.H;
  const bool moe = kind.moe, recompute = kind.recompute, continues = kind.continues;
  LayerTemplate t;
  t.moe = moe;
  std::vector<Leaf>& L = t.leaves;
  L.reserve(32);
  const double h = static_cast<double>(m.head_num), kv = static_cast<double>(m.kv_head_num);
  layer_norm(L.emplace_back(), c, "input_layernorm");
  if (m.is_mla()) {
    // DeepSeek MLA (Megatron MLASelfAttention): the q/kv down projections are replicated
    // over TP, the up projections column-parallel (heads split; their input all-gather is the
    // latent's, after the latent norms, which then see every local token), the output
    // projection row-parallel. With tp 1 the down projections and the output projection keep
    // the peer's column-parallel form (the same GEMMs).
    const double dq = static_cast<double>(*m.qk_head_dim), dr = static_cast<double>(*m.qk_pos_emb_head_dim);
    const double dv = static_cast<double>(*m.v_head_dim), kvl = static_cast<double>(*m.kv_lora_rank);
    const bool split = s.tp_size > 1;
    Ctx gathered = c;
    gathered.S_sp = c.S_l;
    auto down = [&](std::string_view name, double in, double out) {
      if (split) {
        linear_dup(L.emplace_back(), c, name, in, out);
      } else {
        linear_col(L.emplace_back(), c, name, in, out);
      }
    };
    if (m.q_lora_rank) {
      const double ql = static_cast<double>(*m.q_lora_rank);
      down("q_down_proj", H, ql);
      down("kv_down_proj", H, kvl + dr);
      layer_norm(L.emplace_back(), gathered, "q_layernorm", ql);
      linear_col(L.emplace_back(), c, "q_up_proj", ql, h * (dq + dr));
    } else {
      linear_col(L.emplace_back(), c, "q_proj", H, h * (dq + dr));
      down("kv_down_proj", H, kvl + dr);
    }
    layer_norm(L.emplace_back(), gathered, "kv_layernorm", kvl);
    linear_col(L.emplace_back(), c, "kv_up_proj", kvl, h * (dq + dv));
    zero_leaf(L.emplace_back(), "rotary_emb");
    core_attention(L.emplace_back(), c, dq + dr, dv, true);
    if (split) {
      linear_row(L.emplace_back(), c, "linear_proj", h * dv, H);
    } else {
      linear_col(L.emplace_back(), c, "linear_proj", h * dv, H);
    }
  } else {
    const double d = static_cast<double>(m.head_size.value_or(0));
    linear_col(L.emplace_back(), c, "linear_qkv", H, (h + 2 * kv) * d);
    if (env.mode == Mode::Default && m.qk_layernorm) qk_layernorm(L.emplace_back(), c, d);
    zero_leaf(L.emplace_back(), "rotary_emb");
    core_attention(L.emplace_back(), c, d, d, false);
    linear_row(L.emplace_back(), c, "linear_proj", h * d, H);
  }
  // Hidden dropout (enable_dropout, default mode): its bias-dropout-add kernels.
  const bool bda = env.mode == Mode::Default && s.enable_dropout;
  if (bda) bias_dropout_add(L.emplace_back(), c, "self_attn_bda");
  layer_norm(L.emplace_back(), c, "pre_mlp_layernorm");
  // The dense MLP's leaf names: the layer's own, or the shared expert's.
  struct MlpNames {
    std::string_view fc1, swiglu, gelu, fc2;
  };
  static constexpr MlpNames kDense{"linear_fc1", "swiglu", "gelu", "linear_fc2"};
  static constexpr MlpNames kShared{"shared_expert.linear_fc1", "shared_expert.swiglu", "shared_expert.gelu",
                                    "shared_expert.linear_fc2"};
  auto dense_mlp = [&](const MlpNames& n, double I) {
    if (m.use_swiglu) {
      linear_col(L.emplace_back(), c, n.fc1, H, 2 * I);
      swiglu(L.emplace_back(), c, I / s.tp_size);
      L.back().name = n.swiglu;
    } else {
      linear_col(L.emplace_back(), c, n.fc1, H, I);
      gelu(L.emplace_back(), c, I / s.tp_size);
      L.back().name = n.gelu;
    }
    linear_row(L.emplace_back(), c, n.fc2, I, H);
  };
  // In MoE models the peer builds dense MLPs (leading dense layers and shared experts) with
  // fc1 marked as reading a cached input: the router (or nothing) keeps the normed input.
  auto shared_input = [&](std::string_view name) {
    for (auto& l : L)
      if (l.name == name) l.cache = 0;
  };
  if (!moe) {
    dense_mlp(kDense, static_cast<double>(m.intermediate_size.value_or(0)));
    if (m.is_moe()) shared_input("linear_fc1");
  } else {
    if (m.moe_shared_expert_intermediate_size) {
      dense_mlp(kShared, static_cast<double>(*m.moe_shared_expert_intermediate_size));
      shared_input(kShared.fc1);
    }
    const MoeShape sh = moe_shape(c);
    const double F = static_cast<double>(m.moe_ffn()) / static_cast<double>(s.etp_size);
    router(L.emplace_back(), c);
    permutation(L.emplace_back(), c, sh);
    grouped_linear(L.emplace_back(), c, sh, "experts.linear_fc1", H, m.use_swiglu ? 2 * F : F, true);
    expert_swiglu(L.emplace_back(), c, sh, F);
    grouped_linear(L.emplace_back(), c, sh, "experts.linear_fc2", F, H, false);
    unpermutation(L.emplace_back(), c, sh);
  }
  if (bda) bias_dropout_add(L.emplace_back(), c, "mlp_bda");
  if (c.fp8) insert_quantizers(L, c.s.fp8_recipe);
  if (recompute) apply_recompute(L, m, s, moe, env.mode);
  if (continues && !L.empty() && L[0].recompute) L[0].status = RecomputeStatus::Middle;
  apply_offload(L, s);
  return t;
}

}  // namespace

LayerTemplate build_layer(const ModelConfig& m, const StrategyConfig& s, LayerKind kind, const ChunkEnv& env) {
  return make_layer(make_ctx(m, s, env), kind);
}

Chunk build_chunk(const ModelConfig& m, const StrategyConfig& s, int64_t padded_vocab,
                  const ChunkSpec& spec, const ChunkEnv& env, const LayerSource& source) {
  const bool with_embedding = spec.embedding, with_head = spec.head;
  const int64_t layers = spec.layers, dense_layers = spec.dense_layers;
  const int64_t recompute_layers = spec.recompute_layers;
  const Ctx c = make_ctx(m, s, env);
  const double H = c.H, Vt = static_cast<double>(padded_vocab) / s.tp_size;
  Chunk chunk;
  chunk.post.reserve(4);  // final norm, LM head, loss, MTP's embedding copy
  chunk.templates.reserve(4);
  chunk.layers.reserve(static_cast<size_t>(layers + spec.mtp_layers));
  if (with_embedding) embedding(chunk.pre.emplace_back(), c, Vt);
  if (with_head) {
    layer_norm(chunk.post.emplace_back(), c, "final_layernorm");
    linear_col(chunk.post.emplace_back(), c, "output_layer", H, static_cast<double>(padded_vocab), false);
    if (env.mode == Mode::SimuMax12 && c.fp8)
      for (auto& phase : chunk.post.back().kernels)
        for (Kernel& k : phase) k.op = "fp8_matmul";
    // Tied embeddings (Megatron without --untie-embeddings-and-output-weights): a stage holding
    // both uses one matrix; other stages keep a copy whose gradient is all-reduced.
    if (env.mode == Mode::Default && m.tie_word_embeddings && with_embedding) chunk.post.back().params = 0;
    cross_entropy(chunk.post.emplace_back(), c, Vt);
    if (s.cross_entropy_loss_fusion && s.cross_entropy_fusion_impl == "linear")
      fuse_linear_cross_entropy(c, chunk.post[chunk.post.size() - 2], chunk.post.back(), Vt);
  }

  const bool rc = s.is_recompute();
  const int64_t unit = s.recompute_granularity == std::optional<std::string>("full_block") ? s.recompute_unit_layers : 1;
  int idx[2][2][2] = {};  // [moe][recompute][continues a unit]: template index + 1
  for (int64_t i = 0; i < layers; ++i) {
    const bool r = rc && i < recompute_layers;
    const bool moe = m.is_moe() && i >= dense_layers;
    const bool continues = r && i % unit != 0;
    int& slot = idx[moe][r][continues];
    if (slot == 0) {
      const LayerKind kind{moe, r, continues};
      chunk.templates.push_back(source ? source(kind) : std::make_shared<const LayerTemplate>(make_layer(c, kind)));
      slot = static_cast<int>(chunk.templates.size());
    }
    chunk.layers.push_back({slot - 1, r});
  }
  if (spec.mtp_layers > 0) {
    // Multi-token prediction (Megatron MultiTokenPredictionLayer, DeepSeek-V3 §2.2): each MTP
    // layer norms the next token's embedding and the hidden state (enorm, hnorm), projects their
    // concatenation 2H → H (eh_proj), runs one transformer layer (MoE in a MoE model) and the
    // output layer and loss, whose weights are the main head's. The stage keeps its own copy of
    // the embedding for the lookups (Megatron builds it wherever MTP runs) unless it has one.
    LayerTemplate t = make_layer(c, {m.is_moe(), false, false});
    std::vector<Leaf> leaves;
    leaves.reserve(t.leaves.size() + 7);
    Leaf& lookup = leaves.emplace_back();
    embedding(lookup, c, Vt);
    lookup.name = "mtp.embedding";
    lookup.kernels[kBwdW].clear();
    lookup.params = 0;
    layer_norm(leaves.emplace_back(), c, "mtp.enorm");
    layer_norm(leaves.emplace_back(), c, "mtp.hnorm");
    linear_col(leaves.emplace_back(), c, "mtp.eh_proj", 2 * H, H);
    leaves.insert(leaves.end(), std::make_move_iterator(t.leaves.begin()), std::make_move_iterator(t.leaves.end()));
    t.leaves = std::move(leaves);
    layer_norm(t.leaves.emplace_back(), c, "mtp.final_layernorm");
    linear_col(t.leaves.emplace_back(), c, "mtp.output_layer", H, static_cast<double>(padded_vocab), false);
    t.leaves.back().params = 0;  // the main head's weight
    cross_entropy(t.leaves.emplace_back(), c, Vt);
    t.leaves.back().name = "mtp.cross_entropy";
    const int slot = static_cast<int>(chunk.templates.size());
    chunk.templates.push_back(std::make_shared<const LayerTemplate>(std::move(t)));
    for (int64_t i = 0; i < spec.mtp_layers; ++i) chunk.layers.push_back({slot, false});
    if (!with_embedding) {
      Leaf& copy = chunk.post.emplace_back();
      embedding(copy, c, Vt);
      copy.name = "mtp.embedding_weights";
      copy.kernels = {};
      copy.comms = {};
      copy.fpk = copy.bpk = copy.input_bytes = 0;
    }
  }
  return chunk;
}

}  // namespace trainsim
