// JSON excerpts for error messages (short and safe whatever the value holds) and
// whole-number reads (nothing outside int64 or below a float's integer precision).
#include "core/json_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace tierscope {
namespace {

using nlohmann::json;

TEST(JsonExcerpt, SmallValuesReadAsTheirJson) {
  EXPECT_EQ(JsonExcerpt(json(5)), "5");
  EXPECT_EQ(JsonExcerpt(json(1e300)), "1e+300");
  EXPECT_EQ(JsonExcerpt(json("gelu")), "\"gelu\"");
  EXPECT_EQ(JsonExcerpt(json::parse(R"([1,[2,3],{"a":null}])")), R"([1,[2,3],{"a":null}])");
  EXPECT_EQ(JsonExcerpt(json::array()), "[]");
}

TEST(JsonExcerpt, DeepLongAndHugeValuesAreCutNeverRecursedThrough) {
  // 200,000 levels: dump() would recurse once a level and overflow the stack.
  const std::string deep = std::string(200000, '[') + "1" + std::string(200000, ']');
  EXPECT_EQ(JsonExcerpt(json::parse(deep)), "[[[[...]]]]");
  json big = json::array();
  for (int i = 0; i < 2000000; ++i) big.push_back(i);
  const std::string cut = JsonExcerpt(big);
  EXPECT_LT(cut.size(), 100u);
  EXPECT_EQ(cut.substr(cut.size() - 5), ",...]");
  const std::string s = JsonExcerpt(json(std::string(5 << 20, 'x')));
  EXPECT_EQ(s.size(), 40u);
  EXPECT_EQ(s.substr(s.size() - 4), "...\"");
  // Cut between characters, never inside one; invalid UTF-8 replaced, never thrown.
  const std::string cut_utf8 = JsonExcerpt(json(std::string(60, 'a').replace(35, 2, "\xc3\xa9")));
  EXPECT_EQ(cut_utf8.find('\xc3'), std::string::npos);
  EXPECT_NO_THROW(JsonExcerpt(json(std::string("\xff\xfe"))));
}

TEST(JsonWholeNumber, IntegersWithinInt64AndFloatsWithoutAFractionBelow2To53) {
  int64_t v = 0;
  EXPECT_TRUE(JsonWholeNumber(json(-7), &v));
  EXPECT_EQ(v, -7);
  EXPECT_TRUE(JsonWholeNumber(json(384.0), &v));
  EXPECT_EQ(v, 384);
  EXPECT_TRUE(JsonWholeNumber(json(uint64_t{9223372036854775807ULL}), &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_FALSE(JsonWholeNumber(json(uint64_t{9223372036854775808ULL}), &v));
  EXPECT_FALSE(JsonWholeNumber(json(1e300), &v));
  EXPECT_FALSE(JsonWholeNumber(json(9007199254740992.0), &v));
  EXPECT_FALSE(JsonWholeNumber(json(1.5), &v));
  EXPECT_FALSE(JsonWholeNumber(json("12"), &v));
  EXPECT_FALSE(JsonWholeNumber(json(true), &v));
  EXPECT_EQ(v, INT64_MAX);  // untouched when false
  EXPECT_EQ(NotWholeBecause(json(1.5)), "has a fraction");
  EXPECT_EQ(NotWholeBecause(json(1e300)), "is beyond 2^53, where a JSON float stops holding every integer");
  EXPECT_EQ(NotWholeBecause(json(uint64_t{9223372036854775808ULL})), "is beyond 64 bits");
  EXPECT_EQ(NotWholeBecause(json("12")), "is not a number");
}

}  // namespace
}  // namespace tierscope
