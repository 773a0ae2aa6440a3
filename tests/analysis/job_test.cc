// A job's files and ranks: directories listed, ranks from distributedInfo, file names or
// order, duplicates refused, the memory plan, and the corpus's 2-rank pair analysed whole
// (its temporal breakdown and overlap equal HTA's on the same events).
#include "analysis/job.h"
#include "analysis/rank_summary.h"
#include "analysis/commands.h"
#include "trace/json_input.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

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
  LoadPlan p = PlanLoad({10 * gib, 10 * gib, 10 * gib, 10 * gib}, 8, 24 * gib);
  EXPECT_EQ(p.in_flight, 1);  // 80% of 24 GiB / (1.5 x 10 GiB)
  EXPECT_NE(p.why.find("memory for 1 rank"), std::string::npos) << p.why;
  p = PlanLoad({gib, gib, gib}, 2, 24 * gib);
  EXPECT_EQ(p.in_flight, 2);
  EXPECT_EQ(p.why, "2 threads");
  p = PlanLoad({gib}, 16, -1);  // memory unknown: threads decide
  EXPECT_EQ(p.in_flight, 1);
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

}  // namespace
}  // namespace tierscope
