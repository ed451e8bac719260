// Training strategy (parallelism, recompute, precision) in the SimuMax-compatible JSON format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainsim {

/// Megatron-LM's `--recompute-modules` (selective recompute): what each recomputes is in
/// passes/recompute.cpp; the a2a_overlap_* ones split a MoE layer as the EP all-to-all overlap
/// does and need it.
inline const std::vector<std::string> kMegatronRecomputeModules = {
    "core_attn", "mlp", "moe", "moe_act", "shared_experts", "routed_experts", "layernorm", "mla_up_proj",
    "a2a_overlap_attn", "a2a_overlap_post_attn", "a2a_overlap_mlp"};

/// Megatron-LM's `--cuda-graph-scope` values (CudaGraphScope of 0.16+, and 0.15's `full`).
inline const std::vector<std::string> kCudaGraphScopes = {"full", "attn", "mlp", "moe", "moe_router",
                                                          "moe_preprocess", "mamba", "full_iteration"};

struct StrategyConfig {
  int64_t seq_len = 0;
  int64_t micro_batch_size = 0;
  int64_t micro_batch_num = 0;
  std::string dtype = "bf16";
  bool fp8 = false;
  int64_t world_size = 8;
  int64_t tp_size = 1, cp_size = 1, pp_size = 1, ep_size = 1, etp_size = 1;
  std::string cp_comm_type = "a2a";
  std::string cp_a2a_mode = "async_cp";
  std::string order_of_paralielism = "tp-cp-ep-dp-pp";  // sic: the peer's spelling
  std::string moe_dispatcher_policy = "all2all";
  // Context parallel and MoE dispatch (Megatron)
  std::vector<int64_t> hierarchical_context_parallel_sizes;  // a2a+p2p: {a2a group, ring group}
  std::optional<std::string> moe_token_dispatcher_type;  // allgather, alltoall, flex (unset: all2all)
  bool moe_enable_deepep = false;                        // flex dispatcher backend DeepEP (before Megatron 0.16)
  std::optional<std::string> moe_flex_dispatcher_backend;  // deepep (Megatron 0.16+'s default) or hybridep
  std::optional<int64_t> moe_deepep_num_sms;             // SMs DeepEP's kernels take (unset: Megatron's 20)
  bool moe_permute_fusion = false;                       // TE fused permute / unpermute
  std::optional<std::string> moe_router_load_balancing_type;  // aux_loss (Megatron's default), ...
  std::optional<double> moe_load_imbalance_factor;       // dropless: busiest EP rank's tokens / mean
  bool moe_shared_expert_overlap = false;                // shared expert under the dispatch all-to-all
  // The router as Megatron runs it (model/moe_kernels.h): TE's fused router kernels, the score
  // function, node-limited routing, the auxiliary and z losses, force-balanced routing, the
  // router's padding of expert rows for fp8 grouped GEMMs; HybridEP's SMs.
  bool moe_router_fusion = false;                        // --moe-router-fusion
  std::optional<std::string> moe_router_score_function;  // softmax (Megatron's default) or sigmoid
  std::optional<int64_t> moe_router_num_groups;          // node-limited routing: expert groups
  std::optional<int64_t> moe_router_group_topk;          // groups a token's experts come from
  std::optional<double> moe_aux_loss_coeff;              // unset: the aux-loss types compute their loss
  std::optional<double> moe_z_loss_coeff;                // unset: no z-loss
  bool moe_router_force_load_balancing = false;          // random routing: every rank as loaded
  bool moe_router_padding_for_fp8 = false;               // the routing map pads expert rows (no Fp8Padding)
  std::optional<int64_t> moe_hybridep_num_sms;           // SMs HybridEP's kernels take
  std::optional<int64_t> num_layers_in_first_pipeline_stage;
  std::optional<int64_t> num_layers_in_last_pipeline_stage;
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  bool grad_reduce_in_bf16 = false;
  bool cache_groupgemm_col_fp8_inputs = false;
  bool offload_groupgemm_col_inputs = false;
  bool attn_recompute = false, mla_rms_recompute = false;
  bool mlp_recompute = false, mlp_rms_recompute = false;
  bool enable_sequence_parallel = true;
  int64_t interleaving_size = 1;
  std::optional<int64_t> microbatch_group_size_per_vp_stage;
  // Pipeline layouts (Megatron)
  std::optional<std::string> pipeline_model_parallel_layout;  // e.g. "Et*3|(tt|)*29,m|L"
  std::optional<int64_t> num_layers_per_virtual_pipeline_stage;  // sets the virtual stages per rank
  bool pp_comm_async = true;           // Megatron's overlap_p2p_comm (interleaved schedule)
  std::string pipeline_schedule = "1f1b";  // "1f1b" (interleaved when interleaving_size > 1) or "zero_bubble_h1"
  bool enable_straggler_model = true;
  int64_t zero_state = 1;
  double attention_sparse_ratio = 0.0;
  bool enable_dropout = false;
  bool use_fp32_accum_grad = true;
  bool use_accm_weight = true;
  bool enable_recompute = true;
  std::optional<std::string> recompute_granularity;
  int64_t recompute_layer_num = 0;
  bool recompute_variance = false;
  bool megatron_recompute = false;
  std::vector<std::string> megatron_recompute_modules;
  bool use_flash_sdp = true;
  bool use_math_sdp = false;
  bool use_fused_norm = true;
  bool use_fused_swiglu = true;
  bool use_fused_grad_accumulation = true;
  bool cross_entropy_loss_fusion = false;
  // Memory switches: recompute, offloading, loss fusion, fp8 recipes (Megatron)
  /// Megatron recompute keys given in the document (recompute_granularity full | selective,
  /// recompute_method, recompute_num_layers, recompute_modules). The reader lowers them onto the
  /// recompute fields above; the names stay for the compat-mode check (validate_plan).
  std::vector<std::string> megatron_recompute_keys;
  /// Layers per checkpoint of full_block recompute (Megatron's recompute_method uniform with
  /// recompute_num_layers N): each unit of N layers of a chunk keeps only its input.
  int64_t recompute_unit_layers = 1;
  /// Megatron's `cross_entropy_fusion_impl` (with cross_entropy_loss_fusion): native | te | linear.
  std::string cross_entropy_fusion_impl = "native";
  /// Vocabulary columns per chunk of the `linear` fused output projection + loss.
  int64_t lce_vocab_split_size = 3072;
  /// Megatron's optimizer_cpu_offload: the optimizer states (fp32 master params, Adam m and v) of
  /// optimizer_offload_fraction of the parameters live in host memory and a CPU Adam updates them.
  bool optimizer_cpu_offload = false;
  double optimizer_offload_fraction = 1.0;
  /// Megatron's fine-grained activation offloading: the tensors the listed modules save for
  /// backward (at least min_offloaded_tensor_size bytes) go to pinned host memory during forward
  /// and come back before their backward.
  bool fine_grained_activation_offloading = false;
  std::vector<std::string> offload_modules;
  int64_t min_offloaded_tensor_size = 1024 * 1024;
  /// Megatron's offload_tensors: tagged saved tensors offloaded the same way
  /// (dispatched_input: the MoE tokens after dispatch, pre_mlp_layernorm_output).
  std::vector<std::string> offload_tensors;
  /// Megatron's fp8_recipe (with fp8): delayed | tensorwise | blockwise | mxfp8 (Blackwell only).
  std::string fp8_recipe = "delayed";
  /// Megatron's fp8_param_gather: parameters kept in fp8 only (no bf16 copy); the
  /// distributed-optimizer all-gather moves 1 byte per parameter.
  bool fp8_param_gather = false;
  bool overlap_grad_reduce = false;  // Megatron's default (SimuMax: true, unused)
  // Overlaps and data-parallel sharding (Megatron)
  bool overlap_param_gather = false;  // distributed-optimizer all-gather under the next forward
  bool tp_comm_overlap = false;       // TE userbuffers: TP AG/RS pipelined with the GEMMs
  bool overlap_moe_expert_parallel_comm = false;  // 1F1B A2A overlap: merged forward/backward steps
  /// 2021 Megatron-LM pipeline p2p without sequence parallelism: each TP rank sends 1/tp of the
  /// activation, the receivers all-gather it over the TP group (Narayanan et al. 2021, §4.1).
  bool scatter_gather_tensors_in_pipeline = false;
  /// no_shard, optim, optim_grads, optim_grads_params; sets zero_state 0–3 when given.
  std::optional<std::string> data_parallel_sharding_strategy;
  std::optional<std::string> te_version;
  /// CUDA graphs (Megatron): cuda_graph_impl none | local | transformer_engine; enable_cuda_graph
  /// is the older switch for local; cuda_graph_scope the captured parts (empty or full: every
  /// transformer layer; attn, mlp, moe, moe_router, moe_preprocess, mamba, full_iteration).
  std::optional<std::string> cuda_graph_impl;
  bool enable_cuda_graph = false;
  std::vector<std::string> cuda_graph_scope;
  /// Megatron's check_for_nan_in_loss_and_grad (on by default): the loss of every micro-batch is
  /// tested on the host (a device-to-host read) and so is the gradient norm.
  bool check_for_nan_in_loss_and_grad = true;
  std::string tp_net = "auto", cp_net = "auto", pp_net = "auto", dp_net = "auto", ep_net = "auto",
              etp_net = "auto", edp_net = "auto";
  bool dispatch_probs = false;
  double mem_factor = 0.94;

  // Derived sizes (valid after validation).
  [[nodiscard]] int64_t dp_size() const { return world_size / (tp_size * cp_size * pp_size); }
  [[nodiscard]] int64_t edp_size() const { return world_size / (ep_size * etp_size * pp_size); }
  [[nodiscard]] int64_t global_batch_size() const {
    return micro_batch_size * micro_batch_num * dp_size();
  }
  /// Sequence parallel is in effect (flag set and tp > 1).
  [[nodiscard]] bool sp() const { return enable_sequence_parallel && tp_size > 1; }
  /// The flex dispatcher runs DeepEP's kernels: its backend is deepep (Megatron 0.16+'s default
  /// for `--moe-token-dispatcher-type flex`, or the older `--moe-enable-deepep`), not hybridep.
  [[nodiscard]] bool deepep_backend() const {
    return moe_token_dispatcher_type == std::optional<std::string>("flex") &&
           moe_flex_dispatcher_backend.value_or("deepep") == "deepep";
  }
  /// The CUDA graph implementation in effect: "local", "transformer_engine", or "" for none.
  [[nodiscard]] std::string cuda_graphs() const {
    if (cuda_graph_impl && *cuda_graph_impl != "none") return *cuda_graph_impl;
    return enable_cuda_graph ? "local" : "";
  }
  [[nodiscard]] bool is_recompute() const {
    return enable_recompute && (recompute_granularity.has_value() || megatron_recompute);
  }
};

/// Parses a strategy JSON document; throws ConfigError listing every problem.
[[nodiscard]] StrategyConfig load_strategy(const std::string& text, const std::string& source);
[[nodiscard]] std::string strategy_to_json_text(const StrategyConfig& s);
/// 64-bit hash of every field (the fields strategy_to_json_text writes).
[[nodiscard]] uint64_t strategy_hash(const StrategyConfig& s);
/// Every key a strategy JSON document may hold.
[[nodiscard]] std::vector<std::string> strategy_keys();

}  // namespace trainsim
