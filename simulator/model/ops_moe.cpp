// Op builders of a MoE layer: router, dispatch, permutation, grouped Linears, expert activation.
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
    k.op = OpClass::Matmul;
    k.bytes = lin + (c.megatron ? 0 : (p == kFwd ? 2 * Ls : (p == kBwdAct ? 3 * Ls : 0)));
    l.kernels[p] = {k};
  }
  if (c.megatron) {
    // The score, top-k, routing-map and loss kernels as Megatron runs them (model/moe_kernels.h).
    const Settings& s = c.s;
    const LoadBalancing type = s.moe.load_balancing;
    RouterShape r;
    r.tokens = T;
    r.experts = NE;
    r.topk = static_cast<double>(c.m.topk.value_or(1));
    r.e = c.e;
    r.sigmoid = s.moe.sigmoid;
    r.fused = s.moe.router_fusion;
    r.groups = s.moe.router_num_groups > 1 && s.moe.router_group_topk > 0;
    r.aux_loss = (type == LoadBalancing::AuxLoss || type == LoadBalancing::SeqAuxLoss ||
                  type == LoadBalancing::GlobalAuxLoss) &&
                 s.moe.aux_loss_coeff.value_or(1) > 0;
    r.z_loss = s.moe.z_loss_coeff.value_or(0) > 0;
    r.pad = c.m.moe_pad_expert_input_to_capacity;
    r.capacity = r.pad || c.m.capacity_given;
    const FwdBwdKernels k = router_kernels(r);
    add_batch(l.kernels[kFwd], k.fwd);
    add_batch(l.kernels[kBwdAct], k.bwd);
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


MoeShape moe_shape(const Ctx& c) {
  const double NE = static_cast<double>(c.m.expert_num), k = static_cast<double>(c.m.topk.value_or(1));
  const double ep = static_cast<double>(c.s.par.ep), T = c.B * c.S_sp;
  // Expert tensor parallelism all-gathers the dispatched tokens over the ETP group before the
  // expert GEMMs (each rank holds 1/etp of every local expert): they see etp× the tokens.
  const double etp = static_cast<double>(c.s.par.etp);
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


void add_dispatch(Leaf& l, Phase p, const DispatchComm& d, bool forward, const char* stage) {
  if (d.n <= 1) return;
  CommCall call{forward ? d.fwd : d.bwd, Group::EP, d.bytes, d.n, stage};
  call.flex = d.flex;
  call.rdma_bytes = d.rdma_bytes;
  call.sms = d.sms;
  call.nvl_share = d.nvl_share;
  call.rdma_share = d.rdma_share;
  l.comms[p].push_back(call);
}

DispatchComm dispatch_comm(const Ctx& c, const MoeShape& sh, bool combine) {
  const int64_t ep = c.s.par.ep, etp = c.s.par.etp;
  const double tok = c.H * c.e;
  switch (c.s.moe.dispatcher) {
    case MoeDispatcher::AllGather:
      return {combine ? Collective::ReduceScatter : Collective::AllGather,
              combine ? Collective::AllGather : Collective::ReduceScatter,
              sh.T * tok * static_cast<double>(ep * etp), ep * etp, false};
    case MoeDispatcher::Flex: {
      const int64_t group = ep * etp, nodes = (group + c.env.gpus_per_node - 1) / c.env.gpus_per_node;
      if (c.megatron) {
        // DeepEP / HybridEP send a token once per destination rank (the expert copies are made
        // on arrival), across nodes once per destination node over RDMA, forwarded there over
        // NVLink to its other ranks (each rank but the one the RDMA copy lands on, 1 − 1/g).
        // Node-limited routing bounds the nodes and ranks (moe_router_num_groups, _group_topk).
        const int64_t G = c.s.moe.router_num_groups, g = c.s.moe.router_group_topk;
        const int64_t E = c.m.expert_num, k = c.m.topk.value_or(1);
        const double per = sh.T * tok * c.env.moe_imbalance * static_cast<double>(etp);
        const double ranks = expected_token_nodes(E, k, ep, G, g);
        DispatchComm d{Collective::AllToAll, Collective::AllToAll, 0, group, false};
        d.flex = true;
        d.sms = c.s.moe.deepep ? static_cast<int32_t>(c.s.moe.deepep_num_sms.value_or(kDeepEpDefaultNumSms)) : 0;
        // DeepEP's SMs handle every copy, its own rank's or node's included (the share that
        // crosses the link is what the link carries).
        if (nodes <= 1) {
          const double share = static_cast<double>(ep - 1) / static_cast<double>(ep);
          d.nvl_share = static_cast<float>(share);
          d.bytes = per * ranks * share;
        } else {
          const double dn = static_cast<double>(nodes), gpn = static_cast<double>(c.env.gpus_per_node);
          d.rdma_share = static_cast<float>((dn - 1) / dn);
          d.nvl_share = static_cast<float>(1 - 1 / gpn);
          d.rdma_bytes = per * expected_token_nodes(E, k, nodes, G, g) * (dn - 1) / dn;
          d.bytes = per * ranks * (1 - 1 / gpn);
        }
        return d;
      }
      if (nodes <= 1) return {Collective::AllToAll, Collective::AllToAll, sh.P * tok * c.env.moe_imbalance * static_cast<double>(etp), group, false};
      const double per_token = expected_token_nodes(c.m.expert_num, c.m.topk.value_or(1), nodes);
      return {Collective::AllToAll, Collective::AllToAll,
              sh.T * tok * per_token * c.env.moe_imbalance * static_cast<double>(etp), group, false};
    }
    case MoeDispatcher::AllToAll: break;
  }
  return {Collective::AllToAll, Collective::AllToAll, sh.P * tok * c.env.moe_imbalance, ep, true};
}

// Whether TE's Fp8Padding copies the expert rows before a fp8 grouped GEMM (and Fp8Unpadding
// after it): rows per local expert vary (dropless, or dropped without padding) or a fixed count
// is no multiple of the alignment; not with the router's own padding
// (moe_router_padding_for_fp8) or one Linear per expert.
bool fp8_row_padding(const Ctx& c, const MoeShape& sh) {
  if (!c.fp8 || c.m.group_linear_mode == "serial" || c.s.moe.router_padding_for_fp8) return false;
  if (!c.m.moe_pad_expert_input_to_capacity) return true;
  return std::fmod(sh.M, static_cast<double>(fp8_row_alignment(c.s.prec.fp8_recipe == Fp8Recipe::Mxfp8))) != 0;
}

namespace {

// The sort of the R received rows by local expert (alltoall with several local experts:
// sort_chunks_by_idxs, or the padded view's transpose) and its mirror in the backward: the rows
// and their int32 indices read and written, 2 launches each way.
void add_row_sort(KernelList& f, KernelList& b, double R, double tok) {
  Kernel sort = mem_kernel(2 * R * tok + 2 * R * 4, "permute_fwd");
  sort.launches = 2;
  f.push_back(sort);
  sort.bw = "permute_bwd";
  b.push_back(sort);
}

// TE's Fp8Padding / Fp8Unpadding: a copy of the R rows each way.
void add_fp8_padding(KernelList& f, KernelList& b, double R, double tok) {
  f.push_back(mem_kernel(2 * R * tok));
  b.push_back(mem_kernel(2 * R * tok));
}

}  // namespace

// Default mode: the permutation as Megatron's dispatchers run it (token_dispatcher.py), forward
// and input gradient. Forward: the token counts (alltoall, allgather) or DeepEP's metadata (the
// top-k of the probs, get_dispatch_layout, the received map as multihot and the counts read on
// the host), the permutation's index building and its gather ((T + P)·H·e), after the all-to-all
// the sort of the received rows by local expert when a rank holds several (sort_chunks_by_idxs,
// 2·R·H·e with R = M·El the rows after the dispatch, tokens and probs: 2 launches) and TE's
// Fp8Padding (2·R·H·e). Backward: the padding's and the sort's copies of the gradient and the
// gather's scatter back ((P + T)·H·e; unfused: zeros of the output first).
void megatron_permutation(Leaf& l, const Ctx& c, const MoeShape& sh) {
  const MoeDispatcher disp = c.s.moe.dispatcher;
  const bool fused = c.s.moe.permute_fusion, padded = c.m.moe_pad_expert_input_to_capacity;
  const double NE = static_cast<double>(c.m.expert_num), k = static_cast<double>(c.m.topk.value_or(1));
  const double X = sh.T * NE, K = sh.T * k, tok = c.H * c.e, R = sh.M * sh.El;
  KernelList& f = l.kernels[kFwd];
  KernelList& b = l.kernels[kBwdAct];
  f.clear();
  b.clear();
  KernelBatch meta;
  if (disp == MoeDispatcher::Flex) {
    meta.add(X * 4 + K * 12);                        // top-k of the probs: token indices
    meta.add(K * 8 + sh.T * static_cast<double>(c.s.par.ep));  // get_dispatch_layout
    meta.add(K * 12 + R * 5);                        // fused_indices_to_multihot
    meta.add(sh.El * 8);                             // tokens per expert to the host
  } else {
    meta = dispatch_count_kernels(sh.T, NE, padded);
  }
  add_batch(f, meta);
  // The index building runs over the routing map of the rows the rank permutes: its own tokens
  // (alltoall), the EP group's for its local experts (allgather), the received ones (flex).
  const double ep_etp = static_cast<double>(c.s.par.ep * c.s.par.etp);
  const double rows = disp == MoeDispatcher::AllGather ? sh.T * ep_etp : sh.T;
  const double cols = disp == MoeDispatcher::AllToAll ? NE : sh.El;
  add_batch(f, permute_index_kernels(rows, cols, sh.P, c.e, fused, padded));
  f.push_back(mem_kernel((sh.T + sh.P) * tok, "permute_fwd"));
  b.push_back(mem_kernel((sh.P + sh.T) * tok + (fused ? 0 : sh.T * tok), "permute_bwd"));
  if (!fused) b.back().launches = 2;
  if (disp == MoeDispatcher::AllToAll && sh.El > 1) add_row_sort(f, b, R, tok);
  if (fp8_row_padding(c, sh)) add_fp8_padding(f, b, R, tok);
  // Token counts the host reads before the dispatch (no fixed capacities): a sync point, and
  // with alltoall the counts' all-gather over the EP group (gather_from_sequence_parallel_region).
  l.host_sync = !padded;
  if (!padded && disp == MoeDispatcher::AllToAll)
    add_comm(l, kFwd, Collective::AllGather, Group::EP, NE * 8 * static_cast<double>(c.s.par.ep), c.s.par.ep,
             "Dispatch_FWD_EP");
  // allgather (MoEAllGatherTokenDispatcher): the routing map (bool) and the probs (fp32) of the
  // EP×ETP group's tokens are gathered beside the tokens, T·E·5 bytes per rank.
  if (disp == MoeDispatcher::AllGather)
    add_comm(l, kFwd, Collective::AllGather, Group::EP, X * 5 * ep_etp, c.s.par.ep * c.s.par.etp,
             "Dispatch_FWD_EP");
}

// Default mode: the unpermutation mirrored (Fp8Unpadding, the sort back to source order, the
// combine, then the unpermute: fused one pass (P + T)·H·e; unfused the zeros of the output,
// the scatter-add and, unless the probs went to the experts (dispatch_probs), their product).
void megatron_unpermutation(Leaf& l, const Ctx& c, const MoeShape& sh) {
  const MoeDispatcher disp = c.s.moe.dispatcher;
  const bool fused = c.s.moe.permute_fusion;
  const double tok = c.H * c.e, R = sh.M * sh.El;
  KernelList& f = l.kernels[kFwd];
  KernelList& b = l.kernels[kBwdAct];
  f.clear();
  b.clear();
  if (fp8_row_padding(c, sh)) add_fp8_padding(f, b, R, tok);
  if (disp == MoeDispatcher::AllToAll && sh.El > 1) add_row_sort(f, b, R, tok);
  const double probs = c.s.moe.dispatch_probs ? 0 : 2 * sh.P * tok;
  Kernel un = mem_kernel((sh.P + sh.T) * tok + (fused ? 0 : sh.T * tok + probs), "permute_fwd");
  un.launches = fused ? 1 : (c.s.moe.dispatch_probs ? 2 : 3);
  f.push_back(un);
  b.push_back(mem_kernel((sh.T + sh.P) * tok + (fused ? 0 : probs), "permute_bwd"));
  if (!fused && !c.s.moe.dispatch_probs) b.back().launches = 2;
}

// Token permutation around the dispatch: two kernels (the peer's Permutation), one pass with
// TE's fused permute (`moe_permute_fusion`).
void permutation(Leaf& l, const Ctx& c, const MoeShape& sh) {
  l.name = "permutation";
  const double NE = static_cast<double>(c.m.expert_num);
  const double k1 = (sh.T * c.H + sh.P * c.H) * c.e, k2 = 2 * sh.P * c.H * c.e;
  l.kernels[kFwd] = {mem_kernel(k1, "permute_fwd"), mem_kernel(k2, "permute_fwd")};
  l.kernels[kBwdAct] = {mem_kernel(k1, "permute_bwd"), mem_kernel(k2, "permute_bwd")};
  if (c.s.moe.permute_fusion) {
    l.kernels[kFwd].pop_back();
    l.kernels[kBwdAct].pop_back();
  }
  const int64_t ep = c.s.par.ep, etp = c.s.par.etp;
  if (c.megatron) megatron_permutation(l, c, sh);
  const DispatchComm d = dispatch_comm(c, sh, false);
  add_dispatch(l, kFwd, d, true, "Dispatch_FWD_EP");
  add_dispatch(l, kBwdAct, d, false, "Dispatch_FWD_EP");
  for (Phase p : {kFwd, kBwdAct})
    if (c.s.moe.dispatch_probs) add_comm(l, p, Collective::AllToAll, Group::EP, sh.T * NE * c.e, ep, "Dispatch_FWD_EP");
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
  // Compat: SimuMax v1.2 sizes its UnPermutation from the expert output, the P·etp rows of the
  // ETP all-gather: its kernels and saved rows, the ETP reduce-scatter and the combine all-to-all
  // (the 10 ETP variants of tests/data/golden-variants agree exactly; docs/compat.md).
  MoeShape out = sh;
  if (!c.megatron) out.P *= static_cast<double>(c.s.par.etp);
  const double Pp = out.P;
  const double k1 = 2 * Pp * c.H * c.e, k2 = (Pp * c.H + sh.T * c.H) * c.e;
  l.kernels[kFwd] = {mem_kernel(k1, "permute_fwd"), mem_kernel(k2, "permute_fwd")};
  l.kernels[kBwdAct] = {mem_kernel(k1, "permute_bwd"), mem_kernel(k2, "permute_bwd")};
  if (c.s.moe.permute_fusion) {
    l.kernels[kFwd].erase(l.kernels[kFwd].begin());
    l.kernels[kBwdAct].erase(l.kernels[kBwdAct].begin());
  }
  if (c.megatron) megatron_unpermutation(l, c, sh);
  const int64_t etp = c.s.par.etp;
  const DispatchComm d = dispatch_comm(c, out, true);
  if (d.etp_separate) {
    add_comm(l, kFwd, Collective::ReduceScatter, Group::ETP, Pp * c.H * c.e * static_cast<double>(etp), etp, "etp");
    add_comm(l, kBwdAct, Collective::AllGather, Group::ETP, Pp * c.H * c.e * static_cast<double>(etp), etp, "etp");
  }
  add_dispatch(l, kFwd, d, true, "Combine_FWD_EP");
  add_dispatch(l, kBwdAct, d, false, "Combine_FWD_EP");
  l.recompute_repeats_comm = true;
  if (c.s.moe.dispatch_probs) {
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
  const KeyDtype mg = c.s.prec.grad_reduce_in_bf16 ? KeyDtype::bf16 : KeyDtype::fp32;
  const KeyStage stages[3] = {KeyStage::fwd, KeyStage::bwd_grad_act, KeyStage::bwd_grad_w};
  // grad, accumulate, use_split_accumulator, single_output per phase.
  const bool flags[3][4] = {{false, false, false, true}, {true, false, true, false}, {true, true, true, false}};
  const bool serial = c.m.group_linear_mode == "serial";
  for (int p = 0; p < 3; ++p) {
    const double extra = (p == kBwdW && c.s.prec.fused_grad_accumulation) ? in * out * 4 : 0;
    if (serial) {
      // One Linear per local expert: the peer's serial mode runs El matmuls of M tokens.
      Kernel k;
      k.flops = flops / sh.El;
      k.op = fp8 ? OpClass::Fp8Matmul : OpClass::Matmul;
      k.bytes = (bytes + extra) / sh.El;
      if (p == kFwd) k.key = matmul_key(1, sh.M, in, out, KeyLayout::TN, false, KeyDtype::bf16);
      if (p == kBwdAct) k.key = matmul_key(1, sh.M, out, in, KeyLayout::NN, false, KeyDtype::bf16);
      if (p == kBwdW) k.key = matmul_key(1, out, sh.M, in, KeyLayout::NT, true, c.wgrad_dtype);
      l.kernels[p].assign(static_cast<size_t>(sh.El), k);
      continue;
    }
    Kernel k;
    k.flops = flops;
    k.op = fp8 ? OpClass::Fp8GroupMatmul : OpClass::GroupMatmul;
    k.bytes = bytes + extra;
    k.key = grouped_key(sh.El, sh.M, out, in, fp8 ? KeyDtype::fp8 : KeyDtype::bf16, KeyDtype::bf16, mg,
                        stages[p], flags[p][0], flags[p][1], flags[p][2], flags[p][3]);
    l.kernels[p] = {k};
  }
  l.params = sh.El * in * out;
  l.moe_params = true;
  l.weight_elem_bytes = fp8 && c.megatron ? fp8_weight_bytes(c.s.prec.fp8_recipe, c.s.prec.fp8_param_gather, c.env.blackwell) : w;
  const bool offload = col && c.s.off.groupgemm_col_inputs;
  l.cache = offload ? 0 : Tl * in * saved_input_bytes(c, fp8);
  l.fpk = Tl * in * a + Tl * out * 2 + (c.s.prec.accm_weight ? 0 : sh.El * in * out * w);
  l.bpk = Tl * in * a + Tl * out * 2 + (fp8 ? sh.El * in * out * 4 : 0) + (offload ? Tl * in * a : 0);
  l.input_bytes = Tl * in * c.e;
  // cache_groupgemm_col_fp8_inputs: the checkpoint of a recomputed segment starting here is the
  // fp8 input the GEMM keeps (passes/recompute.cpp makes it a segment start).
  if (col && fp8 && c.s.prec.cache_groupgemm_col_fp8_inputs) l.input_bytes = Tl * in;
  if (c.s.prec.fused_grad_accumulation && c.s.fuse.te.at_least(2, 10)) {
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
  const double probs = c.s.moe.dispatch_probs ? Tl : 0;
  l.kernels[kFwd] = {mem_kernel(swiglu_bytes(c, out, false) + probs * 2)};
  l.kernels[kBwdAct] = {mem_kernel(swiglu_bytes(c, out, true) + probs * 2)};
  l.cache = c.s.fuse.fused_swiglu ? in : 3 * out;  // unfused: the two halves and the SiLU output
  l.fpk = in + out + probs * 8;
  l.bpk = in + out + probs * 8;
  l.input_bytes = in;
}

}  // namespace trainsim::graph_ops
