// nccl-tests import: text dialects, -J JSON, error messages.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "nccl_tests.h"

namespace comm_bench {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream f(std::string(TRAINSIM_TEST_DATA) + "/comm/" + name);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<NcclTestsRun> parse_fixture(const std::string& name) { return parse_nccl_tests(fixture(name), name); }

std::string config_error(const std::string& text, const std::string& source) {
  try {
    (void)parse_nccl_tests(text, source);
  } catch (const trainsim::ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(CommNcclTestsTest, CurrentHeaderWithRedopRootAndWrong) {
  const auto runs = parse_fixture("all_reduce_v2.19_8gpu.log");
  ASSERT_EQ(runs.size(), 1u);
  const NcclTestsRun& r = runs[0];
  EXPECT_EQ(r.op, Collective::AllReduce);
  EXPECT_EQ(r.nranks, 8);
  EXPECT_EQ(r.hosts.size(), 8u);
  EXPECT_EQ(r.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.tests_version, "2.19.6");
  EXPECT_EQ(r.nccl_version, "22809");
  ASSERT_EQ(r.rows.size(), 31u);
  EXPECT_EQ(r.rows[0].size_bytes, 8u);
  EXPECT_EQ(r.rows[0].count, 4u);
  EXPECT_EQ(r.rows[0].type, "bfloat16");
  EXPECT_DOUBLE_EQ(r.rows[0].oop_time_s, 25.00e-6);
  EXPECT_DOUBLE_EQ(*r.rows[0].ip_time_s, 25.25e-6);
  // "8589934592 4294967296 bfloat16 sum -1 41781.6 205.59 359.78 0 42199.4 ...": %.1f time.
  EXPECT_EQ(r.rows.back().size_bytes, 8589934592u);
  EXPECT_DOUBLE_EQ(r.rows.back().oop_time_s, 41781.6e-6);
  EXPECT_DOUBLE_EQ(r.rows.back().oop_busbw_gbs, 359.78);
  EXPECT_TRUE(r.notes.empty());
}

TEST(CommNcclTestsTest, OldHeaderLauncherPrefixAndOpFromFileName) {
  const auto runs = parse_fixture("all_gather_perf_2node_old.log");
  ASSERT_EQ(runs.size(), 1u);
  const NcclTestsRun& r = runs[0];
  EXPECT_EQ(r.op, Collective::AllGather);
  EXPECT_EQ(r.nranks, 2);
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"gpu-n1", "gpu-n2"}));
  EXPECT_EQ(r.gpu, "NVIDIA A100-SXM4-80GB");
  ASSERT_EQ(r.rows.size(), 11u);  // 1 MiB … 1 GiB
  EXPECT_DOUBLE_EQ(r.rows[0].oop_time_s, 66.21e-6);
  EXPECT_EQ(r.notes, (std::vector<std::string>{"collective taken from the file name: all_gather"}));
}

TEST(CommNcclTestsTest, NoRankLinesIterationColumnsAndNotAvailableWrong) {
  const auto runs = parse_fixture("reduce_scatter_norank_iflag.log");
  ASSERT_EQ(runs.size(), 1u);
  const NcclTestsRun& r = runs[0];
  EXPECT_EQ(r.op, Collective::ReduceScatter);
  EXPECT_EQ(r.nranks, 4);  // busbw/algbw = 3/4
  EXPECT_EQ(r.notes, (std::vector<std::string>{"no rank lines: 4 ranks implied by busbw/algbw"}));
  EXPECT_DOUBLE_EQ(r.rows[0].oop_time_s, 17.46e-6);
  EXPECT_DOUBLE_EQ(*r.rows[0].ip_time_s, 17.63e-6);  // after the four -I columns
}

TEST(CommNcclTestsTest, SendrecvWithTimestamps) {
  const auto runs = parse_fixture("sendrecv_2gpu_timestamps.log");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].op, Collective::P2P);
  EXPECT_EQ(runs[0].nranks, 2);
  EXPECT_EQ(runs[0].tests_version, "2.13.9");
  EXPECT_EQ(runs[0].rows.size(), 25u);  // 8 B … 128 MiB
  EXPECT_DOUBLE_EQ(runs[0].rows.back().oop_time_s, 906.78e-6);
}

TEST(CommNcclTestsTest, JsonOutput) {
  const auto runs = parse_fixture("alltoall_8gpu.json");
  ASSERT_EQ(runs.size(), 1u);
  const NcclTestsRun& r = runs[0];
  EXPECT_EQ(r.op, Collective::AllToAll);
  EXPECT_EQ(r.nranks, 8);
  EXPECT_EQ(r.gpu, "NVIDIA H200");
  EXPECT_EQ(r.nccl_version, "2.28.9");
  ASSERT_EQ(r.rows.size(), 21u);  // 1 KiB … 1 GiB
  EXPECT_EQ(r.rows[10].size_bytes, 1048576u);
  EXPECT_DOUBLE_EQ(r.rows[10].oop_time_s, 33.06e-6);
}

TEST(CommNcclTestsTest, SeveralRunsInOneFile) {
  const auto runs = parse_fixture("two_runs_2gpu.log");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].op, Collective::AllReduce);
  EXPECT_EQ(runs[1].op, Collective::AllGather);
  EXPECT_EQ(runs[1].nranks, 2);
  EXPECT_EQ(runs[1].hosts.size(), 2u);
}

TEST(CommNcclTestsTest, ErrorsNameFileAndLine) {
  EXPECT_EQ(config_error(fixture("bad_short_row.log"), "bad_short_row.log"),
            "bad_short_row.log: line 3: data row has 6 columns, the header needs at least 8");
  EXPECT_EQ(config_error(fixture("bad_cputime.log"), "bad_cputime.log"),
            "bad_cputime.log: line 2: host CPU times (nccl-tests -C 1) cannot be fitted; rerun without -C");
  EXPECT_EQ(config_error("hello\n", "x.log"), "x.log: no nccl-tests data rows found");
  EXPECT_EQ(config_error("   1024   512  bfloat16  sum  -1  12.5  0.08  0.08  0\n", "run.txt"),
            "run.txt: line 1: cannot tell which collective was measured; name the file after the nccl-tests binary "
            "(e.g. all_reduce_perf.log) or pass --op");
  EXPECT_EQ(config_error("{\"version\": 3}", "x.json"),
            "x.json: /results: required array is missing (is this an nccl-tests -J file?)");
  EXPECT_EQ(config_error("# Collective test starting: broadcast_perf\n", "b.log"),
            "b.log: line 1: unsupported nccl-tests collective 'broadcast_perf'; supported: all_reduce, all_gather, "
            "reduce_scatter, alltoall, sendrecv");
}

// Lines of only whitespace (\v, \f, a stray \r) are blank, wherever they appear.
TEST(CommNcclTestsTest, WhitespaceOnlyLinesAreBlank) {
  std::string log = fixture("all_reduce_v2.19_8gpu.log");
  log.insert(log.find("           8 "), "\v\n\f\n\r\r\n \v\t\n");
  const auto runs = parse_nccl_tests(log + "\v\n", "all_reduce.log");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].rows.size(), 31u);
  EXPECT_EQ(config_error("\v\n\f\n\r\r\n", "x.log"), "x.log: no nccl-tests data rows found");
}

TEST(CommNcclTestsTest, OutOfRangeTextValuesAreRejected) {
  const std::string header = "# Collective test starting: all_reduce_perf\n"
                             "#  size  count  type  redop  root  time  algbw  busbw  #wrong\n";
  EXPECT_EQ(config_error("#  Rank 99999999999 Group 0 Pid 1 on a device 0 [0] GPU\n" + header +
                             "1024 512 bfloat16 sum -1 12.5 0.08 0.08 0\n",
                         "x.log"),
            "x.log: line 1: rank number '99999999999' is out of range");
  EXPECT_EQ(config_error(header + "99999999999999999999 512 bfloat16 sum -1 12.5 0.08 0.08 0\n", "x.log"),
            "x.log: line 3: size '99999999999999999999' does not fit in 64 bits");
  EXPECT_EQ(config_error(header + "1024 -512 bfloat16 sum -1 12.5 0.08 0.08 0\n", "x.log"),
            "x.log: line 3: expected an element count below 2^64 in the count column, got '-512'");
  EXPECT_EQ(config_error(header + "1024 512 bfloat16 sum -1 1e400 0.08 0.08 0\n", "x.log"),
            "x.log: line 3: expected numbers in the out-of-place time/algbw/busbw columns, got '1e400 0.08 0.08'");
  // busbw/algbw → 2/(2−f) ≈ 2e13 ranks: too many to be a rank count.
  EXPECT_EQ(config_error(header + "1024 512 bfloat16 sum -1 12.5 1 1.9999999999999 0\n", "x.log"),
            "x.log: line 3: cannot tell the number of ranks: the log lists no '# Rank' lines and busbw/algbw does "
            "not determine it");
}

std::string json_doc(const std::string& top, const std::string& result) {
  return R"({"collective": "all_reduce_perf", )" + top + R"("results": [{)" + result +
         R"("out_of_place": {"time": 10, "alg_bw": 1, "bus_bw": 1.5}}]})";
}

TEST(CommNcclTestsTest, OutOfRangeJsonValuesAreRejected) {
  EXPECT_EQ(config_error(json_doc(R"("nranks": 4, )", R"("size": 1e400, )"), "x.json"),
            "x.json: invalid JSON: [json.exception.out_of_range.406] number overflow parsing '1e400'");
  EXPECT_EQ(config_error(json_doc(R"("nranks": 4, )", R"("size": -5, )"), "x.json"),
            "x.json: /results/0/size: expected a non-negative integer below 2^64, got -5");
  EXPECT_EQ(config_error(json_doc(R"("nranks": 4, )", R"("size": 1e30, )"), "x.json"),
            "x.json: /results/0/size: expected a non-negative integer below 2^64, got 1e+30");
  EXPECT_EQ(config_error(json_doc(R"("nranks": 4, )", R"("size": 8.5, )"), "x.json"),
            "x.json: /results/0/size: expected a non-negative integer below 2^64, got 8.5");
  EXPECT_EQ(config_error(json_doc(R"("nranks": 4, )", R"("size": 8, "count": -1, )"), "x.json"),
            "x.json: /results/0/count: expected a non-negative integer below 2^64, got -1");
  EXPECT_EQ(config_error(json_doc(R"("world_size": 10000000000, )", R"("size": 8, )"), "x.json"),
            "x.json: /world_size: expected a rank count from 1 to 2147483647, got 10000000000");
  EXPECT_EQ(config_error(json_doc(R"("nranks": -2, )", R"("size": 8, )"), "x.json"),
            "x.json: /nranks: expected a rank count from 1 to 2147483647, got -2");
  const auto runs = parse_nccl_tests(json_doc(R"("nranks": 4, )", R"("size": 1e6, "count": 18446744073709551615, )"),
                                     "x.json");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].nranks, 4);
  EXPECT_EQ(runs[0].rows[0].size_bytes, 1000000u);
  EXPECT_EQ(runs[0].rows[0].count, 18446744073709551615u);
}

TEST(CommNcclTestsTest, ImportClassifiesAndFits) {
  std::vector<NcclTestsRun> runs = parse_fixture("all_reduce_v2.19_8gpu.log");
  for (auto& r : parse_fixture("all_gather_perf_2node_old.log")) runs.push_back(r);
  const CommResults res = results_from_nccl_tests(runs, IntraLink::NVLink, "");
  ASSERT_EQ(res.groups.size(), 2u);
  EXPECT_EQ(res.groups[0].name, "intra_node_x8");
  EXPECT_EQ(res.groups[0].network, "high_intra_node");
  EXPECT_EQ(res.groups[1].name, "inter_node_x2");
  EXPECT_EQ(res.groups[1].network, "inter_node");
  ASSERT_EQ(res.fits.size(), 2u);
  // The fixtures were written from t = 25 µs + x/360 GB/s and t = 40 µs + x/20 GB/s.
  EXPECT_NEAR(res.fits[0].fit.latency_s, 25e-6, 0.05e-6);
  EXPECT_NEAR(res.fits[0].fit.bus_bandwidth / 360e9, 1, 0.002);
  EXPECT_NEAR(res.fits[1].fit.latency_s, 40e-6, 0.5e-6);
  EXPECT_NEAR(res.fits[1].fit.bus_bandwidth / 20e9, 1, 0.002);
  EXPECT_EQ(res.provenance.world_size, 8);
  EXPECT_EQ(res.provenance.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(res.notes, (std::vector<std::string>{
                           "all_gather_perf_2node_old.log: collective taken from the file name: all_gather"}));
}

TEST(CommNcclTestsTest, ImportNetworkOverride) {
  const auto runs = parse_fixture("reduce_scatter_norank_iflag.log");
  EXPECT_EQ(results_from_nccl_tests(runs, IntraLink::PCIe, "").fits.at(0).network, "intra_node_pcie_4x");
  EXPECT_EQ(results_from_nccl_tests(runs, IntraLink::NVLink, "low_intra_node").fits.at(0).network, "low_intra_node");
  try {
    (void)results_from_nccl_tests(runs, IntraLink::NVLink, "inter_nodes");
    FAIL();
  } catch (const trainsim::UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--network: unknown class 'inter_nodes'; valid values: high_intra_node, low_intra_node, inter_node, "
              "intra_node_pcie_2x, intra_node_pcie_4x, intra_node_pcie_8x; did you mean 'inter_node'?");
  }
}

TEST(CommNcclTestsTest, SixteenRanksOnTwoNodesAreMergedPerNode) {
  // Synthetic fixture: 2 nodes x 8 GPUs, t = 40 us + S * 2 * 15/16 / 45 GB/s.
  const auto runs = parse_fixture("all_reduce_16rank_2node_synthetic.log");
  ASSERT_EQ(runs.size(), 1u);
  const RunPlacement pl = classify_run(runs[0]);
  EXPECT_EQ(pl.kind, GroupKind::InterNode);
  EXPECT_EQ(pl.n, 2);
  EXPECT_EQ(pl.nodes, 2);
  EXPECT_EQ(pl.concurrent, 8);
  EXPECT_DOUBLE_EQ(pl.size_scale, 1.875 / 8);  // busbw factor 2*15/16 at 16 ranks, 1 at 2 nodes
  const CommResults res = results_from_nccl_tests(runs, IntraLink::NVLink, "");
  ASSERT_EQ(res.groups.size(), 1u);
  EXPECT_EQ(res.groups[0].name, "inter_node_x2");
  EXPECT_EQ(res.groups[0].count, 8);
  EXPECT_EQ(res.points.back().size_bytes, 251658240u);  // 1 GiB * 1.875 / 8
  EXPECT_EQ(res.points.back().n, 2);
  ASSERT_EQ(res.fits.size(), 1u);
  EXPECT_EQ(res.fits[0].network, "inter_node");
  // Per NIC: the run's 45 GB/s busbw / 8 = 5.625 GB/s of bus bandwidth at n = 2 (the merge into
  // a system file multiplies inter_node by the 8 GPUs of a node again).
  EXPECT_NEAR(res.fits[0].fit.latency_s, 40e-6, 0.5e-6);
  EXPECT_NEAR(res.fits[0].fit.bus_bandwidth / 5.625e9, 1, 0.002);
  EXPECT_EQ(res.provenance.nodes, 2);
  EXPECT_EQ(res.provenance.ranks_per_node, 8);
  // All-to-all does not decompose per NIC: it stays a whole-world group (not merged).
  NcclTestsRun a2a = runs[0];
  a2a.op = Collective::AllToAll;
  EXPECT_EQ(classify_run(a2a).kind, GroupKind::World);
  a2a.op = Collective::AllReduce;
  a2a.hosts.back() = "node-b03";  // 8 + 7 + 1 ranks: uneven nodes
  EXPECT_EQ(classify_run(a2a).kind, GroupKind::World);
}

}  // namespace
}  // namespace comm_bench
