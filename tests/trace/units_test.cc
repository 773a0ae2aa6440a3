// The one definition of a per-unit count (trace/units.h), pinned: a device event belongs to
// the unit that launched it even when it runs after the unit closes, a synchronisation is
// no launch, copies and memsets are memory operations, and a zero-byte memory event is
// neither an allocation nor a free.
#include "trace/units.h"

#include <gtest/gtest.h>

namespace tierscope {
namespace {

Trace TwoUnits() {
  Trace t;
  t.Add(EventKind::kAnnotation, "ProfilerStep#1", 1000, 1000);  // [1000, 2000]
  t.Add(EventKind::kAnnotation, "ProfilerStep#2", 3000, 1000);  // [3000, 4000]
  for (int64_t base : {1000, 3000}) {
    t.Add(EventKind::kOp, "aten::linear", base + 10, 100);
    Event& launch = t.Add(EventKind::kRuntime, "cudaLaunchKernel", base + 20, 5);
    launch.correlation = base + 1;
    Event& k = t.Add(EventKind::kKernel, "gemm", base + 1500, 300);  // after the unit closed
    k.correlation = base + 1;
    Event& copy_call = t.Add(EventKind::kRuntime, "cudaMemcpyAsync", base + 30, 5);
    copy_call.correlation = base + 2;
    Event& copy = t.Add(EventKind::kMemcpy, "Memcpy HtoD", base + 40, 10);
    copy.correlation = base + 2;
    t.Add(EventKind::kRuntime, "cudaStreamSynchronize", base + 50, 5);  // no device work
    t.Add(EventKind::kMemory, "[memory]", base + 60, 0).v0 = 4096;
    t.Add(EventKind::kMemory, "[memory]", base + 61, 0).v0 = 0;
    t.Add(EventKind::kMemory, "[memory]", base + 62, 0).v0 = -4096;
  }
  t.Add(EventKind::kOp, "aten::linear", 2500, 10);  // between the units: in none
  return t;
}

TEST(Units, CountsFollowTheOneDefinition) {
  const Trace t = TwoUnits();
  std::string name;
  const std::vector<WorkUnit> units = FindWorkUnits(t, "", &name);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(name, "ProfilerStep#N");
  const UnitCounts c = CountPerUnit(t, units, name);
  EXPECT_EQ(c.units, 2);
  EXPECT_EQ(c.op_calls.at("aten::linear"), 2);  // not the one between units
  EXPECT_EQ(c.launches, 4);                     // kernel and copy launches, no syncs
  EXPECT_EQ(c.kernels, 2);                      // each counted in the unit that launched it
  EXPECT_EQ(c.memory_ops, 2);
  EXPECT_EQ(c.allocations, 2);
  EXPECT_EQ(c.frees, 2);                        // the zero-byte events are neither
  EXPECT_DOUBLE_EQ(c.kernel_ns, 600);
  EXPECT_DOUBLE_EQ(c.PerUnit(static_cast<double>(c.launches)), 2);
  EXPECT_DOUBLE_EQ(c.wall_ns, 2000);
  // Without units the counts are the trace's totals.
  const UnitCounts all = CountPerUnit(t, {}, "");
  EXPECT_EQ(all.units, 0);
  EXPECT_EQ(all.op_calls.at("aten::linear"), 3);
  EXPECT_DOUBLE_EQ(all.PerUnit(3), 3);
}

TEST(Units, ARequestedAnnotationOrTheStudysScopes) {
  Trace t;
  t.Add(EventKind::kAnnotation, "serial_bert_forward", 0, 100);
  t.Add(EventKind::kAnnotation, "my_step", 200, 100);
  std::string name;
  EXPECT_EQ(FindWorkUnits(t, "", &name).size(), 1u);
  EXPECT_EQ(name, "serial_bert_forward");
  EXPECT_EQ(FindWorkUnits(t, "my_step", &name).size(), 1u);
  EXPECT_EQ(name, "my_step");
  EXPECT_TRUE(FindWorkUnits(Trace(), "", &name).empty());
  EXPECT_EQ(name, "");
  EXPECT_EQ(UnitAt(FindWorkUnits(t, "my_step", &name), 250), 0);
  EXPECT_EQ(UnitAt(FindWorkUnits(t, "my_step", &name), 350), -1);
}

}  // namespace
}  // namespace tierscope

namespace tierscope {
namespace {

// The cursor gives UnitAt's answer for times in order, out of order, in gaps, at edges,
// and for units that overlap or share a start.
TEST(Units, TheCursorFindsWhatUnitAtFinds) {
  const std::vector<WorkUnit> units = {{"a", 0, 10},  {"b", 10, 20}, {"c", 25, 40}, {"d", 30, 35},
                                       {"e", 30, 50}, {"f", 60, 60}, {"g", 61, 70}};
  std::vector<int64_t> times;
  for (int64_t t = -5; t <= 75; ++t) times.push_back(t);
  for (int64_t t = 75; t >= -5; t -= 3) times.push_back(t);
  for (int64_t t : {int64_t{35}, int64_t{0}, int64_t{70}, int64_t{22}, int64_t{60}, int64_t{61}}) times.push_back(t);
  UnitCursor cursor(units);
  for (int64_t t : times) EXPECT_EQ(cursor(t), UnitAt(units, t)) << t;
  const std::vector<WorkUnit> none;
  UnitCursor empty(none);
  EXPECT_EQ(empty(5), -1);
}

}  // namespace
}  // namespace tierscope
