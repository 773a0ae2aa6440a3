// diff_explained on built traces: a kernel made faster explains the step's change, a
// removed kernel explains its share, and restructured work is refused, said.
#include "analysis/diff_explained.h"

#include <gtest/gtest.h>

#include "trace_builder.h"

namespace tierscope {
namespace {

// A step: op (0..20) launches gemm at 5 (runs 100..100+gemm_ns) and, when `with_copy`,
// a copy after it; a sync waits for the stream, then add.
Trace Step(int64_t gemm_ns, bool with_copy = true) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 10000);
  b.Op("aten::mm", 0, 20, 1);
  b.Launch("cudaLaunchKernel", "gemm_kernel", 5, 5, 100, gemm_ns, 1);
  int64_t end = 100 + gemm_ns;
  if (with_copy) {
    b.Launch("cudaLaunchKernel", "copy_kernel", 12, 5, end + 2, 100, 1);
    end += 102;
  }
  b.Launch("cudaStreamSynchronize", "Stream Sync", 20, end - 20 + 15, end, 5, 0, nullptr, EventKind::kSync);
  b.Op("aten::add", end + 30, 50, 2);
  return std::move(b.trace());
}

Table Explain(const Trace& base, const Trace& next) {
  const TraceIndex a = BuildIndex(base, AnalysisOptions{}), b = BuildIndex(next, AnalysisOptions{});
  return DiffExplainedTable(a, b);
}

const std::vector<Cell>* RowNamed(const Table& t, const std::string& name) {
  for (const auto& r : t.rows) {
    if (std::get<std::string>(r.back()) == name) return &r;
  }
  return nullptr;
}

TEST(DiffExplained, AFasterKernelExplainsTheStepsChange) {
  const Table t = Explain(Step(900), Step(450));
  const std::vector<Cell>* measured = RowNamed(t, "measured change of a step");
  const std::vector<Cell>* gemm = RowNamed(t, "name:gemm_kernel=0.5");
  ASSERT_NE(measured, nullptr) << RenderText(t);
  ASSERT_NE(gemm, nullptr) << RenderText(t);
  EXPECT_EQ(std::get<int64_t>((*measured)[0]), -450);
  EXPECT_EQ(std::get<int64_t>((*gemm)[0]), -450);
  EXPECT_NEAR(std::get<double>((*gemm)[1]), 100.0, 0.5);
  EXPECT_EQ(RowNamed(t, "name:copy_kernel=0"), nullptr);  // unchanged: no row
}

TEST(DiffExplained, HalfTheKernelsGoneIsARestructuringNotExplainedKernelByKernel) {
  // The new trace drops the copy: one of two kernels a step, beyond 10% — restructured work
  // (as batching or fusion would be), said rather than explained per kernel.
  const Table t = Explain(Step(900), Step(900, /*with_copy=*/false));
  EXPECT_TRUE(t.rows.empty()) << RenderText(t);
  ASSERT_FALSE(t.notes.empty());
  EXPECT_NE(t.notes[0].find("different numbers of kernels"), std::string::npos) << t.notes[0];
}

TEST(DiffExplained, ABaselineWithoutKernelsIsNotCalledRestructured) {
  // Host work only on both sides: 0 kernels against 0 is no restructuring.
  Builder a, b;
  for (Builder* t : {&a, &b}) {
    t->Unit("ProfilerStep#1", 0, 1000);
    t->Op("aten::add", 0, 20, 1);
  }
  const Table t = Explain(a.trace(), b.trace());
  EXPECT_TRUE(t.rows.empty()) << RenderText(t);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_EQ(t.notes[0], "the baseline has no kernels: there is no per-kernel change to explain");
}

}  // namespace
}  // namespace tierscope
