// The Kineto scanner's scalar helpers: ill-formed UTF-8 repaired as Python's
// bytes.decode("utf-8", "replace") does (each expectation below is its output), and µs
// text to exact ns.
#include "trace/kineto_scan.h"

#include <gtest/gtest.h>

#include <string>

namespace tierscope::kineto {
namespace {

constexpr const char* kFffd = "\xEF\xBF\xBD";

std::string Repaired(const std::string& in, int64_t* replaced) {
  std::string out = "prefix:";
  *replaced = RepairUtf8(in, &out);
  EXPECT_EQ(out.substr(0, 7), "prefix:");  // appended, never overwritten
  return out.substr(7);
}

TEST(RepairUtf8, EachMaximalSubpartBecomesOneReplacementCharacter) {
  struct Case {
    std::string in, out;
    int64_t replaced;
  };
  const std::string r = kFffd;
  const Case cases[] = {
      {"\xff", r, 1},                                   // never a lead byte
      {"a\xc0\xaf" "b", "a" + r + r + "b", 2},          // overlong '/': C0 and AF each
      {"\xed\xa0\x80", r + r + r, 3},                   // a surrogate: ED's range is 80..9F
      {"\xe2\x82", r, 1},                               // a truncated euro sign
      {"\xe2\x82\xac", "\xe2\x82\xac", 0},              // the euro sign itself
      {"\xf0\x9f\x98", r, 1},                           // a truncated emoji
      {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80", 0},      // the emoji
      {"\xf4\x90\x80\x80", r + r + r + r, 4},           // past U+10FFFF
      {"\xc3\xa9\x80", "\xc3\xa9" + r, 1},              // a stray continuation byte
      {"\xe0\x80\x80", r + r + r, 3},                   // overlong NUL
      {"\xf5", r, 1},
      {"plain ascii", "plain ascii", 0},
      {"", "", 0},
  };
  for (const Case& c : cases) {
    int64_t replaced = -1;
    EXPECT_EQ(Repaired(c.in, &replaced), c.out) << "input of " << c.in.size() << " bytes";
    EXPECT_EQ(replaced, c.replaced);
  }
}

TEST(RepairUtf8, QuotesAndBracketsAfterABadByteSurvive) {
  int64_t replaced = 0;
  EXPECT_EQ(Repaired("{\"name\": \"\xe2\x82\"}", &replaced), std::string("{\"name\": \"") + kFffd + "\"}");
  EXPECT_EQ(replaced, 1);
}

TEST(MicrosToNs, DecimalDigitsAreExact) {
  int64_t ns = 0;
  ASSERT_TRUE(MicrosToNs("1736408883688177.930", &ns));
  EXPECT_EQ(ns, 1736408883688177930);  // 19 digits: a double would lose the last ones
  ASSERT_TRUE(MicrosToNs("0.0005", &ns));
  EXPECT_EQ(ns, 1);
  EXPECT_FALSE(MicrosToNs("12 ", &ns));
  EXPECT_FALSE(MicrosToNs("", &ns));
}

}  // namespace
}  // namespace tierscope::kineto
