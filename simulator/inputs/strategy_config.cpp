// Strategy JSON reader and writer, with the per-field rules of the peer's StrategyConfig.
#include "inputs/strategy_config.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string_view>

#include "inputs/json_reader.h"
#include "core/enum_table.h"
#include "core/text.h"

namespace trainsim {
namespace {

// Field tables: one row per JSON key, shared by the reader and the writer.
struct IntField { const char* name; int64_t StrategyConfig::*ptr; };
struct BoolField { const char* name; bool StrategyConfig::*ptr; };
struct StrField { const char* name; std::string StrategyConfig::*ptr; };
struct OptIntField { const char* name; std::optional<int64_t> StrategyConfig::*ptr; };
struct OptStrField { const char* name; std::optional<std::string> StrategyConfig::*ptr; };

const IntField kIntFields[] = {
    {"seq_len", &StrategyConfig::seq_len},
    {"micro_batch_size", &StrategyConfig::micro_batch_size},
    {"micro_batch_num", &StrategyConfig::micro_batch_num},
    {"world_size", &StrategyConfig::world_size},
    {"tp_size", &StrategyConfig::tp_size},
    {"cp_size", &StrategyConfig::cp_size},
    {"pp_size", &StrategyConfig::pp_size},
    {"ep_size", &StrategyConfig::ep_size},
    {"etp_size", &StrategyConfig::etp_size},
    {"interleaving_size", &StrategyConfig::interleaving_size},
    {"zero_state", &StrategyConfig::zero_state},
    {"recompute_layer_num", &StrategyConfig::recompute_layer_num},
    {"lce_vocab_split_size", &StrategyConfig::lce_vocab_split_size},
    {"recompute_unit_layers", &StrategyConfig::recompute_unit_layers},
    {"min_offloaded_tensor_size", &StrategyConfig::min_offloaded_tensor_size},
};
const BoolField kBoolFields[] = {
    {"fp8", &StrategyConfig::fp8},
    {"account_for_embedding_in_pipeline_split", &StrategyConfig::account_for_embedding_in_pipeline_split},
    {"account_for_loss_in_pipeline_split", &StrategyConfig::account_for_loss_in_pipeline_split},
    {"grad_reduce_in_bf16", &StrategyConfig::grad_reduce_in_bf16},
    {"cache_groupgemm_col_fp8_inputs", &StrategyConfig::cache_groupgemm_col_fp8_inputs},
    {"offload_groupgemm_col_inputs", &StrategyConfig::offload_groupgemm_col_inputs},
    {"attn_recompute", &StrategyConfig::attn_recompute},
    {"mla_rms_recompute", &StrategyConfig::mla_rms_recompute},
    {"mlp_recompute", &StrategyConfig::mlp_recompute},
    {"mlp_rms_recompute", &StrategyConfig::mlp_rms_recompute},
    {"enable_sequence_parallel", &StrategyConfig::enable_sequence_parallel},
    {"pp_comm_async", &StrategyConfig::pp_comm_async},
    {"enable_straggler_model", &StrategyConfig::enable_straggler_model},
    {"enable_dropout", &StrategyConfig::enable_dropout},
    {"use_fp32_accum_grad", &StrategyConfig::use_fp32_accum_grad},
    {"use_accm_weight", &StrategyConfig::use_accm_weight},
    {"enable_recompute", &StrategyConfig::enable_recompute},
    {"recompute_variance", &StrategyConfig::recompute_variance},
    {"megatron_recompute", &StrategyConfig::megatron_recompute},
    {"use_flash_sdp", &StrategyConfig::use_flash_sdp},
    {"use_math_sdp", &StrategyConfig::use_math_sdp},
    {"use_fused_norm", &StrategyConfig::use_fused_norm},
    {"use_fused_swiglu", &StrategyConfig::use_fused_swiglu},
    {"use_fused_grad_accumulation", &StrategyConfig::use_fused_grad_accumulation},
    {"cross_entropy_loss_fusion", &StrategyConfig::cross_entropy_loss_fusion},
    {"overlap_grad_reduce", &StrategyConfig::overlap_grad_reduce},
    {"dispatch_probs", &StrategyConfig::dispatch_probs},
    {"overlap_param_gather", &StrategyConfig::overlap_param_gather},
    {"tp_comm_overlap", &StrategyConfig::tp_comm_overlap},
    {"optimizer_cpu_offload", &StrategyConfig::optimizer_cpu_offload},
    {"fine_grained_activation_offloading", &StrategyConfig::fine_grained_activation_offloading},
    {"moe_enable_deepep", &StrategyConfig::moe_enable_deepep},
    {"moe_permute_fusion", &StrategyConfig::moe_permute_fusion},
    {"moe_shared_expert_overlap", &StrategyConfig::moe_shared_expert_overlap},
    {"overlap_moe_expert_parallel_comm", &StrategyConfig::overlap_moe_expert_parallel_comm},
    {"scatter_gather_tensors_in_pipeline", &StrategyConfig::scatter_gather_tensors_in_pipeline},
    {"fp8_param_gather", &StrategyConfig::fp8_param_gather},
    {"moe_router_fusion", &StrategyConfig::moe_router_fusion},
    {"moe_router_force_load_balancing", &StrategyConfig::moe_router_force_load_balancing},
    {"moe_router_padding_for_fp8", &StrategyConfig::moe_router_padding_for_fp8},
    {"enable_cuda_graph", &StrategyConfig::enable_cuda_graph},
    {"check_for_nan_in_loss_and_grad", &StrategyConfig::check_for_nan_in_loss_and_grad},
};
const StrField kStrFields[] = {
    {"dtype", &StrategyConfig::dtype},
    {"cp_comm_type", &StrategyConfig::cp_comm_type},
    {"cp_a2a_mode", &StrategyConfig::cp_a2a_mode},
    {"order_of_paralielism", &StrategyConfig::order_of_paralielism},
    {"moe_dispatcher_policy", &StrategyConfig::moe_dispatcher_policy},
    {"pipeline_schedule", &StrategyConfig::pipeline_schedule},
    {"tp_net", &StrategyConfig::tp_net},
    {"cp_net", &StrategyConfig::cp_net},
    {"pp_net", &StrategyConfig::pp_net},
    {"dp_net", &StrategyConfig::dp_net},
    {"ep_net", &StrategyConfig::ep_net},
    {"etp_net", &StrategyConfig::etp_net},
    {"edp_net", &StrategyConfig::edp_net},
    {"cross_entropy_fusion_impl", &StrategyConfig::cross_entropy_fusion_impl},
    {"fp8_recipe", &StrategyConfig::fp8_recipe},
};
const OptIntField kOptIntFields[] = {
    {"num_layers_in_first_pipeline_stage", &StrategyConfig::num_layers_in_first_pipeline_stage},
    {"num_layers_in_last_pipeline_stage", &StrategyConfig::num_layers_in_last_pipeline_stage},
    {"microbatch_group_size_per_vp_stage", &StrategyConfig::microbatch_group_size_per_vp_stage},
    {"num_layers_per_virtual_pipeline_stage", &StrategyConfig::num_layers_per_virtual_pipeline_stage},
    {"moe_deepep_num_sms", &StrategyConfig::moe_deepep_num_sms},
    {"moe_router_num_groups", &StrategyConfig::moe_router_num_groups},
    {"moe_router_group_topk", &StrategyConfig::moe_router_group_topk},
    {"moe_hybridep_num_sms", &StrategyConfig::moe_hybridep_num_sms},
};
const OptStrField kOptStrFields[] = {
    {"recompute_granularity", &StrategyConfig::recompute_granularity},
    {"te_version", &StrategyConfig::te_version},
    {"pipeline_model_parallel_layout", &StrategyConfig::pipeline_model_parallel_layout},
    {"data_parallel_sharding_strategy", &StrategyConfig::data_parallel_sharding_strategy},
    {"moe_token_dispatcher_type", &StrategyConfig::moe_token_dispatcher_type},
    {"moe_flex_dispatcher_backend", &StrategyConfig::moe_flex_dispatcher_backend},
    {"moe_router_load_balancing_type", &StrategyConfig::moe_router_load_balancing_type},
    {"moe_router_score_function", &StrategyConfig::moe_router_score_function},
    {"cuda_graph_impl", &StrategyConfig::cuda_graph_impl},
};

// "2.11.0", "2.8", "2.11.0rc1", "2.11.0+abc": 1 to 4 dot-separated numbers of at most 9 digits; the
// last may carry a suffix that does not start with a digit.
bool valid_version(const std::string& v) {
  size_t parts = 0, i = 0;
  while (true) {
    size_t digits = 0;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i, ++digits;
    if (digits == 0 || digits > 9 || ++parts > 4) return false;
    if (i == v.size()) return true;
    if (v[i] != '.') break;
    ++i;
  }
  for (; i < v.size(); ++i)
    if (!std::isalnum(static_cast<unsigned char>(v[i])) && v[i] != '+' && v[i] != '-' && v[i] != '_' && v[i] != '.')
      return false;
  return true;
}

void check_choice(IssueList& issues, const char* key, const std::string& value,
                  const std::vector<std::string>& valid) {
  for (const auto& v : valid)
    if (v == value) return;
  issues.add(std::string("/") + key, unknown_name_message("value", value, valid));
}

// Megatron's recompute keys (the flags --recompute-granularity, --recompute-method,
// --recompute-num-layers, --recompute-modules) lowered onto the recompute pass's fields:
//   full + block, N     → full_block on the first N layers of every chunk (Megatron: "the first
//                         N layers of each pipeline stage (virtual chunk)")
//   full + uniform, N   → full_block on every layer in units of N layers (recompute_unit_layers):
//                         a unit keeps its input and is recomputed as a whole
//   selective, modules  → core_attn alone: sdp_only on every layer; otherwise the Megatron
//                         module pass (output-discarding checkpoints) on every layer
// Megatron requires the method and the layer count with full and ignores neither: a key that
// changes nothing is an error here, as everywhere.
void lower_megatron_recompute(const ObjectReader& r, const std::optional<std::string>& method,
                              const std::optional<int64_t>& num, const std::vector<std::string>& modules,
                              StrategyConfig& s, IssueList& issues) {
  const bool full = s.recompute_granularity == std::optional<std::string>("full");
  const bool selective = s.recompute_granularity == std::optional<std::string>("selective");
  if (full || selective) s.megatron_recompute_keys.emplace_back("recompute_granularity");
  for (const char* k : {"recompute_method", "recompute_num_layers", "recompute_modules"})
    if (r.has(k)) s.megatron_recompute_keys.emplace_back(k);
  if (!full && !selective) {
    for (const auto& k : s.megatron_recompute_keys)
      issues.add("/" + k, "needs recompute_granularity 'full' or 'selective' (Megatron); the peer's granularities "
                          "take recompute_layer_num");
    return;
  }
  const std::string g = *s.recompute_granularity;
  if (r.has("recompute_layer_num"))
    issues.add("/recompute_layer_num", "is the peer's key; with recompute_granularity '" + g +
                                           "' use recompute_num_layers (full) or leave it out (selective)");
  if (s.megatron_recompute || s.attn_recompute || s.mlp_recompute || s.mla_rms_recompute || s.mlp_rms_recompute)
    issues.add("/recompute_granularity", "'" + g + "' cannot be combined with the peer's recompute flags "
                                         "(megatron_recompute, attn_recompute, mlp_recompute, ...)");
  if (!s.enable_recompute)
    issues.add("/enable_recompute", "false switches off the recompute that recompute_granularity '" + g + "' asks for");
  constexpr int64_t kAllLayers = int64_t{1} << 20;  // the bound of recompute_layer_num: every layer
  if (full) {
    if (r.has("recompute_modules"))
      issues.add("/recompute_modules", "only applies to recompute_granularity 'selective'");
    if (!method)
      issues.add("/recompute_method", "required with recompute_granularity 'full' (Megatron); valid values: uniform, block");
    else
      check_choice(issues, "recompute_method", *method, {"uniform", "block"});
    if (!num)
      issues.add("/recompute_num_layers", "required with recompute_granularity 'full' (Megatron)");
    else if (*num < 1 || *num > kAllLayers)
      issues.add("/recompute_num_layers", strprintf("must be in 1..%lld", static_cast<long long>(kAllLayers)));
    s.recompute_granularity = "full_block";
    const bool block = method == std::optional<std::string>("block");
    s.recompute_layer_num = block ? num.value_or(0) : kAllLayers;
    if (!block && num && *num >= 1 && *num <= kAllLayers) s.recompute_unit_layers = *num;
    return;
  }
  for (const char* k : {"recompute_method", "recompute_num_layers"})
    if (r.has(k))
      issues.add(std::string("/") + k, "only applies to recompute_granularity 'full'; selective recompute covers every layer");
  std::vector<std::string> mods = r.has("recompute_modules") ? modules : std::vector<std::string>{"core_attn"};
  if (mods.empty()) issues.add("/recompute_modules", "selective recompute needs at least one module");
  const std::vector<std::string>& valid = kMegatronRecomputeModules;
  bool all_valid = true;
  for (size_t i = 0; i < mods.size(); ++i) {
    if (std::find(valid.begin(), valid.end(), mods[i]) != valid.end()) continue;
    all_valid = false;
    std::string msg = "unknown module '" + mods[i] + "'; valid values: " + join(valid);
    const std::string near = suggest(mods[i], valid);
    if (!near.empty()) msg += "; did you mean '" + near + "'?";
    issues.add("/recompute_modules/" + std::to_string(i), msg);
  }
  if (!all_valid) return;
  s.recompute_layer_num = kAllLayers;
  if (mods == std::vector<std::string>{"core_attn"}) {
    s.recompute_granularity = "sdp_only";
    return;
  }
  s.recompute_granularity.reset();
  s.megatron_recompute = true;
  s.megatron_recompute_modules = mods;
}

// Sizes: required, at least 1, and below the bounds that keep every product of sizes far from
// int64 overflow and every replay bounded.
void check_sizes(const nlohmann::json& doc, const ObjectReader& r, const StrategyConfig& s, IssueList& issues) {
  const struct { const char* name; int64_t v; int64_t max; } bounded[] = {
      {"seq_len", s.seq_len, 1 << 24}, {"micro_batch_size", s.micro_batch_size, 1 << 16},
      {"micro_batch_num", s.micro_batch_num, 1 << 20}, {"world_size", s.world_size, 1 << 24},
      {"tp_size", s.tp_size, 1 << 16}, {"cp_size", s.cp_size, 1 << 16}, {"pp_size", s.pp_size, 1 << 12},
      {"ep_size", s.ep_size, 1 << 16}, {"etp_size", s.etp_size, 1 << 16},
      {"interleaving_size", s.interleaving_size, 1 << 8}, {"recompute_layer_num", s.recompute_layer_num, 1 << 20},
      {"num_layers_in_first_pipeline_stage", s.num_layers_in_first_pipeline_stage.value_or(1), 1 << 20},
      {"num_layers_in_last_pipeline_stage", s.num_layers_in_last_pipeline_stage.value_or(1), 1 << 20},
      {"microbatch_group_size_per_vp_stage", s.microbatch_group_size_per_vp_stage.value_or(1), 1 << 20},
      {"num_layers_per_virtual_pipeline_stage", s.num_layers_per_virtual_pipeline_stage.value_or(1), 1 << 20}};
  for (const auto& b : bounded)
    if (b.v > b.max)
      issues.add(std::string("/") + b.name, strprintf("%lld is larger than the supported maximum %lld",
                                                       static_cast<long long>(b.v), static_cast<long long>(b.max)));
  for (const char* k : {"num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage",
                        "microbatch_group_size_per_vp_stage", "num_layers_per_virtual_pipeline_stage"})
    if (r.has(k) && doc.at(k).is_number() && doc.at(k).get<double>() < 1)
      issues.add(std::string("/") + k, "must be ≥ 1");
  for (const char* k : {"seq_len", "micro_batch_size", "micro_batch_num"})
    if (!r.has(k)) issues.add(std::string("/") + k, "required integer is missing");
  const struct { const char* name; int64_t v; } positive[] = {
      {"seq_len", s.seq_len}, {"micro_batch_size", s.micro_batch_size},
      {"micro_batch_num", s.micro_batch_num}, {"world_size", s.world_size},
      {"tp_size", s.tp_size}, {"cp_size", s.cp_size}, {"pp_size", s.pp_size},
      {"ep_size", s.ep_size}, {"etp_size", s.etp_size}, {"interleaving_size", s.interleaving_size},
      {"num_virtual_stages_per_pipeline_rank", s.interleaving_size}};
  for (const auto& p : positive)
    if (r.has(p.name) && p.v < 1)
      issues.add(std::string("/") + p.name, "must be ≥ 1, got " + std::to_string(p.v));
}

// Ranges and choices of the core switches (ZeRO stage, dtype, CP flavour, schedule, recompute).
void check_core_switches(StrategyConfig& s, IssueList& issues) {
  if (s.zero_state < 0 || s.zero_state > 3)
    issues.add("/zero_state", "must be 0, 1, 2 or 3, got " + std::to_string(s.zero_state));
  if (s.recompute_layer_num < 0) issues.add("/recompute_layer_num", "must be ≥ 0");
  if (s.mem_factor <= 0 || s.mem_factor > 1) issues.add("/mem_factor", "must be in (0, 1]");
  if (!(s.optimizer_offload_fraction > 0 && s.optimizer_offload_fraction <= 1))
    issues.add("/optimizer_offload_fraction", "must be in (0, 1]");
  if (s.attention_sparse_ratio < 0 || s.attention_sparse_ratio >= 1)
    issues.add("/attention_sparse_ratio", "must be in [0, 1)");
  check_choice(issues, "dtype", s.dtype, {"bf16", "fp16", "fp32"});
  check_choice(issues, "cp_comm_type", s.cp_comm_type, {"a2a", "p2p", "all_gather", "a2a+p2p"});
  for (size_t i = 0; i < s.hierarchical_context_parallel_sizes.size(); ++i) {
    const int64_t v = s.hierarchical_context_parallel_sizes[i];
    if (v < 1 || v > (1 << 16))
      issues.add("/hierarchical_context_parallel_sizes/" + std::to_string(i),
                 strprintf("must be in [1, 65536], got %lld", static_cast<long long>(v)));
  }
  check_choice(issues, "cp_a2a_mode", s.cp_a2a_mode, {"async_cp", "sync_cp"});
  check_choice(issues, "order_of_paralielism", s.order_of_paralielism, {"tp-cp-ep-dp-pp"});
  // The peer downgrades the legacy "all2all-seq" to "all2all" with a warning.
  if (s.moe_dispatcher_policy == "all2all-seq") s.moe_dispatcher_policy = "all2all";
  check_choice(issues, "moe_dispatcher_policy", s.moe_dispatcher_policy, {"all2all"});
  check_choice(issues, "pipeline_schedule", s.pipeline_schedule, {"1f1b", "zero_bubble_h1"});
  if (s.recompute_granularity)
    check_choice(issues, "recompute_granularity", *s.recompute_granularity,
                 {"full_block", "attn_only", "mlp_only", "sdp_only", "selective_recompute", "full", "selective"});
}

// Ranges and choices of the feature switches (loss fusion, offloading, fp8, sharding, MoE
// routing and dispatch, CUDA graphs, TE version, recompute modules).
void check_feature_switches(const ObjectReader& r, StrategyConfig& s, IssueList& issues) {
  check_choice(issues, "cross_entropy_fusion_impl", s.cross_entropy_fusion_impl, {"native", "te", "linear"});
  for (size_t i = 0; i < s.offload_modules.size(); ++i)
    check_choice(issues, ("offload_modules/" + std::to_string(i)).c_str(), s.offload_modules[i],
                 {"attn_norm", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act"});
  for (size_t i = 0; i < s.offload_tensors.size(); ++i)
    check_choice(issues, ("offload_tensors/" + std::to_string(i)).c_str(), s.offload_tensors[i],
                 {"dispatched_input", "pre_mlp_layernorm_output"});
  check_choice(issues, "fp8_recipe", s.fp8_recipe, {"delayed", "tensorwise", "blockwise", "mxfp8"});
  if (s.min_offloaded_tensor_size < 0 || s.min_offloaded_tensor_size > (int64_t{1} << 50))
    issues.add("/min_offloaded_tensor_size", "must be in 0..2^50 bytes");
  if (s.recompute_unit_layers < 1 || s.recompute_unit_layers > (int64_t{1} << 20))
    issues.add("/recompute_unit_layers", "must be in 1..1048576");
  if (s.lce_vocab_split_size < 1 || s.lce_vocab_split_size > (int64_t{1} << 24))
    issues.add("/lce_vocab_split_size", "must be in 1..16777216");
  if (s.data_parallel_sharding_strategy) {
    // Megatron's sharding strategies are the ZeRO stages 0–3.
    const std::vector<std::string> kSharding = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
    const auto it = std::find(kSharding.begin(), kSharding.end(), *s.data_parallel_sharding_strategy);
    check_choice(issues, "data_parallel_sharding_strategy", *s.data_parallel_sharding_strategy, kSharding);
    const auto stage = static_cast<int64_t>(it - kSharding.begin());
    if (it != kSharding.end() && r.has("zero_state") && s.zero_state != stage)
      issues.add("/zero_state", strprintf("%lld contradicts data_parallel_sharding_strategy '%s' (zero_state %lld); "
                                          "give one of the two",
                                          static_cast<long long>(s.zero_state),
                                          s.data_parallel_sharding_strategy->c_str(), static_cast<long long>(stage)));
    if (it != kSharding.end()) s.zero_state = stage;
  }
  if (s.moe_token_dispatcher_type)
    check_choice(issues, "moe_token_dispatcher_type", *s.moe_token_dispatcher_type, {"allgather", "alltoall", "flex"});
  if (s.moe_flex_dispatcher_backend)
    check_choice(issues, "moe_flex_dispatcher_backend", *s.moe_flex_dispatcher_backend, {"deepep", "hybridep"});
  if (s.moe_enable_deepep && s.moe_flex_dispatcher_backend == std::optional<std::string>("hybridep"))
    issues.add("/moe_enable_deepep", "contradicts moe_flex_dispatcher_backend 'hybridep'; give one of the two");
  if (s.moe_router_load_balancing_type)
    check_choice(issues, "moe_router_load_balancing_type", *s.moe_router_load_balancing_type,
                 {"aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "none"});
  if (s.moe_load_imbalance_factor && !(*s.moe_load_imbalance_factor >= 1 && *s.moe_load_imbalance_factor <= 64))
    issues.add("/moe_load_imbalance_factor", "must be in [1, 64] (busiest EP rank's tokens over the mean)");
  if (s.moe_router_score_function)
    check_choice(issues, "moe_router_score_function", *s.moe_router_score_function, {"softmax", "sigmoid"});
  for (const auto& [key, v] : {std::pair{"moe_aux_loss_coeff", s.moe_aux_loss_coeff},
                               std::pair{"moe_z_loss_coeff", s.moe_z_loss_coeff}})
    if (v && !(*v >= 0 && *v <= 1e6)) issues.add(std::string("/") + key, "must be a number in [0, 1e6]");
  for (const auto& [key, v] : {std::pair{"moe_router_num_groups", s.moe_router_num_groups},
                               std::pair{"moe_router_group_topk", s.moe_router_group_topk},
                               std::pair{"moe_hybridep_num_sms", s.moe_hybridep_num_sms}})
    if (v && !(*v >= 1 && *v <= (1 << 16))) issues.add(std::string("/") + key, "must be in [1, 65536]");
  if (s.cuda_graph_impl)
    check_choice(issues, "cuda_graph_impl", *s.cuda_graph_impl, {"none", "local", "transformer_engine"});
  if (s.enable_cuda_graph && s.cuda_graph_impl && *s.cuda_graph_impl != "none")
    issues.add("/enable_cuda_graph", "is Megatron's older switch for cuda_graph_impl 'local'; give one of the two");
  for (size_t i = 0; i < s.cuda_graph_scope.size(); ++i)
    check_choice(issues, ("cuda_graph_scope/" + std::to_string(i)).c_str(), s.cuda_graph_scope[i], kCudaGraphScopes);
  if (s.te_version && !valid_version(*s.te_version))
    issues.add("/te_version", "expected a version like \"2.11.0\" (1 to 4 numbers of at most 9 digits), got \"" +
                                  s.te_version->substr(0, 40) + "\"");
  for (size_t i = 0; i < s.megatron_recompute_modules.size(); ++i) {
    const auto& m = s.megatron_recompute_modules[i];
    const std::vector<std::string>& valid = kMegatronRecomputeModules;
    if (std::find(valid.begin(), valid.end(), m) != valid.end()) continue;
    std::string msg = "unknown module '" + m + "'; valid values: " + join(valid);
    issues.add("/megatron_recompute_modules/" + std::to_string(i), msg);
  }
}

}  // namespace

StrategyConfig load_strategy(const std::string& text, const std::string& source) {
  nlohmann::json doc = parse_json(text, source);
  IssueList issues(source);
  StrategyConfig s;
  ObjectReader r(doc, "", issues);
  for (const auto& f : kIntFields) r.opt(f.name, s.*f.ptr);
  for (const auto& f : kBoolFields) r.opt(f.name, s.*f.ptr);
  for (const auto& f : kStrFields) r.opt(f.name, s.*f.ptr);
  for (const auto& f : kOptIntFields) r.opt(f.name, s.*f.ptr);
  for (const auto& f : kOptStrFields) r.opt(f.name, s.*f.ptr);
  r.opt("attention_sparse_ratio", s.attention_sparse_ratio);
  r.opt("mem_factor", s.mem_factor);
  r.opt("optimizer_offload_fraction", s.optimizer_offload_fraction);
  r.opt("megatron_recompute_modules", s.megatron_recompute_modules);
  // Megatron's name for interleaving_size (the peer's key).
  std::optional<int64_t> virtual_stages;
  r.opt("num_virtual_stages_per_pipeline_rank", virtual_stages);
  r.opt("offload_modules", s.offload_modules);
  r.opt("offload_tensors", s.offload_tensors);
  r.opt("cuda_graph_scope", s.cuda_graph_scope);
  std::optional<std::string> recompute_method;
  std::optional<int64_t> recompute_num_layers;
  std::vector<std::string> recompute_modules;
  r.opt("recompute_method", recompute_method);
  r.opt("recompute_num_layers", recompute_num_layers);
  r.opt("recompute_modules", recompute_modules);
  r.opt("hierarchical_context_parallel_sizes", s.hierarchical_context_parallel_sizes);
  r.opt("moe_load_imbalance_factor", s.moe_load_imbalance_factor);
  r.opt("moe_aux_loss_coeff", s.moe_aux_loss_coeff);
  r.opt("moe_z_loss_coeff", s.moe_z_loss_coeff);
  r.finish();
  if (virtual_stages && r.has("interleaving_size"))
    issues.add("/num_virtual_stages_per_pipeline_rank", "is Megatron's name for interleaving_size; give one of the two");
  else if (virtual_stages)
    s.interleaving_size = *virtual_stages;

  check_sizes(doc, r, s, issues);
  check_core_switches(s, issues);
  lower_megatron_recompute(r, recompute_method, recompute_num_layers, recompute_modules, s, issues);
  check_feature_switches(r, s, issues);
  issues.throw_if_any();
  return s;
}

std::string strategy_to_json_text(const StrategyConfig& s) {
  nlohmann::ordered_json j;
  for (const auto& f : kIntFields) j[f.name] = s.*f.ptr;
  for (const auto& f : kStrFields) j[f.name] = s.*f.ptr;
  for (const auto& f : kBoolFields) j[f.name] = s.*f.ptr;
  for (const auto& f : kOptIntFields)
    if ((s.*f.ptr).has_value()) j[f.name] = *(s.*f.ptr);
  for (const auto& f : kOptStrFields)
    if ((s.*f.ptr).has_value()) j[f.name] = *(s.*f.ptr);
  j["attention_sparse_ratio"] = s.attention_sparse_ratio;
  j["mem_factor"] = s.mem_factor;
  j["optimizer_offload_fraction"] = s.optimizer_offload_fraction;
  if (!s.megatron_recompute_modules.empty()) j["megatron_recompute_modules"] = s.megatron_recompute_modules;
  if (!s.offload_modules.empty()) j["offload_modules"] = s.offload_modules;
  if (!s.offload_tensors.empty()) j["offload_tensors"] = s.offload_tensors;
  if (!s.cuda_graph_scope.empty()) j["cuda_graph_scope"] = s.cuda_graph_scope;
  if (!s.hierarchical_context_parallel_sizes.empty())
    j["hierarchical_context_parallel_sizes"] = s.hierarchical_context_parallel_sizes;
  if (s.moe_load_imbalance_factor) j["moe_load_imbalance_factor"] = *s.moe_load_imbalance_factor;
  if (s.moe_aux_loss_coeff) j["moe_aux_loss_coeff"] = *s.moe_aux_loss_coeff;
  if (s.moe_z_loss_coeff) j["moe_z_loss_coeff"] = *s.moe_z_loss_coeff;
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

uint64_t strategy_hash(const StrategyConfig& s) {
  // Every field, in the order of the tables the reader and writer share, mixed 8 bytes at a time
  // (FNV-1a's prime over words, with a shift that spreads the high bits): plans are hashed per
  // resolve, so this stays a few hundred instructions.
  uint64_t h = 1469598103934665603ull;
  auto word = [&](uint64_t w) {
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 29;
  };
  auto bytes = [&](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (; n >= 8; n -= 8, b += 8) {
      uint64_t w;
      std::memcpy(&w, b, 8);
      word(w);
    }
    if (n == 0) return;
    uint64_t tail = 0;
    std::memcpy(&tail, b, n);
    word(tail ^ (static_cast<uint64_t>(n) << 56));
  };
  auto num = [&](int64_t v) { bytes(&v, sizeof v); };
  auto str = [&](const std::string& v) {
    num(static_cast<int64_t>(v.size()));
    bytes(v.data(), v.size());
  };
  for (const auto& f : kIntFields) num(s.*f.ptr);
  for (const auto& f : kStrFields) str(s.*f.ptr);
  for (const auto& f : kBoolFields) num(s.*f.ptr ? 1 : 0);
  for (const auto& f : kOptIntFields) num((s.*f.ptr).has_value() ? *(s.*f.ptr) : INT64_MIN);
  for (const auto& f : kOptStrFields) {
    num((s.*f.ptr).has_value() ? 1 : 0);
    str((s.*f.ptr).value_or(""));
  }
  bytes(&s.attention_sparse_ratio, sizeof s.attention_sparse_ratio);
  bytes(&s.mem_factor, sizeof s.mem_factor);
  bytes(&s.optimizer_offload_fraction, sizeof s.optimizer_offload_fraction);
  for (const auto& m : s.megatron_recompute_modules) str(m);
  num(static_cast<int64_t>(s.offload_modules.size()));
  for (const auto& m : s.offload_modules) str(m);
  num(static_cast<int64_t>(s.offload_tensors.size()));
  for (const auto& t : s.offload_tensors) str(t);
  num(static_cast<int64_t>(s.cuda_graph_scope.size()));
  for (const auto& t : s.cuda_graph_scope) str(t);
  num(static_cast<int64_t>(s.hierarchical_context_parallel_sizes.size()));
  for (int64_t v : s.hierarchical_context_parallel_sizes) num(v);
  const double imbalance = s.moe_load_imbalance_factor.value_or(0);
  bytes(&imbalance, sizeof imbalance);
  for (const auto& c : {s.moe_aux_loss_coeff, s.moe_z_loss_coeff}) {
    const double v = c.value_or(-1);
    bytes(&v, sizeof v);
  }
  return h;
}

std::vector<std::string> strategy_keys() {
  std::vector<std::string> keys;
  for (const auto& f : kIntFields) keys.emplace_back(f.name);
  for (const auto& f : kBoolFields) keys.emplace_back(f.name);
  for (const auto& f : kStrFields) keys.emplace_back(f.name);
  for (const auto& f : kOptIntFields) keys.emplace_back(f.name);
  for (const auto& f : kOptStrFields) keys.emplace_back(f.name);
  for (const char* k : {"attention_sparse_ratio", "mem_factor", "megatron_recompute_modules",
                        "num_virtual_stages_per_pipeline_rank", "recompute_method", "recompute_num_layers",
                        "recompute_modules", "optimizer_offload_fraction", "offload_modules",
                        "hierarchical_context_parallel_sizes", "moe_load_imbalance_factor", "offload_tensors",
                        "moe_aux_loss_coeff", "moe_z_loss_coeff", "cuda_graph_scope"})
    keys.emplace_back(k);
  return keys;
}

}  // namespace trainsim
