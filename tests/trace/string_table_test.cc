// StringTable: interning dedups and keeps ids dense, views survive growth and moves,
// appended and adopted strings are stored but not indexed, copies are independent;
// strings spilled to a file read back the same.
#include "trace/trace.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/spill_file.h"
#include "test_util.h"

namespace tierscope {
namespace {

TEST(StringTable, InternGivesOneDenseIdPerDistinctString) {
  StringTable t;
  EXPECT_EQ(t.Intern("aten::linear"), 0);
  EXPECT_EQ(t.Intern("aten::addmm"), 1);
  EXPECT_EQ(t.Intern("aten::linear"), 0);
  EXPECT_EQ(t.Intern(""), 2);
  EXPECT_EQ(t.Intern(""), 2);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.Get(1), "aten::addmm");
  EXPECT_EQ(t.Get(2), "");
}

TEST(StringTable, ViewsStayValidWhileTheTableGrowsAndMoves) {
  StringTable t;
  std::vector<std::string_view> views;
  // Enough strings to fill several arena blocks and rehash the index many times,
  // with names that share long prefixes (like kernel names do).
  for (int i = 0; i < 200000; ++i) {
    const std::string s = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_" + std::to_string(i);
    ASSERT_EQ(t.Intern(s), i);
    views.push_back(t.Get(i));
  }
  const std::string big(600000, 'x');  // larger than a block: stored on its own
  const int32_t big_id = t.Intern(big);
  StringTable moved = std::move(t);
  for (int i = 0; i < 200000; i += 997) {
    const std::string s = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_" + std::to_string(i);
    EXPECT_EQ(views[static_cast<size_t>(i)], s);
    EXPECT_EQ(moved.Intern(s), i);
  }
  EXPECT_EQ(moved.Get(big_id), big);
  EXPECT_EQ(moved.Intern(big), big_id);
}

TEST(StringTable, ALongFirstStringFitsItsBlockAndMovedFromTablesStayUsable) {
  StringTable t;
  const std::string first(5000, 'n');  // longer than the first, small block
  const int32_t id = t.Intern(first);
  const int32_t next = t.Intern("after");
  EXPECT_EQ(t.Get(id), first);
  EXPECT_EQ(t.Get(next), "after");
  StringTable moved = std::move(t);
  t.Intern("reused after the move");  // must not write into the block `moved` owns
  moved.Intern("more");
  EXPECT_EQ(moved.Get(id), first);
  EXPECT_EQ(moved.Get(next), "after");
  EXPECT_EQ(t.Get(0), "reused after the move");
}

TEST(StringTable, AppendedStringsAreStoredButNotFoundByIntern) {
  StringTable t;
  const int32_t a = t.Append("\"correlation\": 7");
  EXPECT_EQ(t.Get(a), "\"correlation\": 7");
  EXPECT_NE(t.Intern("\"correlation\": 7"), a);  // a new, interned copy
  EXPECT_EQ(t.size(), 2u);
}

TEST(StringTable, AdoptShiftsTheOtherTablesIdsByTheReturnedOffset) {
  StringTable a, b;
  a.Intern("x");
  a.Intern("y");
  const int32_t args = b.Append("\"External id\": 3");
  const int32_t name = b.Intern("aten::mm");
  const int32_t offset = a.Adopt(std::move(b));
  EXPECT_EQ(offset, 2);
  EXPECT_EQ(a.Get(offset + args), "\"External id\": 3");
  EXPECT_EQ(a.Get(offset + name), "aten::mm");
  EXPECT_EQ(a.Intern("y"), 1);
  EXPECT_EQ(a.Intern("aten::mm"), 4);  // adopted strings are not indexed
  EXPECT_EQ(b.size(), 0u);
}

TEST(StringTable, CopiesAreIndependentAndKeepTheirIds) {
  StringTable a;
  a.Intern("one");
  a.Append("two");
  a.Intern("three");
  StringTable b = a;
  EXPECT_EQ(b.Intern("three"), 2);
  EXPECT_EQ(b.Intern("one"), 0);
  EXPECT_EQ(b.Get(1), "two");
  b.Intern("four");
  EXPECT_EQ(a.size(), 3u);
  EXPECT_EQ(b.size(), 4u);
  EXPECT_EQ(a.Intern("four"), 3);
}

TEST(StringTable, SpilledStringsReadBackEqualThroughMovesCopiesAndAdoption) {
  testing::TempDir dir;
  auto file = SpillFile::Create(dir.path());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  StringTable a, b;
  a.SpillTo(*file);
  b.SpillTo(*file);  // two readers share one file, as the streamed importer's do
  std::vector<std::string> want;
  for (int i = 0; i < 120000; ++i) {  // about 12 MiB: a dozen 1 MiB blocks
    std::string s = "\"External id\": " + std::to_string(i) + ", \"Input Dims\": [[" + std::to_string(i % 977) +
                    ", 4096], [4096, 1024]], \"pad\": \"" + std::string(static_cast<size_t>(i % 61), 'x') + "\"";
    want.push_back(s);
    (i % 2 == 0 ? a : b).Append(s);
  }
  EXPECT_EQ(a.Intern("aten::mm"), 60000);  // names still interned, found again
  EXPECT_EQ(a.Intern("aten::mm"), 60000);
  EXPECT_GT(a.spilled_bytes(), 8 << 20);
  const int32_t offset = a.Adopt(std::move(b));
  EXPECT_EQ(offset, 60001);
  a.ReleaseSpilled();
  StringTable moved = std::move(a);
  StringTable copied = moved;  // a copy holds its own bytes in memory
  file->reset();               // the tables keep the file alive
  for (int i = 0; i < 120000; ++i) {
    const int32_t id = i % 2 == 0 ? i / 2 : offset + i / 2;
    ASSERT_EQ(moved.Get(id), want[static_cast<size_t>(i)]) << i;
    ASSERT_EQ(copied.Get(id), want[static_cast<size_t>(i)]) << i;
  }
  EXPECT_EQ(copied.spilled_bytes(), 0);
  EXPECT_GT(moved.spilled_bytes(), 8 << 20);
}

// A view of a spilled string taken while its block was being gathered still reads right
// after that block is written and the next is gathered (the stages take turns).
TEST(StringTable, AViewTakenBeforeItsBlockIsWrittenStillReadsRight) {
  testing::TempDir dir;
  auto file = SpillFile::Create(dir.path());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  StringTable t;
  t.SpillTo(*file);
  const std::string big(200 << 10, 'a');  // five fill a 1 MiB block
  std::vector<std::string_view> views;
  for (int i = 0; i < 5; ++i) views.push_back(t.Get(t.Append(big + std::to_string(i))));
  const int32_t next = t.Append(std::string(views.back()) + "!");  // begins the next block
  for (int i = 0; i < 5; ++i) EXPECT_EQ(views[static_cast<size_t>(i)], big + std::to_string(i));
  EXPECT_EQ(t.Get(next), big + "4!");
  EXPECT_EQ(t.Get(4), big + "4");  // the table's own view now reads from the file
  EXPECT_GE(t.spilled_bytes(), 2 << 20);
  // Once an import's strings are put in place, their views hold whatever is appended after.
  t.FinishSpilling();
  const std::string_view last = t.Get(next);
  for (int i = 0; i < 20; ++i) t.Append(big + "x" + std::to_string(i));  // four more blocks
  EXPECT_EQ(last, big + "4!");
  EXPECT_EQ(t.Get(next + 20), big + "x19");
}

TEST(StringTable, NamesStayInMemoryAndAFullSpillFileLeavesTheRestThere) {
  testing::TempDir dir;
  auto file = SpillFile::Create(dir.path(), SpillFile::kRegionBytes, int64_t{2} << 20);  // two 1 MiB blocks
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  StringTable t;
  t.SpillTo(*file);
  std::vector<std::string> want;
  for (int i = 0; i < 40000; ++i) {  // about 4 MiB of args: half past the file's limit
    want.push_back("\"correlation\": " + std::to_string(i) + ", \"grid\": [" + std::string(80, '1') + "]");
    t.Append(want.back());
  }
  const int32_t name = t.Intern("aten::addmm");
  EXPECT_EQ((*file)->bytes(), int64_t{2} << 20);
  EXPECT_NE((*file)->error().find("reached its limit"), std::string::npos) << (*file)->error();
  t.ReleaseSpilled();
  for (int i = 0; i < 40000; ++i) ASSERT_EQ(t.Get(i), want[static_cast<size_t>(i)]) << i;
  EXPECT_EQ(t.Get(name), "aten::addmm");
  EXPECT_EQ(t.Intern("aten::addmm"), name);
}

}  // namespace
}  // namespace tierscope
