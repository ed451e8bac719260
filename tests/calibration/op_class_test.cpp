// The op-class table (calibration/op_class.h): names round-trip, families and key kinds agree,
// when a plan needs each class, and the one message for an unknown name (system files, shapes).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "calibration/op_class.h"
#include "calibration/shape_key.h"
#include "core/error.h"
#include "system/system_config.h"

namespace trainsim {
namespace {

TEST(OpClassTest, EveryRowRoundTripsNameAndClass) {
  ASSERT_EQ(kOpClassCount, 7u);
  for (const OpClassRow& row : kOpClassRows) {
    EXPECT_EQ(find_op_class(row.name), row.cls) << row.name;
    EXPECT_EQ(op_name(row.cls), row.name);
    EXPECT_EQ(std::string(op_c_str(row.cls)), std::string(row.name));
    EXPECT_EQ(kOpClasses.name(row.cls), row.name);
    EXPECT_EQ(&op_row(row.cls), &row);
    // The system's index of the class is its row.
    EXPECT_EQ(ComputeOps::index_of(row.name), static_cast<int>(op_index(row.cls)));
  }
  EXPECT_EQ(kOpClasses.names(), (std::vector<std::string>{"default", "matmul", "fp8_matmul", "group_matmul",
                                                          "fp8_group_matmul", "sdp_fwd", "sdp_bwd"}));
  EXPECT_FALSE(find_op_class("Matmul"));
  EXPECT_FALSE(find_op_class(""));
}

TEST(OpClassTest, FamiliesKeyKindsAndFp8) {
  EXPECT_EQ(op_row(OpClass::Default).family, OpFamily::Fallback);
  EXPECT_EQ(op_row(OpClass::Matmul).family, OpFamily::Gemm);
  EXPECT_EQ(op_row(OpClass::Fp8Matmul).family, OpFamily::Gemm);
  EXPECT_EQ(op_row(OpClass::GroupMatmul).family, OpFamily::GroupedGemm);
  EXPECT_EQ(op_row(OpClass::Fp8GroupMatmul).family, OpFamily::GroupedGemm);
  EXPECT_EQ(op_row(OpClass::SdpFwd).family, OpFamily::Attention);
  EXPECT_EQ(op_row(OpClass::SdpBwd).family, OpFamily::Attention);
  // Each family has one key kind.
  for (const OpClassRow& row : kOpClassRows) {
    const KeyKind want = row.family == OpFamily::Gemm          ? KeyKind::Matmul
                         : row.family == OpFamily::GroupedGemm ? KeyKind::Grouped
                         : row.family == OpFamily::Attention   ? KeyKind::Sdpa
                                                               : KeyKind::None;
    EXPECT_EQ(row.key, want) << row.name;
    EXPECT_EQ(is_fp8_op(row.name), row.name.substr(0, 4) == "fp8_") << row.name;
    EXPECT_EQ(row.backward, row.name == "sdp_bwd") << row.name;
  }
  EXPECT_EQ(keyed_ops(), (std::vector<std::string>{"matmul", "fp8_matmul", "group_matmul", "fp8_group_matmul",
                                                   "sdp_fwd", "sdp_bwd"}));
  EXPECT_FALSE(is_fp8_op("fp8_unknown"));
  EXPECT_EQ(kOpFamilies.name(OpFamily::GroupedGemm), "grouped_gemm");
  EXPECT_EQ(kOpNeeds.name(OpNeed::MoeFp8), "moe_fp8");
}

TEST(OpClassTest, WhenAPlanNeedsEachClass) {
  struct Case {
    OpClass c;
    bool bf16_dense, fp8_dense, bf16_moe, fp8_moe;
  };
  // matmul under fp8 too: the output layer's GEMM stays in bf16.
  const Case cases[] = {{OpClass::Default, true, true, true, true},      {OpClass::Matmul, true, true, true, true},
                        {OpClass::Fp8Matmul, false, true, false, true},  {OpClass::GroupMatmul, false, false, true, false},
                        {OpClass::Fp8GroupMatmul, false, false, false, true}, {OpClass::SdpFwd, true, true, true, true},
                        {OpClass::SdpBwd, true, true, true, true}};
  for (const Case& c : cases) {
    EXPECT_EQ(op_needed(c.c, false, false), c.bf16_dense) << op_name(c.c);
    EXPECT_EQ(op_needed(c.c, true, false), c.fp8_dense) << op_name(c.c);
    EXPECT_EQ(op_needed(c.c, false, true), c.bf16_moe) << op_name(c.c);
    EXPECT_EQ(op_needed(c.c, true, true), c.fp8_moe) << op_name(c.c);
  }
}

TEST(OpClassTest, UnknownNamesGetOneMessageWithTheClosestName) {
  EXPECT_EQ(kOpClasses.unknown("fp8_matmull"),
            "unknown op class 'fp8_matmull'; valid values: default, matmul, fp8_matmul, group_matmul, "
            "fp8_group_matmul, sdp_fwd, sdp_bwd; did you mean 'fp8_matmul'?");
  // A system file naming an unknown class is rejected where its classes are read.
  const std::string text = R"({"sys_name": "x", "accelerator": {"mem_gbs": 80,
      "op": {"default": {"tflops": 100, "efficient_factor": 0.5}, "sdp_fw": {"tflops": 100, "efficient_factor": 0.5}},
      "bandwidth": {"default": {"gbps": 1000}}}, "networks": {}})";
  try {
    (void)load_system(text, "x.json");
    ADD_FAILURE() << "an unknown op class was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("x.json: /accelerator/op/sdp_fw: unknown op class 'sdp_fw'; valid values: "
                                         "default, matmul, fp8_matmul, group_matmul, fp8_group_matmul, sdp_fwd, "
                                         "sdp_bwd; did you mean 'sdp_fwd'?"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trainsim
