// The Kineto importer on two cores: a trace read by two readers (the later half merged
// into the first) is the same as one reader's, string pids/tids, thread names, the host
// pid and malformed events included, and the first error in file order is the one
// reported, at the same byte offset.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <tuple>
#include <vector>

#include "trace/kineto_import.h"
#include "trace/kineto_test_traces.h"
#include "test_util.h"

namespace tierscope {
namespace {

TEST(KinetoReaders, TwoReadersGiveTheSameTraceAsOne) {
  const std::string json = TrickyTrace();
  auto one = ImportKinetoJson(json, "t.json", 1);
  auto two = ImportKinetoJson(json, "t.json", 2);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  ExpectSameTrace(*one, *two);
  // The things the merge must translate are really there.
  EXPECT_GT(one->stats.malformed, 0);
  EXPECT_EQ(one->runtime, "hip");
  EXPECT_LT(one->host_pid, -1);  // "python worker": a string id, first seen late
  bool named_late = false;
  for (const auto& [tid, name] : one->thread_names) named_late |= name == "worker b";
  EXPECT_TRUE(named_late);
}

TEST(KinetoReaders, TheFirstErrorInFileOrderIsReportedAtTheSameOffset) {
  std::string json = TrickyTrace();
  const size_t late = json.size() * 9 / 10, early = json.size() / 10;
  std::string late_only = json;
  late_only.insert(late_only.find("\"ph\"", late), "tru ");
  std::string both = late_only;
  both.insert(both.find("\"ph\"", early), "nul ");
  for (const std::string& bad : {late_only, both}) {
    auto one = ImportKinetoJson(bad, "bad.json", 1);
    auto two = ImportKinetoJson(bad, "bad.json", 2);
    ASSERT_FALSE(one.ok());
    ASSERT_FALSE(two.ok());
    EXPECT_EQ(one.status().ToString(), two.status().ToString());
    EXPECT_NE(one.status().ToString().find("bad.json: invalid JSON at byte"), std::string::npos);
  }
}

TEST(KinetoReaders, CorpusTracesReadTheSameOnOneOrTwoReaders) {
  struct stat st;
  TS_SKIP_UNLESS(::stat(CorpusPath("").c_str(), &st) == 0, "the trace corpus at " << CorpusPath(""));
  for (const char* f : {"df_index_resolver.json.gz", "control.json.gz", "test.json.gz",
                        "worker0.1623143089861.pt.trace.json.gz"}) {
    SCOPED_TRACE(f);
    auto one = ImportKinetoTrace(CorpusPath(f), 1);
    auto two = ImportKinetoTrace(CorpusPath(f), 2);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    ASSERT_TRUE(two.ok()) << two.status().ToString();
    ExpectSameTrace(*one, *two);
  }
}

}  // namespace
}  // namespace tierscope
