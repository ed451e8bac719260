#include "passes/recompute.h"

#include <algorithm>
#include <string>

namespace trainsim {
namespace {

// Recompute roles of a layer's leaves by name for the legacy granularities.
bool legacy_recomputed(const Settings& s, std::string_view name, bool attn_part, bool mlp_part) {
  const Granularity g = s.rc.granularity;
  if (g == Granularity::FullBlock) return true;
  if (g == Granularity::AttnOnly) return attn_part && name != "input_layernorm";
  if (g == Granularity::SdpOnly) return name == "core_attention";
  if (g == Granularity::MlpOnly) return mlp_part;
  // selective_recompute
  if (attn_part) {
    if (name == "input_layernorm" || name == "q_down_proj" || name == "kv_down_proj")
      return s.rc.attn && s.rc.mla_rms;
    if (name == "linear_proj") return false;
    return s.rc.attn;
  }
  if (name == "pre_mlp_layernorm" || name.rfind("shared_expert", 0) == 0 || name == "router")
    return s.rc.mlp && s.rc.mlp_rms;
  if (name == "permutation" || name == "unpermutation") return false;
  return s.rc.mlp;
}

// Assigns FIRST/MIDDLE/LAST over runs of recomputed leaves; the layer's first leaf and any
// breakpoint start/end segments (the peer's set_first_last_recompute_status + set_breakpoints).
// SimuMax v1.2 marks a lone recomputed leaf (no recomputed neighbour) LAST, not FIRST: its forward
// keeps no checkpoint input (only sdp_only makes one; its peaks in the golden variants need it).
void assign_status(std::vector<Leaf>& leaves, bool variance_tails, Mode mode) {
  const size_t n = leaves.size();
  for (size_t i = 0; i < n; ++i) {
    Leaf& l = leaves[i];
    if (!l.recompute) continue;
    const bool prev = i > 0 && leaves[i - 1].recompute && !leaves[i - 1].breakpoint;
    const bool next = i + 1 < n && leaves[i + 1].recompute && !l.breakpoint;
    const bool lone_last = mode == Mode::SimuMax12 && !prev && !next;
    l.status = !prev && !lone_last ? RecomputeStatus::First : (!next ? RecomputeStatus::Last : RecomputeStatus::Middle);
    if (variance_tails && !next && prev) l.variance = true;
  }
}

}  // namespace

void apply_recompute(std::vector<Leaf>& L, const ModelConfig& m, const Settings& s, bool moe, Mode mode) {
  const size_t attn_end = static_cast<size_t>(
      std::find_if(L.begin(), L.end(), [](const Leaf& l) { return l.name == "pre_mlp_layernorm"; }) - L.begin());
  bool variance = false;
  if (s.rc.megatron) {
    // Megatron 0.14 output-discarding checkpoints: a recomputed norm's consumer keeps no input
    // copy and is the segment's tail (not recomputed itself).
    for (const RecomputeModule mod : s.rc.modules) {
      if (mod == RecomputeModule::Layernorm) {
        for (size_t i = 0; i < L.size(); ++i) {
          if (L[i].name != "input_layernorm" && L[i].name != "pre_mlp_layernorm") continue;
          L[i].recompute = true;
          // The norm's consumers (QKV, or MLA's q/kv down projections; fc1 or the router).
          for (size_t j = i + 1; j < L.size(); ++j) {
            const std::string_view n = L[j].name;
            const bool consumer = n == "linear_qkv" || n == "q_down_proj" || n == "q_proj" ||
                                  n == "kv_down_proj" || n == "linear_fc1" ||
                                  n == "shared_expert.linear_fc1" || n == "router";
            if (!consumer) break;
            L[j].recompute = true;
            L[j].variance = true;
            L[j].has_cached_inputs = true;
            L[j].breakpoint = true;
            if (n == "linear_qkv" || n == "linear_fc1" || n == "router") break;
          }
        }
      } else if (mod == RecomputeModule::Mlp && !moe) {
        // Megatron checkpoints the whole MLP with the pre-MLP norm's output as input (default
        // mode, unless fc1 is already a layernorm tail); the peer keeps fc1's input and output.
        for (size_t i = attn_end + 1; i < L.size(); ++i) {
          if (L[i].name == "linear_fc1" && (mode == Mode::SimuMax12 || L[i].recompute)) continue;
          L[i].recompute = true;
        }
      } else if (mod == RecomputeModule::Moe && moe) {
        for (size_t i = attn_end + 1; i < L.size(); ++i)
          if (!L[i].recompute) L[i].recompute = true;
      } else if (mod == RecomputeModule::MoeAct && moe) {
        for (size_t i = attn_end + 1; i < L.size(); ++i) {
          if (L[i].name == "expert_swiglu") L[i].recompute = true;
          if (L[i].name == "experts.linear_fc2") {
            L[i].recompute = true;
            L[i].variance = true;
            L[i].has_cached_inputs = true;
            L[i].breakpoint = true;
          }
        }
      } else if (mod == RecomputeModule::CoreAttn) {
        // Megatron's checkpointed core attention (default mode): q, k, v stay as the checkpoint's
        // input, the attention kernel re-runs in backward; the output and lse are not kept.
        for (auto& l : L)
          if (l.name == "core_attention") l.recompute = true;
      } else if ((mod == RecomputeModule::RoutedExperts || mod == RecomputeModule::A2aOverlapMlp) && moe) {
        // The routed experts' MLP (grouped GEMMs, their fp8 casts and the activation) under one
        // checkpoint whose input is the dispatched tokens; a2a_overlap_mlp also re-runs the
        // shared expert, which the EP overlap schedules with the experts.
        for (size_t i = attn_end + 1; i < L.size(); ++i) {
          const std::string_view n = L[i].name;
          if (n.rfind("experts.", 0) == 0 || n == "expert_swiglu" ||
              (mod == RecomputeModule::A2aOverlapMlp && n.rfind("shared_expert.", 0) == 0))
            L[i].recompute = true;
        }
      } else if (mod == RecomputeModule::A2aOverlapAttn && moe) {
        // The attention piece of the overlapped layer: everything before the pre-MLP norm.
        for (size_t i = 0; i < attn_end; ++i) L[i].recompute = true;
      } else if (mod == RecomputeModule::A2aOverlapPostAttn && moe) {
        // The post-attention piece: the pre-MLP norm and the router (the dispatch stays).
        for (size_t i = attn_end; i < L.size(); ++i) {
          const std::string_view n = L[i].name;
          if (n == "pre_mlp_layernorm" || n == "router" || n == "router.quantizer") L[i].recompute = true;
        }
      } else if (mod == RecomputeModule::SharedExperts && moe) {
        // The shared expert MLP under one checkpoint: its input kept, its internals re-run.
        for (size_t i = attn_end + 1; i < L.size(); ++i)
          if (L[i].name.rfind("shared_expert.", 0) == 0) L[i].recompute = true;
      } else if (mod == RecomputeModule::MlaUpProj && m.is_mla()) {
        for (size_t i = 0; i < attn_end; ++i) {
          const std::string_view n = L[i].name;
          if (n == "q_layernorm" || n == "q_up_proj" || n == "kv_layernorm" || n == "kv_up_proj" ||
              n == "rotary_emb" || n == "q_proj")
            L[i].recompute = true;
          if (n == "core_attention" && s.par.cp == 1) {
            L[i].recompute = true;
            L[i].variance = true;
            L[i].has_cached_inputs = true;
            L[i].breakpoint = true;
          }
        }
      }
    }
  } else {
    for (size_t i = 0; i < L.size(); ++i)
      L[i].recompute = legacy_recomputed(s, L[i].name, i < attn_end, i >= attn_end);
    variance = s.rc.variance && s.rc.granularity != Granularity::FullBlock;
  }
  // cache_groupgemm_col_fp8_inputs: the first grouped GEMM keeps its fp8 input, so a recomputed
  // segment restarts there (SimuMax v1.2's three fp8-cache-cols variants: peaks exact).
  if (s.prec.fp8 && s.prec.cache_groupgemm_col_fp8_inputs)
    for (size_t i = 1; i < L.size(); ++i)
      if (L[i].name == "experts.linear_fc1" && L[i].recompute && L[i - 1].recompute) L[i - 1].breakpoint = true;
  assign_status(L, variance, mode);
  // The first leaf of a block always starts a segment.
  if (!L.empty() && L[0].recompute) L[0].status = RecomputeStatus::First;
}

}  // namespace trainsim
