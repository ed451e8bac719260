// Cross-check of two result files: matching, ratios, the acceptance and input errors.
#include <gtest/gtest.h>

#include "system/presets.h"
#include "core/error.h"
#include "crosscheck.h"

namespace trainsim::tools {
namespace {

std::string data(const std::string& name) { return read_file(std::string(TRAINSIM_TEST_DATA) + "/crosscheck/" + name); }

TEST(CrossCheckTest, KernelsExampleHasKnownRatiosAndOneOutlier) {
  CrossReport r = cross_check(data("ours_kernels.json"), "ours", data("published_kernels.json"), "published");
  EXPECT_EQ(r.format, "kernels");
  ASSERT_EQ(r.rows.size(), 7u);  // 8 ok results in ours, launch latency unpublished
  EXPECT_NEAR(r.rows[0].ratio, 1.02, 1e-9);
  EXPECT_NEAR(r.rows[0].ours_s, 3e-4, 1e-15);
  EXPECT_NEAR(r.rows[3].ratio, 1.08, 1e-9);
  EXPECT_FALSE(r.rows[3].within);
  EXPECT_EQ(r.rows[3].what.rfind("sdp_fwd batch=1, seq_len=4096", 0), 0u);
  EXPECT_EQ(r.only_ours, (std::vector<std::string>{"launch_latency empty_kernel"}));
  EXPECT_TRUE(r.only_published.empty());
  EXPECT_EQ(r.within_count(), 6u);
  EXPECT_FALSE(r.accepted());
  // A looser tolerance accepts the 8 % outlier.
  EXPECT_TRUE(cross_check(data("ours_kernels.json"), "o", data("published_kernels.json"), "p", 0.1).accepted());
}

TEST(CrossCheckTest, CommExampleMatchesBySizeAboveTheLatencyRegime) {
  CrossReport r = cross_check(data("ours_comm.json"), "ours", data("published_comm.json"), "published", 0.05, 1 << 20);
  ASSERT_EQ(r.rows.size(), 14u);  // 1 MiB ... 8 GiB
  EXPECT_EQ(r.rows[0].what, "all_reduce intra_node n=8 1048576 B");
  EXPECT_NEAR(r.rows[0].ratio, 1 / 1.03, 1e-6);
  EXPECT_TRUE(r.accepted());
  std::string text = format_report(r);
  EXPECT_NE(text.find("acceptance (±5 %): PASS, 14 of 14 within"), std::string::npos);
  // Without the size floor the small sizes have no published partner.
  EXPECT_EQ(cross_check(data("ours_comm.json"), "o", data("published_comm.json"), "p").only_ours.size(), 17u);
}

TEST(CrossCheckTest, MalformedInputNamesFileAndPath) {
  try {
    (void)cross_check(R"({"points": [{"op": "all_reduce", "kind": "intra_node", "n": 8, "size_bytes": 8}]})", "a.json",
                      R"({"points": []})", "b.json");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "a.json: /points/0/time_us: required field is missing");
  }
  EXPECT_THROW((void)cross_check("{}", "a.json", "{}", "b.json"), ConfigError);
  CrossReport empty = cross_check(R"({"points": []})", "a", R"({"points": []})", "b");
  EXPECT_FALSE(empty.accepted());  // nothing compared is not a pass
}

}  // namespace
}  // namespace trainsim::tools
