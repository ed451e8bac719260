// Estimate reports.
#include "views/report.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "comm/collective.h"
#include "inputs/model_merge.h"
#include "core/text.h"
#include "core/units.h"
#include "estimate/fit.h"
#include "memory/non_tensor.h"
#include "model/parameter_count.h"
#include "views/breakdown.h"

namespace trainsim {

namespace {
// `layers`: the model's layer count, which caps the per-chunk count ("every layer" keys ask 2^20).
std::string recompute_string(const Settings& s, int64_t layers) {
  const RecomputeSettings& rc = s.rc;
  if (!rc.on) return "none";
  if (rc.megatron) {
    std::vector<std::string> mods;
    for (RecomputeModule m : rc.modules) mods.emplace_back(kRecomputeModules.name(m));
    return "megatron(" + join(mods, "+") + ")";
  }
  std::string g(kGranularities.name(rc.granularity));
  if (rc.granularity == Granularity::Selective) {
    std::vector<std::string> f;
    if (rc.attn) f.emplace_back("attn");
    if (rc.mla_rms) f.emplace_back("mla_rms");
    if (rc.mlp) f.emplace_back("mlp");
    if (rc.mlp_rms) f.emplace_back("mlp_rms");
    g = "selective(" + join(f, "+") + ")";
  }
  if (rc.granularity == Granularity::FullBlock && rc.unit_layers > 1)
    g += strprintf(" in units of %lld layers", static_cast<long long>(rc.unit_layers));
  return g + strprintf(", %lld layers/chunk", static_cast<long long>(std::min(rc.layers, layers)));
}

// Both MFU conventions, and the one the headline uses.
struct Mfu {
  Throughput megatron, simumax, headline;
};
Mfu mfu_of(const PlanInputs& in, const Estimate& e) {
  Mfu out;
  out.megatron = megatron_throughput(in.model, in.settings, in.system, e);
  out.simumax = {e.tflops_per_gpu, e.mfu};
  out.headline = in.mfu == MfuConvention::Megatron ? out.megatron : out.simumax;
  return out;
}

// What the straggler factor adds to the step: the slowest stage's pipeline time × (ratio − 1).
double straggler_added_s(const Estimate& e) {
  const StageTime* worst = nullptr;
  for (const auto& t : e.stage_times)
    if (!worst || t.total_s > worst->total_s) worst = &t;
  return worst ? worst->pipeline_s * (e.straggler_ratio - 1) : 0;
}

// "8.03 B" style.
std::string billions(int64_t n) { return strprintf("%.2f B", static_cast<double>(n) / 1e9); }

// "8,030,261,248".
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Rows of a stage breakdown in ms per iteration.
nlohmann::ordered_json rows_json(const std::vector<BreakdownRow>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    nlohmann::ordered_json x;
    x["layer_type"] = r.layer_type;
    if (!r.op.empty()) x["op"] = r.op;
    x["instances_per_micro_batch"] = r.instances;
    x["forward_ms"] = r.fwd_s * 1e3;
    x["backward_ms"] = r.bwd_s * 1e3;
    x["recompute_ms"] = r.recompute_s * 1e3;
    x["comm_ms"] = r.comm_s * 1e3;
    x["total_ms"] = r.total_s() * 1e3;
    x["flops"] = r.flops;
    x["bytes"] = r.bytes;
    x["efficiency"] = r.efficiency;
    x["efficiency_source"] = efficiency_label(r.measured, r.source);
    out.push_back(x);
  }
  return out;
}

// Per stage: time by layer type and by op (sums of the estimate's op costs over the iteration);
// memory by tensor class for the reported stages (the parts add up to the peak reserved memory).
nlohmann::ordered_json breakdown_json(const Estimate& e) {
  nlohmann::ordered_json time = nlohmann::ordered_json::array();
  for (const StageBreakdown& b : stage_breakdowns(e))
    time.push_back({{"pp_rank", b.rank}, {"by_layer_type", rows_json(b.by_layer_type)}, {"by_op", rows_json(b.by_op)}});
  nlohmann::ordered_json memory = nlohmann::ordered_json::array();
  for (const auto& st : e.stages)
    memory.push_back({{"name", st.name},
                      {"weights_gib", st.weight_bytes / kGiB},
                      {"gradients_gib", st.grad_bytes / kGiB},
                      {"optimizer_states_gib", st.state_bytes / kGiB},
                      {"other_static_gib", (st.model_bytes - st.weight_bytes - st.grad_bytes - st.state_bytes) / kGiB},
                      {"activations_gib", (st.peak_alloc_bytes - st.model_bytes) / kGiB},
                      {"allocator_reserve_gib", (st.peak_reserved_bytes - st.peak_alloc_bytes) / kGiB}});
  return {{"time_per_stage", time}, {"memory_per_stage", memory}};
}

}  // namespace

namespace {

// Memory per stage with its fit verdict under `rule`.
nlohmann::ordered_json stages_json(const Estimate& e, const FitRule& rule) {
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const auto& st : e.stages) {
    nlohmann::ordered_json x;
    const FitVerdict fit = fit_verdict(st, rule);
    x["name"] = st.name;
    x["fits"] = fit.known ? nlohmann::ordered_json(fit.fits) : nlohmann::ordered_json();
    x["fit_state"] = fit.known ? nlohmann::ordered_json(fit_state_name(fit.state)) : nlohmann::ordered_json();
    x["memory_headroom_gib"] = fit.known ? nlohmann::ordered_json(fit.headroom_bytes / kGiB) : nlohmann::ordered_json();
    x["memory_headroom_without_reserve_gib"] =
        fit.known ? nlohmann::ordered_json(fit.floor_headroom_bytes / kGiB) : nlohmann::ordered_json();
    x["peak_alloc_gib"] = st.peak_alloc_bytes / kGiB;
    x["peak_reserved_gib"] = st.peak_reserved_bytes / kGiB;
    x["non_tensor_memory_gib"] = (rule.stage_non_tensor ? st.non_tensor_bytes : rule.unusable_bytes) / kGiB;
    x["model_mem_gib"] = st.model_bytes / kGiB;
    x["weight_gib"] = st.weight_bytes / kGiB;
    x["grad_gib"] = st.grad_bytes / kGiB;
    x["optimizer_state_gib"] = st.state_bytes / kGiB;
    x["activation_cache_per_micro_batch_gib"] = st.activation_cache_per_mb_bytes / kGiB;
    x["in_flight_micro_batches"] = st.in_flight_micro_batches;
    x["peak_activation_gib"] = st.peak_activation_bytes / kGiB;
    x["peak_at"] = st.peak_phase;
    x["host_memory_gib"] = st.host_bytes / kGiB;
    stages.push_back(x);
  }
  return stages;
}

// Time per stage: compute, communication by group (total, exposed, hidden), bubble, tail.
nlohmann::ordered_json stage_times_json(const Estimate& e) {
  nlohmann::ordered_json times = nlohmann::ordered_json::array();
  for (const auto& t : e.stage_times) {
    nlohmann::ordered_json x;
    x["name"] = t.name;
    x["total_ms"] = t.total_s * 1e3;
    x["pipeline_ms"] = t.pipeline_s * 1e3;
    x["forward_compute_ms"] = t.fwd_compute_s * 1e3;
    x["backward_compute_ms"] = t.bwd_compute_s * 1e3;
    x["recompute_ms"] = t.recompute_s * 1e3;
    x["tp_cp_ep_comm_ms"] = t.tp_comm_s * 1e3;
    x["pp_comm_ms"] = t.pp_comm_s * 1e3;
    x["bubble_ms"] = t.bubble_s * 1e3;
    x["p2p_wait_ms"] = t.p2p_wait_s * 1e3;
    nlohmann::ordered_json comm;
    for (size_t g = 0; g < t.comm_by_group_s.size(); ++g) {
      const double total = t.comm_by_group_s[g], exposed = t.exposed_comm_s(g);
      comm[group_name(static_cast<Group>(g))] = {
          {"total_ms", total * 1e3}, {"exposed_ms", exposed * 1e3}, {"hidden_ms", (total - exposed) * 1e3}};
    }
    x["communication"] = comm;
    x["idle_ms"] = t.idle_s * 1e3;
    x["dp_comm_ms"] = t.dp_comm_s * 1e3;
    x["optimizer_ms"] = t.optimizer_s * 1e3;
    x["forward_per_micro_batch_ms"] = t.fwd_per_mb_s * 1e3;
    x["backward_per_micro_batch_ms"] = t.bwd_per_mb_s * 1e3;
    times.push_back(x);
  }
  return times;
}

// Where the kernels' efficiencies came from: hits, interpolations, misses.
void efficiency_json(const Estimate& e, nlohmann::ordered_json& j) {
  j["efficiency_hits"] = e.efficiency_hits;
  if (e.efficiency_interpolated + e.efficiency_extrapolated > 0) {
    j["efficiency_interpolated"] = e.efficiency_interpolated;
    j["efficiency_extrapolated"] = e.efficiency_extrapolated;
  }
  nlohmann::ordered_json misses = nlohmann::ordered_json::array();
  for (const auto& mm : e.misses)
    misses.push_back({{"op", op_c_str(mm.op)}, {"key", format_packed_key(mm.key)}, {"flops", mm.flops}, {"used_efficiency", mm.used_efficiency}});
  j["efficiency_misses"] = misses;
  // How each op class answered, counted per lookup: {"matmul": {"measured": 2, ...}, ...}.
  nlohmann::ordered_json by = nlohmann::ordered_json::object();
  for (size_t c = 0; c < kOpClassCount; ++c) {
    const auto& n = e.efficiency_by_class[c];
    if (n[0] + n[1] + n[2] + n[3] == 0) continue;
    nlohmann::ordered_json x;
    for (auto s : {EfficiencySource::Measured, EfficiencySource::Interpolated, EfficiencySource::Extrapolated,
                   EfficiencySource::Default})
      x[efficiency_source_name(s)] = n[static_cast<size_t>(s)];
    by[std::string(kOpClassRows[c].name)] = x;
  }
  j["efficiency_by_class"] = by;
  // How the collectives were timed: {"all_gather": {"measured": 4, ..., "formula": 2}, ...}.
  nlohmann::ordered_json coll = nlohmann::ordered_json::object();
  for (size_t c = 0; c < kCollectiveKinds; ++c) {
    const auto& n = e.collectives_by_kind[c];
    if (n[0] + n[1] + n[2] + n[3] == 0) continue;
    nlohmann::ordered_json x;
    for (auto s : {EfficiencySource::Measured, EfficiencySource::Interpolated, EfficiencySource::Extrapolated,
                   EfficiencySource::Default})
      x[s == EfficiencySource::Default ? "formula" : efficiency_source_name(s)] = n[static_cast<size_t>(s)];
    coll[collective_name(static_cast<Collective>(c))] = x;
  }
  j["collectives_by_kind"] = coll;
}

// "all_gather 4 measured + 8 interpolated; p2p 2 formula": how the collective calls were timed
// (a collective model's measured size, between or beyond its sizes, or the network formula).
std::string collectives_line(const Estimate& e) {
  std::vector<std::string> items;
  for (size_t c = 0; c < kCollectiveKinds; ++c) {
    const auto& n = e.collectives_by_kind[c];
    std::vector<std::string> parts;
    for (auto s : {EfficiencySource::Measured, EfficiencySource::Interpolated, EfficiencySource::Extrapolated,
                   EfficiencySource::Default})
      if (const int64_t count = n[static_cast<size_t>(s)]; count > 0)
        parts.push_back(std::to_string(count) + " " +
                        (s == EfficiencySource::Default ? "formula" : efficiency_source_name(s)));
    if (!parts.empty()) items.push_back(std::string(collective_name(static_cast<Collective>(c))) + " " + join(parts, " + "));
  }
  return join(items, "; ");
}

// The datasheet preset a measured system was built on ("h100-sxm-80g" of provenance.base
// "preset:system/h100-sxm-80g"), or "".
std::string base_preset(const SystemConfig& sys) {
  if (sys.provenance_json.empty()) return "";
  const auto prov = nlohmann::json::parse(sys.provenance_json, nullptr, false);
  if (!prov.is_object() || !prov.contains("base") || !prov["base"].is_string()) return "";
  std::string base = prov["base"].get<std::string>();
  if (const size_t slash = base.find_last_of('/'); slash != std::string::npos) base = base.substr(slash + 1);
  return base;
}

// "matmul 2 measured + 5 interpolated + 10 extrapolated; sdp_fwd 1 default (0.70)": how each op
// class answered its lookups; a class default is named with its value, and with the datasheet
// preset it came from when a measured system has no measurement of the class.
std::string efficiency_by_class_line(const Estimate& e, const SystemConfig& sys) {
  std::vector<std::string> items;
  std::optional<std::string> base;
  for (size_t c = 0; c < kOpClassCount; ++c) {
    const auto& n = e.efficiency_by_class[c];
    std::vector<std::string> parts;
    for (auto s : {EfficiencySource::Measured, EfficiencySource::Interpolated, EfficiencySource::Extrapolated,
                   EfficiencySource::Default}) {
      const int64_t count = n[static_cast<size_t>(s)];
      if (count == 0) continue;
      std::string part = std::to_string(count) + " " + efficiency_source_name(s);
      if (s == EfficiencySource::Default) {
        const ComputeOpConfig* op = sys.ops.known(c);
        if (!op) op = &sys.ops.known_at(op_index(OpClass::Default));
        if (!base) base = base_preset(sys);
        const bool unmeasured = op->accurate.empty() && !op->gemm_model && !op->point_model;
        part += unmeasured && !base->empty() ? strprintf(" (%.2f of %s)", op->efficient_factor, base->c_str())
                                             : strprintf(" (%.2f)", op->efficient_factor);
      }
      parts.push_back(part);
    }
    if (!parts.empty()) items.push_back(std::string(kOpClassRows[c].name) + " " + join(parts, " + "));
  }
  return join(items, "; ");
}

}  // namespace

std::string estimate_to_json(const PlanInputs& in, const Estimate& e) {
  nlohmann::ordered_json j;
  const Settings& s = in.settings;
  // 2.0.0: mfu / tflops_per_gpu follow --mfu (Megatron-LM's convention by default).
  // 2.1.0: the fit verdict (fits, memory_headroom_gib, memory_limit_gib, unusable_memory_gib),
  // host_memory_gib, and breakdown (per stage: time by layer type and by op, memory by tensor class).
  // 2.2.0: non_tensor_memory_gib per stage (default mode: CUDA context + NCCL buffers); the plan's
  // unusable_memory_gib and memory_limit_gib are those of the stage with the least headroom.
  j["schema_version"] = "2.2.0";
  j["model"] = in.model_source;
  j["strategy"] = in.strategy_source;
  j["system"] = in.system_source;
  j["parallelism"] = parallelism_string(s);
  j["world_size"] = s.par.world;
  j["global_batch_size"] = e.global_batch_size;
  j["recompute"] = recompute_string(s, in.model.layer_num);
  j["mode"] = mode_name(e.mode);
  j["schedule"] = e.schedule;
  j["p2p"] = e.p2p;
  const ParameterCount params = count_parameters(in.model, in.stages, in.settings.par.pp);
  j["parameter_count"] = params.total;
  j["active_parameter_count"] = params.active;
  nlohmann::ordered_json per_stage = nlohmann::ordered_json::array();
  for (const auto& st : params.stages)
    per_stage.push_back({{"stage", st.stage}, {"layers", st.layers}, {"parameter_count", st.total},
                         {"active_parameter_count", st.active}});
  j["parameters_per_stage"] = per_stage;
  j["iteration_time_ms"] = e.iteration_time_s * 1e3;
  const Mfu mfu = mfu_of(in, e);
  j["mfu_convention"] = mfu_convention_name(in.mfu);
  j["mfu"] = mfu.headline.mfu;
  j["tflops_per_gpu"] = mfu.headline.tflops_per_gpu;
  j["mfu_megatron"] = mfu.megatron.mfu;
  j["tflops_per_gpu_megatron"] = mfu.megatron.tflops_per_gpu;
  j["mfu_simumax"] = mfu.simumax.mfu;
  j["tflops_per_gpu_simumax"] = mfu.simumax.tflops_per_gpu;
  j["tokens_per_s_per_gpu"] = e.tokens_per_s_per_gpu;
  j["straggler_ratio"] = e.straggler_ratio;
  j["pipeline_ms"] = e.pipeline_s * 1e3;
  j["timeline_events"] = e.timeline.events.size();
  j["straggler_added_ms"] = straggler_added_s(e) * 1e3;
  j["straggler"] = {{"ratio", e.straggler.ratio},       {"nodes", e.straggler.nodes},
                    {"replicas", e.straggler.replicas}, {"jitter", e.straggler.jitter},
                    {"basis", e.straggler.basis()}};
  j["notes"] = in.notes;
  j["not_modeled"] = in.not_modeled;
  j["ignored"] = in.ignored;
  nlohmann::ordered_json no_effect = nlohmann::ordered_json::array();
  for (const NoEffect& n : in.no_effect)
    no_effect.push_back({{"key", n.key}, {"value", nlohmann::ordered_json::parse(n.value)}, {"reason", n.reason}});
  j["no_effect"] = no_effect;
  j["peak_alloc_gib"] = e.peak_alloc_bytes() / kGiB;
  j["peak_reserved_gib"] = e.peak_reserved_bytes() / kGiB;
  j["device_memory_gib"] = in.system.mem_bytes / kGiB;
  // The fit verdict (estimate/fit.h, the rule search uses): null when the device memory is unknown.
  const FitRule rule = fit_rule(in.system, e.mode);
  const FitVerdict plan_fit = fit_verdict(e, rule);
  // The margin outside PyTorch: the flat one (compat) or the stage with the least headroom's own.
  const StageMemory* worst = tightest_stage(e, rule);
  const double outside = rule.unusable_bytes + (worst && rule.stage_non_tensor ? worst->non_tensor_bytes : 0.0);
  j["unusable_memory_gib"] = outside / kGiB;
  j["memory_limit_gib"] = (rule.device_bytes - outside) / kGiB;
  j["fits"] = plan_fit.known ? nlohmann::ordered_json(plan_fit.fits) : nlohmann::ordered_json();
  j["fit_state"] = plan_fit.known ? nlohmann::ordered_json(fit_state_name(plan_fit.state)) : nlohmann::ordered_json();
  j["memory_headroom_gib"] = plan_fit.known ? nlohmann::ordered_json(plan_fit.headroom_bytes / kGiB) : nlohmann::ordered_json();
  j["memory_headroom_without_reserve_gib"] =
      plan_fit.known ? nlohmann::ordered_json(plan_fit.floor_headroom_bytes / kGiB) : nlohmann::ordered_json();
  double host = 0;
  for (const auto& st : e.stages) host = std::max(host, st.host_bytes);
  j["host_memory_gib"] = host / kGiB;
  j["stages"] = stages_json(e, rule);
  j["time_breakdown"] = stage_times_json(e);
  nlohmann::ordered_json nets;
  for (const auto& [g, n] : e.networks) nets[std::string(g)] = n;
  j["networks"] = nets;
  j["breakdown"] = breakdown_json(e);
  efficiency_json(e, j);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string estimate_summary(const PlanInputs& in, const Estimate& e) {
  const Settings& s = in.settings;
  const auto& m = in.model;
  std::string o;
  o += strprintf("model      %s (%s, %lld layers, hidden %lld)\n", in.model_source.c_str(),
                 m.model_name.empty() ? m.model_type.c_str() : m.model_name.c_str(),
                 static_cast<long long>(m.layer_num), static_cast<long long>(m.hidden_size));
  const ParameterCount params = count_parameters(m, in.stages, in.settings.par.pp);
  o += strprintf("parameters %s (%s)", billions(params.total).c_str(), grouped(params.total).c_str());
  if (params.active != params.total)
    o += strprintf(", active %s (%s)", billions(params.active).c_str(), grouped(params.active).c_str());
  if (params.stages.size() > 1) {
    std::vector<std::string> per;
    for (const auto& st : params.stages) per.push_back(billions(st.total));
    o += "; per stage " + join(per);
  }
  o += "\n";
  o += strprintf("strategy   %s\n", in.strategy_source.c_str());
  o += strprintf("system     %s (%s, %lld GPUs/node, %.0f GiB)\n", in.system_source.c_str(),
                 in.system.sys_name.c_str(), static_cast<long long>(in.system.num_per_node), in.system.mem_bytes / kGiB);
  o += strprintf("parallel   %s on %lld GPUs; seq %lld, micro batch %lld x %lld, global batch %lld\n",
                 parallelism_string(s).c_str(), static_cast<long long>(s.par.world),
                 static_cast<long long>(s.batch.seq_len), static_cast<long long>(s.batch.micro_batch_size),
                 static_cast<long long>(s.batch.micro_batch_num), static_cast<long long>(e.global_batch_size));
  o += strprintf("recompute  %s; ZeRO %lld\n", recompute_string(s, in.model.layer_num).c_str(), static_cast<long long>(s.ovl.zero_state));
  o += strprintf("schedule   %s, %s p2p; mode %s\n\n", e.schedule.c_str(), e.p2p.c_str(), mode_name(e.mode));
  const Mfu mfu = mfu_of(in, e);
  const bool meg = in.mfu == MfuConvention::Megatron;
  const Throughput& other = meg ? mfu.simumax : mfu.megatron;
  o += strprintf("step time      %10.2f ms  (straggler x%.3f adds %.2f ms)\n", e.iteration_time_s * 1e3,
                 e.straggler_ratio, straggler_added_s(e) * 1e3);
  const double peak_tflops = mfu_peak_flops(in.system) / kTera;
  o += strprintf("MFU            %10.2f %%  (%s convention, of the %.0f TFLOP/s default peak; %s: %.2f %%)\n",
                 mfu.headline.mfu * 100, mfu_convention_name(in.mfu), peak_tflops, meg ? "simumax" : "megatron",
                 other.mfu * 100);
  o += strprintf("TFLOPS/GPU     %10.1f    (%s: %.1f)\n", mfu.headline.tflops_per_gpu,
                 meg ? "simumax" : "megatron", other.tflops_per_gpu);
  o += strprintf("tokens/s/GPU   %10.1f\n", e.tokens_per_s_per_gpu);
  o += strprintf("straggler      x%.3f: %s\n\n", e.straggler.ratio, e.straggler.basis().c_str());
  o += "time per stage (ms)   total  pipeline    bubble   fwd/mb   bwd/mb  tp/cp/ep     dp   optim\n";
  for (const auto& t : e.stage_times)
    o += strprintf("  %-16s %9.1f %9.1f %9.1f %8.2f %8.2f %9.1f %6.1f %7.1f\n", t.name.c_str(), t.total_s * 1e3,
                   t.pipeline_s * 1e3, t.bubble_s * 1e3, t.fwd_per_mb_s * 1e3, t.bwd_per_mb_s * 1e3,
                   t.tp_comm_s * 1e3, t.dp_comm_s * 1e3, t.optimizer_s * 1e3);
  o += "\ncommunication (ms)    exposed / total per group\n";
  for (const auto& t : e.stage_times) {
    o += strprintf("  %-16s", t.name.c_str());
    for (size_t g = 0; g < t.comm_by_group_s.size(); ++g) {
      if (t.comm_by_group_s[g] <= 0) continue;
      o += strprintf(" %s %.1f/%.1f", group_name(static_cast<Group>(g)), t.exposed_comm_s(g) * 1e3,
                     t.comm_by_group_s[g] * 1e3);
    }
    o += "\n";
  }
  const FitRule rule = fit_rule(in.system, e.mode);
  // The columns add and multiply as they read: peak = weights + grads + optim + other static +
  // saved + transient; saved = act/mb × in-flight, in-flight in micro-batches of the whole stage
  // (an interleaved stage holds pieces of its virtual chunks: a fraction of a micro-batch each).
  o += strprintf("\nmemory per stage (GiB)  peak  reserved  weights  grads  optim  other  act/mb  in-flight  saved  "
                 "transient  headroom\n");
  for (const auto& st : e.stages) {
    const FitVerdict fit = fit_verdict(st, rule);
    const double saved = st.peak_alloc_bytes - st.model_bytes - st.peak_transient_bytes;
    const double other_static = st.model_bytes - st.weight_bytes - st.grad_bytes - st.state_bytes;
    const double in_flight = st.activation_cache_per_mb_bytes > 0 ? saved / st.activation_cache_per_mb_bytes : 0;
    o += strprintf("  %-16s %8.2f %9.2f %8.2f %6.2f %6.2f %6.2f %7.2f %10.2f %6.2f %10.2f %9s%s\n", st.name.c_str(),
                   st.peak_alloc_bytes / kGiB, st.peak_reserved_bytes / kGiB, st.weight_bytes / kGiB,
                   st.grad_bytes / kGiB, st.state_bytes / kGiB, other_static / kGiB,
                   st.activation_cache_per_mb_bytes / kGiB, in_flight, saved / kGiB, st.peak_transient_bytes / kGiB,
                   fit.known ? strprintf("%.2f", fit.headroom_bytes / kGiB).c_str() : "-",
                   !fit.known ? "" : !fit.fits ? "  OUT OF MEMORY" : fit.tight() ? "  TIGHT" : "");
  }
  const FitVerdict plan_fit = fit_verdict(e, rule);
  const StageMemory* worst = tightest_stage(e, rule);
  if (plan_fit.known && worst && rule.stage_non_tensor)
    o += strprintf("fit        %s: peak reserved %.2f GiB vs limit %.2f GiB (device %.2f − %.2f outside PyTorch: "
                   "%s)\n",
                   fit_state_name(plan_fit.state), worst->peak_reserved_bytes / kGiB,
                   rule.stage_limit_bytes(*worst) / kGiB, rule.device_bytes / kGiB, worst->non_tensor_bytes / kGiB,
                   non_tensor_memory(in.model, in.settings, in.system).terms().c_str());
  else if (plan_fit.known)
    o += strprintf("fit        %s: peak reserved %.2f GiB vs limit %.2f GiB (device %.2f − unusable %.2f)\n",
                   fit_state_name(plan_fit.state), e.peak_reserved_bytes() / kGiB, rule.limit_bytes() / kGiB,
                   rule.device_bytes / kGiB, rule.unusable_bytes / kGiB);
  else
    o += "fit        unknown: the system gives no device memory (mem_gbs 0)\n";
  if (plan_fit.tight()) o += "warning: " + fit_warning(plan_fit) + "\n";
  double host = 0;
  for (const auto& st : e.stages) host = std::max(host, st.host_bytes);
  if (host > 0) o += strprintf("host       %.2f GiB of pinned host memory per GPU (offloaded optimizer states, activations)\n", host / kGiB);
  o += "\nnetworks   ";
  for (const auto& [g, n] : e.networks) o.append(g).append("=").append(n).append(" ");
  const std::string modelled =
      e.efficiency_interpolated + e.efficiency_extrapolated == 0
          ? ""
          : strprintf("%lld interpolated and %lld extrapolated by the op's measured model, ",
                      static_cast<long long>(e.efficiency_interpolated), static_cast<long long>(e.efficiency_extrapolated));
  o += strprintf("\nefficiency %lld shape lookups measured, %s%zu shapes fell back to op defaults%s\n",
                 static_cast<long long>(e.efficiency_hits), modelled.c_str(), e.misses.size(),
                 e.misses.empty() ? "" : " (see --json efficiency_misses; measure them with kernels_bench)");
  if (const std::string by = efficiency_by_class_line(e, in.system); !by.empty())
    o += "           lookups by class: " + by + "\n";
  if (const std::string coll = collectives_line(e); !coll.empty()) o += "           collectives: " + coll + "\n";
  for (const auto& line : model_summaries(in.system)) o += "           " + line + "\n";
  for (const auto& n : in.notes) o += "note: " + n + "\n";
  if (!in.not_modeled.empty())
    o += "warning: given but not modeled (the prediction ignores them): " + join(in.not_modeled) + "\n";
  for (const NoEffect& n : in.no_effect) o += "warning: " + no_effect_line(n) + "\n";
  return o;
}

}  // namespace trainsim
