// The op and bandwidth classes of an estimate (ClassTable): op classes by their OpClass index in
// the system, bandwidth classes by name once, then by the name's address; unknown bandwidth
// classes stream through `default`; memory_time reads them.
#include <gtest/gtest.h>

#include "compute/cost.h"

namespace trainsim {
namespace {

SystemConfig classes_system() {
  SystemConfig sys;
  sys.ops["default"].efficient_factor = 0.5;
  sys.ops["matmul"].efficient_factor = 0.8;
  BandwidthConfig& def = sys.bandwidths["default"];
  def.bytes_per_s = 2e12;
  def.efficient_factor = 0.5;
  def.latency_s = 1e-6;
  sys.bandwidths["ce"].bytes_per_s = 1e12;
  return sys;
}

TEST(ClassTableTest, ClassesFoundByIndexOrByNameThenByAddress) {
  SystemConfig sys = classes_system();
  ClassTable classes(sys);
  EXPECT_EQ(classes.op(OpClass::Matmul), &sys.ops["matmul"]);
  EXPECT_EQ(classes.op(OpClass::Default), &sys.ops["default"]);
  EXPECT_EQ(classes.op(OpClass::Fp8Matmul), nullptr);
  // A class added later is found by its index too.
  sys.ops["fp8_matmul"].efficient_factor = 0.7;
  EXPECT_EQ(classes.op(OpClass::Fp8Matmul), &sys.ops["fp8_matmul"]);
  EXPECT_EQ(&classes.bandwidth("ce"), &sys.bandwidths["ce"]);
  EXPECT_EQ(&classes.bandwidth("permute_fwd"), &sys.bandwidths["default"]);
  EXPECT_EQ(&classes.bandwidth("ce"), &sys.bandwidths["ce"]);
}

TEST(ClassTableTest, MemoryTimeStreamsThroughTheNamedClass) {
  const SystemConfig sys = classes_system();
  ClassTable classes(sys);
  EXPECT_EQ(memory_time(classes, 0), 0);
  // 1e9 B at 2e12·0.5 B/s plus 1 µs.
  EXPECT_DOUBLE_EQ(memory_time(classes, 1e9), 1e-3 + 1e-6);
  // `ce`: 1e9 B at 1e12 B/s, efficiency 1, no latency.
  EXPECT_DOUBLE_EQ(memory_time(classes, 1e9, "ce"), 1e-3);
}

}  // namespace
}  // namespace trainsim
