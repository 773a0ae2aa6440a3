// The tierscope binary end to end: bench's RESULT_JSON, exit codes for bad flags, run.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tierscope/engine.h"

namespace tierscope {
namespace {

using testing::Contains;

using testing::Result;
using testing::RunCli;

class CliTest : public testing::FreshCacheTest {};

TEST_F(CliTest, BenchSmokeTestPrintsEveryStudyKey) {
  Result r = RunCli("bench --mode batch-fp32 --batch-size 4 --seq-len 32 --warmup 1 --iterations 1");
  ASSERT_EQ(r.code, 0) << r.out;
  const size_t pos = r.out.find("RESULT_JSON=");
  ASSERT_NE(pos, std::string::npos) << r.out;
  const std::string line = r.out.substr(pos + 12, r.out.find('\n', pos) - pos - 12);
  auto j = nlohmann::json::parse(line);
  for (const char* key : {"model", "mode", "dtype", "batch_size", "seq_len", "iterations", "total_s",
                          "batch_latency_ms", "sample_latency_ms", "samples_per_s", "checksum",
                          "max_memory_mb", "threads"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["mode"], "batch-fp32");
  EXPECT_EQ(j["batch_size"], 4);
  EXPECT_EQ(j["seq_len"], 32);
  EXPECT_TRUE(std::isfinite(j["checksum"].get<double>()));
  EXPECT_GT(j["samples_per_s"].get<double>(), 0);
  EXPECT_GT(j["max_memory_mb"].get<double>(), 16.0);  // the weights alone are ~16.7 MiB
  // Keys come out sorted.
  std::string prev;
  for (auto it = j.begin(); it != j.end(); ++it) {
    EXPECT_LT(prev, it.key());
    prev = it.key();
  }
}

TEST_F(CliTest, SerialAndBatchedBenchesReportTheSameChecksum) {
  Result s = RunCli("bench --mode serial-fp32 --batch-size 3 --seq-len 16 --warmup 0 --iterations 1");
  Result b = RunCli("bench --mode batch-fp32 --batch-size 3 --seq-len 16 --warmup 0 --iterations 1");
  ASSERT_EQ(s.code, 0) << s.out;
  ASSERT_EQ(b.code, 0) << b.out;
  auto js = nlohmann::json::parse(s.out.substr(s.out.find('=') + 1));
  auto jb = nlohmann::json::parse(b.out.substr(b.out.find('=') + 1));
  EXPECT_NEAR(js["checksum"].get<double>(), jb["checksum"].get<double>(), 1e-7);
}

TEST_F(CliTest, BadFlagValuesExitTwoWithOneLine) {
  for (const char* args : {"bench --batch-size 0", "bench --seq-len 513 --iterations 1 --warmup 0",
                           "bench --mode turbo", "bench --model /nonexistent/dir",
                           "bench --batch-size abc", "bench --no-such-flag"}) {
    Result r = RunCli(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_TRUE(Contains(r.out, "tierscope: error: ")) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
  }
}

TEST_F(CliTest, AbsurdSizesEndInOneLineNeverAnAbort) {
  // Each once ended in "terminate called ... std::bad_alloc" (or length_error, or
  // system_error from a thread pool) and an abort.
  for (const char* args : {"bench --batch-size 100000000 --warmup 0 --iterations 1",
                           "bench --mode serial-fp32 --batch-size 100000000 --warmup 0 --iterations 1",
                           "bench --batch-size 4000000000000000000 --warmup 0 --iterations 1",
                           "bench --threads 1000000 --batch-size 2 --seq-len 8 --iterations 1",
                           "sweep --batch-sizes 1,100000000 --seq-len 128 --iterations 1 --out /tmp",
                           "validate --batch-size 100000000 --out /tmp"}) {
    Result r = RunCli(args);
    EXPECT_TRUE(r.code == 1 || r.code == 2) << args << ": " << r.code << " " << r.out;
    EXPECT_FALSE(Contains(r.out, "terminate called")) << args << ": " << r.out;
    // One error line, the last (sweep says which point it starts before it).
    const size_t at = r.out.rfind("tierscope: error: ");
    ASSERT_NE(at, std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(r.out.find("tierscope: error: "), at) << args << ": " << r.out;
    EXPECT_EQ(r.out.find('\n', at), r.out.size() - 1) << args << ": " << r.out;
  }
}

TEST_F(CliTest, AbsurdCountsAndSeedsAreRefusedBeforeAnyWork) {
  // Each once ran (for days, an out-of-memory, or a wrapped seed) instead of being refused.
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"bench --iterations 2000000000", "--iterations must be between 1 and 1000000, got 2000000000"},
           {"bench --warmup 2000000000", "--warmup must be between 0 and 1000000, got 2000000000"},
           {"bench --iterations 99999999999", "--iterations must be between 1 and 1000000"},
           {"lab --quick --repeats 1000000000 --out /tmp/never", "--repeats must be between 0 and 1000, got 1000000000"},
           {"bench --seed -1", "--seed: must be a whole number from 0 to 18446744073709551615, got -1"},
           {"bench --seed 99999999999999999999", "got 99999999999999999999"},
           {"load --url http://127.0.0.1:9 --seed 1.5", "--seed: must be a whole number"}}) {
    Result r = RunCli(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_TRUE(Contains(r.out, "tierscope: error: ")) << args << ": " << r.out;
    EXPECT_TRUE(Contains(r.out, says)) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
  }
}

TEST_F(CliTest, DeepHugeAndOutOfRangeJsonValuesAreQuotedShortNeverCrash) {
  testing::TempDir dir;
  // 100,000 levels deep: quoting it in full once overflowed the stack (a segfault).
  testing::WriteBytes(dir.file("deep.json"),
                      "{\"input_ids\":" + std::string(100000, '[') + std::string(100000, ']') + "}");
  Result r = RunCli("run --inputs " + dir.file("deep.json") + " --output " + dir.file("o.json"));
  EXPECT_EQ(r.code, 2) << r.out.substr(0, 300);
  EXPECT_TRUE(Contains(r.out, "is not an integer: [[[[...]]]]")) << r.out.substr(0, 300);
  EXPECT_LT(r.out.size(), 300u);
  // Past int64: named as such, never wrapped or called a non-integer.
  testing::WriteBytes(dir.file("big.json"), R"({"input_ids": [[101, 99999999999999999999, 102]]})");
  r = RunCli("run --inputs " + dir.file("big.json") + " --output " + dir.file("o.json"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "'input_ids'[0][1] is not an integer: 1e+20 (ids are written without a decimal "
                              "point or exponent)")) << r.out;
  // An output whose directory is missing is named as given, with the reason.
  testing::WriteBytes(dir.file("in.json"), R"({"input_ids": [[101, 2000, 102]]})");
  r = RunCli("run --inputs " + dir.file("in.json") + " --output " + dir.file("no/such/dir/o.json"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, dir.file("no/such/dir/o.json") + ": cannot create: No such file or directory")) << r.out;
}

TEST_F(CliTest, AConfigWithFewerLayersThanItsCheckpointRunsAndSaysWhatItLeftOut) {
  // As Hugging Face's from_pretrained: the first layers run, the rest are named as unused.
  Result first = RunCli("bench --batch-size 1 --seq-len 8 --warmup 0 --iterations 1");
  ASSERT_EQ(first.code, 0) << first.out;
  EXPECT_FALSE(Contains(first.out, "warning")) << first.out;  // the built-in model uses every weight
  testing::TempDir dir;
  const StatusOr<std::string> built_in = EnsureDefaultModel();
  ASSERT_TRUE(built_in.ok()) << built_in.status().ToString();
  const std::string& model = *built_in;
  for (const char* f : {"model.safetensors", "vocab.txt"}) {
    testing::WriteBytes(dir.file(f), testing::ReadBytes(model + "/" + f));
  }
  auto config = nlohmann::json::parse(testing::ReadBytes(model + "/config.json"));
  config["num_hidden_layers"] = 1;
  testing::WriteBytes(dir.file("config.json"), config.dump());
  Result r = RunCli("bench --model " + dir.path() + " --batch-size 1 --seq-len 8 --warmup 0 --iterations 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "tierscope: warning: " + dir.file("model.safetensors") +
                                  ": 16 weight(s) of the checkpoint are not used by config.json's model, "
                                  "e.g. 'encoder.layer.1.")) << r.out;
}

TEST_F(CliTest, LoadThatGotNoAnswerSaysWhyOnTheErrorLine) {
  // A loopback port held by a socket that never listens: every connection is refused.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  Result r = RunCli("load --url http://127.0.0.1:" + port + " --duration 0.5 --warmup 0 --concurrency 2");
  close(fd);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(Contains(r.out, "tierscope: error: no request succeeded (the most frequent error: connect, ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "Connection refused)")) << r.out;
}

TEST_F(CliTest, VersionAndHelpExitZero) {
  Result v = RunCli("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_TRUE(Contains(v.out, "tierscope 0."));
  Result h = RunCli("bench --help");
  EXPECT_EQ(h.code, 0);
  EXPECT_TRUE(Contains(h.out, "--batch-size"));
}

TEST_F(CliTest, StatsListsEveryReportItAccepts) {
  Result l = RunCli("stats --list --format json");
  ASSERT_EQ(l.code, 0) << l.out;
  const auto j = nlohmann::json::parse(l.out);
  ASSERT_GE(j["rows"].size(), 20u);
  testing::TempDir dir;
  std::ofstream(dir.file("t.json")) << R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k",)"
                                    << R"( "pid": 0, "tid": 7, "ts": 1, "dur": 2}]})";
  for (const auto& row : j["rows"]) {
    const std::string name = row["Report"].get<std::string>();
    EXPECT_FALSE(row["Title"].get<std::string>().empty()) << name;
    Result r = RunCli("stats " + dir.file("t.json") + " --report " + name);  // each listed name runs
    EXPECT_EQ(r.code, 0) << name << ": " << r.out;
  }
  Result none = RunCli("stats");
  EXPECT_EQ(none.code, 2);
  EXPECT_TRUE(Contains(none.out, "stats --list")) << none.out;
}

TEST_F(CliTest, RunWritesNpyAndJsonOutputs) {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("in.json"),
                      R"({"input_ids": [[101, 2000, 102, 0]], "attention_mask": [[1, 1, 1, 0]]})");
  Result r = RunCli("run --inputs " + dir.file("in.json") + " --output " + dir.file("out.npy") + " --pooler");
  ASSERT_EQ(r.code, 0) << r.out;
  std::string npy = testing::ReadBytes(dir.file("out.npy"));
  EXPECT_TRUE(Contains(npy, "'shape': (1, 4, 128)"));
  EXPECT_TRUE(Contains(testing::ReadBytes(dir.file("out.pooler_output.npy")), "'shape': (1, 128)"));
  Result j = RunCli("run --inputs " + dir.file("in.json") + " --output " + dir.file("out.json"));
  ASSERT_EQ(j.code, 0) << j.out;
  auto out = nlohmann::json::parse(testing::ReadBytes(dir.file("out.json")));
  ASSERT_EQ(out["last_hidden_state"].size(), 1u);
  ASSERT_EQ(out["last_hidden_state"][0].size(), 4u);
  EXPECT_EQ(out["last_hidden_state"][0][0].size(), 128u);
}

TEST_F(CliTest, RunRejectsIdsOutsideTheVocabulary) {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("in.json"), R"({"input_ids": [[101, 99999]]})");
  Result r = RunCli("run --inputs " + dir.file("in.json") + " --output " + dir.file("o.npy"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "input_ids[0][1] = 99999")) << r.out;
}

TEST(Cli, DeviceSaysTheInt8DotPeakAsAMultipleOfTheFp32One) {
  Result j = RunCli("device --format json");
  ASSERT_EQ(j.code, 0) << j.out;
  const size_t open = j.out.find('{');  // stderr may precede the document (a calibration's progress)
  ASSERT_NE(open, std::string::npos) << j.out;
  const nlohmann::json peaks = nlohmann::json::parse(j.out.substr(open, j.out.rfind('}') + 1 - open))["peaks"];
  Result t = RunCli("device");  // the same cached peaks
  ASSERT_EQ(t.code, 0) << t.out;
  if (peaks.value("int8_dot", std::string()).empty()) {
    EXPECT_NE(t.out.find("INT8 dot        not available"), std::string::npos) << t.out;
    return;
  }
  char want[64];
  std::snprintf(want, sizeof(want), "; %.2fx the FP32 FMA peak)",
                peaks["int8_gops"].get<double>() / peaks["fp32_gflops"].get<double>());
  EXPECT_NE(t.out.find(want), std::string::npos) << want << "\n" << t.out;
}

}  // namespace
}  // namespace tierscope
