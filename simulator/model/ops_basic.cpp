// Op builders: norms, Linears (column, row, duplicated), activations, embedding and loss.
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

Kernel mem_kernel(double bytes, const char* bw) {
  Kernel k;
  k.bytes = bytes;
  k.bw = bw;
  return k;
}

// A batch of small memory-bound kernels (model/moe_kernels.h), nothing when it has none.
void add_batch(KernelList& list, const KernelBatch& b, const char* bw) {
  if (b.launches == 0) return;
  Kernel k = mem_kernel(b.bytes, bw);
  k.launches = b.launches;
  list.push_back(k);
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
void layer_norm(Leaf& l, const Ctx& c, std::string_view name, double width) {
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
  if (c.s.fuse.fused_norm) {
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
  const OpClass op = fp8 ? OpClass::Fp8Matmul : OpClass::Matmul;
  const double bytes = x_in * a + wt * w + x_out * 2;
  for (int p = 0; p < 3; ++p) {
    Kernel k;
    k.flops = flops;
    k.op = op;
    k.bytes = bytes;
    l.kernels[p] = {k};
  }
  if (c.s.prec.fused_grad_accumulation) l.kernels[kBwdW][0].bytes += wt * 4;
  l.kernels[kFwd][0].key = matmul_key(c.B, m_rows, in, out, KeyLayout::TN, false, KeyDtype::bf16);
  l.kernels[kBwdAct][0].key = matmul_key(c.B, m_rows, out, in, KeyLayout::NN, false, KeyDtype::bf16);
  l.kernels[kBwdW][0].key = matmul_key(1, out, c.B * m_rows, in, KeyLayout::NT, true, c.wgrad_dtype);
  l.params = wt;
  l.weight_elem_bytes = fp8 && c.megatron ? fp8_weight_bytes(c.s.prec.fp8_recipe, c.s.prec.fp8_param_gather, c.env.blackwell) : w;
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
  return c.megatron ? fp8_saved_input_bytes(c.s.prec.fp8_recipe) : 1;
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
  return !column_parallel && c.s.fuse.te.at_least(2, 0);
}

// Bytes per element a sequence-parallel all-gather of a fp8 Linear moves in the default mode:
// TE gathers the quantized tensor (TE 2.8 distributed.py gather_along_first_dim with a
// quantizer: _all_gather_fp8 the row-wise fp8 data, _all_gather_fp8_blockwise and
// _all_gather_mxfp8 the data and scales of each usage asked for), `both`: row- and column-wise (a
// gradient's). The compat mode and bf16 gather the training dtype.
double sp_gather_bytes(const Ctx& c, bool fp8, bool both) {
  if (!fp8 || !c.megatron) return c.e;
  const Fp8Recipe r = c.s.prec.fp8_recipe;
  const bool per_tensor = r == Fp8Recipe::Delayed || r == Fp8Recipe::Tensorwise;
  return (both && !per_tensor ? 2 : 1) * fp8_saved_input_bytes(r);
}

// Column-parallel Linear (Megatron ColumnParallelLinear): SP all-gathers its input.
void linear_col(Leaf& l, const Ctx& c, std::string_view name, double in, double out, bool allow_fp8) {
  l.name = name;
  const bool fp8 = c.fp8 && allow_fp8;
  const double a = fp8 ? 1 : c.e;
  const double out_l = out / c.tp, X_in = c.B * c.S_l * in, X_out = c.B * c.S_l * out_l;
  const double W = in * out_l;
  linear_common(c, l, c.S_l, in, out_l, 2 * X_in * out_l, X_in, X_out, W, fp8);
  const double ag_bytes = c.B * c.S_l * in * c.e;
  if (c.sp) {
    // The input is gathered in fp8 forward and again for the wgrad GEMM (one usage each); the
    // input gradient is reduce-scattered in bf16.
    const double fp8_ag = c.B * c.S_l * in * sp_gather_bytes(c, fp8, false);
    add_comm(l, kFwd, Collective::AllGather, Group::TP, fp8_ag, c.tp, "tp");
    add_comm(l, kBwdAct, Collective::ReduceScatter, Group::TP, ag_bytes, c.tp, "tp");
    add_comm(l, kBwdW, Collective::AllGather, Group::TP, fp8_ag, c.tp, "tp");
  } else {
    add_comm(l, kBwdAct, Collective::AllReduce, Group::TP, ag_bytes, c.tp, "tp");
  }
  // With SP, TE saves the local input shard and all-gathers it again for the weight gradient;
  // under fp8 the peer keeps the gathered fp8 copy instead.
  l.cache = c.B * c.S_l * in * saved_input_bytes(c, fp8) / ((c.sp && (!fp8 || c.megatron)) ? c.tp : 1);
  l.cache_inputs_cached = 0;
  l.fpk = c.B * c.S_l * in * a + c.B * c.S_l * out_l * 2 + (c.s.prec.accm_weight ? 0 : W * (fp8 ? 1 : 2));
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
  l.kernels[kBwdW][0].bytes = X_out * 2 + X_in * a + (c.s.prec.fused_grad_accumulation ? W * 4 : 0);
  const double bytes = c.B * c.S_l * out * c.e;
  if (c.sp) {
    // The output gradient is gathered in fp8 (base.py grad_output_preprocess; both usages).
    add_comm(l, kFwd, Collective::ReduceScatter, Group::TP, bytes, c.tp, "tp");
    add_comm(l, kBwdAct, Collective::AllGather, Group::TP, c.B * c.S_l * out * sp_gather_bytes(c, fp8, true), c.tp, "tp");
  } else {
    add_comm(l, kFwd, Collective::AllReduce, Group::TP, bytes, c.tp, "tp");
  }
  l.cache = X_in * saved_input_bytes(c, fp8);
  l.fpk = X_in * a + X_out * 2 + (c.s.prec.accm_weight ? 0 : W * (fp8 ? 1 : 2));
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
  l.fpk = X_in * a + X_out * 2 + (c.s.prec.accm_weight ? 0 : W * (fp8 ? 1 : 2));
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

// Bytes a SwiGLU moves, `out` the bytes of its output. Fused: its input and output. Unfused, as
// PyTorch runs silu(x1) * x2: forward silu reads x1 and writes its output, mul reads both and
// writes the product (5 × out); backward mul reads the gradient, x2 and silu(x1) and writes two
// gradients, silu's backward reads its gradient and x1 and writes dx1 (8 × out). SimuMax v1.2's
// unfused variants move the same bytes (its 4 unfused-SwiGLU cases, dense and expert).
double swiglu_bytes(const Ctx& c, double out, bool backward) {
  if (c.s.fuse.fused_swiglu) return 3 * out;
  return (backward ? 8 : 5) * out;
}

void swiglu(Leaf& l, const Ctx& c, double out_l) {
  l.name = "swiglu";
  const double out = c.B * c.S_l * out_l * c.e, in = 2 * out;
  l.kernels[kFwd] = {mem_kernel(swiglu_bytes(c, out, false))};
  l.kernels[kBwdAct] = {mem_kernel(swiglu_bytes(c, out, true))};
  l.cache = c.s.fuse.fused_swiglu ? in : 3 * out;
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
  l.fpk = c.B * c.S_l * 4 + c.B * c.S_l * c.H * 2 + (c.s.prec.accm_weight ? 0 : Vt * c.H * 2);
  l.bpk = Vt * c.H * 2;
  l.input_bytes = c.B * c.S_l * 4;
}

// Vocab-parallel cross entropy: fused (TE) or Megatron's fp32 pipeline.
void cross_entropy(Leaf& l, const Ctx& c, double Vt) {
  l.name = "cross_entropy";
  const double tokens = c.B * c.S_l, logits = tokens * Vt;
  if (c.s.fuse.cross_entropy != CeFusion::None) {
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
  const double tokens = c.B * c.S_l, split = std::min(Vt, static_cast<double>(c.s.fuse.lce_vocab_split_size));
  const double chunk = tokens * split, x = tokens * c.H * c.e;
  out.kernels[kFwd][0].key = matmul_key(c.B, c.S_l, c.H, split, KeyLayout::TN, false, KeyDtype::bf16);
  out.kernels[kBwdAct][0].key = matmul_key(c.B, c.S_l, split, c.H, KeyLayout::NN, false, KeyDtype::bf16);
  out.kernels[kBwdW][0].key = matmul_key(1, split, tokens, c.H, KeyLayout::NT, true, c.wgrad_dtype);
  out.kernels[kBwdAct].push_back(out.kernels[kFwd][0]);
  const double weight = c.s.prec.accm_weight ? 0 : out.params * 2;
  out.fpk = x + chunk * 2 + weight;
  out.bpk = 2 * x + chunk * 2 + weight;
  ce.cache = tokens * 8;
  ce.cache_inputs_cached = 0;
  ce.fpk = chunk * 4 + tokens * 8;
  ce.bpk = chunk * 8;
}

}  // namespace trainsim::graph_ops
