// Network tiers: each parallel group placed by Megatron's rank order (tp-cp-ep-dp-pp) on the
// slowest tier it spans, NVLink domains larger than a node (GB200 NVL72).
#include "test_estimate.h"
#include "comm/collective.h"

#include <gtest/gtest.h>

#include "estimate/estimate.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

TEST(NetworkTiers, GroupsStayOnNvlinkInsideOneDomain) {
  const SystemConfig nvl72 = test::preset_system("gb200-nvl72");
  ASSERT_EQ(nvlink_domain(nvl72), 72);
  StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8})", "s");
  s.tp_size = 8;
  s.world_size = 72;  // dp 9: tp·dp = 72 ranks, one domain
  NetworkChoice c = choose_networks(nvl72, s, Mode::Default);
  EXPECT_EQ(c.of(Group::TP), "high_intra_node");
  EXPECT_EQ(c.of(Group::DP), "high_intra_node");
  s.world_size = 144;  // dp 18 spans two domains
  c = choose_networks(nvl72, s, Mode::Default);
  EXPECT_EQ(c.of(Group::DP), "inter_node");
  s.tp_size = 16;  // blocks of 16 consecutive ranks straddle the 72-GPU boundary (64..79)
  s.world_size = 16;
  c = choose_networks(nvl72, s, Mode::Default);
  EXPECT_EQ(c.of(Group::TP), "inter_node");
  // The same cluster as 4-GPU nodes without the NVLink domain: DP leaves the tray.
  SystemConfig trays = nvl72;
  trays.nvlink_domain_size.reset();
  s.tp_size = 4;
  s.world_size = 72;
  EXPECT_EQ(choose_networks(trays, s, Mode::Default).of(Group::DP), "inter_node");
  EXPECT_EQ(choose_networks(nvl72, s, Mode::Default).of(Group::DP), "high_intra_node");
  // Pipeline: adjacent stages are world/pp ranks apart; the slowest pair sets the pace.
  const SystemConfig h100 = test::preset_system("h100-sxm-80g");
  s.tp_size = 4;
  s.pp_size = 4;
  s.world_size = 16;  // stages 4 ranks apart: 0↔4 inside a node, 4↔8 across
  EXPECT_EQ(choose_networks(h100, s, Mode::Default).of(Group::PP), "inter_node");
  EXPECT_EQ(choose_networks(h100, s, Mode::SimuMax12).of(Group::PP), "high_intra_node");  // the peer's rule
}

TEST(NetworkTiers, NvlinkDomainSpeedsUpCrossTrayDataParallel) {
  const ModelConfig m = test::preset_model("llama3-8b");
  const SystemConfig nvl72 = test::preset_system("gb200-nvl72");
  SystemConfig trays = nvl72;
  trays.nvlink_domain_size.reset();
  refresh_fingerprint(trays);
  StrategyConfig s = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8,
                                       "world_size": 72, "tp_size": 4})", "s");  // dp 18: 72 ranks, one domain
  const Estimate a = estimate(m, s, nvl72), b = estimate(m, s, trays);
  EXPECT_LT(a.stage_times[0].dp_comm_s, b.stage_times[0].dp_comm_s);
  EXPECT_LT(a.iteration_time_s, b.iteration_time_s);
  EXPECT_EQ(test::error_of([&] { (void)estimate(m, s, nvl72, nullptr, Mode::SimuMax12); }),
            "system: /nvlink_domain_size: is not part of SimuMax v1.2; use the default mode");
}

}  // namespace
}  // namespace trainsim
