// libFuzzer target: whole plans. The input bytes pick a model, a system and a mode, and the
// strategy's sizes, micro-batches, schedule, layout and switches (written as strategy JSON and
// read by the strategy reader); the plan is resolved and estimated with its timeline, summary
// and JSON report. A plan that is not legal must end in trainsim::Error; anything else (an
// internal assertion, a crash, a sanitizer report, a timeout) is a finding.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "inputs/model_config.h"
#include "system/presets.h"
#include "inputs/strategy_config.h"
#include "system/system_config.h"
#include "core/error.h"
#include "estimate/estimate.h"
#include "estimate/finite.h"
#include "plan/plan.h"
#include "views/report.h"

namespace {

// Choices read one byte each; past the end of the input every choice is the first.
class Choices {
 public:
  Choices(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pick(size_t n) { return pos_ < size_ ? data_[pos_++] % n : 0; }
  template <class T, size_t N>
  const T& of(const std::array<T, N>& a) { return a[pick(N)]; }

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

constexpr std::array<std::string_view, 7> kModels = {"llama3-8b", "mixtral-8x7b", "deepseek-v2-lite", "qwen3-8b",
                                                     "deepseek-v3", "qwen3-32b", "gpt3-175b"};
constexpr std::array<std::string_view, 5> kSystems = {"h100-sxm-80g", "a100-pcie-80g", "b200-sxm-180g",
                                                      "gb200-nvl72", "a100-pcie-simumax"};
// Switches a byte sets true, false or leaves out.
constexpr std::array<std::string_view, 26> kSwitches = {
    "pp_comm_async", "enable_recompute", "enable_sequence_parallel", "overlap_grad_reduce", "overlap_param_gather",
    "tp_comm_overlap", "overlap_moe_expert_parallel_comm", "fp8", "use_fused_norm", "use_flash_sdp", "use_math_sdp",
    "grad_reduce_in_bf16", "recompute_variance", "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split", "cross_entropy_loss_fusion", "moe_enable_deepep", "moe_shared_expert_overlap",
    "moe_permute_fusion", "cache_groupgemm_col_fp8_inputs", "offload_groupgemm_col_inputs", "enable_straggler_model",
    "fine_grained_activation_offloading", "optimizer_cpu_offload", "use_fused_swiglu", "fp8_param_gather"};

// Sizes that fit together (EP and its switches only for an MoE model), so that most inputs reach
// the estimate; the switches still make many plans illegal.
std::string strategy_json(Choices& c, bool moe, int64_t& layers) {
  static constexpr std::array<int64_t, 4> seq = {512, 1024, 4096, 8192}, tp = {1, 2, 4, 8}, ep = {1, 2, 4, 8};
  static constexpr std::array<int64_t, 3> mbs = {1, 2, 4}, cp = {1, 2, 4};
  static constexpr std::array<std::string_view, 3> schedule = {"1f1b", "zero_bubble_h1", "1f1b"};
  static constexpr std::array<std::string_view, 4> cp_type = {"a2a", "p2p", "all_gather", "a2a+p2p"};
  static constexpr std::array<std::string_view, 3> dispatcher = {"alltoall", "allgather", "flex"};
  static constexpr std::array<std::string_view, 4> recipe = {"delayed", "tensorwise", "blockwise", "mxfp8"};
  const int64_t t = c.of(tp), x = c.of(cp), p = 1 + static_cast<int64_t>(c.pick(8));
  const int64_t v = p > 1 ? 1 + static_cast<int64_t>(c.pick(4)) : 1;
  const int64_t e = moe ? c.of(ep) : 1, et = moe ? 1 + static_cast<int64_t>(c.pick(2)) : 1;
  const int64_t d = std::max(int64_t{1} << c.pick(5), e * et);
  layers = p * v * (1 + static_cast<int64_t>(c.pick(4)));
  std::string j = "{\"seq_len\": " + std::to_string(c.of(seq)) + ", \"micro_batch_size\": " + std::to_string(c.of(mbs)) +
                  ", \"micro_batch_num\": " + std::to_string(1 + c.pick(33)) + ", \"tp_size\": " + std::to_string(t) +
                  ", \"cp_size\": " + std::to_string(x) + ", \"pp_size\": " + std::to_string(p) +
                  ", \"interleaving_size\": " + std::to_string(v) + ", \"ep_size\": " + std::to_string(e) +
                  ", \"etp_size\": " + std::to_string(et) + ", \"world_size\": " + std::to_string(t * x * p * d) +
                  ", \"zero_state\": " + std::to_string(c.pick(4)) + ", \"pipeline_schedule\": \"" +
                  std::string(c.of(schedule)) + "\"";
  if (x > 1 && c.pick(2)) j += ", \"cp_comm_type\": \"" + std::string(c.of(cp_type)) + "\"";
  if (moe && c.pick(2)) j += ", \"moe_token_dispatcher_type\": \"" + std::string(c.of(dispatcher)) + "\"";
  if (c.pick(2)) j += ", \"fp8_recipe\": \"" + std::string(c.of(recipe)) + "\"";
  if (c.pick(2)) j += ", \"recompute_layer_num\": " + std::to_string(c.pick(4));
  if (v > 1 && c.pick(2)) j += ", \"microbatch_group_size_per_vp_stage\": " + std::to_string(p + c.pick(3));
  if (p > 1 && c.pick(4) == 0) {
    // A layout: each decoder layer in a stage the bytes pick, embedding first, loss last.
    std::string stages[32];
    const auto n = static_cast<size_t>(p * v);
    for (int64_t l = 0; l < layers; ++l) stages[c.pick(n)] += "t";
    std::string layout = "E";
    for (size_t s = 0; s < n; ++s) layout += (s ? "|" : "") + stages[s];
    j += ", \"pipeline_model_parallel_layout\": \"" + layout + "L\"";
  }
  for (std::string_view k : kSwitches)
    if (const size_t b = c.pick(16); b < 2) j += ", \"" + std::string(k) + "\": " + (b ? "true" : "false");
  return j + "}";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainsim;
  Choices c(data, size);
  try {
    ModelConfig m = load_model(resolve_config("model", std::string(c.of(kModels))).text, "m.json");
    const SystemConfig sys = load_system(resolve_config("system", std::string(c.of(kSystems))).text, "y.json");
    const Mode mode = c.pick(4) == 0 ? Mode::SimuMax12 : Mode::Default;
    int64_t layers = 0;
    const StrategyConfig s = load_strategy(strategy_json(c, m.is_moe(), layers), "s.json");
    m.layer_num = layers;
    const PlanSources src{"m.json", "s.json", "y.json"};
    const Plan plan = resolve_plan(m, s, sys, mode, src);
    const Estimate e = estimate(plan, nullptr, true);
    require_finite(e, src);
    PlanInputs in;
    in.model = m;
    in.system = sys;
    in.take_plan(plan);
    (void)estimate_summary(in, e);
    (void)estimate_to_json(in, e);
  } catch (const Error&) {
  }
  return 0;
}
