// The settings of a resolved plan in typed sections: every switch the op graph, the passes, the
// costs, the schedule, the memory model and the views read, parsed once from the strategy the
// readers produced (enums instead of strings, derived sizes computed, Megatron's defaults
// applied). Nothing after the Plan reads the strategy itself: a new switch becomes a field here,
// filled in plan/settings.cpp, and read where it acts.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_table.h"

namespace trainsim {

struct StrategyConfig;  // inputs/strategy_config.h (what the readers produce; plan/ reads it)

/// The training dtype (`dtype`).
enum class Dtype : uint8_t { Bf16, Fp16, Fp32 };
inline constexpr EnumTable<Dtype, 3> kDtypes{"dtype", {{{Dtype::Bf16, "bf16"}, {Dtype::Fp16, "fp16"}, {Dtype::Fp32, "fp32"}}}};
/// Bytes of one element in the training dtype.
[[nodiscard]] constexpr double element_bytes(Dtype d) { return d == Dtype::Fp32 ? 4 : 2; }

/// Megatron's `--fp8-recipe`.
enum class Fp8Recipe : uint8_t { Delayed, Tensorwise, Blockwise, Mxfp8 };
inline constexpr EnumTable<Fp8Recipe, 4> kFp8Recipes{
    "fp8 recipe",
    {{{Fp8Recipe::Delayed, "delayed"}, {Fp8Recipe::Tensorwise, "tensorwise"}, {Fp8Recipe::Blockwise, "blockwise"},
      {Fp8Recipe::Mxfp8, "mxfp8"}}}};

/// Megatron's `--cp-comm-type`: `a2a` (Ulysses), `p2p` (ring), `all_gather` (KV all-gather),
/// `a2a+p2p` (hierarchical).
enum class CpFlavor : uint8_t { A2A, P2P, AllGather, A2AP2P };
inline constexpr EnumTable<CpFlavor, 4> kCpFlavors{
    "cp_comm_type",
    {{{CpFlavor::A2A, "a2a"}, {CpFlavor::P2P, "p2p"}, {CpFlavor::AllGather, "all_gather"}, {CpFlavor::A2AP2P, "a2a+p2p"}}}};

/// `allgather` (MoEAllGatherTokenDispatcher), `alltoall` (MoEAlltoAllTokenDispatcher, SimuMax's
/// all2all) or `flex` (MoEFlexTokenDispatcher with DeepEP or HybridEP).
enum class MoeDispatcher : uint8_t { AllGather, AllToAll, Flex };
inline constexpr EnumTable<MoeDispatcher, 3> kMoeDispatchers{
    "moe_token_dispatcher_type",
    {{{MoeDispatcher::AllGather, "allgather"}, {MoeDispatcher::AllToAll, "alltoall"}, {MoeDispatcher::Flex, "flex"}}}};

/// Megatron's `--moe-router-load-balancing-type`.
enum class LoadBalancing : uint8_t { AuxLoss, SeqAuxLoss, GlobalAuxLoss, Sinkhorn, None };
inline constexpr EnumTable<LoadBalancing, 5> kLoadBalancings{
    "moe_router_load_balancing_type",
    {{{LoadBalancing::AuxLoss, "aux_loss"}, {LoadBalancing::SeqAuxLoss, "seq_aux_loss"},
      {LoadBalancing::GlobalAuxLoss, "global_aux_loss"}, {LoadBalancing::Sinkhorn, "sinkhorn"},
      {LoadBalancing::None, "none"}}}};

/// The recompute granularities after the reader lowered Megatron's `full` and `selective`:
/// `full_block` (a unit of layers keeps its input), the peer's `attn_only`, `mlp_only`,
/// `sdp_only` (core attention alone) and `selective_recompute` (its per-part flags).
enum class Granularity : uint8_t { None, FullBlock, AttnOnly, MlpOnly, SdpOnly, Selective };
inline constexpr EnumTable<Granularity, 6> kGranularities{
    "recompute_granularity",
    {{{Granularity::None, "none"}, {Granularity::FullBlock, "full_block"}, {Granularity::AttnOnly, "attn_only"},
      {Granularity::MlpOnly, "mlp_only"}, {Granularity::SdpOnly, "sdp_only"},
      {Granularity::Selective, "selective_recompute"}}}};

/// Megatron's `--recompute-modules` (passes/recompute.cpp says what each recomputes).
enum class RecomputeModule : uint8_t {
  CoreAttn, Mlp, Moe, MoeAct, SharedExperts, RoutedExperts, Layernorm, MlaUpProj,
  A2aOverlapAttn, A2aOverlapPostAttn, A2aOverlapMlp
};
inline constexpr EnumTable<RecomputeModule, 11> kRecomputeModules{
    "recompute module",
    {{{RecomputeModule::CoreAttn, "core_attn"}, {RecomputeModule::Mlp, "mlp"}, {RecomputeModule::Moe, "moe"},
      {RecomputeModule::MoeAct, "moe_act"}, {RecomputeModule::SharedExperts, "shared_experts"},
      {RecomputeModule::RoutedExperts, "routed_experts"}, {RecomputeModule::Layernorm, "layernorm"},
      {RecomputeModule::MlaUpProj, "mla_up_proj"}, {RecomputeModule::A2aOverlapAttn, "a2a_overlap_attn"},
      {RecomputeModule::A2aOverlapPostAttn, "a2a_overlap_post_attn"},
      {RecomputeModule::A2aOverlapMlp, "a2a_overlap_mlp"}}}};

/// Megatron's `--cross-entropy-fusion-impl` with `--cross-entropy-loss-fusion` (None: no fusion).
enum class CeFusion : uint8_t { None, Native, Te, Linear };

/// Megatron's `--cuda-graph-impl` (`--enable-cuda-graph` is the older switch for `local`).
enum class CudaGraphImpl : uint8_t { None, Local, TransformerEngine };
inline constexpr EnumTable<CudaGraphImpl, 3> kCudaGraphImpls{
    "cuda_graph_impl",
    {{{CudaGraphImpl::None, "none"}, {CudaGraphImpl::Local, "local"},
      {CudaGraphImpl::TransformerEngine, "transformer_engine"}}}};

/// A TransformerEngine version (`te_version`), dotted parts compared in order; an unknown
/// version is older than every version.
struct TeVersion {
  bool known = false;
  std::array<int64_t, 3> parts{};
  [[nodiscard]] bool at_least(int64_t major, int64_t minor, int64_t patch = 0) const {
    return known && parts >= std::array<int64_t, 3>{major, minor, patch};
  }
  bool operator==(const TeVersion&) const = default;
};

/// Parallel sizes (valid: tp·cp·pp·dp = world = ep·etp·pp·edp) and how their groups talk.
struct ParallelSettings {
  int64_t world = 1, tp = 1, cp = 1, pp = 1, vpp = 1, dp = 1, ep = 1, etp = 1, edp = 1;
  bool sp = false;  // sequence parallelism in effect (switch on and tp > 1)
  CpFlavor cp_comm = CpFlavor::A2A;
  int64_t cp_a2a = 0, cp_ring = 0;  // a2a+p2p: --hierarchical-context-parallel-sizes
  bool cp_a2a_async = true;         // the peer's cp_a2a_mode async_cp
  /// 2021 Megatron-LM pipeline p2p without sequence parallelism (Narayanan et al. 2021, §4.1).
  bool scatter_gather_tensors_in_pipeline = false;
};

/// Sequence and micro-batches.
struct BatchSettings {
  int64_t seq_len = 0, micro_batch_size = 0, micro_batch_num = 0;
};

/// Precision: training dtype, fp8 recipe, gradient and parameter formats.
struct PrecisionSettings {
  Dtype dtype = Dtype::Bf16;
  bool fp8 = false;
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;
  bool fp8_param_gather = false;  // parameters kept in fp8 only; the DP all-gather moves 1 byte
  bool grad_reduce_in_bf16 = false;
  bool fp32_accum_grad = true;    // the peer's use_fp32_accum_grad (main gradients in fp32)
  bool accm_weight = true;        // the peer's use_accm_weight
  bool fused_grad_accumulation = true;
  /// The first expert grouped GEMM keeps its fp8 input (the peer's cache_groupgemm_col_fp8_inputs).
  bool cache_groupgemm_col_fp8_inputs = false;
  [[nodiscard]] double element_bytes() const { return trainsim::element_bytes(dtype); }
};

/// Recompute: which layers, which parts.
struct RecomputeSettings {
  bool on = false;       // anything recomputed (enable_recompute and a granularity or modules)
  bool enabled = true;   // the peer's enable_recompute switch itself
  Granularity granularity = Granularity::None;
  int64_t layers = 0;       // recompute_layer_num: layers per chunk recomputed
  int64_t unit_layers = 1;  // layers per checkpoint of full_block recompute
  bool variance = false;    // the peer's recompute_variance
  bool attn = false, mla_rms = false, mlp = false, mlp_rms = false;  // selective_recompute parts
  bool megatron = false;    // Megatron's selective recompute with `modules`
  std::vector<RecomputeModule> modules;
  [[nodiscard]] bool has(RecomputeModule m) const {
    for (RecomputeModule x : modules)
      if (x == m) return true;
    return false;
  }
  /// Layers per recompute unit: unit_layers for full_block, else 1.
  [[nodiscard]] int64_t unit() const { return granularity == Granularity::FullBlock ? unit_layers : 1; }
};

/// Kernel fusions and attention.
struct FusionSettings {
  bool fused_norm = true, fused_swiglu = true;
  bool flash_sdp = true, math_sdp = false;
  bool dropout = false;
  double attention_sparse_ratio = 0;
  CeFusion cross_entropy = CeFusion::None;
  int64_t lce_vocab_split_size = 3072;  // vocabulary columns per chunk of the `linear` fusion
  TeVersion te;
};

/// Data-parallel sharding and the overlaps of communication with compute.
struct OverlapSettings {
  int64_t zero_state = 1;  // 0–3 (data_parallel_sharding_strategy sets it)
  bool overlap_grad_reduce = false, overlap_param_gather = false;
  bool tp_comm_overlap = false;  // TE userbuffers
  /// overlap_moe_expert_parallel_comm: Megatron's combined 1F1B, merged forward/backward steps
  /// (a Plan's: in effect, default mode only).
  bool a2a_overlap = false;
  bool pp_comm_async = true;     // overlap_p2p_comm (interleaved schedule)
};

/// Offloading to host memory.
struct OffloadSettings {
  bool optimizer = false;     // optimizer_cpu_offload
  double optimizer_fraction = 1.0;
  bool activations = false;   // fine_grained_activation_offloading
  std::vector<std::string> modules;  // offload_modules (names of modules; passes/offload.cpp)
  std::vector<std::string> tensors;  // offload_tensors (tagged tensors)
  int64_t min_tensor_bytes = 1024 * 1024;
  bool groupgemm_col_inputs = false;  // the peer's offload_groupgemm_col_inputs
};

/// Mixture of experts: dispatcher, router, capacity and balancing.
struct MoeSettings {
  MoeDispatcher dispatcher = MoeDispatcher::AllToAll;
  bool deepep = false;          // flex with DeepEP's kernels (else HybridEP)
  std::optional<int64_t> deepep_num_sms;  // unset: Megatron's 20
  /// SMs HybridEP's kernels take beside compute under the EP overlap (unset: the EP network's
  /// processor_usage share, as for NCCL's all-to-all).
  std::optional<int64_t> hybridep_num_sms;
  bool permute_fusion = false;
  bool dispatch_probs = false;  // the routing weights travel with the tokens
  LoadBalancing load_balancing = LoadBalancing::AuxLoss;
  std::optional<double> load_imbalance_factor;
  bool shared_expert_overlap = false;
  bool router_fusion = false;
  bool sigmoid = false;         // moe_router_score_function sigmoid (else softmax)
  int64_t router_num_groups = 0, router_group_topk = 0;  // node-limited routing (0: off)
  std::optional<double> aux_loss_coeff, z_loss_coeff;
  bool force_load_balancing = false;
  bool router_padding_for_fp8 = false;
};

/// The host side: CUDA graphs and host syncs.
struct HostSettings {
  CudaGraphImpl cuda_graphs = CudaGraphImpl::None;
  std::vector<std::string> cuda_graph_scope;  // Megatron's scope names (compute/host_cost.cpp)
  bool check_for_nan = true;  // check_for_nan_in_loss_and_grad
};

/// The pipeline split as given (plan/pipeline_layout.cpp turns it into chunks).
struct PipelineSettings {
  std::optional<std::string> layout;  // pipeline_model_parallel_layout
  std::optional<int64_t> first_stage_layers, last_stage_layers;
  bool account_for_embedding = false, account_for_loss = false;
};

/// Memory accounting switches.
struct MemorySettings {
  double mem_factor = 0.94;  // compat mode: reserved = allocated / mem_factor
};

/// What one virtual pipeline stage holds. Stage i runs on pipeline rank i mod pp as its
/// virtual chunk ⌊i/pp⌋ (Megatron's interleaved assignment).
struct VirtualStage {
  bool embedding = false, loss = false;
  int64_t layers = 0, mtp_layers = 0;
  bool operator==(const VirtualStage&) const = default;
};

/// Every setting of a plan, by section.
struct Settings {
  Settings() = default;
  /// settings_of(s): the settings of a validated strategy as they stand, for callers that hold
  /// one (tests of a single stage, the search's candidates); a Plan's are resolved further
  /// (virtual stages from a layout, what is in effect in the mode).
  Settings(const StrategyConfig& s);  // NOLINT(google-explicit-constructor): a strategy's settings

  ParallelSettings par;
  BatchSettings batch;
  PrecisionSettings prec;
  RecomputeSettings rc;
  FusionSettings fuse;
  OverlapSettings ovl;
  OffloadSettings off;
  MoeSettings moe;
  HostSettings host;
  PipelineSettings pipe;
  MemorySettings mem;
  bool straggler_model = true;  // enable_straggler_model

  [[nodiscard]] int64_t global_batch_size() const {
    return batch.micro_batch_size * batch.micro_batch_num * par.dp;
  }
};

/// "tp2.sp.cp1.pp2.dp2.ep1.etp1.edp4" style parallelism string (".vppN" with virtual stages).
[[nodiscard]] std::string parallelism_string(const Settings& s);

/// The settings of a validated strategy (plan/settings.cpp; resolve_plan calls it, and tests
/// that build ops from a strategy directly).
[[nodiscard]] Settings settings_of(const StrategyConfig& s);
inline Settings::Settings(const StrategyConfig& s) : Settings(settings_of(s)) {}

}  // namespace trainsim
