// The size-dependent collective model on synthetic curves with known answers: NCCL-like protocol
// lines recovered with their switch points, measured sizes answered exactly, an α–β curve
// interpolated and extrapolated exactly, group sizes at equal bus bytes, leave-one-out, bad
// points; the system file round trip, the merge from comm.json and the mode gate in
// collective_time.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "calibration/comm_merge.h"
#include "comm/collective.h"
#include "comm/collective_model.h"
#include "core/error.h"
#include "system/system_config.h"

namespace trainsim {
namespace {

// Three protocol lines of an 8-GPU all-reduce (bus factor 2·7/8 = 1.75): LL 5 µs at 50 GB/s,
// LL128 10 µs at 200 GB/s, Simple 30 µs at 400 GB/s (bus bandwidths), NCCL running the fastest.
// Crossings in bus bytes: LL/LL128 at 5e-6 / (1/50e9 − 1/200e9) = 333,333.3 B; LL128/Simple at
// 20e-6 / (1/200e9 − 1/400e9) = 8e6 B, i.e. messages of 190,476.2 B and 4,571,428.6 B.
double three_protocols(double bytes) {
  const double x = bytes * 1.75;
  return std::min({5e-6 + x / 50e9, 10e-6 + x / 200e9, 30e-6 + x / 400e9});
}

std::vector<CollectivePoint> sweep(int64_t n, double (*t)(double), double from = 256, double to = 1 << 30) {
  std::vector<CollectivePoint> p;
  for (double b = from; b <= to; b *= 2) p.push_back({n, b, t(b)});
  return p;
}

TEST(CollectiveModelTest, RecoversTheProtocolLinesAndTheirSwitchPoints) {
  const CollectiveModel m(2, -1, sweep(8, three_protocols));
  ASSERT_EQ(m.curves().size(), 1u);
  const auto& g = m.curves()[0].regimes();
  ASSERT_EQ(g.size(), 3u);
  const double alpha[] = {5e-6, 10e-6, 30e-6}, bw[] = {50e9, 200e9, 400e9};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(g[i].alpha_s, alpha[i], 1e-12) << i;
    EXPECT_NEAR(1 / g[i].beta_s_per_byte, bw[i], 1e-3 * bw[i]) << i;
  }
  EXPECT_NEAR(g[0].upto_bytes, 190476.19, 0.1);
  EXPECT_NEAR(g[1].upto_bytes, 4571428.57, 0.1);
  EXPECT_TRUE(std::isinf(g[2].upto_bytes));
  // The chain is the curve itself, between the measured sizes too.
  for (double b : {300.0, 150e3, 250e3, 3e6, 6e6, 3e9}) EXPECT_NEAR(m.curves()[0].chain(b), three_protocols(b), 1e-15) << b;
}

// Timing glitches (a size measured 3× slower than the curve, slower than larger sizes, as the
// H100 all-to-all table's 2 KiB at 8 ranks) do not bend the fit: the model works on the monotone
// envelope, so a glitched size answers the next size's time, and the protocol lines above the
// glitches come back exactly.
TEST(CollectiveModelTest, GlitchesAboveLargerSizesAreClippedToTheEnvelope) {
  auto pts = sweep(8, three_protocols);
  for (auto& p : pts)
    if (p.bytes == 1024 || p.bytes == 16384) p.time_s *= 3;
  const CollectiveModel m(2, -1, pts);
  const CollectiveCurve& c = m.curves()[0];
  // Written back as measured; answered from the envelope: the next size's time.
  EXPECT_DOUBLE_EQ(c.times()[2], 3 * three_protocols(1024));
  EXPECT_DOUBLE_EQ(c.envelope()[2], three_protocols(2048));
  EXPECT_DOUBLE_EQ(m.predict(1024, 8).time_s, three_protocols(2048));
  EXPECT_DOUBLE_EQ(m.predict(16384, 8).time_s, three_protocols(32768));
  EXPECT_DOUBLE_EQ(m.predict(4096, 8).time_s, three_protocols(4096));
  // The regimes are those of the envelope given as measured (the glitched sizes at the next
  // size's time): LL128 and Simple exactly the true lines, the switch between them too.
  auto env = sweep(8, three_protocols);
  for (auto& p : env)
    if (p.bytes == 1024 || p.bytes == 16384) p.time_s = three_protocols(2 * p.bytes);
  const auto& g = c.regimes();
  const CollectiveModel clean(2, -1, env);
  const auto& ge = clean.curves()[0].regimes();
  ASSERT_EQ(g.size(), 3u);
  ASSERT_EQ(ge.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(g[i].alpha_s, ge[i].alpha_s) << i;
    EXPECT_DOUBLE_EQ(g[i].beta_s_per_byte, ge[i].beta_s_per_byte) << i;
  }
  EXPECT_NEAR(g[1].alpha_s, 10e-6, 1e-12);
  EXPECT_NEAR(g[2].alpha_s, 30e-6, 1e-12);
  EXPECT_NEAR(1 / g[2].beta_s_per_byte, 400e9, 0.4e9);
  EXPECT_NEAR(g[1].upto_bytes, 4571428.57, 0.1);
}

TEST(CollectiveModelTest, AnswersMeasuredSizesExactly) {
  const CollectiveModel m(2, -1, sweep(8, three_protocols));
  for (double b : {256.0, 65536.0, 4194304.0, 1073741824.0}) {
    const CollectiveAnswer a = m.predict(b, 8);
    EXPECT_EQ(a.source, EfficiencySource::Measured) << b;
    EXPECT_DOUBLE_EQ(a.time_s, three_protocols(b)) << b;
  }
}

// t = 20 µs + x / 300 GB/s: the α–β line fits it exactly, so every size is the formula.
double alpha_beta(double bytes) { return 20e-6 + bytes * 1.75 / 300e9; }

TEST(CollectiveModelTest, InterpolatesAndExtrapolatesAnAlphaBetaCurveExactly) {
  const CollectiveModel m(2, -1, sweep(8, alpha_beta, 1024, 1 << 28));
  const CollectiveCurve& c = m.curves()[0];
  EXPECT_NEAR(c.base().alpha_s, 20e-6, 1e-15);
  EXPECT_NEAR(1 / c.base().beta_s_per_byte, 300e9, 1.0);
  const CollectiveAnswer in = m.predict(3e6, 8), below = m.predict(100, 8), above = m.predict(4e9, 8);
  EXPECT_EQ(in.source, EfficiencySource::Interpolated);
  EXPECT_EQ(below.source, EfficiencySource::Extrapolated);
  EXPECT_EQ(above.source, EfficiencySource::Extrapolated);
  EXPECT_NEAR(in.time_s, alpha_beta(3e6), 1e-12);
  EXPECT_NEAR(below.time_s, alpha_beta(100), 1e-12);
  EXPECT_NEAR(above.time_s, alpha_beta(4e9), 1e-9);
  for (const auto& h : m.leave_one_out()) EXPECT_NEAR(h.predicted_s / h.measured_s, 1, 1e-9) << h.bytes;
}

// A measured residual is carried to its neighbours: +10 % at 1 MiB on an α–β curve, nothing at
// 512 KiB and 2 MiB, so 724,077 B (the geometric mean of 512 KiB and 1 MiB) gets +4.88 %
// (exp(ln 1.1 / 2)), less the share of the bump the line fit absorbed (read off the fit).
TEST(CollectiveModelTest, InterpolatesTheResidualInLogSize) {
  auto pts = sweep(8, alpha_beta, 1024, 1 << 28);
  for (auto& p : pts)
    if (p.bytes == 1 << 20) p.time_s *= 1.1;
  const CollectiveModel m(2, -1, pts);
  const CollectiveCurve& c = m.curves()[0];
  auto r = [&](double b) { return std::log(alpha_beta(b) * (b == 1 << 20 ? 1.1 : 1.0) / c.line(b)); };
  const double b = std::sqrt(524288.0 * 1048576.0);
  EXPECT_NEAR(m.predict(b, 8).time_s, c.line(b) * std::exp((r(524288) + r(1048576)) / 2), 1e-15);
  EXPECT_NEAR(m.predict(1 << 20, 8).time_s, alpha_beta(1 << 20) * 1.1, 1e-18);
}

// Bus bandwidth 300 GB/s and 20 µs at every group size: the time at n is 20 µs + size·2(n−1)/n /
// 300 GB/s whichever curves answer it.
double ab2(double b) { return 20e-6 + b * 1.0 / 300e9; }
double ab8(double b) { return 20e-6 + b * 1.75 / 300e9; }

TEST(CollectiveModelTest, OtherGroupSizesAtEqualBusBytes) {
  auto pts = sweep(2, ab2, 1024, 1 << 28);
  for (const auto& p : sweep(8, ab8, 1024, 1 << 28)) pts.push_back(p);
  const CollectiveModel m(2, -1, pts);
  const CollectiveAnswer four = m.predict(3e6, 4), sixteen = m.predict(3e6, 16);
  EXPECT_EQ(four.source, EfficiencySource::Interpolated);
  EXPECT_NEAR(four.time_s, 20e-6 + 3e6 * 1.5 / 300e9, 1e-12);
  EXPECT_EQ(sixteen.source, EfficiencySource::Extrapolated);
  EXPECT_NEAR(sixteen.time_s, 20e-6 + 3e6 * 1.875 / 300e9, 1e-12);
  EXPECT_EQ(m.predict(1 << 20, 2).source, EfficiencySource::Measured);
  EXPECT_EQ(m.predict(1 << 20, 4).source, EfficiencySource::Interpolated);
}

TEST(CollectiveModelTest, EmptyModelAndBadPoints) {
  const CollectiveModel empty;
  EXPECT_EQ(empty.predict(1e6, 8).source, EfficiencySource::Default);
  EXPECT_EQ(empty.predict(1e6, 8).time_s, 0);
  try {
    (void)CollectiveModel(2, -1, {{8, 1024, 1e-5}, {8, 1024, 2e-5}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "collective point 1 (n 8, 1024 bytes, 2e-05 s): a second time for the same size and group size");
  }
  EXPECT_THROW((void)CollectiveModel(2, -1, {{1, 1024, 1e-5}}), std::invalid_argument);
  EXPECT_THROW((void)CollectiveModel(2, -1, {{8, 0, 1e-5}}), std::invalid_argument);
  EXPECT_THROW((void)CollectiveModel(2, -1, {{8, 1024, -1}}), std::invalid_argument);
}

// Beyond the plausible sizes and times (gemm_model.h) the fitted lines overflowed (held-out errors
// of 1e300 %, a model answering nothing and the formula used without a word).
TEST(CollectiveModelTest, ImplausiblePointsThrow) {
  const auto message = [](std::vector<CollectivePoint> points) {
    try {
      (void)CollectiveModel(2, -1, std::move(points));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(message({{8, 1024, 1e-5}, {8, 1e300, 1e-5}}),
            "collective point 1 (n 8, 1e+300 bytes, 1e-05 s): the size must be at most 2^50 bytes (1 PiB)");
  EXPECT_EQ(message({{8, 1024, 1e-300}}), "collective point 0 (n 8, 1024 bytes, 1e-300 s): the time must be from 1 ns "
                                          "to 1000 s");
  EXPECT_EQ(message({{8, 1024, 1e300}}), "collective point 0 (n 8, 1024 bytes, 1e+300 s): the time must be from 1 ns "
                                         "to 1000 s");
}

// A system with one NVLink all-reduce: α–β entries (1 µs flat, 100 GB/s) and a model of
// three_protocols; the default mode takes the model, compat mode the formula.
constexpr const char* kSystem = R"({"sys_name": "t", "num_per_node": 4,
  "accelerator": {"mem_gbs": 80, "op": {"default": {"tflops": 100, "efficient_factor": 1}},
                  "bandwidth": {"default": {"gbps": 1000, "efficient_factor": 1, "latency_us": 0}}},
  "networks": {"intra_with_pcie": false, "high_intra_node": {"bandwidth": {"gbps": 100, "efficient_factor": 1,
    "latency_us": 1}, "op": {"all_reduce": {"scale": 2, "offset": -1, "model": {"kind": "collective_curve",
    "provenance": {"file": "synthetic"}, "series": [{"n": 8, "size_bytes": [256, 512, 1024, 2048, 4096, 8192, 16384],
    "time_us": [5.00896, 5.01792, 5.03584, 5.07168, 5.14336, 5.28672, 5.57344]}]}}}}}})";

TEST(CollectiveModelTest, SystemFileRoundTripAndTheModeGate) {
  const SystemConfig sys = load_system(kSystem, "t.json");
  const NetOpConfig& op = sys.networks.at("high_intra_node").ops.at("all_reduce");
  ASSERT_TRUE(op.model);
  EXPECT_EQ(op.model->points(), 7u);
  const Settings s;
  const NetworkRef def = resolve_network(sys, "high_intra_node", Mode::Default);
  const NetworkRef compat = resolve_network(sys, "high_intra_node", Mode::SimuMax12);
  // Measured: 2048 B in 5.07168 µs. The formula: 2048·1.75 B / (100 GiB/s) + 1 µs (not 8 per node).
  EXPECT_NEAR(collective_time(sys, s, def, Collective::AllReduce, 2048, 8, "tp"), 5.07168e-6, 1e-17);
  EXPECT_NEAR(collective_time(sys, s, compat, Collective::AllReduce, 2048, 8, "tp"),
              2048 * 1.75 / (100 * 1073741824.0) + 1e-6, 1e-17);
  // Written and read back: the same points, the same answers.
  const SystemConfig again = load_system(system_to_json_text(sys), "again.json");
  const auto& m2 = *again.networks.at("high_intra_node").ops.at("all_reduce").model;
  EXPECT_EQ(m2.points(), 7u);
  EXPECT_EQ(m2.provenance_json, op.model->provenance_json);
  EXPECT_DOUBLE_EQ(m2.predict(3000, 8).time_s, op.model->predict(3000, 8).time_s);
  EXPECT_EQ(again.fingerprint, sys.fingerprint);
}

TEST(CollectiveModelTest, BadModelIsAnInputErrorNamingThePath) {
  std::string bad = kSystem;
  bad.replace(bad.find("\"n\": 8"), 6, "\"n\": 1");
  try {
    (void)load_system(bad, "t.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/networks/high_intra_node/op/all_reduce/model/series/0/n: must be ≥ 2"),
              std::string::npos)
        << e.what();
  }
}

// A series of no sizes: the file is rejected at the series (it was read as a model of no points,
// which crashed `system evaluate`, and answered nothing).
TEST(CollectiveModelTest, AModelOfNoPointsIsAnInputError) {
  try {
    (void)CollectiveModel(2, -1, {});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "no measured points (a size and a time per group size)");
  }
  std::string empty = kSystem;
  const size_t from = empty.find("\"size_bytes\": ["), to = empty.find("]}]}");
  empty.replace(from, to - from, "\"size_bytes\": [], \"time_us\": [");
  try {
    (void)load_system(empty, "t.json");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "t.json: /networks/high_intra_node/op/all_reduce/model/series: no measured points "
                                     "(a size and a time per group size)");
  }
}

// comm.json points become the model of their network and op (whole-world groups left out).
TEST(CollectiveModelTest, MergeFitsTheModelFromCommPoints) {
  SystemConfig sys = load_system(kSystem, "t.json");
  std::string points;
  for (double b = 1024; b <= 1 << 20; b *= 4)
    for (const char* kind : {"intra_node", "world"})
      points += std::string(points.empty() ? "" : ",") + R"({"op": "all_gather", "kind": ")" + kind +
                R"(", "network": "high_intra_node", "n": 4, "size_bytes": )" + std::to_string(b) +
                R"(, "time_us": )" + std::to_string(10 + b * 0.75 / 200e3) + "}";
  const std::string comm = R"({"schema_version": "1.0.0", "provenance": {"gpu": "synthetic"}, "fits": [
    {"op": "all_gather", "network": "high_intra_node", "n": 4, "latency_us": 10, "bus_bandwidth_gbs": 200}],
    "points": [)" + points + "]}";
  merge_comm(sys, comm, "comm.json");
  const auto& model = sys.networks.at("high_intra_node").ops.at("all_gather").model;
  ASSERT_TRUE(model);
  EXPECT_EQ(model->points(), 6u);
  EXPECT_EQ(model->curves()[0].n(), 4);
  EXPECT_NEAR(model->predict(3e5, 4).time_s, 10e-6 + 3e5 * 0.75 / 200e9, 1e-12);
  EXPECT_NE(model->provenance_json.find("\"gpu\":\"synthetic\""), std::string::npos) << model->provenance_json;
}

}  // namespace
}  // namespace trainsim
