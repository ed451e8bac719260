// A validated strategy's settings in typed sections (see settings.h): each string parsed once.
#include "plan/settings.h"

#include <algorithm>
#include <string_view>

#include "core/error.h"
#include "core/text.h"
#include "inputs/strategy_config.h"

namespace trainsim {
namespace {

// The value of a name load_strategy has checked against the same list.
template <class Table>
auto parsed(const Table& table, std::string_view name) {
  const auto v = table.find(name);
  TRAINSIM_ASSERT(v.has_value(), "a strategy value the reader did not check");
  return *v;
}

// Dotted parts (TeVersion::at_least compares them in order): each part's leading digits, a missing
// part 0; load_strategy has rejected parts longer than 9 digits, and longer ones stop accumulating.
TeVersion te_version(const std::optional<std::string>& text) {
  TeVersion v;
  if (!text) return v;
  v.known = true;
  std::string_view rest = *text;
  for (int64_t& part : v.parts) {
    size_t i = 0;
    for (bool digits = true; i < rest.size() && rest[i] != '.'; ++i) {
      digits = digits && rest[i] >= '0' && rest[i] <= '9' && part <= 999999999;
      if (digits) part = part * 10 + (rest[i] - '0');
    }
    rest.remove_prefix(std::min(rest.size(), i + 1));
  }
  return v;
}

ParallelSettings parallel_of(const StrategyConfig& s) {
  ParallelSettings p;
  p.world = s.world_size;
  p.tp = s.tp_size;
  p.cp = s.cp_size;
  p.pp = s.pp_size;
  p.vpp = s.interleaving_size;
  p.dp = s.dp_size();
  p.ep = s.ep_size;
  p.etp = s.etp_size;
  p.edp = s.edp_size();
  p.sp = s.sp();
  p.cp_comm = parsed(kCpFlavors, s.cp_comm_type);
  if (s.hierarchical_context_parallel_sizes.size() == 2) {
    p.cp_a2a = s.hierarchical_context_parallel_sizes[0];
    p.cp_ring = s.hierarchical_context_parallel_sizes[1];
  }
  p.cp_a2a_async = s.cp_a2a_mode == "async_cp";
  p.scatter_gather_tensors_in_pipeline = s.scatter_gather_tensors_in_pipeline;
  return p;
}

PrecisionSettings precision_of(const StrategyConfig& s) {
  PrecisionSettings p;
  p.dtype = parsed(kDtypes, s.dtype);
  p.fp8 = s.fp8;
  p.fp8_recipe = parsed(kFp8Recipes, s.fp8_recipe);
  p.fp8_param_gather = s.fp8_param_gather;
  p.grad_reduce_in_bf16 = s.grad_reduce_in_bf16;
  p.fp32_accum_grad = s.use_fp32_accum_grad;
  p.accm_weight = s.use_accm_weight;
  p.fused_grad_accumulation = s.use_fused_grad_accumulation;
  p.cache_groupgemm_col_fp8_inputs = s.cache_groupgemm_col_fp8_inputs;
  return p;
}

RecomputeSettings recompute_of(const StrategyConfig& s) {
  RecomputeSettings r;
  r.on = s.is_recompute();
  r.enabled = s.enable_recompute;
  if (s.recompute_granularity) r.granularity = parsed(kGranularities, *s.recompute_granularity);
  r.layers = s.recompute_layer_num;
  r.unit_layers = s.recompute_unit_layers;
  r.variance = s.recompute_variance;
  r.attn = s.attn_recompute;
  r.mla_rms = s.mla_rms_recompute;
  r.mlp = s.mlp_recompute;
  r.mlp_rms = s.mlp_rms_recompute;
  r.megatron = s.megatron_recompute;
  for (const auto& m : s.megatron_recompute_modules) r.modules.push_back(parsed(kRecomputeModules, m));
  return r;
}

FusionSettings fusion_of(const StrategyConfig& s) {
  FusionSettings f;
  f.fused_norm = s.use_fused_norm;
  f.fused_swiglu = s.use_fused_swiglu;
  f.flash_sdp = s.use_flash_sdp;
  f.math_sdp = s.use_math_sdp;
  f.dropout = s.enable_dropout;
  f.attention_sparse_ratio = s.attention_sparse_ratio;
  if (s.cross_entropy_loss_fusion)
    f.cross_entropy = s.cross_entropy_fusion_impl == "te"       ? CeFusion::Te
                      : s.cross_entropy_fusion_impl == "linear" ? CeFusion::Linear
                                                                : CeFusion::Native;
  f.lce_vocab_split_size = s.lce_vocab_split_size;
  f.te = te_version(s.te_version);
  return f;
}

OverlapSettings overlap_of(const StrategyConfig& s) {
  OverlapSettings o;
  o.zero_state = s.zero_state;
  o.overlap_grad_reduce = s.overlap_grad_reduce;
  o.overlap_param_gather = s.overlap_param_gather;
  o.tp_comm_overlap = s.tp_comm_overlap;
  o.a2a_overlap = s.overlap_moe_expert_parallel_comm;
  o.pp_comm_async = s.pp_comm_async;
  return o;
}

OffloadSettings offload_of(const StrategyConfig& s) {
  OffloadSettings o;
  o.optimizer = s.optimizer_cpu_offload;
  o.optimizer_fraction = s.optimizer_offload_fraction;
  o.activations = s.fine_grained_activation_offloading;
  o.modules = s.offload_modules;
  o.tensors = s.offload_tensors;
  o.min_tensor_bytes = s.min_offloaded_tensor_size;
  o.groupgemm_col_inputs = s.offload_groupgemm_col_inputs;
  return o;
}

MoeSettings moe_of(const StrategyConfig& s) {
  MoeSettings m;
  // Unset: SimuMax's all2all, which is Megatron's alltoall.
  if (s.moe_token_dispatcher_type) m.dispatcher = parsed(kMoeDispatchers, *s.moe_token_dispatcher_type);
  m.deepep = s.deepep_backend();
  m.deepep_num_sms = s.moe_deepep_num_sms;
  m.hybridep_num_sms = s.moe_hybridep_num_sms;
  m.permute_fusion = s.moe_permute_fusion;
  m.dispatch_probs = s.dispatch_probs;
  if (s.moe_router_load_balancing_type)
    m.load_balancing = parsed(kLoadBalancings, *s.moe_router_load_balancing_type);
  m.load_imbalance_factor = s.moe_load_imbalance_factor;
  m.shared_expert_overlap = s.moe_shared_expert_overlap;
  m.router_fusion = s.moe_router_fusion;
  m.sigmoid = s.moe_router_score_function == std::optional<std::string>("sigmoid");
  m.router_num_groups = s.moe_router_num_groups.value_or(0);
  m.router_group_topk = s.moe_router_group_topk.value_or(0);
  m.aux_loss_coeff = s.moe_aux_loss_coeff;
  m.z_loss_coeff = s.moe_z_loss_coeff;
  m.force_load_balancing = s.moe_router_force_load_balancing;
  m.router_padding_for_fp8 = s.moe_router_padding_for_fp8;
  return m;
}

HostSettings host_of(const StrategyConfig& s) {
  HostSettings h;
  const std::string impl = s.cuda_graphs();
  if (!impl.empty()) h.cuda_graphs = parsed(kCudaGraphImpls, impl);
  h.cuda_graph_scope = s.cuda_graph_scope;
  h.check_for_nan = s.check_for_nan_in_loss_and_grad;
  return h;
}

}  // namespace

std::string parallelism_string(const Settings& s) {
  const ParallelSettings& p = s.par;
  return strprintf("tp%lld%s.cp%lld.pp%lld%s.dp%lld.ep%lld.etp%lld.edp%lld", static_cast<long long>(p.tp),
                   p.sp ? ".sp" : "", static_cast<long long>(p.cp), static_cast<long long>(p.pp),
                   p.vpp > 1 ? strprintf(".vpp%lld", static_cast<long long>(p.vpp)).c_str() : "",
                   static_cast<long long>(p.dp), static_cast<long long>(p.ep), static_cast<long long>(p.etp),
                   static_cast<long long>(p.edp));
}

Settings settings_of(const StrategyConfig& s) {
  Settings out;
  out.par = parallel_of(s);
  out.batch = {s.seq_len, s.micro_batch_size, s.micro_batch_num};
  out.prec = precision_of(s);
  out.rc = recompute_of(s);
  out.fuse = fusion_of(s);
  out.ovl = overlap_of(s);
  out.off = offload_of(s);
  out.moe = moe_of(s);
  out.host = host_of(s);
  out.pipe = {s.pipeline_model_parallel_layout, s.num_layers_in_first_pipeline_stage,
              s.num_layers_in_last_pipeline_stage, s.account_for_embedding_in_pipeline_split,
              s.account_for_loss_in_pipeline_split};
  out.mem.mem_factor = s.mem_factor;
  out.straggler_model = s.enable_straggler_model;
  return out;
}

}  // namespace trainsim
