// A job's files and ranks: directories and rank_N/ sub-directories listed, files that are
// not traces skipped with a note, ranks from distributedInfo, file names, directories or
// order, a rank's windows (one file per profiler cycle) ordered by time and added up,
// duplicates that overlap in time refused, the memory plan, the corpus's 2-rank pair
// analysed whole (its temporal breakdown and overlap equal HTA's on the same events) and
// the corpus's real 4-rank T4 job of 3 windows per rank.
#include "analysis/job.h"
#include "analysis/rank_summary.h"
#include "analysis/commands.h"
#include "trace/json_input.h"
#include "trace/kineto_stream.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/trace_builder.h"
#include "test_util.h"

namespace tierscope {
namespace {

TEST(JobFiles, RanksComeFromFileNamesInEveryUsualSpelling) {
  EXPECT_EQ(RankFromFileName("/x/sampled_rank-0.json.gz"), 0);
  EXPECT_EQ(RankFromFileName("rank_12.pt.trace.json"), 12);
  EXPECT_EQ(RankFromFileName("/runs/Rank3.sqlite"), 3);
  EXPECT_EQ(RankFromFileName("/rank-9/trace.json"), -1);  // the directory does not count
  EXPECT_EQ(RankFromFileName("worker0.1623143089861.pt.trace.json.gz"), -1);
  EXPECT_EQ(RankFromFileName("rank-.json"), -1);
  EXPECT_EQ(NumberInFileName("/runs/report_3.sqlite"), 3);
  EXPECT_EQ(NumberInFileName("worker0.1623143089861.pt.trace.json.gz"), 0);
  EXPECT_EQ(NumberInFileName("trace.json"), -1);
}

TEST(JobFiles, AssignRanksPrefersDistributedInfoAndRefusesDuplicates) {
  auto a = AssignRanks({"a_rank-5.json", "b_rank-4.json"}, {1, 0});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->rank, (std::vector<int>{1, 0}));
  EXPECT_EQ(a->from[0], "distributedInfo");
  a = AssignRanks({"a_rank-5.json", "b_rank-4.json"}, {1, -1});  // not every trace says
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->rank, (std::vector<int>{5, 4}));
  EXPECT_EQ(a->from[1], "file name");
  EXPECT_NE(a->note.find("in 1 of 2 traces only"), std::string::npos) << a->note;
  a = AssignRanks({"x.json", "b_rank-4.json"}, {-1, -1});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->rank, (std::vector<int>{0, 1}));
  EXPECT_EQ(a->from[0], "order");
  // nsys -o report_%q{RANK}: numbers that are exactly 0..N-1 are ranks; pids are not.
  a = AssignRanks({"report_10.sqlite", "report_2.sqlite", "report_0.sqlite", "report_1.sqlite",
                   "report_3.sqlite", "report_4.sqlite", "report_5.sqlite", "report_6.sqlite",
                   "report_7.sqlite", "report_8.sqlite", "report_9.sqlite"},
                  std::vector<int>(11, -1));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->rank[0], 10);
  EXPECT_EQ(a->rank[1], 2);
  EXPECT_EQ(a->from[0], "number in the file name");
  a = AssignRanks({"host_4411.1.json", "host_4412.2.json"}, {-1, -1});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->rank[1], 1);
  EXPECT_EQ(a->from[1], "order");
  auto dup = AssignRanks({"p.json", "q.json"}, {3, 3});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("two traces are rank 3"), std::string::npos);
  EXPECT_NE(dup.status().message().find("p.json and q.json"), std::string::npos);
}

TEST(JobFiles, ThePlanReadsNoMoreRanksAtOnceThanFitInMemory) {
  const int64_t gib = int64_t{1} << 30;
  for (const bool spill : {false, true}) {  // streamed ranks' strings in memory, or spilled
    SCOPED_TRACE(spill ? "spilled" : "in memory");
    LoadPlan p = PlanLoad({3 * gib, 3 * gib, 3 * gib, 3 * gib}, 8, 10 * gib, spill);
    EXPECT_EQ(p.in_flight, 2);  // 10 GiB / (1.5 x 3 GiB)
    EXPECT_FALSE(p.streamed);
    EXPECT_NE(p.why.find("memory for 2 ranks"), std::string::npos) << p.why;
    // Every rank at its own cost: one small rank read whole can cost more than a large one
    // streamed.
    p = PlanLoad({int64_t{4200} << 20, int64_t{4000} << 20}, 2, 12 * gib, spill);
    EXPECT_TRUE(p.streamed == false);  // 4,000 MiB whole (5.9 GiB) is dearer than 4,200 MiB streamed
    EXPECT_EQ(p.per_rank_bytes, (int64_t{4000} << 20) * 3 / 2);
    EXPECT_EQ(p.in_flight, 1);  // the streamed one takes both threads
    p = PlanLoad({gib, gib, gib}, 2, 24 * gib, spill);
    EXPECT_EQ(p.in_flight, 2);
    EXPECT_EQ(p.why, "2 threads");
    p = PlanLoad({gib}, 16, -1, spill);  // memory unknown: threads decide
    EXPECT_EQ(p.in_flight, 1);
    // 3 GiB ranks in an 8 GiB budget: 4.5 GiB each read whole, 1 at once; in 4 GiB they do
    // not fit whole and are streamed (their trace and index: 2.9 GiB, or 1.9 spilled).
    p = PlanLoad({3 * gib, 3 * gib}, 2, 8 * gib, spill);
    EXPECT_EQ(p.in_flight, 1);
    EXPECT_FALSE(p.streamed);
    p = PlanLoad({3 * gib, 3 * gib}, 2, 4 * gib, spill);
    EXPECT_EQ(p.in_flight, 1);
    EXPECT_TRUE(p.streamed);
    EXPECT_EQ(p.spilled, spill);
    EXPECT_EQ(p.per_rank_bytes, StreamedTraceBytes(3 * gib, spill));
    EXPECT_NE(p.why.find("streamed"), std::string::npos) << p.why;
    EXPECT_EQ(p.why.find("args spilled to disk") != std::string::npos, spill) << p.why;
    // Past 4 GiB a rank is streamed whatever the budget, on two threads: with four, two
    // 5 GiB ranks at once in 16 GiB; with two, one.
    p = PlanLoad({5 * gib, 5 * gib}, 4, 16 * gib, spill);
    EXPECT_TRUE(p.streamed);
    EXPECT_EQ(p.in_flight, 2);
    p = PlanLoad({5 * gib, 5 * gib}, 2, 16 * gib, spill);
    EXPECT_EQ(p.in_flight, 1);
    EXPECT_NE(p.why.find("1 rank at once, each streamed on two of the 2 threads"), std::string::npos) << p.why;
    p = PlanLoad({5 * gib, 5 * gib, 5 * gib}, 8, 64 * gib, spill);  // every rank at once
    EXPECT_EQ(p.in_flight, 3);
    EXPECT_NE(p.why.find("3 ranks at once (every rank), streamed"), std::string::npos) << p.why;
    p = PlanLoad({5 * gib, 5 * gib}, 1, 64 * gib, spill);
    EXPECT_EQ(p.in_flight, 1);
    EXPECT_NE(p.why.find("1 rank at once, streamed on one thread"), std::string::npos) << p.why;
    p = PlanLoad({5 * gib, 5 * gib}, 4, -1, spill);  // memory unknown: still two threads each
    EXPECT_EQ(p.in_flight, 2);
    EXPECT_TRUE(p.streamed);
    p = PlanLoad({}, 4, 16 * gib, spill);
    EXPECT_EQ(p.in_flight, 1);
    p = PlanLoad({5 * gib, 5 * gib}, 2, 2 * gib, spill);  // not even streamed: said, not hidden
    EXPECT_NE(p.why.find("passes the budget"), std::string::npos) << p.why;
  }
  // What spilling saves: a 5 GiB rank fits a 4 GiB budget only spilled.
  EXPECT_GT(StreamedTraceBytes(5 * gib, false), 4 * gib);
  EXPECT_LT(StreamedTraceBytes(5 * gib, true), 4 * gib);
}

TEST(JobFiles, DirectoriesAreListedAndEmptyOrMissingOnesAreErrors) {
  testing::TempDir dir;
  for (const char* f : {"rank-10.json", "rank-1.json", "rank-0.json.gz", "notes.txt", "rank-2.sqlite"}) {
    std::ofstream(dir.file(f)) << "x";
  }
  auto files = JobFiles({dir.path()});
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(*files, (std::vector<std::string>{dir.file("rank-0.json.gz"), dir.file("rank-1.json"),
                                              dir.file("rank-2.sqlite"), dir.file("rank-10.json")}));
  testing::TempDir empty;
  EXPECT_EQ(JobFiles({empty.path()}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(JobFiles({dir.file("missing")}).status().code(), StatusCode::kNotFound);
  auto list = FindJobFiles({dir.path()});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->skipped.size(), 1u);
  EXPECT_EQ(list->skipped[0].path, dir.file("notes.txt"));
}

// A small Kineto trace of rank `rank` (none when < 0): one step from `ts_us` for `dur_us`
// with a kernel in it.
std::string KinetoTrace(int rank, int step, double ts_us, double dur_us) {
  std::ostringstream o;
  o << R"({"schemaVersion": 1, )";
  if (rank >= 0) o << R"("distributedInfo": {"backend": "nccl", "rank": )" << rank << R"(, "world_size": 2}, )";
  o << R"("baseTimeNanoseconds": 1700000000000000000, "traceEvents": [)"
    << R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" << step
    << R"(", "pid": 1, "tid": 1, "ts": )" << ts_us << R"(, "dur": )" << dur_us << "},"
    << R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": )" << ts_us + 1
    << R"(, "dur": 5, "args": {"correlation": 7}},)"
    << R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": )" << ts_us + 10
    << R"(, "dur": )" << dur_us / 2 << R"(, "args": {"correlation": 7, "stream": 7, "device": 0}}]})";
  return o.str();
}

TEST(JobFiles, RankDirectoriesAreListedAndWhatIsNotATraceIsSkippedWithWhy) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.file("rank_0"));
  std::filesystem::create_directories(dir.file("rank_1/cycle"));
  std::filesystem::create_directories(dir.file("plots"));
  testing::WriteBytes(dir.file("rank_0/w.1700000000000000001.pt.trace.json"), KinetoTrace(-1, 1, 0, 100));
  testing::WriteBytes(dir.file("rank_1/cycle/w.1700000000000000002.pt.trace.json"), KinetoTrace(-1, 1, 0, 100));
  testing::WriteBytes(dir.file("plots/rank-5.json"), KinetoTrace(5, 1, 0, 100));
  testing::WriteBytes(dir.file("steps_index.csv"), "step,rank\n0,0\n");
  testing::WriteBytes(dir.file("metadata_rank_0.yml"), "rank: 0\n");
  testing::WriteBytes(dir.file("rank0_et.json"), R"({"schema": "1.0.1", "pid": 1, "nodes": []})");
  testing::WriteBytes(dir.file("rank0_CPU_trace.json"), R"({"schema": "1.0.1", "pid": 1, "time": "x", "nodes": [)" +
                                                             std::string(100'000, ' ') + "]}");
  testing::WriteBytes(dir.file("rocprof_results.json"), R"({"rocprofiler-sdk-tool": [{"metadata": {}}]})");
  testing::WriteBytes(dir.file("profiler_info_0.json"), R"({"config": {"rank": 0}, "end_info": {}})");
  // Kineto's header before a large traceEvents is still a trace.
  testing::WriteBytes(dir.file("big.json"), R"({"schemaVersion": 1, "deviceProperties": [)" +
                                                std::string(100'000, ' ') + R"(], "traceEvents": []})");
  auto list = FindJobFiles({dir.path()});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->files, (std::vector<std::string>{dir.file("big.json"),
                                                   dir.file("rank_0/w.1700000000000000001.pt.trace.json"),
                                                   dir.file("rank_1/cycle/w.1700000000000000002.pt.trace.json")}));
  std::map<std::string, std::string> why;
  for (const SkippedFile& f : list->skipped) {
    EXPECT_EQ(f.path, dir.file(f.place));
    why[f.place] = f.why;
  }
  EXPECT_EQ(why.size(), 7u);
  EXPECT_EQ(why["steps_index.csv"], "CSV");
  EXPECT_EQ(why["metadata_rank_0.yml"], "YAML");
  EXPECT_NE(why["rank0_et.json"].find("execution trace"), std::string::npos);
  EXPECT_NE(why["rank0_CPU_trace.json"].find("execution trace"), std::string::npos);
  EXPECT_NE(why["rocprof_results.json"].find("rocprofv3"), std::string::npos);
  EXPECT_EQ(why["profiler_info_0.json"], "JSON without traceEvents");
  EXPECT_NE(why["plots/"].find("not named for a rank"), std::string::npos);
  const std::vector<std::string> notes = SkippedNotes(list->skipped);
  ASSERT_EQ(notes.size(), 6u);  // one per reason: the two execution traces share one
  std::string all;
  for (const std::string& n : notes) all += n + "\n";
  for (const char* name : {"steps_index.csv", "metadata_rank_0.yml", "rank0_et.json", "rank0_CPU_trace.json",
                           "rocprof_results.json", "profiler_info_0.json", "plots/"}) {
    EXPECT_NE(all.find(name), std::string::npos) << name;
  }
  // Nothing but files that are not traces: the error says what was skipped.
  testing::TempDir none;
  testing::WriteBytes(none.file("a.csv"), "x");
  auto empty = FindJobFiles({none.path()});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("skipped 1: a.csv (CSV)"), std::string::npos) << empty.status().ToString();
}

TEST(JobFiles, ARanksWindowsAreOrderedByTimeAndTwoRunsOfOneRankRefused) {
  EXPECT_EQ(RankFromDirectoryName("rank_3"), 3);
  EXPECT_EQ(RankFromDirectoryName("Rank-12"), 12);
  EXPECT_EQ(RankFromDirectoryName("rank0_ascend_pt"), 0);
  EXPECT_EQ(RankFromDirectoryName("cranky_1"), -1);
  EXPECT_EQ(RankFromDirectoryName("rank_"), -1);
  const int64_t s = 1'000'000'000;
  // File names against time: the windows go by time.
  auto a = AssignRankWindows({"c.json", "b.json", "a.json", "z.json"},
                             {{0, 1 * s, 2 * s}, {0, 5 * s, 6 * s}, {0, 3 * s, 4 * s}, {1, 1 * s, 6 * s}});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->rank, (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(a->windows, (std::vector<std::vector<size_t>>{{0, 2, 1}, {3}}));
  // Cycles that touch (under a tenth of the shorter overlapping) are still windows...
  a = AssignRankWindows({"a.json", "b.json"}, {{0, 0, 10 * s}, {0, 10 * s - s / 20, 20 * s}});
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  // ...two runs' traces of one rank are not.
  a = AssignRankWindows({"run1/t.json", "run2/t.json"}, {{0, 0, 10 * s}, {0, 5 * s, 15 * s}});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("two traces are rank 0 (by distributedInfo) and overlap in time"),
            std::string::npos) << a.status().ToString();
  EXPECT_NE(a.status().message().find("run1/t.json and run2/t.json"), std::string::npos);
  // No ranks in the traces: rank_N/ directories, then tensorboard_trace_handler's workers.
  a = AssignRankWindows({"/j/rank_0/x.json", "/j/rank_1/y.json", "/j/rank_1/z.json"}, {{-1, 0, 1}, {-1, 0, 1}, {-1, 2, 3}});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->rank, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(a->from[0], "directory name");
  auto strict = AssignRanks({"/j/rank_0/x.json", "/j/rank_1/y.json"}, {-1, -1});
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->from[1], "directory name");
  strict = AssignRanks({"/tmp/rank3_runs/x.json", "/tmp/rank3_runs/y.json"}, {-1, -1});  // one directory
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->from[1], "order");
  a = AssignRankWindows({"host_41.1700000000000000009.pt.trace.json.gz", "host_41.1700000000000000001.pt.trace.json.gz",
                         "node.lan_7.1700000000000000005.pt.trace.json"},
                        {{-1, 9, 10}, {-1, 1, 2}, {-1, 5, 6}});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->rank, (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(a->from[0], "worker name");
  EXPECT_EQ(a->windows, (std::vector<std::vector<size_t>>{{1, 0}, {2}}));
}

// One profiler cycle of a rank: ProfilerStep#`step` at `at` ns, a gemm and an all-reduce.
RankAnalysis Cycle(int rank, int step, int64_t at) {
  Builder b;
  b.Unit("ProfilerStep#" + std::to_string(step), at, 1'000'000);
  b.Launch("cudaLaunchKernel", "gemm", at + 10, 5, at + 20, 50'000, 1);
  b.Launch("cudaLaunchKernel", "ncclDevKernel_AllReduce_Sum_f32", at + 100'000, 5, at + 200'000, 300'000, 2);
  b.trace().events.back().args = b.trace().strings.Intern(
      R"("Collective name": "allreduce", "In msg nelems": 4096, "Process Group Name": "0")");
  b.trace().rank = rank;
  b.trace().world_size = 2;
  b.trace().base_time_ns = 1'700'000'000'000'000'000;
  return AnalyzeRank(b.trace(), {});
}

TEST(Job, ARanksWindowsAreAddedUpInTimeOrderAndRepeatedStepsKeptApart) {
  // Two ranks, each profiled in two cycles 10 ms apart whose step numbers restart.
  const int64_t gap = 10'000'000;
  const RankAnalysis one = Cycle(0, 1, 0);
  std::vector<RankAnalysis> parts = {Cycle(0, 1, gap), Cycle(0, 1, 0), Cycle(1, 1, 0), Cycle(1, 1, gap)};
  std::vector<RankAnalysis> saved;  // as a Dask worker sends them
  for (const RankAnalysis& r : parts) saved.push_back(*LoadRankSummary(SaveRankSummary(r)));
  const std::vector<std::string> files = {"r0/a.json", "r0/b.json", "r1/a.json", "r1/b.json"};
  auto job = JobFromRanks(parts, files, {});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->ranks.size(), 2u);
  const RankAnalysis& r0 = job->ranks[0];
  EXPECT_EQ(r0.windows, (std::vector<std::string>{"r0/b.json", "r0/a.json"}));  // by time, not by name
  EXPECT_EQ(r0.units, 2);
  EXPECT_EQ(r0.events, 2 * one.events);
  EXPECT_EQ(r0.gpu.kernels.at("gemm").count, 2);
  EXPECT_EQ(r0.gpu.launch.launches, 2 * one.gpu.launch.launches);
  // The device's span is the windows' spans added: the 10 ms between them was not profiled.
  EXPECT_EQ(r0.gpu.temporal.span_ns, 2 * one.gpu.temporal.span_ns);
  EXPECT_EQ(r0.gpu.temporal.busy_ns, 2 * one.gpu.temporal.busy_ns);
  EXPECT_EQ(r0.ranges.at({"host", "ProfilerStep#1"}).count, 2);
  // Both windows' step is #1: window 1's becomes iteration 1 x 10 + 1, on every rank.
  for (const RankAnalysis& r : job->ranks) {
    ASSERT_EQ(r.collectives.calls.size(), 2u);
    EXPECT_EQ(r.collectives.calls[0].iteration, 1);
    EXPECT_EQ(r.collectives.calls[1].iteration, 11);
    EXPECT_EQ(r.collectives.calls[1].arrive_ns - r.collectives.calls[0].arrive_ns, gap);
  }
  EXPECT_EQ(job->stragglers.matched, 2);
  const Table& ranks = job->tables.front();
  ASSERT_EQ(ranks.name, "ranks");
  const auto column = std::find(ranks.columns.begin(), ranks.columns.end(), "Windows") - ranks.columns.begin();
  for (const auto& row : ranks.rows) EXPECT_EQ(std::get<int64_t>(row[column]), 2);
  std::string notes;
  for (const std::string& n : ranks.notes) notes += n + "\n";
  EXPECT_NE(notes.find("ranks 0-1: 2 windows each"), std::string::npos) << notes;
  EXPECT_NE(notes.find("iteration k x 10 + N"), std::string::npos) << notes;
  const auto json = nlohmann::json::parse(RenderJob(*job, OutputFormat::kJson));
  EXPECT_EQ(json["ranks"][1]["windows"], 2);
  EXPECT_EQ(json["ranks"][1]["files"], nlohmann::json::array({"r1/a.json", "r1/b.json"}));
  // The summaries that went through bytes give the same job.
  auto rebuilt = JobFromRanks(std::move(saved), files, {});
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_EQ(RenderJob(*rebuilt, OutputFormat::kJson), RenderJob(*job, OutputFormat::kJson));
  // Distinct step numbers stay as they are.
  job = JobFromRanks({Cycle(0, 1, 0), Cycle(0, 2, gap)}, {"a.json", "b.json"}, {});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->ranks.size(), 1u);
  EXPECT_EQ(job->ranks[0].collectives.calls[1].iteration, 2);
}

// The job's nvtx_kern_sum table, or null.
const Table* KernSumTable(const JobAnalysis& job) {
  for (const Table& t : job.tables) {
    if (t.name == "nvtx_kern_sum") return &t;
  }
  return nullptr;
}

TEST(Job, NvtxKernSumAddsEachTripleOverTheRanksByTimeThenByName) {
  std::vector<RankAnalysis> ranks = {Cycle(0, 1, 0), Cycle(1, 1, 0)};
  ranks[0].range_kernels.At("b", "host", "k").kernels.Add(77);  // equal times: by name
  ranks[1].range_kernels.At("a", "host", "k").kernels.Add(77);
  ranks[1].range_kernels.Compact();  // as AnalyzeRank leaves it
  auto job = JobFromRanks(std::move(ranks), {"rank-0.json", "rank-1.json"}, {});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const Table* t = KernSumTable(*job);
  ASSERT_NE(t, nullptr);
  const auto col = [&](const char* name) {
    return static_cast<size_t>(std::find(t->columns.begin(), t->columns.end(), name) - t->columns.begin());
  };
  std::vector<std::tuple<std::string, std::string, int64_t, int64_t, int64_t>> rows;
  for (const auto& row : t->rows) {
    rows.emplace_back(std::get<std::string>(row[col("Range")]), std::get<std::string>(row[col("Kernel Name")]),
                      std::get<int64_t>(row[col("Total Time (ns)")]), std::get<int64_t>(row[col("Kern Inst")]),
                      std::get<int64_t>(row[col("Ranks")]));
  }
  using Row = std::tuple<std::string, std::string, int64_t, int64_t, int64_t>;
  EXPECT_EQ(rows, (std::vector<Row>{Row{"ProfilerStep#1", "ncclDevKernel_AllReduce_Sum_f32", 600'000, 2, 2},
                                    Row{"ProfilerStep#1", "gemm", 100'000, 2, 2}, Row{"a", "k", 77, 1, 1},
                                    Row{"b", "k", 77, 1, 1}}));
}

TEST(Job, NvtxKernSumShowsFortyRowsCutAfterTiesOrderedByName) {
  // 60 triples of equal time over two ranks (each rank has every other one): the forty
  // shown are the first forty by name, and the rest are counted.
  std::vector<RankAnalysis> ranks = {Cycle(0, 1, 0), Cycle(1, 1, 0)};
  for (int i = 59; i >= 0; --i) {
    char name[8];
    std::snprintf(name, sizeof(name), "r%02d", i);
    ranks[static_cast<size_t>(i % 2)].range_kernels.At(name, "host", "k").kernels.Add(5);
  }
  auto job = JobFromRanks(std::move(ranks), {"rank-0.json", "rank-1.json"}, {});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const Table* t = KernSumTable(*job);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), 40u);
  const size_t range = static_cast<size_t>(std::find(t->columns.begin(), t->columns.end(), "Range") - t->columns.begin());
  EXPECT_EQ(std::get<std::string>(t->rows[2][range]), "r00");  // after the two rows of the step
  EXPECT_EQ(std::get<std::string>(t->rows[39][range]), "r37");
  ASSERT_EQ(t->notes.size(), 1u);
  EXPECT_EQ(t->notes[0].substr(0, 3), "22 ") << t->notes[0];
}

TEST(Job, ABadRankFailsTheJobNamingTheFile) {
  testing::TempDir dir;
  std::ofstream(dir.file("rank-0.json")) << R"({"traceEvents": []})";
  std::ofstream(dir.file("rank-1.json")) << R"({"traceEvents": [{"ph": "X", "cat": "kernel")";
  auto job = AnalyzeJob({dir.path()}, {}, 2, nullptr);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("rank-1.json"), std::string::npos) << job.status().ToString();
  testing::TempDir db;
  std::ofstream(db.file("report_0.sqlite")) << "not a database";
  job = AnalyzeJob({db.path()}, {}, 1, nullptr);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("report_0.sqlite: not an SQLite database"), std::string::npos)
      << job.status().ToString();
}

TEST(Job, TheCorpusPairMatchesHtaAndWeighsItsStragglerCandidate) {
  const std::string dir = testing::CorpusDir() + "/traces/field/";
  const std::vector<std::string> files = {dir + "hta__trace_filter__sampled_rank-1.json.gz",
                                          dir + "hta__trace_filter__sampled_rank-0.json.gz"};
  TS_SKIP_UNLESS(std::filesystem::exists(files[0]), files[0]);
  size_t calls = 0;
  auto job = AnalyzeJob(files, {}, 2, [&](size_t done, size_t total, const std::string&, double) {
    ++calls;
    EXPECT_EQ(total, 2u);
    EXPECT_LE(done, total);
  });
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(calls, 2u);
  ASSERT_EQ(job->ranks.size(), 2u);
  EXPECT_EQ(job->ranks[0].rank, 0);  // sorted by rank, from distributedInfo
  EXPECT_EQ(job->ranks[0].rank_from, "distributedInfo");
  EXPECT_EQ(job->ranks[0].world_size, 128);
  // HTA 0.5 get_temporal_breakdown (include_last_profiler_step=True), in us: rank 0 idle
  // 675191, compute 210320, span 1222847; rank 1 651136, 271973, 1231186.
  EXPECT_EQ(job->ranks[0].gpu.temporal.span_ns, 1'222'847'000);
  EXPECT_EQ(job->ranks[0].gpu.temporal.idle_ns(), 675'191'000);
  EXPECT_EQ(job->ranks[0].gpu.temporal.compute_ns, 210'320'000);
  EXPECT_EQ(job->ranks[1].gpu.temporal.idle_ns(), 651'136'000);
  EXPECT_EQ(job->ranks[1].gpu.temporal.compute_ns, 271'973'000);
  // get_comm_comp_overlap: 14.95 and 19.93 %.
  EXPECT_NEAR(job->ranks[0].gpu.CommCompOverlapPct(), 14.95, 0.005);
  EXPECT_NEAR(job->ranks[1].gpu.CommCompOverlapPct(), 19.93, 0.005);
  // get_potential_stragglers(num_candidates=1) says [1]: rank 1 carries most of the
  // waiting here too, but 10 collectives of 2 ranks (of 128) could gather it so by chance
  // (p = 0.3): a candidate, not a finding.
  EXPECT_GT(job->stragglers.ranks[1].late_ns, 2 * job->stragglers.ranks[0].late_ns);
  EXPECT_EQ(job->stragglers.ranks[1].times_last, 7);
  EXPECT_GT(job->stragglers.p_value, 0.1);
  EXPECT_EQ(job->stragglers.ranks[1].offset_ns, 170'000);  // the median difference of the ends
  for (const Finding& f : job->findings) EXPECT_NE(f.rule, "straggler");
  for (size_t i = 1; i < job->findings.size(); ++i) {
    EXPECT_GE(job->findings[i - 1].explained_ns, job->findings[i].explained_ns);  // ranked as the header says
  }
  const std::string text = RenderJob(*job, OutputFormat::kText);
  for (const char* name : {"== temporal_breakdown ==", "== kernel_type_breakdown ==", "== kernel_breakdown ==",
                           "== comm_comp_overlap ==", "== idle_time_breakdown ==", "== kernel_launch_stats ==",
                           "== queue_length ==", "== stragglers ==", "== straggler_collectives ==",
                           "== nvtx_sum ==", "== nvtx_kern_sum =="}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
  const auto json = nlohmann::json::parse(RenderJob(*job, OutputFormat::kJson));
  EXPECT_EQ(json["ranks"].size(), 2u);
  const std::string diff = RenderJobDiff(*job, *job, OutputFormat::kText);
  EXPECT_NE(diff.find("== job_diff_ranks =="), std::string::npos);
}

TEST(Job, NsysExportsNamedReportNAreAJob) {
  // nsys -o report_%q{RANK}: two ranks' exports (the corpus's one export, twice).
  const std::string db = testing::CorpusDir() + "/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite";
  TS_SKIP_UNLESS(std::filesystem::exists(db), db);
  testing::TempDir dir;
  std::filesystem::create_symlink(db, dir.file("report_1.sqlite"));
  std::filesystem::create_symlink(db, dir.file("report_0.sqlite"));
  auto job = AnalyzeJob({dir.path()}, {}, 2, nullptr);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->ranks.size(), 2u);
  EXPECT_EQ(job->ranks[1].rank, 1);
  EXPECT_EQ(job->ranks[1].rank_from, "number in the file name");
  // The export's 10 saxpy kernels on each rank, as sqlite3 counts them (test_nsys_export.py).
  EXPECT_TRUE(job->ranks[0].gpu.has_device_events);
  EXPECT_EQ(job->ranks[0].gpu.temporal.compute_ns, job->ranks[1].gpu.temporal.compute_ns);
  const std::string text = RenderJob(*job, OutputFormat::kText);
  EXPECT_NE(text.find("saxpy(double *, double *, double *, double, int)"), std::string::npos) << text;
}

TEST(Job, RankSummariesSavedAndLoadedGiveTheSameJob) {
  // What a Dask worker sends the client: each rank's summary as bytes, then the job.
  const std::string dir = testing::CorpusDir() + "/traces/field/";
  const std::vector<std::string> files = {dir + "hta__trace_filter__sampled_rank-0.json.gz",
                                          dir + "hta__trace_filter__sampled_rank-1.json.gz"};
  TS_SKIP_UNLESS(std::filesystem::exists(files[0]), files[0]);
  auto direct = AnalyzeJob(files, {}, 2, nullptr);
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  std::vector<RankAnalysis> ranks;
  for (const std::string& f : files) {
    auto t = LoadTrace(f);
    ASSERT_TRUE(t.ok());
    const std::string bytes = SaveRankSummary(AnalyzeRank(*t, {}));
    // Per distinct kernel, range and collective, never per event: 0.27 MB here.
    EXPECT_LT(bytes.size(), 1'000'000u);
    auto back = LoadRankSummary(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ranks.push_back(std::move(*back));
  }
  auto rebuilt = JobFromRanks(std::move(ranks), files, direct->plan);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_EQ(RenderJob(*rebuilt, OutputFormat::kJson), RenderJob(*direct, OutputFormat::kJson));
  EXPECT_FALSE(LoadRankSummary("not msgpack").ok());
  {  // a summary whose kernel type is out of range is refused, never indexed
    auto t = LoadTrace(files[0]);
    ASSERT_TRUE(t.ok());
    nlohmann::json j = nlohmann::json::from_msgpack(SaveRankSummary(AnalyzeRank(*t, {})));
    ASSERT_FALSE(j["gpu"]["kernels"].empty());
    j["gpu"]["kernels"][0][1][0] = 255;
    const std::vector<uint8_t> bad = nlohmann::json::to_msgpack(j);
    auto r = LoadRankSummary(std::string(bad.begin(), bad.end()));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("kernel type 255"), std::string::npos) << r.status().ToString();
  }
  EXPECT_FALSE(JobFromRanks({}, {}, {}).ok());
}

TEST(Job, TheT4JobsRankDirectoriesHoldThreeWindowsEachReadInTimeOrder) {
  // A real torchrun job on 4 T4s as its users keep it: rank_0/ ... rank_3/, one Kineto file
  // per profiler step (tensorboard_trace_handler), metadata_rank_N.yml and an index beside.
  const std::string dir = testing::CorpusDir() + "/traces/vendors/t4_p2p_job";
  TS_SKIP_UNLESS(std::filesystem::exists(dir + "/steps_index.csv"), dir + "/steps_index.csv");
  // steps_index.csv: step, profiler_step, config_annotation, rank, file, events; by step.
  std::map<int, std::vector<std::string>> expected;
  std::ifstream csv(dir + "/steps_index.csv");
  std::string line;
  std::getline(csv, line);
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    ASSERT_EQ(f.size(), 6u) << line;
    expected[std::stoi(f[3])].push_back(dir + "/" + f[4]);
  }
  ASSERT_EQ(expected.size(), 4u);
  auto job = AnalyzeJob({dir}, {}, 2, nullptr);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->ranks.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const RankAnalysis& r = job->ranks[static_cast<size_t>(rank)];
    EXPECT_EQ(r.rank, rank);
    EXPECT_EQ(r.rank_from, "distributedInfo");
    EXPECT_EQ(r.world_size, 4);
    EXPECT_EQ(r.windows, expected[rank]) << "rank " << rank;  // steps #0, #1, #2: the files' time order
    EXPECT_EQ(r.units, 3);
    for (int step = 0; step < 3; ++step) {
      EXPECT_EQ(r.ranges.at({"host", "ProfilerStep#" + std::to_string(step)}).count, 1) << rank << " " << step;
    }
  }
  // Each step is one send from rank 3 (to rank 0, 1, 0): rank 3 sent in all three windows.
  EXPECT_EQ(job->ranks[3].collectives.point_to_point, 3);
  EXPECT_EQ(job->ranks[2].collectives.point_to_point, 0);
  const Table& ranks = job->tables.front();
  const auto column = std::find(ranks.columns.begin(), ranks.columns.end(), "Windows") - ranks.columns.begin();
  for (const auto& row : ranks.rows) EXPECT_EQ(std::get<int64_t>(row[column]), 3);
  const std::string text = RenderJob(*job, OutputFormat::kText);
  for (const std::string& s : std::vector<std::string>{"ranks 0-3: 3 windows each",
                              "Skipped, not traces (YAML): metadata_rank_0.yml, metadata_rank_1.yml, metadata_rank_2.yml, "
                              "metadata_rank_3.yml (in " + dir + ")",
                              "Skipped, not traces (CSV): steps_index.csv (in " + dir + ")"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s;
  }
  const auto json = nlohmann::json::parse(RenderJob(*job, OutputFormat::kJson));
  EXPECT_EQ(json["ranks"][3]["windows"], 3);
}

TEST(Job, AnExecutionTraceACsvAndYamlBesideTheTraceAreSkippedWithNotes) {
  const std::string vendors = testing::CorpusDir() + "/traces/vendors/";
  const std::string et = vendors + "execution_trace/execution_trace__benchmark_simple_add_et.json.gz";
  const std::string kineto = vendors + "execution_trace/execution_trace__benchmark_simple_add_trace.json.gz";
  const std::string rocprof = vendors + "rocprofv3/rocprof__908_results.json.gz";
  for (const std::string& f : {et, kineto, rocprof}) TS_SKIP_UNLESS(std::filesystem::exists(f), f);
  testing::TempDir dir;
  for (const std::string& f : {et, kineto, rocprof}) {
    std::filesystem::create_symlink(f, dir.file(std::filesystem::path(f).filename().string()));
  }
  testing::WriteBytes(dir.file("kernels.csv"), "Kernel,Duration\ngemm,10\n");
  testing::WriteBytes(dir.file("config.yaml"), "model: simple_add\n");
  auto job = AnalyzeJob({dir.path()}, {}, 2, nullptr);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->ranks.size(), 1u);
  EXPECT_EQ(job->ranks[0].source, dir.file("execution_trace__benchmark_simple_add_trace.json.gz"));
  std::string notes;
  for (const std::string& n : job->notes) notes += n + "\n";
  EXPECT_NE(notes.find("Skipped, not traces (PyTorch execution traces (operators, not a timeline)): "
                       "execution_trace__benchmark_simple_add_et.json.gz (in " + dir.path() + ")"),
            std::string::npos) << notes;
  EXPECT_NE(notes.find("rocprofv3 results"), std::string::npos) << notes;
  EXPECT_NE(notes.find("rocprof__908_results.json.gz"), std::string::npos) << notes;
  EXPECT_NE(notes.find("(CSV): kernels.csv (in " + dir.path() + ")"), std::string::npos) << notes;
  EXPECT_NE(notes.find("(YAML): config.yaml (in " + dir.path() + ")"), std::string::npos) << notes;
  const auto json = nlohmann::json::parse(RenderJob(*job, OutputFormat::kJson));
  EXPECT_EQ(json["notes"].size(), job->notes.size());
}

TEST(Job, TwoRunsClaimingOneRankAtTheSameTimeAreRefusedInOneLine) {
  testing::TempDir dir;
  testing::WriteBytes(dir.file("run_a.json"), KinetoTrace(0, 1, 1000, 4000));
  testing::WriteBytes(dir.file("run_b.json"), KinetoTrace(0, 1, 2000, 4000));  // rank 0 again, overlapping
  testing::WriteBytes(dir.file("run_c.json"), KinetoTrace(1, 1, 1000, 4000));
  auto job = AnalyzeJob({dir.path()}, {}, 2, nullptr);
  ASSERT_FALSE(job.ok());
  const std::string m = job.status().message();
  EXPECT_NE(m.find("two traces are rank 0 (by distributedInfo) and overlap in time"), std::string::npos) << m;
  EXPECT_NE(m.find(dir.file("run_a.json") + " and " + dir.file("run_b.json")), std::string::npos) << m;
  const testing::Result cli = testing::RunCli("analyze " + dir.path());
  EXPECT_EQ(cli.code, 2) << cli.out;  // InvalidArgument
  EXPECT_EQ(std::count(cli.out.begin(), cli.out.end(), '\n'), 1) << cli.out;
  EXPECT_NE(cli.out.find("overlap in time"), std::string::npos) << cli.out;
  // The same traces one after another are a rank's windows.
  testing::WriteBytes(dir.file("run_b.json"), KinetoTrace(0, 2, 9000, 4000));
  job = AnalyzeJob({dir.path()}, {}, 2, nullptr);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->ranks.size(), 2u);
  EXPECT_EQ(job->ranks[0].windows, (std::vector<std::string>{dir.file("run_a.json"), dir.file("run_b.json")}));
}

}  // namespace
}  // namespace tierscope
