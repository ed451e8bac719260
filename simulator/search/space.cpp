// The search space and the strategy setters of search/: the default values of each dimension,
// dispatchers, the balanced pipeline split, recompute choices, the ranking order and the names.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "search/worker.h"

namespace trainsim {
namespace search_detail {
namespace {

// Total order on the searched parameters: the tie-break that makes results independent of
// evaluation order.
auto plan_key(const Candidate& c) {
  const StrategyConfig& s = c.strategy;
  return std::make_tuple(s.tp_size, s.cp_size, s.cp_comm_type, s.pp_size, static_cast<int>(c.split), s.ep_size,
                         s.etp_size, s.interleaving_size, s.zero_state, !s.enable_sequence_parallel,
                         dispatcher_of(s), !s.overlap_moe_expert_parallel_comm, s.micro_batch_size,
                         static_cast<int>(c.recompute), s.recompute_layer_num);
}

double rank_metric(const Candidate& c, RankBy by) {
  switch (by) {
    case RankBy::Mfu:
      return -c.mfu;
    case RankBy::Tokens:
      return -c.tokens_per_s_per_gpu;
    case RankBy::Time:
      break;
  }
  return c.iteration_time_s;
}

}  // namespace

// The dispatcher a strategy runs, in the search's names ("base" when none is set).
std::string dispatcher_of(const StrategyConfig& s) {
  if (!s.moe_token_dispatcher_type) return "base";
  if (*s.moe_token_dispatcher_type == "flex") return s.moe_flex_dispatcher_backend.value_or("deepep");
  return *s.moe_token_dispatcher_type;
}

void set_dispatcher(StrategyConfig& s, const std::string& d) {
  if (d == "base") return;
  s.moe_enable_deepep = false;
  s.moe_flex_dispatcher_backend.reset();
  if (d == "deepep" || d == "hybridep") {
    s.moe_token_dispatcher_type = "flex";
    s.moe_flex_dispatcher_backend = d;
  } else {
    s.moe_token_dispatcher_type = d;
  }
}

// The a2a group of a2a+p2p: the largest power of two below cp that splits the heads and KV heads
// of one TP rank (0: none).
int64_t hierarchical_a2a(const ModelConfig& m, int64_t tp, int64_t cp) {
  if (m.head_num % tp != 0 || m.kv_head_num % tp != 0) return 0;
  for (int64_t a = cp / 2; a >= 2; a /= 2)
    if (cp % a == 0 && (m.head_num / tp) % a == 0 && (m.kv_head_num / tp) % a == 0) return a;
  return 0;
}

// The balanced split of `layers` decoder layers over pp·vpp virtual stages, counting the
// embedding, the output layer + loss and each MTP layer as one layer: Megatron's
// account_for_*_in_pipeline_split where that divides evenly (no MTP), else a layout string whose
// extra layers go to the stages after the first. False when some stage would hold a negative count.
bool set_balanced(StrategyConfig& s, const ModelConfig& m, int64_t pp, int64_t vpp) {
  const int64_t stages = pp * vpp, mtp = m.mtp_num_layers;
  const int64_t units = m.layer_num + 2 + mtp;
  if (units < stages) return false;
  if (mtp == 0 && units % stages == 0) {
    s.account_for_embedding_in_pipeline_split = true;
    s.account_for_loss_in_pipeline_split = true;
    return true;
  }
  const int64_t base = units / stages, extra = units % stages;
  std::string layout;
  for (int64_t i = 0; i < stages; ++i) {
    int64_t n = base + (i >= 1 && i <= extra ? 1 : 0);
    std::string stage;
    if (i == 0) {
      stage = "E";
      --n;
    }
    int64_t t = n - (i == stages - 1 ? 1 + mtp : 0);
    if (t < 0) return false;
    if (t == 1) stage += "t";
    if (t > 1) stage += "t*" + std::to_string(t);
    if (i == stages - 1) {
      if (mtp == 1) stage += "m";
      if (mtp > 1) stage += "m*" + std::to_string(mtp);
      stage += "L";
    }
    layout += (i ? "|" : "") + stage;
  }
  s.pipeline_model_parallel_layout = layout;
  s.interleaving_size = 1;  // the layout fixes the virtual stages (Megatron rejects both)
  return true;
}

std::vector<int64_t> powers_of_two_up_to(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= n; v *= 2) out.push_back(v);
  return out;
}

bool Better::operator()(const Candidate& a, const Candidate& b) const {
  const double ka = rank_metric(a, by), kb = rank_metric(b, by);
  if (ka != kb) return ka < kb;
  return plan_key(a) < plan_key(b);
}

// Megatron's --recompute-modules of a selective kind (empty for the others).
std::vector<std::string> megatron_modules(RecomputeKind k) {
  switch (k) {
    case RecomputeKind::CoreAttn: return {"core_attn"};
    case RecomputeKind::CoreAttnMlp: return {"core_attn", "mlp"};
    case RecomputeKind::MlaUpProjMlp: return {"mla_up_proj", "mlp"};
    case RecomputeKind::MoeAct: return {"moe_act"};
    case RecomputeKind::LayernormMoeAct: return {"layernorm", "moe_act"};
    case RecomputeKind::Moe: return {"moe"};
    default: return {};
  }
}

void set_recompute(StrategyConfig& s, RecomputeKind k, int64_t layers) {
  s.enable_recompute = true;
  s.megatron_recompute = false;
  s.megatron_recompute_modules.clear();
  s.megatron_recompute_keys.clear();
  s.recompute_unit_layers = 1;
  s.attn_recompute = s.mla_rms_recompute = s.mlp_recompute = s.mlp_rms_recompute = false;
  s.recompute_granularity.reset();
  s.recompute_layer_num = 0;
  if (k == RecomputeKind::None) return;
  s.recompute_layer_num = layers;
  if (k == RecomputeKind::FullBlock) {
    s.recompute_granularity = "full_block";
    return;
  }
  if (k == RecomputeKind::FullUniform) {  // Megatron's full + uniform, as the strategy reader lowers it
    s.recompute_granularity = "full_block";
    s.recompute_layer_num = kAllLayers;
    s.recompute_unit_layers = 2;
    return;
  }
  // Megatron's selective sets, as the strategy reader lowers --recompute-modules.
  if (std::vector<std::string> mods = megatron_modules(k); !mods.empty()) {
    s.recompute_layer_num = kAllLayers;
    if (mods.size() == 1 && mods[0] == "core_attn") {
      s.recompute_granularity = "sdp_only";
      return;
    }
    s.megatron_recompute = true;
    s.megatron_recompute_modules = std::move(mods);
    return;
  }
  // The peer's search_best_selective_recompute flag sets.
  s.recompute_granularity = "selective_recompute";
  const bool attn = k != RecomputeKind::SelectiveMlp, mlp = k != RecomputeKind::SelectiveAttn;
  s.attn_recompute = s.mla_rms_recompute = attn;
  s.mlp_recompute = s.mlp_rms_recompute = mlp;
}

std::string illegal_reason(const std::vector<Issue>& issues) {
  std::string path = issues.front().path;
  if (!path.empty() && path[0] == '/') path.erase(0, 1);
  std::replace(path.begin(), path.end(), '/', '_');
  return "illegal_" + path;
}

}  // namespace search_detail

using search_detail::powers_of_two_up_to;

const char* recompute_kind_name(RecomputeKind k) {
  switch (k) {
    case RecomputeKind::None:
      return "none";
    case RecomputeKind::FullBlock:
      return "full_block";
    case RecomputeKind::SelectiveAll:
      return "selective_all";
    case RecomputeKind::SelectiveAttn:
      return "selective_attn";
    case RecomputeKind::SelectiveMlp:
      return "selective_mlp";
    case RecomputeKind::CoreAttn:
      return "core_attn";
    case RecomputeKind::CoreAttnMlp:
      return "core_attn+mlp";
    case RecomputeKind::MlaUpProjMlp:
      return "mla_up_proj+mlp";
    case RecomputeKind::MoeAct:
      return "moe_act";
    case RecomputeKind::LayernormMoeAct:
      return "layernorm+moe_act";
    case RecomputeKind::Moe:
      return "moe";
    case RecomputeKind::FullUniform:
      return "full_uniform";
  }
  return "as given";
}

const char* pipeline_split_name(PipelineSplit s) {
  switch (s) {
    case PipelineSplit::Even:
      return "even";
    case PipelineSplit::UnevenLast:
      return "uneven_last";
    case PipelineSplit::UnevenFirst:
      return "uneven_first";
    case PipelineSplit::Balanced:
      return "balanced";
  }
  return "?";
}

SearchSpace default_search_space(const ModelConfig& m, const SystemConfig& sys, int64_t world_size,
                                 SearchSpace space, Mode mode, int64_t seq_len) {
  const bool compat = mode == Mode::SimuMax12;
  // SimuMax v1.2 models MLA with tp 1 only; Megatron splits it like any attention.
  if (space.tp.empty())
    space.tp = m.is_mla() && compat ? std::vector<int64_t>{1} : powers_of_two_up_to(sys.num_per_node);
  if (space.pp.empty())
    for (int64_t p = 1; p <= std::min(m.layer_num, world_size); ++p) space.pp.push_back(p);
  // Context parallelism for long sequences: one doubling per 4096 tokens beyond the first, up to 8.
  if (space.cp.empty()) {
    space.cp = {1};
    if (!compat)
      for (int64_t c = 2; c <= 8 && c * 4096 <= seq_len; c *= 2) space.cp.push_back(c);
  }
  if (space.cp_comm.empty())
    space.cp_comm = compat ? std::vector<std::string>{"a2a"}
                           : std::vector<std::string>{"p2p", "a2a", "all_gather", "a2a+p2p"};
  if (space.ep.empty())
    space.ep = m.is_moe() ? powers_of_two_up_to(std::min(m.expert_num, world_size))
                          : std::vector<int64_t>{1};
  if (space.etp.empty()) space.etp = {1};
  if (space.vpp.empty()) space.vpp = compat ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 2, 4, 8};
  if (space.mbs.empty()) space.mbs = {1, 2, 4};
  if (space.zero.empty()) space.zero = compat ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 3};
  if (space.recompute.empty()) {
    if (compat) {
      space.recompute = {RecomputeKind::None, RecomputeKind::FullBlock, RecomputeKind::SelectiveAll,
                         RecomputeKind::SelectiveAttn, RecomputeKind::SelectiveMlp};
    } else {
      space.recompute = {RecomputeKind::None, RecomputeKind::FullBlock, RecomputeKind::CoreAttn,
                         RecomputeKind::FullUniform};
      if (!m.is_moe() || m.moe_layers_in(0, m.layer_num) < m.layer_num) space.recompute.push_back(RecomputeKind::CoreAttnMlp);
      if (m.is_mla()) space.recompute.push_back(RecomputeKind::MlaUpProjMlp);
      if (m.is_moe())
        space.recompute.insert(space.recompute.end(),
                               {RecomputeKind::MoeAct, RecomputeKind::LayernormMoeAct, RecomputeKind::Moe});
    }
  }
  if (space.sp.empty()) space.sp = {true};
  if (space.dispatcher.empty())
    space.dispatcher = m.is_moe() && !compat ? std::vector<std::string>{"alltoall", "allgather", "deepep", "hybridep"}
                                             : std::vector<std::string>{"base"};
  if (space.a2a_overlap.empty())
    space.a2a_overlap = m.is_moe() && !compat ? std::vector<bool>{true, false} : std::vector<bool>{false};
  return space;
}

}  // namespace trainsim
