// shapes.json: writer/reader round trip and strict reading.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "system/presets.h"
#include "calibration/shapes_file.h"
#include "core/error.h"

namespace trainsim {
namespace {

std::string load_error(const std::string& text) {
  try {
    (void)load_shapes(text, "s.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(KernelsShapesFileTest, RoundTripWithStructuredShape) {
  ShapesDoc doc;
  doc.system = "h100";
  doc.plans.push_back({"llama3-8b", "tp1"});
  ShapeEntry e;
  e.op = "matmul";
  e.key = "b=1, m=4096, k=4096, n=6144, layout=TN, accumulate=False, out_dtype=bf16";
  e.shape = parse_shape_key(e.op, e.key, "", "");
  e.flops = 206158430208.0;
  e.count = 32;
  e.in_system = false;
  e.plans = {0};
  doc.shapes.push_back(e);
  std::string text = shapes_to_json_text(doc);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["schema_version"], "1.0.0");
  EXPECT_EQ(j["shapes"][0]["shape"]["m"], 4096);
  EXPECT_EQ(j["shapes"][0]["shape"]["accumulate"], false);
  EXPECT_EQ(j["shapes"][0]["shape"]["layout"], "TN");
  EXPECT_EQ(j["summary"]["missing_in_system_by_op"]["matmul"], 1);

  ShapesDoc back = load_shapes(text, "s.json");
  ASSERT_EQ(back.shapes.size(), 1u);
  EXPECT_EQ(back.system, "h100");
  EXPECT_EQ(back.plans[0].strategy, "tp1");
  EXPECT_EQ(back.shapes[0].key, e.key);
  EXPECT_DOUBLE_EQ(back.shapes[0].flops, 206158430208.0);
  EXPECT_EQ(back.shapes[0].count, 32);
  EXPECT_EQ(back.shapes[0].in_system, std::optional<bool>(false));
}

TEST(KernelsShapesFileTest, HandWrittenFileGetsFlopsFromKeys) {
  ShapesDoc doc = load_shapes(read_file(std::string(TRAINSIM_TEST_DATA) + "/kernels/shapes_small.json"), "small");
  ASSERT_EQ(doc.shapes.size(), 10u);
  // 2*1*4096*6144*4096.
  EXPECT_DOUBLE_EQ(doc.shapes[0].flops, 206158430208.0);
  // sdp_bwd: 2.5 x 2*4096^2*32*256.
  EXPECT_DOUBLE_EQ(doc.shapes[8].flops, 687194767360.0);
}

TEST(KernelsShapesFileTest, ReportsEveryProblemWithItsPath) {
  EXPECT_EQ(load_error(R"({"schema_version": "2.0.0", "shapes": [
      {"op": "matmul", "key": "b=1, m=1, k=1, n=1, layout=TN, accumulate=False, out_dtype=bf16", "flop": 2},
      {"op": "matmul", "key": "b=1, m=1, k=1, n=1, layout=TN, accumulate=False, out_dtype=bf16"}]})"),
            "s.json: /schema_version: unsupported schema_version '2.0.0'; this build reads 1.x.y\n"
            "s.json: /shapes/0/flop: unknown key; did you mean 'flops'?\n"
            "s.json: /shapes/1: duplicate of /shapes/0 (same op and key)");
  EXPECT_EQ(load_error(R"({"schema_version": "1.0.0"})"), "s.json: /shapes: required array is missing");
  EXPECT_EQ(load_error(R"({"schema_version": 1, "shapes": []})"),
            "s.json: /schema_version: expected a string, got a number (1)");
}

// Before: 1e300 FLOP made `kernels_bench --dry-run` print "-9223372036854775808s".
TEST(KernelsShapesFileTest, AbsurdFlopsAreRejected) {
  EXPECT_EQ(load_error(R"({"schema_version": "1.0.0", "shapes": [
      {"op": "matmul", "key": "b=1, m=1, k=1, n=1, layout=TN, accumulate=False, out_dtype=bf16", "flops": 1e300}]})"),
            "s.json: /shapes/0/flops: must be ≤ 1e24");
}

}  // namespace
}  // namespace trainsim
