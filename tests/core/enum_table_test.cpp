// EnumTable: names, lookups and the one message for an unknown name.
#include "core/enum_table.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace trainsim {
namespace {

enum class Colour { Red, Green, Blue };
constexpr EnumTable<Colour, 3> kColours("colour",
                                        {{{Colour::Red, "red"}, {Colour::Green, "green"}, {Colour::Blue, "blue"}}});

TEST(EnumTableTest, NamesAndLookupsRoundTrip) {
  static_assert(kColours.name(Colour::Green) == "green");
  static_assert(kColours.find("blue") == Colour::Blue);
  static_assert(!kColours.find("Blue").has_value());  // names match exactly
  EXPECT_STREQ(kColours.c_str(Colour::Red), "red");
  EXPECT_EQ(kColours.names(), (std::vector<std::string>{"red", "green", "blue"}));
  EXPECT_EQ(kColours.name(static_cast<Colour>(7)), "?");
}

TEST(EnumTableTest, UnknownNameIsOneMessageWithASuggestion) {
  EXPECT_EQ(kColours.unknown("gren"), "unknown colour 'gren'; valid values: red, green, blue; did you mean 'green'?");
  EXPECT_EQ(kColours.unknown("purple"), "unknown colour 'purple'; valid values: red, green, blue");
  EXPECT_EQ(kColours.parse<UsageError>("blue"), Colour::Blue);
  try {
    (void)kColours.parse<UsageError>("bleu", "--colour: ");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--colour: unknown colour 'bleu'; valid values: red, green, blue; did you mean 'blue'?");
  }
}

}  // namespace
}  // namespace trainsim
