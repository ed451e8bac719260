// JSON reading limits: nesting depth, repeated keys, integers beyond int64, versions.
#include <gtest/gtest.h>

#include "inputs/json_reader.h"
#include "inputs/model_config.h"
#include "inputs/strategy_config.h"
#include "plan/settings.h"
#include "core/error.h"
#include "test_errors.h"

namespace trainsim {
namespace {

using test::error_of;

// Before: ~100,000 nested arrays segfaulted (recursion when the document was copied or dumped).
TEST(JsonLimitsTest, DeepNestingIsRejectedBeforeParsing) {
  // The crash needed the deep value inside a field (its type error message dumped it).
  const std::string deep = "{\"seq_len\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(error_of([&] { (void)load_strategy(deep, "s.json"); }),
            "s.json: nesting deeper than 64 levels at line 1, column 76");
  // 64 levels are fine as far as the JSON goes.
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_NO_THROW((void)parse_json(ok, "ok.json"));
}

// Before: the last value silently won.
TEST(JsonLimitsTest, DuplicateKeysNameBothPositions) {
  EXPECT_EQ(error_of([] {
              (void)load_strategy("{\"seq_len\": 4096,\n \"tp_size\": 2,\n \"tp_size\": 4}", "s.json");
            }),
            "s.json: /tp_size: duplicate key at line 3, column 2; first at line 2, column 2");
  // Escapes are resolved before comparing, and nested objects have their own key sets.
  EXPECT_EQ(error_of([] { (void)parse_json(R"({"a": {"x": 1, "y": {"x": 2}}, "b": [{"\u0061": 1, "a": 2}]})", "d.json"); }),
            "d.json: /b/0/a: duplicate key at line 1, column 52; first at line 1, column 39");
  EXPECT_NO_THROW((void)parse_json(R"({"a": {"x": 1}, "b": {"x": 1}, "s": "a\"b"})", "ok.json"));
}

TEST(JsonLimitsTest, InvalidUtf8IsAConfigError) {
  EXPECT_EQ(error_of([] { (void)load_model("{\"model_name\": \"\xc3\x28\"}", "m.json"); }),
            "m.json: invalid UTF-8 at byte 16 (line 1, column 17): byte 0xC3");
}

// Before: 18446744073709551615 was read as -1 (unsigned JSON literal wrapped into int64).
TEST(JsonLimitsTest, IntegersAboveInt64AreRejected) {
  EXPECT_EQ(error_of([] {
              (void)load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1,
                                      "recompute_layer_num": 18446744073709551615})", "s.json");
            }),
            "s.json: /recompute_layer_num: expected an integer below 2^63, got a number (18446744073709551615)");
}

// Before: a 30-digit te_version overflowed int64 where versions were compared (undefined behaviour).
TEST(JsonLimitsTest, TeVersionMustBeAVersion) {
  EXPECT_EQ(error_of([] {
              (void)load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1,
                                      "te_version": "2.999999999999999999999999999999"})", "s.json");
            }),
            "s.json: /te_version: expected a version like \"2.11.0\" (1 to 4 numbers of at most 9 digits), "
            "got \"2.999999999999999999999999999999\"");
  for (const char* ok : {"2.11.0", "2.8", "2", "2.11.0rc1", "2.11.0+abc"})
    EXPECT_NO_THROW((void)load_strategy(std::string(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1, "te_version": ")") + ok + "\"}", "s.json")) << ok;
  for (const char* bad : {"", "x", "2.", ".2", "1.2.3.4.5", "2..1"})
    EXPECT_NE(error_of([&] { (void)load_strategy(std::string(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 1, "te_version": ")") + bad + "\"}", "s.json"); }), test::kNoError) << bad;
  auto te = [](const char* v) {
    StrategyConfig s;
    s.te_version = v;
    return settings_of(s).fuse.te;
  };
  EXPECT_TRUE(te("2.999999999999999999999").at_least(2, 11));
  EXPECT_FALSE(te("2.8.0").at_least(2, 11));
  EXPECT_TRUE(te("2.11").at_least(2, 11));         // a missing part is 0
  EXPECT_TRUE(te("2.11.0rc1").at_least(2, 11, 0));  // a part's leading digits
  EXPECT_FALSE(TeVersion{}.at_least(0, 0));         // unknown: older than every version
}

}  // namespace
}  // namespace trainsim
