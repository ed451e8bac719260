// Switches with no effect: Megatron-LM accepts them and they do nothing in the plan's combination.
#include "plan/moot.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"
#include "plan/pipeline_layout.h"

namespace trainsim {
namespace {

template <typename T>
std::string json_text(const T& v) {
  return nlohmann::json(v).dump();
}

// Every rule of Megatron-LM's "accepted, does nothing here" kind, in a fixed order. A rule fires
// only on a value other than the reader's default, so turning the switch off ends it. Rules
// Megatron-LM asserts on (tp_comm_overlap with tp > 1 and no sequence parallelism,
// overlap_param_gather without the distributed optimizer, ...) are not here: they stay errors in
// validate_plan.
class MootRules {
 public:
  MootRules(const ModelConfig& model_config, const StrategyConfig& strategy, Mode mode, const std::string& model_name)
      : m(model_config), s(strategy), model(model_name), compat(mode == Mode::SimuMax12), tp(s.tp_size),
        cp(s.cp_size), pp(s.pp_size), ep(s.ep_size), etp(s.etp_size), vpp(virtual_stages_per_rank(m, s)) {}

  std::vector<MootSwitch> run() {
    context_parallel();
    dense_model_moe_switches();
    moe_switches();
    pipeline();
    data_parallel_and_overlaps();
    precision_memory_and_loss();
    return std::move(out);
  }

 private:
  const ModelConfig& m;
  const StrategyConfig& s;
  const std::string& model;
  const bool compat;
  const int64_t tp, cp, pp, ep, etp, vpp;
  std::vector<MootSwitch> out;
  static inline const StrategyConfig defaults{};  // the reader's defaults of unset keys

  void add(const char* key, std::string value, std::string reason, const std::string& hint,
           void (*off)(StrategyConfig&), std::string message = {}) {
    if (message.empty()) message = reason + "; " + hint;
    out.push_back({{key, std::move(value), std::move(reason)}, std::move(message), off});
  }
  static long long ll(int64_t v) { return static_cast<long long>(v); }

  // CP flavours with cp_size 1; hierarchical sizes without a2a+p2p.
  void context_parallel() {
    if (!compat && cp == 1 && s.cp_comm_type != defaults.cp_comm_type)
      add("cp_comm_type", json_text(s.cp_comm_type), "changes nothing with cp_size 1",
          "remove it or set cp_size > 1",
          [](StrategyConfig& x) { x.cp_comm_type = StrategyConfig{}.cp_comm_type; },
          "'" + s.cp_comm_type + "' changes nothing with cp_size 1; remove it or set cp_size > 1");
    if (s.cp_comm_type != "a2a+p2p" && !s.hierarchical_context_parallel_sizes.empty())
      add("hierarchical_context_parallel_sizes", json_text(s.hierarchical_context_parallel_sizes),
          "changes nothing unless cp_comm_type is 'a2a+p2p'", "remove it",
          [](StrategyConfig& x) { x.hierarchical_context_parallel_sizes.clear(); });
    if (!compat && s.cuda_graphs().empty() && !s.cuda_graph_scope.empty())
      add("cuda_graph_scope", json_text(s.cuda_graph_scope), "changes nothing without CUDA graphs",
          "remove it or set cuda_graph_impl (--cuda-graph-impl local|transformer_engine)",
          [](StrategyConfig& x) { x.cuda_graph_scope.clear(); });
  }

  // MoE switches on a dense model.
  void dense_model_moe_switches() {
    if (!compat && !m.is_moe()) {
      const std::string why = "changes nothing with a dense model";
      if (s.moe_token_dispatcher_type && *s.moe_token_dispatcher_type != "alltoall")
        add("moe_token_dispatcher_type", json_text(*s.moe_token_dispatcher_type), why, "remove it",
            [](StrategyConfig& x) { x.moe_token_dispatcher_type.reset(); });
      if (s.moe_enable_deepep)
        add("moe_enable_deepep", "true", why, "remove it", [](StrategyConfig& x) { x.moe_enable_deepep = false; });
      if (s.moe_flex_dispatcher_backend)
        add("moe_flex_dispatcher_backend", json_text(*s.moe_flex_dispatcher_backend), why, "remove it",
            [](StrategyConfig& x) { x.moe_flex_dispatcher_backend.reset(); });
      if (s.moe_deepep_num_sms)
        add("moe_deepep_num_sms", json_text(*s.moe_deepep_num_sms), why, "remove it",
            [](StrategyConfig& x) { x.moe_deepep_num_sms.reset(); });
      if (s.moe_permute_fusion)
        add("moe_permute_fusion", "true", why, "remove it", [](StrategyConfig& x) { x.moe_permute_fusion = false; });
      if (s.moe_router_load_balancing_type)
        add("moe_router_load_balancing_type", json_text(*s.moe_router_load_balancing_type), why, "remove it",
            [](StrategyConfig& x) { x.moe_router_load_balancing_type.reset(); });
      if (s.moe_load_imbalance_factor)
        add("moe_load_imbalance_factor", json_text(*s.moe_load_imbalance_factor), why, "remove it",
            [](StrategyConfig& x) { x.moe_load_imbalance_factor.reset(); });
      if (s.moe_shared_expert_overlap)
        add("moe_shared_expert_overlap", "true", why, "remove it",
            [](StrategyConfig& x) { x.moe_shared_expert_overlap = false; });
      if (s.moe_router_fusion)
        add("moe_router_fusion", "true", why, "remove it", [](StrategyConfig& x) { x.moe_router_fusion = false; });
      if (s.moe_router_force_load_balancing)
        add("moe_router_force_load_balancing", "true", why, "remove it",
            [](StrategyConfig& x) { x.moe_router_force_load_balancing = false; });
      if (s.moe_router_padding_for_fp8)
        add("moe_router_padding_for_fp8", "true", why, "remove it",
            [](StrategyConfig& x) { x.moe_router_padding_for_fp8 = false; });
      if (s.moe_router_score_function)
        add("moe_router_score_function", json_text(*s.moe_router_score_function), why, "remove it",
            [](StrategyConfig& x) { x.moe_router_score_function.reset(); });
      if (s.moe_router_num_groups)
        add("moe_router_num_groups", json_text(*s.moe_router_num_groups), why, "remove it",
            [](StrategyConfig& x) { x.moe_router_num_groups.reset(); });
      if (s.moe_router_group_topk)
        add("moe_router_group_topk", json_text(*s.moe_router_group_topk), why, "remove it",
            [](StrategyConfig& x) { x.moe_router_group_topk.reset(); });
      if (s.moe_aux_loss_coeff)
        add("moe_aux_loss_coeff", json_text(*s.moe_aux_loss_coeff), why, "remove it",
            [](StrategyConfig& x) { x.moe_aux_loss_coeff.reset(); });
      if (s.moe_z_loss_coeff)
        add("moe_z_loss_coeff", json_text(*s.moe_z_loss_coeff), why, "remove it",
            [](StrategyConfig& x) { x.moe_z_loss_coeff.reset(); });
      if (s.moe_hybridep_num_sms)
        add("moe_hybridep_num_sms", json_text(*s.moe_hybridep_num_sms), why, "remove it",
            [](StrategyConfig& x) { x.moe_hybridep_num_sms.reset(); });
    }
  }

  // MoE switches that depend on another one (flex backend, DeepEP SMs, shared expert, padding).
  void moe_switches() {
    if (!compat && m.is_moe()) {
      // Megatron reads the flex dispatcher's backend only with the flex dispatcher.
      if (s.moe_flex_dispatcher_backend && s.moe_token_dispatcher_type != std::optional<std::string>("flex"))
        add("moe_flex_dispatcher_backend", json_text(*s.moe_flex_dispatcher_backend),
            "changes nothing without the flex dispatcher (moe_token_dispatcher_type 'flex')", "remove it",
            [](StrategyConfig& x) { x.moe_flex_dispatcher_backend.reset(); });
      // DeepEP's SMs (Buffer.set_num_sms) set its dispatch and combine bandwidth
      // (model/moe_dispatch.h deepep_bandwidth) and slow the compute its kernels run beside.
      if (s.moe_deepep_num_sms && !s.deepep_backend())
        add("moe_deepep_num_sms", json_text(*s.moe_deepep_num_sms), "changes nothing without the DeepEP backend",
            "set moe_enable_deepep to true or remove it", [](StrategyConfig& x) { x.moe_deepep_num_sms.reset(); });
      const bool hybridep = s.moe_token_dispatcher_type == std::optional<std::string>("flex") && !s.deepep_backend();
      if (s.moe_hybridep_num_sms && !hybridep)
        add("moe_hybridep_num_sms", json_text(*s.moe_hybridep_num_sms), "changes nothing without the HybridEP backend",
            "set moe_flex_dispatcher_backend to 'hybridep' or remove it",
            [](StrategyConfig& x) { x.moe_hybridep_num_sms.reset(); });
      else if (s.moe_hybridep_num_sms && !s.overlap_moe_expert_parallel_comm)
        add("moe_hybridep_num_sms", json_text(*s.moe_hybridep_num_sms),
            "changes nothing without overlap_moe_expert_parallel_comm: HybridEP's bandwidth is modeled by its links "
            "(no published per-SM figures), its SMs take nothing from compute when it runs alone",
            "remove it or set overlap_moe_expert_parallel_comm to true",
            [](StrategyConfig& x) { x.moe_hybridep_num_sms.reset(); });
      if (s.moe_router_group_topk && !s.moe_router_num_groups)
        add("moe_router_group_topk", json_text(*s.moe_router_group_topk),
            "changes nothing without moe_router_num_groups (node-limited routing needs the groups)", "remove it",
            [](StrategyConfig& x) { x.moe_router_group_topk.reset(); });
      if (s.moe_shared_expert_overlap && !m.moe_shared_expert_intermediate_size)
        add("moe_shared_expert_overlap", "true", "changes nothing: model " + model + " has no shared expert", "",
            [](StrategyConfig& x) { x.moe_shared_expert_overlap = false; },
            "changes nothing: model " + model + " has no shared expert");
      if (m.moe_pad_expert_input_to_capacity) {
        const std::string why = "changes nothing: model " + model + " pads every expert to its capacity "
                                "(moe_pad_expert_input_to_capacity)";
        const std::string hint = "set that to false for dropless routing";
        if (s.moe_router_load_balancing_type)
          add("moe_router_load_balancing_type", json_text(*s.moe_router_load_balancing_type), why, hint,
              [](StrategyConfig& x) { x.moe_router_load_balancing_type.reset(); });
        if (s.moe_load_imbalance_factor)
          add("moe_load_imbalance_factor", json_text(*s.moe_load_imbalance_factor), why, hint,
              [](StrategyConfig& x) { x.moe_load_imbalance_factor.reset(); });
      }
    }
  }

  // Pipeline switches without a pipeline or without interleaving.
  void pipeline() {
    if (!compat && pp == 1) {
      const std::string why = "changes nothing with pp_size 1 (the one stage holds every layer)";
      if (s.account_for_embedding_in_pipeline_split)
        add("account_for_embedding_in_pipeline_split", "true", why, "remove it",
            [](StrategyConfig& x) { x.account_for_embedding_in_pipeline_split = false; });
      if (s.account_for_loss_in_pipeline_split)
        add("account_for_loss_in_pipeline_split", "true", why, "remove it",
            [](StrategyConfig& x) { x.account_for_loss_in_pipeline_split = false; });
    }
    if (!compat && vpp == 1 && s.microbatch_group_size_per_vp_stage)
      add("microbatch_group_size_per_vp_stage", json_text(*s.microbatch_group_size_per_vp_stage),
          "changes nothing without an interleaved pipeline (one virtual stage per rank)", "remove it",
          [](StrategyConfig& x) { x.microbatch_group_size_per_vp_stage.reset(); });
    if (s.pipeline_schedule == "zero_bubble_h1" && pp < 2)
      add("pipeline_schedule", json_text(s.pipeline_schedule), "zero_bubble_h1 changes nothing with pp_size 1",
          "use 1f1b", [](StrategyConfig& x) { x.pipeline_schedule = StrategyConfig{}.pipeline_schedule; });
  }

  // Overlaps with nothing to overlap (no data parallelism, tp 1, one micro-batch).
  void data_parallel_and_overlaps() {
    if (!compat) {
      const int64_t dp = s.world_size / (tp * cp * pp) * cp, edp = s.world_size / (ep * etp * pp);
      const bool no_dp = dp <= 1 && (!m.is_moe() || edp <= 1);
      const std::string why = "changes nothing without data parallelism (dp·cp is 1, and edp for experts)";
      if (s.overlap_grad_reduce && no_dp)
        add("overlap_grad_reduce", "true", why, "set it to false",
            [](StrategyConfig& x) { x.overlap_grad_reduce = false; });
      // Without the distributed optimizer Megatron rejects it (validate_plan).
      if (s.overlap_param_gather && (s.zero_state == 1 || s.zero_state == 2) && no_dp)
        add("overlap_param_gather", "true", why, "set it to false",
            [](StrategyConfig& x) { x.overlap_param_gather = false; });
      // Megatron FSDP (optim_grads_params, zero_state 3) takes overlap_param_gather for its
      // prefetching, which the model of its per-step gathers always does: nothing left to switch.
      if (s.overlap_param_gather && s.zero_state == 3)
        add("overlap_param_gather", "true",
            "changes nothing with zero_state 3 (Megatron FSDP's parameter gathers are prefetched ahead of the "
            "layers that need them)",
            "set it to false", [](StrategyConfig& x) { x.overlap_param_gather = false; });
      // With tp > 1 and no sequence parallelism Megatron rejects it (validate_plan).
      if (s.tp_comm_overlap && tp == 1)
        add("tp_comm_overlap", "true", "changes nothing with tp_size 1 (no tensor-parallel communication)",
            "set it to false", [](StrategyConfig& x) { x.tp_comm_overlap = false; });
      if (s.scatter_gather_tensors_in_pipeline && (pp < 2 || tp < 2 || s.sp()))
        add("scatter_gather_tensors_in_pipeline", "true",
            strprintf("changes nothing unless pipeline stages exchange activations replicated over a tensor-parallel "
                      "group (pp_size > 1, tp_size > 1, no sequence parallelism: it already sends 1/tp); got pp_size "
                      "%lld, tp_size %lld, sequence parallelism %s",
                      ll(pp), ll(tp), s.sp() ? "on" : "off"),
            "set it to false", [](StrategyConfig& x) { x.scatter_gather_tensors_in_pipeline = false; });
      // With full recompute Megatron rejects it (validate_plan).
      if (s.overlap_moe_expert_parallel_comm && m.is_moe() && ep >= 2 && pp == 1 && s.micro_batch_num < 2 &&
          !(s.is_recompute() && s.recompute_granularity == "full_block"))
        add("overlap_moe_expert_parallel_comm", "true",
            "changes nothing with one micro-batch and no pipeline: no forward runs beside a backward",
            "set micro_batch_num ≥ 2 or remove it",
            [](StrategyConfig& x) { x.overlap_moe_expert_parallel_comm = false; });
    }
  }

  // fp8, recompute units, offloading and cross-entropy switches without the switch they refine.
  void precision_memory_and_loss() {
    if (!s.fp8) {
      const std::string why = "changes nothing without fp8";
      if (s.fp8_recipe != defaults.fp8_recipe)
        add("fp8_recipe", json_text(s.fp8_recipe), why, "set fp8 to true or remove it",
            [](StrategyConfig& x) { x.fp8_recipe = StrategyConfig{}.fp8_recipe; });
      if (s.fp8_param_gather)
        add("fp8_param_gather", "true", why, "set fp8 to true or remove it",
            [](StrategyConfig& x) { x.fp8_param_gather = false; });
    }
    if (s.recompute_unit_layers != defaults.recompute_unit_layers && s.recompute_granularity != "full_block")
      add("recompute_unit_layers", json_text(s.recompute_unit_layers),
          "only applies to recompute_granularity 'full_block' (Megatron's full recompute)", "",
          [](StrategyConfig& x) { x.recompute_unit_layers = StrategyConfig{}.recompute_unit_layers; },
          "only applies to recompute_granularity 'full_block' (Megatron's full recompute)");
    if (!s.fine_grained_activation_offloading) {
      const std::string why = "changes nothing without fine_grained_activation_offloading";
      if (!s.offload_modules.empty())
        add("offload_modules", json_text(s.offload_modules), why, "set it to true",
            [](StrategyConfig& x) { x.offload_modules.clear(); });
      if (!s.offload_tensors.empty())
        add("offload_tensors", json_text(s.offload_tensors), why, "set it to true",
            [](StrategyConfig& x) { x.offload_tensors.clear(); });
      if (s.min_offloaded_tensor_size != defaults.min_offloaded_tensor_size)
        add("min_offloaded_tensor_size", json_text(s.min_offloaded_tensor_size), why, "",
            [](StrategyConfig& x) { x.min_offloaded_tensor_size = StrategyConfig{}.min_offloaded_tensor_size; }, why);
    }
    if (s.optimizer_offload_fraction != defaults.optimizer_offload_fraction && !s.optimizer_cpu_offload)
      add("optimizer_offload_fraction", json_text(s.optimizer_offload_fraction),
          "changes nothing without optimizer_cpu_offload", "set optimizer_cpu_offload to true",
          [](StrategyConfig& x) { x.optimizer_offload_fraction = StrategyConfig{}.optimizer_offload_fraction; });
    if (s.cross_entropy_fusion_impl != defaults.cross_entropy_fusion_impl && !s.cross_entropy_loss_fusion)
      add("cross_entropy_fusion_impl", json_text(s.cross_entropy_fusion_impl),
          "changes nothing without cross_entropy_loss_fusion", "",
          [](StrategyConfig& x) { x.cross_entropy_fusion_impl = StrategyConfig{}.cross_entropy_fusion_impl; },
          "'" + s.cross_entropy_fusion_impl + "' changes nothing without cross_entropy_loss_fusion; set "
          "cross_entropy_loss_fusion to true");
    if (s.lce_vocab_split_size != defaults.lce_vocab_split_size && s.cross_entropy_fusion_impl != "linear")
      add("lce_vocab_split_size", json_text(s.lce_vocab_split_size), "only applies to cross_entropy_fusion_impl 'linear'",
          "", [](StrategyConfig& x) { x.lce_vocab_split_size = StrategyConfig{}.lce_vocab_split_size; },
          "only applies to cross_entropy_fusion_impl 'linear'");
    if (s.cache_groupgemm_col_fp8_inputs && !s.fp8)
      add("cache_groupgemm_col_fp8_inputs", "true", "changes nothing without fp8", "", 
          [](StrategyConfig& x) { x.cache_groupgemm_col_fp8_inputs = false; }, "needs fp8");
  }
};

}  // namespace

std::vector<MootSwitch> find_moot_switches(const ModelConfig& m, const StrategyConfig& s, Mode mode,
                                           const std::string& model) {
  return MootRules(m, s, mode, model).run();
}

std::vector<NoEffect> moot_switches(const ModelConfig& m, const StrategyConfig& s, Mode mode,
                                    const std::string& model) {
  std::vector<NoEffect> out;
  for (MootSwitch& x : find_moot_switches(m, s, mode, model)) out.push_back(std::move(x.what));
  return out;
}

std::vector<NoEffect> normalize_strategy(const ModelConfig& m, StrategyConfig& s, Mode mode,
                                         const std::string& model) {
  std::vector<NoEffect> out;
  if (mode == Mode::SimuMax12) return out;
  // Each round turns off what is moot now; a switch another one made moot follows in the next.
  // A switch turned off is at its default, which no rule flags: the rounds end, at most one per
  // switch.
  for (int round = 0; round < 64; ++round) {
    std::vector<MootSwitch> found = find_moot_switches(m, s, mode, model);
    if (found.empty()) return out;
    for (MootSwitch& x : found) {
      x.off(s);
      out.push_back(std::move(x.what));
    }
  }
  TRAINSIM_ASSERT(false, "normalize_strategy: a switch turned off stays moot");
  return out;
}

std::string no_effect_line(const NoEffect& n) { return n.key + "=" + n.value + " " + n.reason + "; turned off"; }

}  // namespace trainsim
