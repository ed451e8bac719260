#include "plan/plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include "plan/pipeline_layout.h"
#include "schedule/lower.h"
#include "schedule/program.h"
#include "inputs/strategy_config.h"
#include "model/moe_dispatch.h"
#include "passes/fp8.h"
#include "core/enum_table.h"
#include "core/error.h"
#include "core/text.h"

namespace trainsim {

const char* schedule_name(ScheduleKind k) {
  static constexpr EnumTable<ScheduleKind, 3> kSchedules(
      "schedule", {{{ScheduleKind::OneFOneB, "1f1b"},
                    {ScheduleKind::Interleaved, "interleaved_1f1b"},
                    {ScheduleKind::ZeroBubbleH1, "zero_bubble_h1"}}});
  return kSchedules.c_str(k);
}

Straggler straggler_model(const StrategyConfig& s, const SystemConfig& sys, Mode mode) {
  Straggler out;
  out.nodes = (s.world_size + sys.num_per_node - 1) / sys.num_per_node;
  out.dp = s.dp_size();
  out.edp = s.edp_size();
  out.peer_rule = mode == Mode::SimuMax12;
  // What the step waits on: every rank takes part in collectives that chain all of them within one
  // step (the pipeline's p2p links its stages, the data-parallel gradient reduction its replicas,
  // and Megatron's gradient-norm and loss all-reduces span the model-parallel groups), so the step
  // ends when the slowest node of the job arrives: n = the nodes of the job, whatever the layout.
  // SimuMax v1.2 counts min(nodes, dp, edp) independent replicas instead (compat mode).
  out.replicas = out.peer_rule ? std::max<int64_t>(1, std::min({out.nodes, out.dp, out.edp})) : out.nodes;
  out.jitter = sys.straggler_jitter.value_or(out.peer_rule ? kDefaultStragglerJitter : kNodeStragglerJitter);
  out.system_jitter = sys.straggler_jitter.has_value();
  out.enabled = s.enable_straggler_model;
  if (!out.enabled || out.replicas <= 1) return out;
  // The peer's empirical tail model: 1 + j·log2 n/(log2 n + 1)·sqrt(log2 n).
  const double l = std::log2(static_cast<double>(out.replicas));
  out.ratio = 1 + l / (l + 1) * out.jitter * std::sqrt(l);
  return out;
}

std::string Straggler::basis() const {
  if (!enabled) return "off (strategy enable_straggler_model false)";
  if (peer_rule) {
    if (replicas <= 1) return "1: one replica (min of nodes, dp, edp) has no slower peer to wait for";
    return strprintf("1 + j·log2 n/(log2 n + 1)·sqrt(log2 n) with n = %lld replicas (min of %lld nodes, dp %lld, "
                     "edp %lld), j = %g (%s)",
                     static_cast<long long>(replicas), static_cast<long long>(nodes), static_cast<long long>(dp),
                     static_cast<long long>(edp), jitter,
                     system_jitter ? "system straggler_jitter" : "default, SimuMax v1.2's constant");
  }
  if (replicas <= 1) return "1: one node has no slower peer to wait for";
  return strprintf("1 + j·log2 n/(log2 n + 1)·sqrt(log2 n) with n = %lld nodes (every node joins the step's "
                   "synchronising collectives), j = %g (%s)",
                   static_cast<long long>(replicas), jitter,
                   system_jitter ? "system straggler_jitter" : "default, fitted over nodes on the validation runs");
}

std::vector<VirtualStage> Plan::virtual_stages() const {
  std::vector<VirtualStage> out;
  for (int64_t i = 0; i < par.pp * par.vpp; ++i) {
    const ChunkSpec& c = chunks[static_cast<size_t>(i % par.pp)][static_cast<size_t>(i / par.pp)];
    out.push_back({c.embedding, c.head, c.layers, c.mtp_layers});
  }
  return out;
}

const char* Plan::stage_kind(int64_t rank) const {
  if (par.pp == 1) return "stage";
  if (rank == 0) return "first_stage";
  if (rank == par.pp - 1) return "last_stage";
  return "middle_stage";
}

namespace {

// Megatron's schedules must make progress: a blocking interleaved order must pair its sends and
// receives, and a partial last group or merged steps must not leave a rank waiting on itself.
void check_schedule_progress(const Plan& p, const PlanSources& src) {
  // The checks below read the program of steady_base() micro-batches where the plan has more:
  // the plan's repeats its steady block, whose bundles pair and whose steps progress as in the
  // shorter one (tests/schedule/steady_steps_test.cpp checks both verdicts agree). A problem is
  // reported from the plan's own program.
  // 1F1B programs always pair (one chunk, no split backward) and zero-bubble ones run
  // asynchronously: only interleaved ones are built to check.
  const bool blocking = p.p2p == P2PMode::Blocking && p.schedule == ScheduleKind::Interleaved;
  const bool partial = p.schedule == ScheduleKind::Interleaved && p.batch.micro_batch_num % p.vp_group != 0;
  const bool merged = p.ovl.a2a_overlap && p.par.pp > 1;
  const int64_t checked_mbc = std::min(p.batch.micro_batch_num, p.steady_base());
  // Whether the unit-cost replay below finishes depends only on the program (Plan::program reads
  // the schedule, pp, vpp, the group, the merged steps and the micro-batches) and the p2p mode:
  // each thread keeps the verdicts it found (a search resolves thousands of plans with a few
  // hundred programs).
  using ProgressKey = std::tuple<ScheduleKind, int64_t, int64_t, int64_t, int64_t, bool, P2PMode>;
  thread_local std::map<ProgressKey, bool> verdicts;
  const ProgressKey key{p.schedule, p.par.pp, p.par.vpp, checked_mbc, p.vp_group, p.ovl.a2a_overlap, p.p2p};
  const auto known = verdicts.find(key);
  const bool replayed = known != verdicts.end();
  const Program check =
      blocking || ((partial || merged) && !replayed) ? p.program(checked_mbc) : Program{};
  if (blocking && !blocking_problem(check).empty())
    throw ConfigError(src.strategy, "/pp_comm_async",
                      blocking_problem(p.program()) + "; set pp_comm_async true (Megatron's overlap_p2p_comm "
                                                      "default) for the asynchronous schedule");

  if (partial || merged) {
    // A partial last group can leave Megatron's interleaved order waiting on itself: rank 0's
    // warm-up then needs a forward that the last rank only runs after a backward that waits for
    // rank 0. A merged forward/backward step waits for both its inputs, which can close such a
    // wait too. Replay the order with unit costs to find out (whether a program finishes does
    // not depend on the durations).
    bool progresses = replayed && known->second;
    if (!replayed) {
      PipelineCosts unit;
      unit.chunks.assign(static_cast<size_t>(p.par.pp), std::vector<ChunkTimes>(static_cast<size_t>(p.par.vpp), {1, 1, 0}));
      progresses = lower(check, unit, p.p2p).try_run().has_value();
      if (verdicts.size() >= 4096) verdicts.clear();  // bounded whatever the plans
      verdicts.emplace(key, progresses);
    }
    if (!progresses)
      throw ConfigError(src.strategy, "/micro_batch_num",
                        strprintf("Megatron's interleaved order cannot make progress with pp_size %lld, "
                                  "interleaving_size %lld, micro_batch_num %lld in groups of %lld (%s); use a "
                                  "micro_batch_num that is a multiple of the group",
                                  static_cast<long long>(p.par.pp), static_cast<long long>(p.par.vpp),
                                  static_cast<long long>(p.batch.micro_batch_num), static_cast<long long>(p.vp_group),
                                  merged ? "the partial last group leaves a rank waiting on its own backward, the "
                                           "merged steps of overlap_moe_expert_parallel_comm waiting for both "
                                           "their inputs"
                                         : "the partial last group leaves rank 0 waiting on its own backward"));
  }
}

// The chunk of every (rank, virtual chunk): its layers, embedding, head, MTP, dense and
// recomputed layers.
void fill_chunks(Plan& p, const ModelConfig& m, const StrategyConfig& s, Mode mode) {
  // Chunks: virtual stage i = c·pp + r runs on rank r as chunk c and holds the next layers in
  // model order; the dense layers of a MoE model are where its layer pattern puts them.
  // Recompute covers the first recompute_layer_num layers of every chunk (the peer's rule, per
  // Megatron virtual chunk).
  std::vector<VirtualStage> stages;  // default mode: Megatron's split or the layout
  StageLayers split;                 // SimuMax12: the peer's split, no list built
  if (mode == Mode::Default) {
    const bool ok = pipeline_stages(m, s, stages, nullptr, nullptr);
    TRAINSIM_ASSERT(ok, "validate_plan accepted an illegal pipeline split");
  } else {
    const bool split_ok = split_layers(m.layer_num, s, split, nullptr);
    TRAINSIM_ASSERT(split_ok, "validate_plan accepted an illegal layer split");
  }
  const int64_t virtual_stages = p.par.pp * p.par.vpp;
  auto stage = [&](int64_t i) {
    if (mode == Mode::Default) return stages[static_cast<size_t>(i)];
    // The peer's split (Megatron get_num_layers_to_build without a layout) over the rank's
    // chunks; the embedding on (rank 0, chunk 0), the head on (last rank, last chunk).
    const int64_t r = i % p.par.pp;
    VirtualStage st;
    st.layers = (r == 0 ? split.first : r == p.par.pp - 1 ? split.last : split.middle) / p.par.vpp;
    st.embedding = i == 0;
    st.loss = i == virtual_stages - 1;
    return st;
  };
  p.chunks = ChunkGrid(static_cast<size_t>(p.par.pp), static_cast<size_t>(p.par.vpp));
  int64_t offset = 0;
  for (int64_t i = 0; i < virtual_stages; ++i) {
    const VirtualStage st = stage(i);
    ChunkSpec& cs = p.chunks[static_cast<size_t>(i % p.par.pp)][static_cast<size_t>(i / p.par.pp)];
    cs.embedding = st.embedding;
    cs.head = st.loss;
    cs.layers = st.layers;
    // Megatron puts the MTP layers on the last stage, with the head, unless a layout places them
    // (default mode; SimuMax v1.2 only counts their parameters).
    cs.mtp_layers = mode != Mode::Default              ? 0
                    : s.pipeline_model_parallel_layout ? st.mtp_layers
                    : st.loss                          ? m.mtp_num_layers
                                                       : 0;
    // Dense layers of a MoE model (built first within the chunk: the time is the same in any
    // order; Megatron's --moe-layer-freq patterns interleave them).
    cs.dense_layers = m.is_moe() ? st.layers - m.moe_layers_in(offset, st.layers) : 0;
    cs.recompute_layers = s.is_recompute() ? std::min(st.layers, s.recompute_layer_num) : 0;
    offset += st.layers;
  }
}

}  // namespace

Plan resolve_plan(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys, Mode mode,
                  const PlanSources& src) {
  std::vector<Issue> issues = validate_plan(m, s, sys, src, mode);
  if (!issues.empty()) throw ConfigError(std::move(issues));
  Plan p;
  static_cast<Settings&>(p) = settings_of(s);
  p.model = &m;
  p.system = &sys;
  p.mode = mode;
  p.par.vpp = virtual_stages_per_rank(m, s);
  p.vp_group = s.microbatch_group_size_per_vp_stage.value_or(s.pp_size);

  p.nets = choose_networks(sys, p, mode);
  p.padded_vocab = padded_vocab_size(m.vocab_size, s.tp_size);
  p.chunk_env = {sys.num_per_node, moe_load_imbalance(m, p, mode), mode, is_blackwell_system(sys.sys_name)};
  p.straggler = straggler_model(s, sys, mode);

  if (s.pipeline_schedule == "zero_bubble_h1") {
    p.schedule = ScheduleKind::ZeroBubbleH1;
    p.p2p = P2PMode::Async;
  } else if (p.par.vpp > 1) {
    p.schedule = ScheduleKind::Interleaved;
    p.p2p = (mode == Mode::Default && s.pp_comm_async) ? P2PMode::Async : P2PMode::Blocking;
  } else {
    p.schedule = ScheduleKind::OneFOneB;  // Megatron's 1F1B p2p calls block
    p.p2p = P2PMode::Blocking;
  }
  p.ovl.a2a_overlap = mode == Mode::Default && s.overlap_moe_expert_parallel_comm;
  if (p.ovl.a2a_overlap && p.par.pp > 1 && p.p2p == P2PMode::Blocking)
    throw ConfigError(src.strategy, "/pp_comm_async",
                      "overlap_moe_expert_parallel_comm is modelled with asynchronous p2p only (transfers that "
                      "wait for their data beside the merged steps); set pp_comm_async true (Megatron's "
                      "overlap_p2p_comm default)");
  check_schedule_progress(p, src);
  fill_chunks(p, m, s, mode);
  return p;
}

namespace {

struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void bytes(const void* data, size_t n) {
    const auto* b = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 1099511628211ull;
    }
  }
  void str(const std::string& s) {
    const uint64_t n = s.size();
    bytes(&n, sizeof n);
    bytes(s.data(), s.size());
  }
  void num(double v) { bytes(&v, sizeof v); }
};

}  // namespace

uint64_t content_hash(const ModelConfig& m) {
  Fnv f;
  f.str(model_to_json_text(m));
  return f.h;
}

uint64_t content_hash(const SystemConfig& sys) {
  if (sys.fingerprint != 0) return sys.fingerprint;
  SystemConfig copy = sys;
  refresh_fingerprint(copy);
  return copy.fingerprint;
}

uint64_t chunk_strategy_hash(const StrategyConfig& s) {
  StrategyConfig c = s;
  static const StrategyConfig d;  // the defaults the pipeline-only fields are reset to
  c.world_size = d.world_size;
  c.pp_size = d.pp_size;
  c.micro_batch_num = d.micro_batch_num;
  c.interleaving_size = d.interleaving_size;
  c.pipeline_model_parallel_layout = d.pipeline_model_parallel_layout;
  c.num_layers_per_virtual_pipeline_stage = d.num_layers_per_virtual_pipeline_stage;
  c.microbatch_group_size_per_vp_stage = d.microbatch_group_size_per_vp_stage;
  c.num_layers_in_first_pipeline_stage = d.num_layers_in_first_pipeline_stage;
  c.num_layers_in_last_pipeline_stage = d.num_layers_in_last_pipeline_stage;
  c.account_for_embedding_in_pipeline_split = d.account_for_embedding_in_pipeline_split;
  c.account_for_loss_in_pipeline_split = d.account_for_loss_in_pipeline_split;
  c.pp_comm_async = d.pp_comm_async;
  c.pipeline_schedule = d.pipeline_schedule;
  c.zero_state = d.zero_state;
  c.data_parallel_sharding_strategy = d.data_parallel_sharding_strategy;
  c.overlap_grad_reduce = d.overlap_grad_reduce;
  c.overlap_param_gather = d.overlap_param_gather;
  c.enable_straggler_model = d.enable_straggler_model;
  c.recompute_layer_num = d.recompute_layer_num;  // per chunk it is ChunkSpec::recompute_layers
  c.mem_factor = d.mem_factor;
  return strategy_hash(c);
}

}  // namespace trainsim
