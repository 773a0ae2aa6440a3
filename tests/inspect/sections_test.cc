// Tier-3 sections: the arithmetic of speed of light and the roofline on kernels with
// known FLOPs, bytes and time; launch statistics and waves; the recommendation rule in
// each of its cases; section names and launch shapes parsed with clear errors.
#include "inspect/sections.h"

#include <gtest/gtest.h>

#include "inspect/evidence.h"

namespace tierscope {
namespace {

const SectionMetric* Metric(const KernelReport& r, const std::string& section,
                            const std::string& name) {
  for (const Section& s : r.sections) {
    if (s.id != section) continue;
    for (const SectionMetric& m : s.metrics) {
      if (m.name.rfind(name, 0) == 0) return &m;
    }
  }
  return nullptr;
}

double Value(const KernelReport& r, const std::string& section, const std::string& name) {
  const SectionMetric* m = Metric(r, section, name);
  EXPECT_NE(m, nullptr) << name;
  EXPECT_TRUE(m != nullptr && m->value.has_value()) << name << ": " << (m ? m->text : "");
  return m != nullptr && m->value ? *m->value : -1;
}

// 4 GFLOP and 200 MB in 10 ms on a 1 TFLOP/s, 100 GB/s machine with 8 workers.
KernelEvidence Known() {
  KernelEvidence e;
  // Move-assigned: GCC 12 warns falsely (-Wrestrict, PR 105329) on assigning a char* here.
  e.source = std::string("test");
  e.kernel = std::string("k");
  e.grid = Dim3{16, 2, 1};
  e.block = Dim3{64, 48, 1};
  e.units = 8;
  e.duration_ns = 10e6;
  e.duration_cv = 0.02;
  e.samples = 10;
  e.passes = 10;
  e.flops = 4e9;
  e.bytes_read = 1.5e8;
  e.bytes_written = 0.5e8;
  e.peak_flops = 1e12;
  e.peak_bw = 1e11;
  e.hot_share = 0.6;
  e.hot_rank = 1;
  return e;
}

TEST(Sections, SpeedOfLightAndRooflineFollowFromFlopsBytesAndTime) {
  const KernelReport r = BuildKernelReport(Known(), *ParseSections(""));
  EXPECT_DOUBLE_EQ(Value(r, "SpeedOfLight", "Duration"), 10000);           // us
  EXPECT_DOUBLE_EQ(Value(r, "SpeedOfLight", "Achieved FLOP/s"), 400);      // GFLOP/s
  EXPECT_DOUBLE_EQ(Value(r, "SpeedOfLight", "Achieved Bandwidth"), 20);    // GB/s
  EXPECT_DOUBLE_EQ(Value(r, "SpeedOfLight", "Compute Throughput"), 40);    // %
  EXPECT_DOUBLE_EQ(Value(r, "SpeedOfLight", "Memory Throughput"), 20);     // %
  EXPECT_EQ(Metric(r, "SpeedOfLight", "Bound By")->text, "compute");
  EXPECT_DOUBLE_EQ(Value(r, "MemoryWorkloadAnalysis", "Arithmetic Intensity"), 20);
  EXPECT_DOUBLE_EQ(Value(r, "MemoryWorkloadAnalysis", "Ridge Point"), 10);
  EXPECT_DOUBLE_EQ(Value(r, "MemoryWorkloadAnalysis", "Roofline Attainable"), 1000);
  EXPECT_DOUBLE_EQ(Value(r, "MemoryWorkloadAnalysis", "Achieved / Attainable"), 40);
  EXPECT_EQ(Metric(r, "MemoryWorkloadAnalysis", "Roofline Side")->text, "compute (right of the ridge)");
  EXPECT_DOUBLE_EQ(Value(r, "LaunchStats", "Tasks"), 32);
  EXPECT_DOUBLE_EQ(Value(r, "LaunchStats", "Waves"), 4);
  EXPECT_DOUBLE_EQ(Value(r, "LaunchStats", "FLOPs Per Task"), 4e9 / 32);
}

TEST(Sections, MemorySideOfTheRidgeIsBoundByBandwidth) {
  KernelEvidence e = Known();
  e.flops = 2e8;  // AI 1 FLOP/byte: left of the ridge
  e.duration_ns = 2.5e6;
  const KernelReport r = BuildKernelReport(e, *ParseSections(""));
  EXPECT_DOUBLE_EQ(Value(r, "SpeedOfLight", "Memory Throughput"), 80);
  EXPECT_EQ(Metric(r, "SpeedOfLight", "Bound By")->text, "memory");
  EXPECT_DOUBLE_EQ(Value(r, "MemoryWorkloadAnalysis", "Roofline Attainable"), 100);
  EXPECT_FALSE(r.recommendation.kernel_level);
  EXPECT_NE(r.recommendation.verdict.find("Near its bound"), std::string::npos);
}

TEST(Rule, TooFewTasksForTheWorkersSendsTheFixToAHigherTier) {
  KernelEvidence e = Known();
  e.grid = Dim3{1, 1, 1};  // the study's serial SGEMM: one block
  e.units = 56;
  e.duration_ns = 1e9;     // and far from any bound
  const KernelReport r = BuildKernelReport(e, {"LaunchStats"});
  EXPECT_FALSE(r.recommendation.kernel_level);
  EXPECT_EQ(r.recommendation.checks[0].ok, false);
  EXPECT_NE(r.recommendation.verdict.find("higher tier"), std::string::npos);
  EXPECT_NE(r.recommendation.verdict.find("batch"), std::string::npos);
  ASSERT_FALSE(r.sections[0].notes.empty());
  EXPECT_NE(r.sections[0].notes[0].find("at most 1.8%"), std::string::npos) << r.sections[0].notes[0];
}

TEST(Rule, AFullGridStableHotSpotFarFromItsBoundIsWorthKernelWork) {
  const Recommendation r = Recommend(Known());
  EXPECT_TRUE(r.kernel_level) << r.verdict;
  for (const RuleCheck& c : r.checks) EXPECT_EQ(c.ok, true) << c.name;
  EXPECT_NE(r.verdict.find("2.5x"), std::string::npos) << r.verdict;
}

TEST(Rule, AColdKernelOrAnUnstableTimingIsNotWorthIt) {
  KernelEvidence cold = Known();
  cold.hot_share = 0.03;
  cold.hot_rank = 5;
  EXPECT_FALSE(Recommend(cold).kernel_level);
  EXPECT_NE(Recommend(cold).verdict.find("Look elsewhere"), std::string::npos);
  KernelEvidence noisy = Known();
  noisy.duration_cv = 0.4;
  EXPECT_FALSE(Recommend(noisy).kernel_level);
  EXPECT_NE(Recommend(noisy).verdict.find("Measure again"), std::string::npos);
}

TEST(Rule, AboveTheCalibratedPeakNoVerdictIsDrawn) {
  // The field case: a stale calibration (64 GFLOP/s, measured on a busy machine) put a
  // GEMM at 142.6% of it, and the rule said "near its bound, gains at most 0.70x".
  KernelEvidence e = Known();
  e.peak_flops = 64e9;
  e.flops = 64e9 * 1.426 * 1e-2;  // in 10 ms: 91.3 GFLOP/s
  const KernelReport r = BuildKernelReport(e, *ParseSections(""));
  EXPECT_TRUE(AbovePeak(e));
  EXPECT_FALSE(r.recommendation.kernel_level);
  EXPECT_FALSE(r.recommendation.trustworthy);
  EXPECT_EQ(r.recommendation.verdict.find("Near its bound"), std::string::npos) << r.recommendation.verdict;
  EXPECT_EQ(r.recommendation.verdict.find("gains at most"), std::string::npos);
  EXPECT_NE(r.recommendation.verdict.find("No verdict"), std::string::npos);
  EXPECT_NE(r.recommendation.verdict.find("142.6% of the fp32_fma peak"), std::string::npos)
      << r.recommendation.verdict;
  EXPECT_NE(r.recommendation.verdict.find("not trustworthy"), std::string::npos);
  EXPECT_FALSE(r.recommendation.checks[2].ok.has_value());
  // Even a grid too small for the device concludes nothing from an impossible number.
  e.grid = Dim3{1, 1, 1};
  EXPECT_NE(Recommend(e).verdict.find("No verdict"), std::string::npos);
  // At or below 100% the rule runs as before.
  e = Known();
  e.flops = 1e12 * 1e-2;  // exactly the peak
  EXPECT_FALSE(AbovePeak(e));
  EXPECT_TRUE(Recommend(e).trustworthy);
  EXPECT_NE(Recommend(e).verdict.find("Near its bound"), std::string::npos);
  // Memory above its peak counts the same.
  e = Known();
  e.bytes_read = 1.15e9;  // with 0.05 GB written: 120 GB/s on a 100 GB/s machine
  EXPECT_TRUE(AbovePeak(e));
  EXPECT_NE(Recommend(e).verdict.find("memory at 120% of the bandwidth peak"), std::string::npos)
      << Recommend(e).verdict;
}

TEST(Rule, MissingEvidenceIsSaidNotGuessed) {
  KernelEvidence e;
  e.missing = "(not in this CSV)";
  e.kernel = "ampere_sgemm_128x64_tn";
  e.unit_name = "SMs";
  e.grid = Dim3{256, 1, 1};
  e.units = 108;
  e.compute_pct = 35;
  e.memory_pct = 20;
  const KernelReport r = BuildKernelReport(e, *ParseSections(""));
  EXPECT_FALSE(r.recommendation.kernel_level);
  EXPECT_EQ(r.recommendation.checks[0].ok, true);
  EXPECT_FALSE(r.recommendation.checks[1].ok.has_value());
  EXPECT_NE(r.recommendation.verdict.find("(not in this CSV)"), std::string::npos);
  EXPECT_EQ(Metric(r, "SpeedOfLight", "Duration")->text, "(not in this CSV)");
  EXPECT_DOUBLE_EQ(Value(r, "SpeedOfLight", "Compute Throughput"), 35);
}

TEST(Sections, UnknownSectionNamesTheValidOnes) {
  auto bad = ParseSections("SpeedOfLight,Occupancy");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown section 'Occupancy'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("LaunchStats, SpeedOfLight, MemoryWorkloadAnalysis"),
            std::string::npos);
  auto two = ParseSections(" MemoryWorkloadAnalysis , LaunchStats,LaunchStats");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<std::string>{"MemoryWorkloadAnalysis", "LaunchStats"}));
  EXPECT_EQ(ParseSections("")->size(), 3u);
  EXPECT_NE(ListSectionsText().find("MemoryWorkloadAnalysis"), std::string::npos);
}

TEST(Sections, LaunchShapesParseFromEveryToolsSpelling) {
  EXPECT_EQ(ParseDim3("(256, 1, 1)")->count(), 256);
  EXPECT_EQ(ParseDim3("[8, 4, 2]")->count(), 64);
  EXPECT_EQ(ParseDim3("56")->x, 56);
  EXPECT_FALSE(ParseDim3("n/a").has_value());
  EXPECT_FALSE(ParseDim3("").has_value());
  EXPECT_FALSE(ParseDim3("(0, 1, 1)").has_value());
}

TEST(Sections, JsonCarriesEveryMetricAndTheRule) {
  const KernelReport r = BuildKernelReport(Known(), *ParseSections(""));
  const nlohmann::json j = KernelReportsToJson({r});
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["sections"].size(), 3u);
  EXPECT_EQ(j[0]["recommendation"]["kernel_level"], true);
  EXPECT_EQ(j[0]["recommendation"]["checks"].size(), 3u);
  const std::string text = RenderKernelReports({r});
  EXPECT_NE(text.find("Section: Speed Of Light Throughput"), std::string::npos);
  EXPECT_NE(text.find("[yes] fills the device"), std::string::npos);
}

}  // namespace
}  // namespace tierscope
