// The streaming Kineto importer: a trace streamed through windows of any size (every
// boundary a window can fall on: inside strings, escapes, numbers, top-level members,
// between events), plain or gzip, on one or two readers, is the same Trace as the
// whole-file path's; a cut or corrupt input is a one-line error naming the byte; an event
// larger than the window grows it; the choice of path follows the size and the budget;
// strings spilled to disk give the same trace.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/spill_file.h"
#include "trace/kineto_import.h"
#include "trace/kineto_stream.h"
#include "trace/kineto_test_traces.h"
#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;
using testing::TempDir;
using testing::WriteBytes;

// Members before and after traceEvents, escapes and brackets inside strings, nested args.
std::string MembersTrace() {
  std::string j = R"({"schemaVersion": 1, "deviceProperties": [{"name": "H100 \"SXM\" [x]", "numSms": 132,
    "totalGlobalMem": 85000000000}], "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
    "baseTimeNanoseconds": 1700000000000000000, "ignored": {"a": [1, {"b": "}]"}]}, "traceEvents": [)";
  for (int i = 0; i < 300; ++i) {
    if (i > 0) j += ",";
    j += R"({"ph": "X", "cat": "kernel", "name": "k\\u0041{)" + std::to_string(i % 7) +
         R"(}[\"]", "pid": 0, "tid": 7, "ts": )" + std::to_string(100 + i) + R"(.5, "dur": 1.25,
         "args": {"correlation": )" + std::to_string(i) + R"(, "grid": [1, 2, 3], "note": "a,b}]"}})";
  }
  return j + R"(], "traceName": "run \\ one", "displayTimeUnit": "ms"})";
}

std::string Gzip(const std::string& s) {
  uLongf n = compressBound(s.size()) + 64;
  std::string out(n, '\0');
  z_stream zs{};
  deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
  zs.avail_in = static_cast<uInt>(s.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Events without a backslash (so the splitter's fast blocks see every byte) whose strings
// hold brackets and commas where runs are cut, with keys spaced every way and kernels with
// and without a grid.
std::string BracketsInStringsTrace() {
  std::string j = R"({"traceEvents": [)";
  for (int i = 0; i < 3000; ++i) {
    if (j.back() != '[') j += i % 2 == 0 ? ",\n" : " , ";
    const std::string n = std::to_string(i);
    j += "{\"ph\" : \"X\", \"cat\":\"kernel\", \"name\": \"k ]},{[ " + n + "\", \"pid\": 1, \"tid\" :7, \"ts\": " + n +
         ", \"dur\": 1, \"args\": {\"note\": \"}], {x: [\", \"correlation\"\t:\t" + n +
         (i % 3 == 0 ? ", \"grid\"\n : [1, 2, 3]" : "") + ", \"s\": \"[[[{{{\"}}";
  }
  return j + "]}";
}

TEST(KinetoStream, EveryWindowSizeGivesTheWholeFilePathsTrace) {
  TempDir dir;
  for (const std::string& json : {MembersTrace(), TrickyTrace(), BracketsInStringsTrace(), std::string(R"([{"ph": "X", "cat": "cpu_op",
        "name": "legacy", "pid": 1, "tid": 1, "ts": 1, "dur": 2}, {"ph": "X", "name": "b", "pid": 1, "tid": 1,
        "ts": 3, "dur": 1}])")}) {
    const std::string plain = dir.file("t.json"), gz = dir.file("t.json.gz");
    WriteBytes(plain, json);
    WriteBytes(gz, Gzip(json));
    auto whole = ImportKinetoJson(json, plain, 1);
    ASSERT_TRUE(whole.ok()) << whole.status().ToString();
    for (size_t window : {64, 97, 1000, 4096, 1 << 16, 64 << 20}) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE("window " + std::to_string(window) + ", " + std::to_string(threads) + " reader(s)");
        auto s = ImportKinetoStream(plain, window, threads, StreamInput::kMapped);
        ASSERT_TRUE(s.ok()) << s.status().ToString();
        ExpectSameTrace(*whole, *s);
        EXPECT_EQ(s->source, plain);
        auto r = ImportKinetoStream(plain, window, threads, StreamInput::kRead);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ExpectSameTrace(*whole, *r);
        if (window == 97) {
          auto z = ImportKinetoStream(gz, window, threads);
          ASSERT_TRUE(z.ok()) << z.status().ToString();
          ExpectSameTrace(*whole, *z);
          EXPECT_TRUE(Contains(ImportKinetoStream(gz, window, threads, StreamInput::kMapped).status().ToString(),
                               gz + ": cannot be mapped"));  // gzip is read through the window
        }
      }
    }
  }
  auto members = ImportKinetoStream((WriteBytes(dir.file("m.json"), MembersTrace()), dir.file("m.json")), 64, 2);
  ASSERT_TRUE(members.ok());
  EXPECT_EQ(members->device_name, "H100 \"SXM\" [x]");  // the members around traceEvents were read
  EXPECT_EQ(members->rank, 3);
  EXPECT_EQ(members->world_size, 8);
}

TEST(KinetoStream, ACutOrCorruptInputIsAnErrorNamingTheByte) {
  TempDir dir;
  const std::string json = MembersTrace();
  const std::string path = dir.file("cut.json");
  for (size_t cut = 0; cut < json.size(); cut += 37) {
    WriteBytes(path, json.substr(0, cut));
    auto s = ImportKinetoStream(path, 128, 2, cut > 0 ? StreamInput::kMapped : StreamInput::kAuto);
    ASSERT_FALSE(s.ok()) << "cut at " << cut;
    const std::string msg = s.status().ToString();
    EXPECT_NE(msg.find(path + ": "), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    // Mapped or read, the same error at the same byte.
    EXPECT_EQ(ImportKinetoStream(path, 128, 2, StreamInput::kRead).status().ToString(), msg);
  }
  std::string bad = json;
  bad.insert(bad.find("\"ph\"", json.size() / 2), "tru ");
  WriteBytes(path, bad);
  auto whole = ImportKinetoJson(bad, path, 1);
  auto s = ImportKinetoStream(path, 100, 2, StreamInput::kMapped);
  ASSERT_FALSE(whole.ok());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().ToString(), whole.status().ToString());  // simdjson's error, at the same byte
  EXPECT_EQ(ImportKinetoStream(path, 100, 2, StreamInput::kRead).status().ToString(), whole.status().ToString());
  WriteBytes(path, Gzip(json).substr(0, 200));
  auto z = ImportKinetoStream(path, 100, 1);
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().ToString().find("truncated gzip stream"), std::string::npos) << z.status().ToString();
  WriteBytes(path, R"({"traceEvents": {"ph": "X"}})");
  EXPECT_NE(ImportKinetoStream(path, 64).status().ToString().find("\"traceEvents\" is not an array"),
            std::string::npos);
  // Invalid JSON in a member the reader skips is still invalid JSON.
  for (const char* bad_member : {R"({"traceEvents": [], "a": ]})", R"({"traceEvents": [], "a": 1 2})",
                                 R"({"a": 1: 2, "traceEvents": []})"}) {
    WriteBytes(path, bad_member);
    EXPECT_EQ(ImportKinetoStream(path, 64).status().code(), StatusCode::kDataLoss) << bad_member;
  }
  WriteBytes(path, R"({"other": [1, 2]})");
  EXPECT_NE(ImportKinetoStream(path, 64).status().ToString().find("no \"traceEvents\" array"), std::string::npos);
}

TEST(KinetoStream, AnEventLargerThanTheWindowGrowsIt) {
  TempDir dir;
  const std::string big_args(200000, 'x');
  const std::string json = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1,
    "ts": 1, "dur": 1, "args": {"blob": ")" + big_args + R"("}}, {"ph": "X", "cat": "cpu_op", "name": "b",
    "pid": 1, "tid": 1, "ts": 2, "dur": 1}]})";
  WriteBytes(dir.file("big.json"), json);
  auto whole = ImportKinetoJson(json, dir.file("big.json"), 1);
  for (StreamInput input : {StreamInput::kMapped, StreamInput::kRead}) {
    auto s = ImportKinetoStream(dir.file("big.json"), 256, 2, input);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ExpectSameTrace(*whole, *s);
  }
}

TEST(KinetoStream, ThePathFollowsTheSizeAndTheBudget) {
  TempDir dir;
  WriteBytes(dir.file("t.json"), MembersTrace());
  unsetenv("TIERSCOPE_STREAM");
  SetMemoryBudget(int64_t{1} << 30);
  EXPECT_FALSE(ShouldStream(dir.file("t.json")));
  SetMemoryBudget(1000);  // less than 1.5x the file: streamed
  EXPECT_TRUE(ShouldStream(dir.file("t.json")));
  SetMemoryBudget(0);
  EXPECT_GT(MemoryBudget(), 0);  // the default: half of what is available
  setenv("TIERSCOPE_STREAM", "always", 1);
  EXPECT_TRUE(ShouldStream(dir.file("t.json")));
  setenv("TIERSCOPE_STREAM", "never", 1);
  SetMemoryBudget(1000);
  EXPECT_FALSE(ShouldStream(dir.file("t.json")));
  unsetenv("TIERSCOPE_STREAM");
  SetMemoryBudget(0);
  // ImportKinetoTrace streams what the budget will not hold, with the same answer.
  SetMemoryBudget(1000);
  auto streamed = ImportKinetoTrace(dir.file("t.json"));
  SetMemoryBudget(0);
  auto whole = ImportKinetoTrace(dir.file("t.json"));
  ASSERT_TRUE(streamed.ok() && whole.ok());
  ExpectSameTrace(*whole, *streamed);
  // A budget not even a streamed read fits is said not to have been met.
  EXPECT_TRUE(whole->import_notes.empty());
  ASSERT_EQ(streamed->import_notes.size(), 1u);
  EXPECT_EQ(streamed->import_notes[0].find("read past the memory budget of 1000 B (--memory-budget; by default half of "
                                           "what is available): streamed, the least any read of it takes, it needs "
                                           "about "),
            0u)
      << streamed->import_notes[0];
}

// Enough args for many 1 MiB spill blocks on each of two readers.
std::string ArgsHeavyTrace() {
  std::string j = R"({"distributedInfo": {"rank": 1, "world_size": 2}, "traceEvents": [)";
  for (int i = 0; i < 30000; ++i) {
    if (i > 0) j += ",\n";
    j += R"({"ph": "X", "cat": "kernel", "name": "k)" + std::to_string(i % 13) + R"(", "pid": 0, "tid": 7, "ts": )" +
         std::to_string(100 + 3 * i) + R"(, "dur": 2, "args": {"correlation": )" + std::to_string(i) +
         R"(, "grid": [)" + std::to_string(i % 977) + R"(, 1, 1], "note": ")" + std::string(static_cast<size_t>(i % 97), 'n') +
         R"("}})";
  }
  return j + "]}";
}

TEST(KinetoStream, SpilledArgsGiveTheSameTrace) {
  TempDir dir;
  for (const std::string& json : {MembersTrace(), ArgsHeavyTrace()}) {
    WriteBytes(dir.file("t.json"), json);
    auto whole = ImportKinetoJson(json, dir.file("t.json"), 1);
    ASSERT_TRUE(whole.ok()) << whole.status().ToString();
    for (const char* spill : {"always", "never"}) {
      testing::ScopedEnv env("TIERSCOPE_SPILL", spill);
      for (size_t window : {97, 4096, 1 << 16}) {
        for (int threads : {1, 2}) {
          SCOPED_TRACE(std::string(spill) + ", window " + std::to_string(window) + ", " + std::to_string(threads));
          auto s = ImportKinetoStream(dir.file("t.json"), window, threads);
          ASSERT_TRUE(s.ok()) << s.status().ToString();
          ExpectSameTrace(*whole, *s);
          EXPECT_EQ(s->strings.spilled_bytes() > 0, std::string(spill) == "always");
          EXPECT_TRUE(s->import_notes.empty());
        }
      }
    }
  }
  // Args that stay in memory past the budget are said to: no file can be made where
  // spills go, or spilling is off.
  WriteBytes(dir.file("t.json"), MembersTrace());
  auto whole = ImportKinetoJson(MembersTrace(), dir.file("t.json"), 1);
  ASSERT_TRUE(whole.ok());
  SetMemoryBudget(1000);
  for (const char* spill : {"always", "never"}) {
    testing::ScopedEnv env("TIERSCOPE_SPILL", spill);
    SetSpillDirectory(dir.file("missing"));
    auto kept = ImportKinetoStream(dir.file("t.json"), 4096, 2);
    SetSpillDirectory("");
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    ExpectSameTrace(*whole, *kept);
    EXPECT_EQ(kept->strings.spilled_bytes(), 0);
    ASSERT_EQ(kept->import_notes.size(), 1u);
    const std::string want = std::string(spill) == "always"
                                 ? "its args kept in memory past the memory budget: cannot make a spill file in " +
                                       dir.file("missing")
                                 : "its args kept in memory past the memory budget: TIERSCOPE_SPILL=never";
    EXPECT_NE(kept->import_notes[0].find(want), std::string::npos) << kept->import_notes[0];
  }
  SetMemoryBudget(0);
}

TEST(KinetoStream, CorpusTracesStreamTheSame) {
  struct stat st;
  TS_SKIP_UNLESS(::stat(CorpusPath("").c_str(), &st) == 0, "the trace corpus at " << CorpusPath(""));
  for (const char* f : {"df_index_resolver.json.gz", "control.json.gz",
                        "vendors/ascend_2rank/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json.gz"}) {
    SCOPED_TRACE(f);
    std::optional<testing::ScopedEnv> never(std::in_place, "TIERSCOPE_STREAM", "never");
    auto whole = ImportKinetoTrace(CorpusPath(f), 2);
    never.reset();
    auto s = ImportKinetoStream(CorpusPath(f), 1 << 16, 2);
    ASSERT_TRUE(whole.ok()) << whole.status().ToString();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ExpectSameTrace(*whole, *s);
  }
}

}  // namespace
}  // namespace tierscope
