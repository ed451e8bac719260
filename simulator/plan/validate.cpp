// Cross-file legality rules (the peer's sanity_check and _cross_sanity_check, reported all at once).
#include "plan/validate.h"

#include <algorithm>
#include <span>

#include "plan/pipeline_layout.h"
#include "core/text.h"
#include "passes/fp8.h"

namespace trainsim {

std::vector<std::string> divisors_of(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  std::vector<std::string> out;
  for (int64_t d : small) out.push_back(std::to_string(d));
  for (auto it = large.rbegin(); it != large.rend(); ++it) out.push_back(std::to_string(*it));
  return out;
}

bool split_layers(int64_t layers, const StrategyConfig& s, StageLayers& out, std::string* reason) {
  const int64_t pp = s.pp_size;
  auto fail = [&](std::string why) {
    if (reason) *reason = std::move(why);
    return false;
  };
  // Megatron: account_for_* adds a virtual layer on each side, removed from first/last.
  int64_t total = layers + (s.account_for_embedding_in_pipeline_split ? 1 : 0) +
                  (s.account_for_loss_in_pipeline_split ? 1 : 0);
  const bool uneven = s.num_layers_in_first_pipeline_stage || s.num_layers_in_last_pipeline_stage;
  if (uneven && (s.account_for_embedding_in_pipeline_split || s.account_for_loss_in_pipeline_split))
    return fail("num_layers_in_first/last_pipeline_stage cannot be combined with account_for_*_in_pipeline_split");
  if (pp == 1) {
    out = {layers, 0, layers};
    return true;
  }
  if (!uneven) {
    if (total % pp != 0)
      return fail(strprintf("%lld layers%s do not divide evenly over pp_size %lld",
                            static_cast<long long>(layers),
                            total != layers ? " (with virtual embedding/loss layers)" : "",
                            static_cast<long long>(pp)));
    int64_t per = total / pp;
    out.first = per - (s.account_for_embedding_in_pipeline_split ? 1 : 0);
    out.last = per - (s.account_for_loss_in_pipeline_split ? 1 : 0);
    out.middle = per;
    if (out.first < 0 || out.last < 0) return fail("a pipeline stage would get no layers");
    return true;
  }
  int64_t first = s.num_layers_in_first_pipeline_stage.value_or(-1);
  int64_t last = s.num_layers_in_last_pipeline_stage.value_or(-1);
  int64_t rest = layers, rest_stages = pp;
  if (first >= 0) {
    rest -= first;
    --rest_stages;
  }
  if (last >= 0) {
    rest -= last;
    --rest_stages;
  }
  if (first < 0 && last < 0) return fail("internal: uneven split without sizes");
  if (rest < 0 || first == 0 || last == 0)
    return fail("num_layers_in_first/last_pipeline_stage leave no layers for other stages");
  int64_t per = 0;
  if (rest_stages > 0) {
    if (rest % rest_stages != 0)
      return fail(strprintf("the %lld remaining layers do not divide evenly over %lld stages",
                            static_cast<long long>(rest), static_cast<long long>(rest_stages)));
    per = rest / rest_stages;
    if (per < 1) return fail("a middle pipeline stage would get no layers");
  } else if (rest != 0) {
    return fail(strprintf("first + last stage layers must equal layer_num (%lld) when pp_size is 2",
                          static_cast<long long>(layers)));
  }
  out.first = first >= 0 ? first : per;
  out.last = last >= 0 ? last : per;
  out.middle = per;
  return true;
}

namespace {


// The plan rules, grouped by what they constrain; each group adds its issues in the order a
// user reads the strategy (sizes, CP, experts, pipeline, overlaps, memory, recompute, system).
class PlanChecks {
 public:
  PlanChecks(const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system,
             const PlanSources& sources, Mode plan_mode)
      : m(model), s(strategy), sys(system), src(sources), mode(plan_mode), tp(s.tp_size), cp(s.cp_size),
        pp(s.pp_size), ep(s.ep_size), etp(s.etp_size), vpp(virtual_stages_per_rank(m, s)) {}

  std::vector<Issue> run() {
    bounds_and_sizes();
    context_parallel();
    experts_and_mla();
    moe_dispatch();
    pipeline();
    overlaps();
    compat_memory_switches();
    precision_and_offload();
    recompute();
    moot();
    system_tiers();
    system_entries();
    return std::move(issues);
  }

 private:
  const ModelConfig& m;
  const StrategyConfig& s;
  const SystemConfig& sys;
  const PlanSources& src;
  const Mode mode;
  const int64_t tp, cp, pp, ep, etp, vpp;
  std::vector<Issue> issues;
  static inline const StrategyConfig defaults{};  // the reader's defaults of unset keys

  void add(const std::string& path, const std::string& msg) { issues.push_back({src.strategy, path, msg}); }
  void to_model(const std::string& path, const std::string& msg) { issues.push_back({src.model, path, msg}); }
  void to_system(const std::string& path, const std::string& msg) { issues.push_back({src.system, path, msg}); }
  static long long ll(int64_t v) { return static_cast<long long>(v); }

  // Work bounds, then the sizes that must divide each other (world, sequence, heads).
  void bounds_and_sizes() {
    // Work bounds first: the readers cap each size (so these products cannot overflow), but their
    // products drive the replay and the per-layer tables.
    const int64_t slots = pp * std::max<int64_t>(1, vpp) * s.micro_batch_num;
    if (slots > kMaxPipelineSlots)
      add("/micro_batch_num", strprintf("pp_size·interleaving_size·micro_batch_num = %lld is above the "
                                        "limit %lld; use fewer, larger micro-batches",
                                        ll(slots), ll(kMaxPipelineSlots)));
    if (m.layer_num * m.expert_num > kMaxLayerExperts)
      to_model("/expert_num",
                        strprintf("layer_num·expert_num = %lld is above the limit %lld",
                                  ll(m.layer_num * m.expert_num), ll(kMaxLayerExperts)));
    if (s.world_size % (tp * cp * pp) != 0)
      add("/world_size", strprintf("%lld is not divisible by tp_size·cp_size·pp_size = %lld; valid "
                                   "world sizes are multiples of %lld",
                                   ll(s.world_size), ll(tp * cp * pp), ll(tp * cp * pp)));
    if (s.world_size % (ep * etp * pp) != 0)
      add("/world_size", strprintf("%lld is not divisible by ep_size·etp_size·pp_size = %lld",
                                   ll(s.world_size), ll(ep * etp * pp)));
    if (s.seq_len % cp != 0)
      add("/cp_size", strprintf("%lld does not divide seq_len (%lld)", ll(cp), ll(s.seq_len)));
    else if (s.sp() && s.seq_len % (cp * tp) != 0)
      add("/seq_len", strprintf("sequence parallelism splits the sequence over cp_size·tp_size = %lld, "
                                "which does not divide %lld", ll(cp * tp), ll(s.seq_len)));
    if (m.head_num % tp != 0)
      add("/tp_size", strprintf("%lld does not divide head_num (%lld) of model %s; valid values: %s",
                                ll(tp), ll(m.head_num), src.model.c_str(),
                                join(divisors_of(m.head_num)).c_str()));
    else if (m.kv_head_num % tp != 0)
      add("/tp_size", strprintf("%lld does not divide kv_head_num (%lld) of model %s; valid values: %s",
                                ll(tp), ll(m.kv_head_num), src.model.c_str(),
                                join(divisors_of(m.kv_head_num)).c_str()));
  }

  // Context-parallel flavours and the head split of all-to-all CP.
  void context_parallel() {
    if (mode == Mode::SimuMax12 && s.cp_comm_type != "a2a")
      add("/cp_comm_type", "'" + s.cp_comm_type + "' is not part of SimuMax v1.2; valid values: a2a (or use the default mode)");
    const auto& hcp = s.hierarchical_context_parallel_sizes;
    if (s.cp_comm_type == "a2a+p2p") {
      if (hcp.size() != 2 || hcp[0] * hcp[1] != cp)
        add("/hierarchical_context_parallel_sizes",
            strprintf("cp_comm_type a2a+p2p needs [a2a group, ring group] with a product of cp_size (%lld), e.g. [%lld, 2]",
                      ll(cp), ll(std::max<int64_t>(1, cp / 2))));
    }
    // Ulysses splits heads: over the whole CP group (a2a) or its inner group (a2a+p2p).
    const int64_t a2a = s.cp_comm_type == "a2a" ? cp
                        : (s.cp_comm_type == "a2a+p2p" && hcp.size() == 2) ? hcp[0] : 1;
    if (cp > 1 && a2a > 1) {
      if ((m.head_num / tp) % a2a != 0 || (m.kv_head_num / tp) % a2a != 0)
        add("/cp_size", strprintf("all-to-all context parallelism splits heads: %lld must divide the "
                                  "per-TP-rank head_num (%lld) and kv_head_num (%lld); cp_comm_type p2p "
                                  "works with any head count",
                                  ll(a2a), ll(m.head_num / tp), ll(m.kv_head_num / tp)));
    }
  }

  // Expert parallelism needs experts it divides; MLA's limits on tp and cp.
  void experts_and_mla() {
    if (m.is_moe()) {
      if (m.expert_num % ep != 0)
        add("/ep_size", strprintf("%lld does not divide expert_num (%lld) of model %s; valid values: %s",
                                  ll(ep), ll(m.expert_num), src.model.c_str(),
                                  join(divisors_of(m.expert_num)).c_str()));
    } else if (ep > 1 || etp > 1) {
      add("/ep_size", "expert parallelism needs a moe model; valid values for a dense model: 1");
    }
    if (m.is_mla() && tp > 1 && mode == Mode::SimuMax12)
      add("/tp_size", "SimuMax v1.2 models MLA attention with tp_size 1 only; valid values: 1 (or use the default mode)");
    if (m.is_mla() && cp > 1)
      add("/cp_size", "MLA attention with context parallelism is not supported by TransformerEngine; valid values: 1");
  }

  // MoE dispatcher switches: Megatron's, default mode only, where they change something.
  void moe_dispatch() {
    if (mode == Mode::SimuMax12 && !m.moe_layer_pattern.empty())
      to_model("/moe_layer_freq",
                        "a layer pattern other than leading dense layers is not part of SimuMax v1.2; use dense_layers "
                        "or the default mode");
    // MoE dispatch (Megatron): default mode only, and only where it changes something.
    const struct { const char* key; bool set; } moe_keys[] = {
        {"moe_token_dispatcher_type", s.moe_token_dispatcher_type && *s.moe_token_dispatcher_type != "alltoall"},
        {"moe_enable_deepep", s.moe_enable_deepep},
        {"moe_flex_dispatcher_backend", s.moe_flex_dispatcher_backend.has_value()},
        {"moe_deepep_num_sms", s.moe_deepep_num_sms.has_value()},
        {"moe_permute_fusion", s.moe_permute_fusion},
        {"moe_router_load_balancing_type", s.moe_router_load_balancing_type.has_value()},
        {"moe_load_imbalance_factor", s.moe_load_imbalance_factor.has_value()},
        {"moe_shared_expert_overlap", s.moe_shared_expert_overlap},
        {"moe_router_fusion", s.moe_router_fusion},
        {"moe_router_score_function", s.moe_router_score_function.has_value()},
        {"moe_router_num_groups", s.moe_router_num_groups.has_value()},
        {"moe_router_group_topk", s.moe_router_group_topk.has_value()},
        {"moe_aux_loss_coeff", s.moe_aux_loss_coeff.has_value()},
        {"moe_z_loss_coeff", s.moe_z_loss_coeff.has_value()},
        {"moe_router_force_load_balancing", s.moe_router_force_load_balancing},
        {"moe_router_padding_for_fp8", s.moe_router_padding_for_fp8},
        {"moe_hybridep_num_sms", s.moe_hybridep_num_sms.has_value()}};
    for (const auto& k : moe_keys) {
      if (!k.set) continue;
      if (mode == Mode::SimuMax12)
        add(std::string("/") + k.key, "is not part of SimuMax v1.2 (it routes with all2all, balanced); remove it or use the default mode");
    }
    if (mode == Mode::Default && m.is_moe()) {
      // Megatron's router: the experts split into equal groups, a token's groups among them.
      if (s.moe_router_num_groups && m.expert_num % *s.moe_router_num_groups != 0)
        add("/moe_router_num_groups", strprintf("must divide the %lld experts (expert_num), got %lld",
                                                ll(m.expert_num), ll(*s.moe_router_num_groups)));
      else if (s.moe_router_num_groups && s.moe_router_group_topk && *s.moe_router_group_topk > *s.moe_router_num_groups)
        add("/moe_router_group_topk", strprintf("must be at most moe_router_num_groups (%lld), got %lld",
                                                ll(*s.moe_router_num_groups), ll(*s.moe_router_group_topk)));
      if (s.moe_enable_deepep && s.moe_token_dispatcher_type != "flex")
        add("/moe_enable_deepep", "DeepEP is a backend of the flex dispatcher; set moe_token_dispatcher_type to 'flex'");
      // The flex dispatcher's backend is DeepEP unless moe_flex_dispatcher_backend says hybridep
      // (Megatron 0.16+: --moe-flex-dispatcher-backend, default deepep).
      // DeepEP's SMs (Buffer.set_num_sms) set its bandwidth and slow the compute its kernels run
      // beside (without the backend the count is moot: moot_switches).
      if (s.moe_deepep_num_sms && s.deepep_backend()) {
        const int64_t sms = *s.moe_deepep_num_sms;
        if (sms < 1)
          add("/moe_deepep_num_sms", strprintf("must be at least 1 (Megatron's default: 20), got %lld", ll(sms)));
        else if (sys.sm_count && sms >= *sys.sm_count)
          add("/moe_deepep_num_sms", strprintf("must be below the accelerator's %lld SMs (accelerator.sm_count), leaving "
                                               "some to compute; got %lld", ll(*sys.sm_count), ll(sms)));
      }
      // HybridEP's SMs (moe_hybridep_num_sms) take their share of the compute under the EP overlap
      // (moot otherwise: moot_switches).
      const bool hybridep = s.moe_token_dispatcher_type == std::optional<std::string>("flex") && !s.deepep_backend();
      if (s.moe_hybridep_num_sms && hybridep && s.overlap_moe_expert_parallel_comm) {
        const int64_t sms = *s.moe_hybridep_num_sms;  // ≥ 1 (load_strategy)
        if (sys.sm_count && sms >= *sys.sm_count)
          add("/moe_hybridep_num_sms", strprintf("must be below the accelerator's %lld SMs (accelerator.sm_count), "
                                                 "leaving some to compute; got %lld", ll(*sys.sm_count), ll(sms)));
        if (!sys.sm_count)
          to_system("/accelerator/sm_count", "HybridEP's kernels beside compute (overlap_moe_expert_parallel_comm) take "
                                             "moe_hybridep_num_sms of the accelerator's SMs; give its SM count "
                                             "(datasheet: A100 108, H100 SXM 132, B200 148)");
      }
      if (s.deepep_backend() && s.overlap_moe_expert_parallel_comm && !sys.sm_count)
        to_system("/accelerator/sm_count",
                          "DeepEP's kernels beside compute (overlap_moe_expert_parallel_comm) take moe_deepep_num_sms of "
                          "the accelerator's SMs; give its SM count (datasheet: A100 108, H100 SXM 132, B200 148)");
      if (s.moe_shared_expert_overlap && m.moe_shared_expert_intermediate_size &&
          s.moe_token_dispatcher_type == "allgather")
        add("/moe_shared_expert_overlap", "Megatron overlaps the shared expert with the alltoall or flex dispatcher "
                                          "only; set moe_token_dispatcher_type to 'alltoall'");
    }
  }

  // Pipeline split, virtual stages and the zero-bubble schedule.
  void pipeline() {
    if (mode == Mode::SimuMax12) {
      StageLayers layers;
      std::string why;
      if (!split_layers(m.layer_num, s, layers, &why)) add("/pp_size", why);
      if (s.pipeline_model_parallel_layout)
        add("/pipeline_model_parallel_layout", "is not part of SimuMax v1.2; use the default mode");
      if (s.num_layers_per_virtual_pipeline_stage)
        add("/num_layers_per_virtual_pipeline_stage", "is not part of SimuMax v1.2; use interleaving_size");
    } else {
      std::vector<VirtualStage> stages;
      std::string path, why;
      if (!pipeline_stages(m, s, stages, &path, &why)) add(path, why);
    }
    // A layout may leave stages empty; the flags give every stage at least one layer, counting the
    // embedding and loss as layers where account_for_*_in_pipeline_split says so (Megatron then
    // builds the first or last stage with no transformer layer).
    const int64_t split_layers_num = m.layer_num + (s.account_for_embedding_in_pipeline_split ? 1 : 0) +
                                     (s.account_for_loss_in_pipeline_split ? 1 : 0);
    if (pp > split_layers_num && !s.pipeline_model_parallel_layout)
      add("/pp_size", split_layers_num == m.layer_num
                          ? strprintf("%lld exceeds layer_num (%lld)", ll(pp), ll(m.layer_num))
                          : strprintf("%lld exceeds layer_num (%lld) plus the embedding/loss stages counted by "
                                      "account_for_*_in_pipeline_split (%lld)",
                                      ll(pp), ll(m.layer_num), ll(split_layers_num)));

    if (vpp > 1) {
      if (mode == Mode::SimuMax12) {
        if (pp < 3)
          add("/interleaving_size", "SimuMax 1.2 models the interleaved pipeline for pp_size ≥ 3 only; the default mode models pp_size 2");
        if (s.pp_comm_async)
          add("/pp_comm_async", "SimuMax 1.2 models the synchronous interleaved schedule only; set pp_comm_async to false, or use the default mode");
        if (s.num_layers_in_first_pipeline_stage || s.num_layers_in_last_pipeline_stage)
          add("/interleaving_size", "SimuMax 1.2 needs an even layer split with interleaving; the default mode models uneven stages");
        else if (m.layer_num % (pp * s.interleaving_size) != 0)
          add("/interleaving_size", strprintf("layer_num (%lld) is not divisible by pp_size·interleaving_size = %lld",
                                              ll(m.layer_num), ll(pp * s.interleaving_size)));
        if (s.microbatch_group_size_per_vp_stage.value_or(pp) < pp)
          add("/microbatch_group_size_per_vp_stage", strprintf("SimuMax 1.2 needs a group ≥ pp_size (%lld)", ll(pp)));
      } else {
        if (pp < 2)
          add("/interleaving_size", "an interleaved pipeline needs pp_size ≥ 2 (Megatron); valid values with pp_size 1: 1");
        // Megatron's interleaved schedule: "the number of contiguous micro-batches in a virtual
        // pipeline stage should range in [PP, M]".
        const int64_t group = s.microbatch_group_size_per_vp_stage.value_or(pp);
        if (pp >= 2 && (group < pp || group > s.micro_batch_num))
          add(s.microbatch_group_size_per_vp_stage ? "/microbatch_group_size_per_vp_stage" : "/micro_batch_num",
              strprintf("Megatron's interleaved schedule needs pp_size (%lld) ≤ microbatch_group_size_per_vp_stage "
                        "(%lld) ≤ micro_batch_num (%lld)",
                        ll(pp), ll(group), ll(s.micro_batch_num)));
      }
    }
    if (s.pipeline_schedule == "zero_bubble_h1") {
      if (mode == Mode::SimuMax12)
        add("/pipeline_schedule", "SimuMax 1.2 has no zero-bubble schedule; use the default mode");
      if (vpp > 1)
        add("/pipeline_schedule", "zero_bubble_h1 is a non-interleaved schedule; set interleaving_size to 1");
    }
  }

  // Communication overlaps and data-parallel sharding (Megatron's asserts).
  void overlaps() {
    // Overlaps and data-parallel sharding (Megatron). New switches: not part of SimuMax v1.2.
    if (mode == Mode::SimuMax12) {
      const struct { const char* key; bool set; const char* instead; } added[] = {
          {"/overlap_param_gather", s.overlap_param_gather, "remove it"},
          {"/tp_comm_overlap", s.tp_comm_overlap, "remove it"},
          {"/overlap_moe_expert_parallel_comm", s.overlap_moe_expert_parallel_comm, "remove it"},
          {"/scatter_gather_tensors_in_pipeline", s.scatter_gather_tensors_in_pipeline, "remove it"},
          {"/data_parallel_sharding_strategy", s.data_parallel_sharding_strategy.has_value(), "use zero_state"},
          {"/cuda_graph_impl", !s.cuda_graphs().empty() && s.cuda_graph_impl.has_value(), "remove it"},
          {"/enable_cuda_graph", s.enable_cuda_graph, "remove it"},
          {"/cuda_graph_scope", !s.cuda_graph_scope.empty(), "remove it"}};
      for (const auto& a : added)
        if (a.set) add(a.key, std::string("not part of SimuMax v1.2; ") + a.instead + ", or use the default mode");
    } else {
      // Switches that cannot act here (no data parallelism, tp 1, ...) are moot_switches'.
      if (s.overlap_param_gather && s.zero_state != 1 && s.zero_state != 2)
        add("/overlap_param_gather", strprintf("needs the distributed optimizer's parameter all-gather: zero_state 1 or 2 "
                                               "(data_parallel_sharding_strategy optim or optim_grads), got %lld",
                                               ll(s.zero_state)));
      // Megatron asserts sequence parallelism; with tp 1 the switch is moot (moot_switches).
      if (s.tp_comm_overlap && tp > 1 && !s.sp())
        add("/tp_comm_overlap", strprintf("needs tensor parallelism with sequence parallelism (TransformerEngine "
                                          "userbuffers), got tp_size %lld, enable_sequence_parallel %s",
                                          ll(tp), s.enable_sequence_parallel ? "true" : "false"));
      // Megatron's arguments.py: EP > 1, and with pp > 1 a virtual pipeline (combined 1F1B exists
      // for the no-pipelining and the interleaved schedules); no full recompute.
      if (s.overlap_moe_expert_parallel_comm) {
        const char* key = "/overlap_moe_expert_parallel_comm";
        if (!m.is_moe() || ep < 2)
          add(key, strprintf("needs an MoE model with expert parallelism: the overlapped all-to-alls are the EP "
                             "dispatch and combine; got %s model, ep_size %lld",
                             m.is_moe() ? "an MoE" : "a dense", ll(ep)));
        else if (pp > 1 && vpp == 1)
          add(key, strprintf("with pp_size %lld Megatron's combined 1F1B needs the interleaved schedule (a virtual "
                             "pipeline); set interleaving_size > 1",
                             ll(pp)));
        if (s.is_recompute() && s.recompute_granularity == "full_block")
          add(key, "Megatron does not support it with full recompute; use selective recompute or none");
      }
    }
  }

  // Memory switches of the default mode are not part of SimuMax v1.2.
  void compat_memory_switches() {
    // Memory switches of the default mode (Megatron keys) are not part of the peer.
    if (mode == Mode::SimuMax12) {
      for (const auto& k : s.megatron_recompute_keys)
        add("/" + k, "Megatron's recompute keys are not part of SimuMax v1.2; use recompute_granularity full_block, "
                     "attn_only, mlp_only, sdp_only or selective_recompute with recompute_layer_num, or the default mode");
      for (const auto& mod : s.megatron_recompute_modules)
        if (mod == "core_attn" || mod == "shared_experts" || mod == "routed_experts" || mod.rfind("a2a_overlap_", 0) == 0)
          add("/megatron_recompute_modules", "module '" + mod + "' is not part of SimuMax v1.2's Megatron recompute "
                                             "model; valid values: layernorm, mla_up_proj, moe_act, mlp, moe");
      if (s.cross_entropy_fusion_impl != "native")
        add("/cross_entropy_fusion_impl", "'" + s.cross_entropy_fusion_impl + "' is not part of SimuMax v1.2; use "
                                          "'native' or the default mode");
      if (s.lce_vocab_split_size != defaults.lce_vocab_split_size)
        add("/lce_vocab_split_size", "is not part of SimuMax v1.2; remove it or use the default mode");
      if (s.optimizer_cpu_offload)
        add("/optimizer_cpu_offload", "is not part of SimuMax v1.2; remove it or use the default mode");
      if (s.fine_grained_activation_offloading)
        add("/fine_grained_activation_offloading", "is not part of SimuMax v1.2; remove it or use the default mode");
      if (s.recompute_unit_layers != 1 && s.megatron_recompute_keys.empty())
        add("/recompute_unit_layers", "is not part of SimuMax v1.2; remove it or use the default mode");
      if (s.fp8_recipe != defaults.fp8_recipe)
        add("/fp8_recipe", "is not part of SimuMax v1.2 (its fp8 is the delayed recipe); remove it or use the default mode");
      if (s.fp8_param_gather)
        add("/fp8_param_gather", "is not part of SimuMax v1.2; remove it or use the default mode");
    }
  }

  // fp8 recipes and parameter gather; activation and optimizer offloading.
  void precision_and_offload() {
    if (s.fp8 && s.fp8_param_gather && s.zero_state < 1) {
      add("/fp8_param_gather", "needs the distributed optimizer, whose all-gather it makes fp8 (Megatron asserts "
                               "it): set zero_state to 1, 2 or 3");
    }
    if (s.fp8 && s.fp8_recipe == "mxfp8" && !is_blackwell_system(sys.sys_name)) {
      add("/fp8_recipe", "'mxfp8' needs a Blackwell GPU (its MX block-scaled fp8 GEMMs); system '" + sys.sys_name +
                             "' is not one (b200, gb200, b300); use 'blockwise', 'tensorwise' or 'delayed'");
    }
    if (s.fine_grained_activation_offloading) {
      if (s.offload_modules.empty() && s.offload_tensors.empty())
        add("/offload_modules", "fine_grained_activation_offloading needs at least one module: attn_norm, core_attn, "
                                "attn_proj, mlp_norm, expert_fc1, moe_act (or a tensor in offload_tensors)");
      for (const auto& t : s.offload_tensors)
        if (t == "dispatched_input" && !m.is_moe())
          add("/offload_tensors", "'dispatched_input' needs a moe model");
      for (const auto& mod : s.offload_modules)
        if ((mod == "expert_fc1" || mod == "moe_act") && !m.is_moe())
          add("/offload_modules", "'" + mod + "' needs a moe model");
      if (!(sys.host_link_bytes_per_s > 0))
        to_system("/host/link_gbps", "fine_grained_activation_offloading needs the host link's "
                                                        "bandwidth per GPU and direction in GiB/s (PCIe Gen5 x16 moves about 50)");
    }
    if (s.optimizer_cpu_offload) {
      if (s.zero_state < 1)
        add("/optimizer_cpu_offload", "needs the distributed optimizer (Megatron); set zero_state to 1 or more");
      if (!(sys.host_link_bytes_per_s > 0))
        to_system("/host/link_gbps", "optimizer_cpu_offload needs the host link's bandwidth per GPU "
                                                        "and direction in GiB/s (PCIe Gen5 x16 moves about 50)");
      if (!(sys.host_adam_bytes_per_s > 0))
        to_system("/host/cpu_adam_gbps", "optimizer_cpu_offload needs the optimizer state the CPU "
                                                            "Adam updates per second for one GPU, in GiB/s");
    }
  }

  // Recompute combinations.
  void recompute() {
    // Recompute combinations.
    const bool legacy_flags = s.attn_recompute || s.mla_rms_recompute || s.mlp_recompute || s.mlp_rms_recompute;
    if (s.megatron_recompute) {
      if (legacy_flags)
        add("/megatron_recompute", "megatron_recompute cannot be combined with the selective flags attn_recompute, mla_rms_recompute, mlp_recompute, mlp_rms_recompute");
      if (s.recompute_granularity && *s.recompute_granularity != "selective_recompute")
        add("/recompute_granularity", "megatron_recompute needs recompute_granularity 'selective_recompute' (or none)");
      for (const auto& mod : s.megatron_recompute_modules) {
        if (mod == "mla_up_proj" && !m.is_mla())
          add("/megatron_recompute_modules", "'mla_up_proj' needs an MLA model");
        if (mod == "moe_act" && (!m.is_moe() || m.group_linear_mode != "parallel"))
          add("/megatron_recompute_modules", "'moe_act' needs a moe model with grouped GEMM");
        if ((mod == "layernorm" || mod == "moe_act") && s.fp8)
          add("/megatron_recompute_modules", "'" + mod + "' cannot be combined with fp8");
        if ((mod == "moe" || mod == "moe_act" || mod == "shared_experts" || mod == "routed_experts") && !m.is_moe())
          add("/megatron_recompute_modules", "'" + mod + "' needs a moe model");
        // The a2a_overlap_* modules are the pieces the EP all-to-all overlap cuts a MoE layer into.
        if (mod.rfind("a2a_overlap_", 0) == 0 && (!m.is_moe() || !s.overlap_moe_expert_parallel_comm))
          add("/megatron_recompute_modules",
              "'" + mod + "' recomputes a piece of the EP all-to-all overlap: it needs a moe model and "
              "overlap_moe_expert_parallel_comm (--overlap-moe-expert-parallel-comm)");
        if (mod == "shared_experts" && m.is_moe() && !m.moe_shared_expert_intermediate_size)
          add("/megatron_recompute_modules", "'shared_experts' needs a model with shared experts");
      }
      if (s.megatron_recompute_modules.empty())
        add("/megatron_recompute_modules", "megatron_recompute needs at least one module");
    }
    if (s.recompute_granularity == "selective_recompute") {
      if (s.mla_rms_recompute && !s.attn_recompute)
        add("/mla_rms_recompute", "needs attn_recompute");
      if (s.mlp_rms_recompute && !s.mlp_recompute)
        add("/mlp_rms_recompute", "needs mlp_recompute");
    }
    if (s.offload_groupgemm_col_inputs && s.recompute_granularity == "full_block")
      add("/offload_groupgemm_col_inputs", "cannot be combined with full_block recompute");
  }

  void moot() {
    // Switches with no effect here (a user's input was normalized before: none is left then).
    for (MootSwitch& x : find_moot_switches(m, s, mode, src.model)) add("/" + x.what.key, x.message);
  }

  void system_tiers() {
    // Tier and straggler keys of the system file (trainsim's, default mode).
    if (mode == Mode::SimuMax12) {
      if (sys.nvlink_domain_size)
        to_system("/nvlink_domain_size", "is not part of SimuMax v1.2; use the default mode");
      if (sys.straggler_jitter)
        to_system("/straggler_jitter", "is not part of SimuMax v1.2; use the default mode");
    } else if (sys.nvlink_domain_size && sys.intra_with_pcie) {
      to_system("/nvlink_domain_size",
                        "changes nothing on a PCIe system (networks/intra_with_pcie true); remove it");
    }
  }

  void system_entries() {
    // System entries the plan will use, found by their index in the system (no name matched).
    // The op classes the plan needs (calibration/op_class.h, column `need`); a class the system
    // lacks falls back to `default`.
    const bool moe = m.is_moe();
    for (const OpClassRow& row : kOpClassRows) {
      const ComputeOpConfig* op = sys.ops.known(op_index(row.cls));
      if (!op || !op_needed(row.cls, s.fp8, moe)) continue;
      auto path = [&] { return "/accelerator/op/" + std::string(row.name) + "/efficient_factor"; };
      if (row.family == OpFamily::Fallback && !(op->efficient_factor > 0))
        to_system(path(), "must be > 0 (every op without its own class falls back to it)");
      else if (row.family != OpFamily::Fallback && op->efficient_factor <= 0)
        to_system(path(), "is 0 but the plan uses this op; measure it or set a fallback efficiency");
    }
    static constexpr size_t pcie_groups[] = {
        NetworkGroups::slot("intra_node_pcie_2x"), NetworkGroups::slot("intra_node_pcie_4x"),
        NetworkGroups::slot("intra_node_pcie_8x"), NetworkGroups::slot("inter_node")};
    static constexpr size_t nvlink_groups[] = {NetworkGroups::slot("high_intra_node"), NetworkGroups::slot("inter_node")};
    const std::span<const size_t> groups =
        sys.intra_with_pcie ? std::span<const size_t>(pcie_groups) : std::span<const size_t>(nvlink_groups);
    for (const size_t g : groups) {
      const NetworkConfig* net = sys.networks.known(g);
      const std::string_view name = kNetworkGroups[g];
      if (!net) {
        to_system("/networks/" + std::string(name), "required network group is missing");
        continue;
      }
      for (size_t c = 0; c < kNetCollectiveCount; ++c)
        if (!net->ops.known(c))
          to_system("/networks/" + std::string(name) + "/op/" + std::string(kNetCollectives[c]),
                            "required collective is missing");
    }
  }
};

}  // namespace

std::vector<Issue> validate_plan(const ModelConfig& m, const StrategyConfig& s,
                                 const SystemConfig& sys, const PlanSources& src, Mode mode) {
  return PlanChecks(m, s, sys, src, mode).run();
}

}  // namespace trainsim
