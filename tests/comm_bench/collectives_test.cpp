// Size sweeps, busbw factors, call shapes and the command line of comm_bench.
#include <gtest/gtest.h>

#include <functional>

#include "collectives.h"
#include "core/error.h"
#include "options.h"

namespace comm_bench {
namespace {

std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const trainsim::UsageError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(CommSweepTest, DefaultSweepIs8BytesTo8GiBTimes2) {
  const auto s = size_sweep(8, uint64_t{8} << 30, 2);
  ASSERT_EQ(s.size(), 31u);  // 2^3 … 2^33
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s[1], 16u);
  EXPECT_EQ(s.back(), uint64_t{8} << 30);
}

TEST(CommSweepTest, StopsBeforePassingMax) {
  EXPECT_EQ(size_sweep(1000, 5000, 2), (std::vector<uint64_t>{1000, 2000, 4000}));
  EXPECT_EQ(size_sweep(1, 100, 10), (std::vector<uint64_t>{1, 10, 100}));
  EXPECT_EQ(size_sweep(64, 64, 2), (std::vector<uint64_t>{64}));
}

TEST(CommSweepTest, RejectsBadFlags) {
  EXPECT_EQ(usage_error([] { (void)size_sweep(8, 1024, 1); }), "--factor must be ≥ 2, got 1");
  EXPECT_EQ(usage_error([] { (void)size_sweep(64, 8, 2); }), "--max-bytes (8) must be ≥ --min-bytes (64)");
  EXPECT_EQ(usage_error([] { (void)size_sweep(0, 8, 2); }), "--min-bytes must be ≥ 1");
}

TEST(CommBusbwTest, FactorsMatchNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::AllReduce, 8), 1.75);  // 2·7/8
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::AllGather, 8), 0.875);  // 7/8
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::ReduceScatter, 2), 0.5);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::AllToAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::P2P, 2), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::AllReduce, 1), 0.0);  // one rank moves nothing
  // 1 MiB all_reduce on 8 ranks in 100 µs: algbw 10.48576 GB/s, busbw 18.35008 GB/s.
  EXPECT_DOUBLE_EQ(algbw(1048576, 100e-6), 10.48576e9);
  EXPECT_DOUBLE_EQ(model_bytes(Collective::AllReduce, 1048576, 8), 1835008);
  EXPECT_DOUBLE_EQ(algbw(1, 0), 0);
}

TEST(CommBusbwTest, CallShapesFollowNcclTests) {
  // all_gather of 1000 B on 8 ranks, bf16: per-rank (1000/2/8 = 62) & ~7 = 56 elements.
  CallShape ag = call_shape(Collective::AllGather, 1000, 8, 2);
  EXPECT_EQ(ag.count, 56u);
  EXPECT_EQ(ag.size_bytes, 896u);
  EXPECT_EQ(ag.send_bytes, 112u);
  EXPECT_EQ(ag.recv_bytes, 896u);
  CallShape rs = call_shape(Collective::ReduceScatter, 1000, 8, 2);
  EXPECT_EQ(rs.send_bytes, 896u);
  EXPECT_EQ(rs.recv_bytes, 112u);
  CallShape a2a = call_shape(Collective::AllToAll, 1 << 20, 8, 2);
  EXPECT_EQ(a2a.count, 65536u);  // per peer
  EXPECT_EQ(a2a.send_bytes, 1u << 20);
  CallShape ar = call_shape(Collective::AllReduce, 1001, 8, 2);
  EXPECT_EQ(ar.count, 500u);
  EXPECT_EQ(ar.size_bytes, 1000u);
  EXPECT_EQ(call_shape(Collective::AllGather, 8, 8, 2).count, 0u);  // too small for 8 ranks
}

TEST(CommBusbwTest, CollectiveNames) {
  EXPECT_EQ(parse_collective("alltoall"), Collective::AllToAll);
  EXPECT_EQ(parse_collective("all2all"), Collective::AllToAll);
  EXPECT_EQ(parse_collective("sendrecv"), Collective::P2P);
  EXPECT_EQ(usage_error([] { (void)parse_collective("all_reduse"); }),
            "unknown collective 'all_reduse'; valid values: all_reduce, all_gather, reduce_scatter, all2all, p2p; "
            "did you mean 'all_reduce'?");
}

TEST(CommSweepTest, MedianAndBytes) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(format_bytes(uint64_t{8} << 30), "8 GiB");
  EXPECT_EQ(format_bytes(65536), "64 KiB");
  EXPECT_EQ(format_bytes(1000), "1000 B");
}

TEST(CommOptionsTest, ParsesFlags) {
  Options o = parse_options({"--min-bytes", "1K", "--max-bytes", "8G", "--ops", "all_reduce,sendrecv", "--iters",
                             "7", "--groups", "intra_node", "--intra-link", "pcie"});
  EXPECT_EQ(o.min_bytes, 1024u);
  EXPECT_EQ(o.max_bytes, uint64_t{8} << 30);
  EXPECT_EQ(o.ops, (std::vector<Collective>{Collective::AllReduce, Collective::P2P}));
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.kinds, (std::vector<GroupKind>{GroupKind::IntraNode}));
  EXPECT_EQ(o.intra_link, IntraLink::PCIe);
  Options d = parse_options({"--from-nccl-tests", "a.log", "b.json", "--out", "c.json"});
  EXPECT_EQ(d.import_files, (std::vector<std::string>{"a.log", "b.json"}));
  EXPECT_EQ(d.ops.size(), 5u);
}

TEST(CommOptionsTest, RejectsBadFlags) {
  EXPECT_EQ(usage_error([] { (void)parse_options({"--max-byte", "8G"}); }),
            "unknown option '--max-byte'; did you mean '--max-bytes'? (see --help)");
  EXPECT_EQ(usage_error([] { (void)parse_options({"--max-bytes", "8X"}); }),
            "--max-bytes: expected a byte count up to 1024G like 8, 64K, 1M or 8G, got '8X'");
  EXPECT_EQ(usage_error([] { (void)parse_options({"--iters"}); }), "--iters needs a value");
  // Strict numbers: no blanks, no '+', no wrap-around (strtol/strtoull took all three).
  EXPECT_EQ(usage_error([] { (void)parse_options({"--iters", " 5"}); }), "--iters: expected an integer ≥ 1, got ' 5'");
  EXPECT_EQ(usage_error([] { (void)parse_options({"--iters", "+5"}); }), "--iters: expected an integer ≥ 1, got '+5'");
  EXPECT_EQ(usage_error([] { (void)parse_options({"--max-bytes", "-8"}); }),
            "--max-bytes: expected a byte count up to 1024G like 8, 64K, 1M or 8G, got '-8'");
  EXPECT_EQ(usage_error([] { (void)parse_options({"--max-bytes", "18446744073709551615G"}); }),
            "--max-bytes: expected a byte count up to 1024G like 8, 64K, 1M or 8G, got '18446744073709551615G'");
  EXPECT_EQ(parse_bytes("--max-bytes", "1024G"), uint64_t{1} << 40);
  EXPECT_EQ(usage_error([] { (void)parse_options({"--intra-link", "nvl"}); }),
            "--intra-link: expected auto, nvlink or pcie, got 'nvl'");
}

}  // namespace
}  // namespace comm_bench
