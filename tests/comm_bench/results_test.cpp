// comm.json writer, atomic writes, rank-tagged error messages.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "checks.h"
#include "inputs/output_file.h"
#include "results.h"

namespace comm_bench {
namespace {

CommResults sample() {
  CommResults r;
  r.provenance.world_size = 8;
  r.groups.push_back({"intra_node_x8", GroupKind::IntraNode, "high_intra_node", 8, 1});
  for (uint64_t s : size_sweep(1 << 20, 1 << 24, 2))
    r.points.push_back({Collective::AllReduce, "intra_node_x8", GroupKind::IntraNode, "high_intra_node", 8, s,
                        20e-6 + 1.75 * static_cast<double>(s) / 200e9, 20});
  r.points.push_back({Collective::AllReduce, "single", GroupKind::Single, "", 1, 1 << 20, 5e-6, 20});
  r.points.push_back({Collective::AllReduce, "single", GroupKind::Single, "", 1, 1 << 21, 6e-6, 20});
  return r;
}

TEST(CommResultsTest, FitsOnlyClassifiedGroups) {
  CommResults r = sample();
  fit_all(r);
  ASSERT_EQ(r.fits.size(), 1u);  // "single" has no class and one rank
  EXPECT_EQ(r.fits[0].group, "intra_node_x8");
  EXPECT_NEAR(r.fits[0].fit.latency_s, 20e-6, 1e-12);
  EXPECT_NEAR(r.fits[0].fit.bus_bandwidth, 200e9, 1e-2);
}

TEST(CommResultsTest, JsonDocument) {
  CommResults r = sample();
  fit_all(r);
  const auto j = nlohmann::json::parse(results_to_json_text(r));
  EXPECT_EQ(j["schema_version"], "1.0.0");
  EXPECT_EQ(j["complete"], false);
  EXPECT_EQ(j["provenance"]["world_size"], 8);
  const auto& p = j["points"][0];
  EXPECT_EQ(p["size_bytes"], 1048576);
  // t = 20 µs + 1.75·2^20/200e9 s = 29.17504 µs; algbw = 2^20/t = 35.94086 GB/s; busbw ×1.75.
  EXPECT_DOUBLE_EQ(p["time_us"].get<double>(), 29.175);
  EXPECT_DOUBLE_EQ(p["algbw_gbs"].get<double>(), 35.9409);
  EXPECT_DOUBLE_EQ(p["busbw_gbs"].get<double>(), 62.8965);
  const auto& f = j["fits"][0];
  EXPECT_EQ(f["op"], "all_reduce");
  EXPECT_EQ(f["network"], "high_intra_node");
  EXPECT_DOUBLE_EQ(f["latency_us"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(f["bus_bandwidth_gbs"].get<double>(), 200);
  EXPECT_EQ(f["large_points"], 5);
}

TEST(CommResultsTest, AtomicWriteLeavesNoTemporary) {
  const auto dir = std::filesystem::temp_directory_path() / ("comm_results_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "comm.json").string();
  trainsim::write_file_atomic(path, "first\n");
  trainsim::write_file_atomic(path, "second\n");
  std::ifstream f(path);
  std::ostringstream s;
  s << f.rdbuf();
  EXPECT_EQ(s.str(), "second\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
  std::filesystem::remove_all(dir);
  try {
    trainsim::write_file_atomic("/nonexistent-dir/comm.json", "x");
    FAIL();
  } catch (const trainsim::Error& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent-dir/comm.json: cannot write: No such file or directory");
  }
}

TEST(CommChecksTest, MessageNamesHostRankAndCall) {
  RankContext saved = rank_context();
  rank_context() = {"node7", 3, 1};
  try {
    check_failed("NCCL", "ncclAllReduce(a, b)", "unhandled cuda error", "/src/comm_bench/nccl_runner.cpp", 42);
    FAIL();
  } catch (const RankError& e) {
    EXPECT_EQ(std::string(e.what()),
              "node7 rank 3 (local 1): NCCL error 'unhandled cuda error' in ncclAllReduce(a, b) at nccl_runner.cpp:42");
  }
  rank_context() = saved;
}

}  // namespace
}  // namespace comm_bench
