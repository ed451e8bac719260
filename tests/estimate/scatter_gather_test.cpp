// scatter_gather_tensors_in_pipeline (Narayanan et al. 2021, §4.1): the pipeline transfer of
// a TP-replicated activation as a 1/tp slice per rank over the scale-out network plus an
// all-gather over NVLink.
#include <gtest/gtest.h>

#include "inputs/strategy_config.h"
#include "test_estimate.h"
#include "comm/collective.h"
#include "estimate/estimate.h"
#include "plan/plan.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

using test::error_of;
using test::preset_model;
using test::preset_system;

const PlanSources kSrc{"m.json", "s.json", "y.json"};

StrategyConfig strategy(const std::string& extra, bool sp = false) {
  return load_strategy(R"({"seq_len": 2048, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 16,
      "tp_size": 8, "pp_size": 2, "enable_straggler_model": false, "enable_recompute": false,
      "enable_sequence_parallel": )" + std::string(sp ? "true" : "false") + extra + "}",
                       "s.json");
}

TEST(ScatterGatherTest, SendsOneSliceAndAllGathersOverNvlink) {
  ModelConfig m = preset_model("llama3-8b");
  m.layer_num = 4;
  const SystemConfig sys = preset_system("a100-sxm-80g");
  const StrategyConfig plain = strategy(""), sg = strategy(R"(, "scatter_gather_tensors_in_pipeline": true)");
  const Estimate a = estimate(m, plain, sys), b = estimate(m, sg, sys);
  // Activation of one micro-batch: 1 · 2048 · 4096 · 2 B = 16.78 MB. Stages sit on two nodes:
  // whole, over each GPU's 25 GB/s NIC at efficiency 0.8 plus 10 µs: 16.78e6 / 20e9 + 10e-6 =
  // 0.849 ms. Split: 2.10 MB the same way (0.115 ms) + an 8-GPU ring all-gather over NVLink,
  // 16.78e6 · 7/8 / (300e9 · 0.75) + 7 · 2 µs + 15 µs = 0.094 ms → 0.209 ms.
  const double bytes = 2048.0 * 4096 * 2;
  const std::string pp_net = resolve_plan(m, sg, sys, Mode::Default, kSrc).nets.of(Group::PP);
  const std::string tp_net = resolve_plan(m, sg, sys, Mode::Default, kSrc).nets.of(Group::TP);
  EXPECT_EQ(pp_net, "inter_node");
  EXPECT_EQ(tp_net, "high_intra_node");
  const double whole = collective_time(sys, plain, pp_net, Collective::P2P, bytes, 2, "pp");
  const double split = collective_time(sys, sg, pp_net, Collective::P2P, bytes / 8, 2, "pp") +
                       collective_time(sys, sg, tp_net, Collective::AllGather, bytes, 8, "tp");
  EXPECT_NEAR(whole, 0.849e-3, 0.001e-3);
  EXPECT_NEAR(split, 0.209e-3, 0.001e-3);
  // pp_comm_s = 2 · neighbours · p2p · mbc; stage 0 of pp 2 has one neighbour.
  EXPECT_NEAR(a.stage_times[0].pp_comm_s, 2 * whole * 4, 1e-12);
  EXPECT_NEAR(b.stage_times[0].pp_comm_s, 2 * split * 4, 1e-12);
}

TEST(ScatterGatherTest, RejectedWhereItChangesNothing) {
  const ModelConfig m = preset_model("llama3-8b");
  const SystemConfig sys = preset_system("a100-sxm-80g");
  auto error = [&](bool sp, Mode mode = Mode::Default) {
    return error_of([&] {
      (void)resolve_plan(m, strategy(R"(, "scatter_gather_tensors_in_pipeline": true)", sp), sys, mode, kSrc);
    });
  };
  EXPECT_EQ(error(true),
            "s.json: /scatter_gather_tensors_in_pipeline: changes nothing unless pipeline stages exchange activations "
            "replicated over a tensor-parallel group (pp_size > 1, tp_size > 1, no sequence parallelism: it already "
            "sends 1/tp); got pp_size 2, tp_size 8, sequence parallelism on; set it to false");
  EXPECT_EQ(error(false, Mode::SimuMax12),
            "s.json: /scatter_gather_tensors_in_pipeline: not part of SimuMax v1.2; remove it, or use the default mode");
}

}  // namespace
}  // namespace trainsim
