// The layers of a chunk from their ops (model/ops_*.cpp; the peer's dense_module / moe_module leaves,
// see docs/cost-model.md).
// Shapes per rank: S_l = S/cp, S_sp = S_l/tp under sequence parallelism; the Linear input is
// viewed as [b, m, in] with m = S_l after the SP all-gather.
#include "model/graph.h"
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

namespace trainsim {
using namespace graph_ops;  // NOLINT: the op builders this file assembles

const char* group_name(Group g) {
  static const char* kNames[] = {"tp", "cp", "dp", "pp", "ep", "etp", "edp"};
  return kNames[static_cast<size_t>(g)];
}

namespace {

Ctx make_ctx(const ModelConfig& m, const Settings& s, const ChunkEnv& env) {
  const double e = s.prec.element_bytes();
  return Ctx{m,
             s,
             static_cast<double>(s.batch.micro_batch_size),
             static_cast<double>(s.batch.seq_len),
             static_cast<double>(s.batch.seq_len / s.par.cp),
             static_cast<double>(s.batch.seq_len / s.par.cp / (s.par.sp ? s.par.tp : 1)),
             static_cast<double>(m.hidden_size),
             s.par.tp,
             s.par.cp,
             e,
             s.prec.fp8 ? 1.0 : e,
             s.prec.fp8 ? 1.0 : 2.0,
             s.par.sp,
             s.prec.fp8,
             s.prec.grad_reduce_in_bf16 ? KeyDtype::bf16 : KeyDtype::fp32,
             s.prec.fused_grad_accumulation && s.fuse.te.at_least(2, 3),
             env.mode == Mode::Default,
             env};
}

// `continues`: a recomputed layer inside a multi-layer checkpoint unit (not its first layer):
// its first leaf continues the unit's segment, so the unit keeps one input and re-runs whole.
// A multi-token-prediction layer (kind.mtp_vocab > 0), defined below.
LayerTemplate mtp_layer(const Ctx& c, LayerKind kind);

LayerTemplate make_layer(const Ctx& c, LayerKind kind) {
  if (kind.mtp_vocab > 0) return mtp_layer(c, kind);
  const ModelConfig& m = c.m;
  const Settings& s = c.s;
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
    const bool split = s.par.tp > 1;
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
      L.back().fp8_norm_fused = c.s.fuse.fused_norm;
    } else {
      linear_col(L.emplace_back(), c, "q_proj", H, h * (dq + dr));
      down("kv_down_proj", H, kvl + dr);
    }
    layer_norm(L.emplace_back(), gathered, "kv_layernorm", kvl);
    linear_col(L.emplace_back(), c, "kv_up_proj", kvl, h * (dq + dv));
    // Megatron's MLA spec: the up projections are TELayerNormColumnParallelLinear (the latent
    // norms fused in); the input norm is a TENorm feeding both down projections.
    L.back().fp8_norm_fused = c.s.fuse.fused_norm;
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
    L.back().fp8_norm_fused = c.s.fuse.fused_norm;  // TELayerNormColumnParallelLinear
    if (env.mode == Mode::Default && m.qk_layernorm) qk_layernorm(L.emplace_back(), c, d);
    zero_leaf(L.emplace_back(), "rotary_emb");
    core_attention(L.emplace_back(), c, d, d, false);
    linear_row(L.emplace_back(), c, "linear_proj", h * d, H);
  }
  // Hidden dropout (enable_dropout, default mode): its bias-dropout-add kernels.
  const bool bda = env.mode == Mode::Default && s.fuse.dropout;
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
    const size_t fc1 = L.size();
    if (m.use_swiglu) {
      linear_col(L.emplace_back(), c, n.fc1, H, 2 * I);
      swiglu(L.emplace_back(), c, I / s.par.tp);
      L.back().name = n.swiglu;
    } else {
      linear_col(L.emplace_back(), c, n.fc1, H, I);
      gelu(L.emplace_back(), c, I / s.par.tp);
      L.back().name = n.gelu;
    }
    // Megatron's TE layer spec: a dense layer's fc1 is TELayerNormColumnParallelLinear (the
    // pre-MLP norm fused in); a shared expert's is TEColumnParallelLinear after a TENorm.
    L[fc1].fp8_norm_fused = &n == &kDense && c.s.fuse.fused_norm;
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
    const double F = static_cast<double>(m.moe_ffn()) / static_cast<double>(s.par.etp);
    router(L.emplace_back(), c);
    permutation(L.emplace_back(), c, sh);
    grouped_linear(L.emplace_back(), c, sh, "experts.linear_fc1", H, m.use_swiglu ? 2 * F : F, true);
    expert_swiglu(L.emplace_back(), c, sh, F);
    grouped_linear(L.emplace_back(), c, sh, "experts.linear_fc2", F, H, false);
    unpermutation(L.emplace_back(), c, sh);
  }
  if (bda) bias_dropout_add(L.emplace_back(), c, "mlp_bda");
  if (c.fp8) insert_quantizers(L, c.s.prec.fp8_recipe, env.mode == Mode::Default, env.blackwell);
  if (recompute) apply_recompute(L, m, s, moe, env.mode);
  if (continues && !L.empty() && L[0].recompute) L[0].status = RecomputeStatus::Middle;
  apply_offload(L, s);
  return t;
}

LayerTemplate mtp_layer(const Ctx& c, LayerKind kind) {
  // Multi-token prediction (Megatron MultiTokenPredictionLayer, DeepSeek-V3 §2.2): each MTP
  // layer norms the next token's embedding and the hidden state (enorm, hnorm), projects their
  // concatenation 2H → H (eh_proj), runs one transformer layer (MoE in a MoE model) and the
  // output layer and loss, whose weights are the main head's. (The stage's own copy of the
  // embedding for the lookups is the chunk's: build_chunk.)
  const int64_t padded_vocab = kind.mtp_vocab;
  const double H = c.H, Vt = static_cast<double>(padded_vocab) / c.s.par.tp;
  LayerTemplate t = make_layer(c, {kind.moe, false, false});
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
  return t;
}

}  // namespace

LayerTemplate build_layer(const ModelConfig& m, const Settings& s, LayerKind kind, const ChunkEnv& env) {
  return make_layer(make_ctx(m, s, env), kind);
}

Chunk build_chunk(const ModelConfig& m, const Settings& s, int64_t padded_vocab,
                  const ChunkSpec& spec, const ChunkEnv& env, const LayerSource& source) {
  const bool with_embedding = spec.embedding, with_head = spec.head;
  const int64_t layers = spec.layers, dense_layers = spec.dense_layers;
  const int64_t recompute_layers = spec.recompute_layers;
  const Ctx c = make_ctx(m, s, env);
  const double H = c.H, Vt = static_cast<double>(padded_vocab) / s.par.tp;
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
        for (Kernel& k : phase) k.op = OpClass::Fp8Matmul;
    // Tied embeddings (Megatron without --untie-embeddings-and-output-weights): a stage holding
    // both uses one matrix; other stages keep a copy whose gradient is all-reduced.
    if (env.mode == Mode::Default && m.tie_word_embeddings && with_embedding) chunk.post.back().params = 0;
    cross_entropy(chunk.post.emplace_back(), c, Vt);
    if (s.fuse.cross_entropy == CeFusion::Linear)
      fuse_linear_cross_entropy(c, chunk.post[chunk.post.size() - 2], chunk.post.back(), Vt);
  }

  const bool rc = s.rc.on;
  const int64_t unit = s.rc.unit();
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
    // Multi-token prediction: one template for the MTP layers (mtp_layer), and the stage's own
    // copy of the embedding for their lookups (Megatron builds it wherever MTP runs) unless it
    // has one.
    const LayerKind kind{m.is_moe(), false, false, padded_vocab};
    const int slot = static_cast<int>(chunk.templates.size());
    chunk.templates.push_back(source ? source(kind) : std::make_shared<const LayerTemplate>(make_layer(c, kind)));
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
