// rocpd's SQLite database (schema 3, tables suffixed by each process's UUID) read into a
// Trace: kernels by their symbol's display name on their GPU and stream, API calls and
// roctx ranges joined by the events' stack_id, copies with their bytes; bad rows counted;
// other databases refused in one line.
#include "trace/rocpd_import.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "test_util.h"
#include "trace/rocpd_schema.h"
#include "trace/args.h"

namespace tierscope {
namespace {

// One process's rows: a launch and its kernel, a roctx range, a copy, a kernel on a second
// GPU with no stream, and two bad rows.
const char kRows[] = R"(CREATE VIEW rocpd_kernel_dispatch AS SELECT * FROM rocpd_kernel_dispatch_0192;
INSERT INTO rocpd_string_0192 (id, string) VALUES (1, 'hipLaunchKernel'), (2, 'HIP_RUNTIME_API_EXT'),
  (3, 'MARKER_CORE_API'), (4, 'roctxRangePushA'), (5, 'MEMORY_COPY_DEVICE_TO_HOST'), (6, 'KERNEL_DISPATCH');
INSERT INTO rocpd_info_agent_0192 (id, type, type_index, name, product_name, extdata) VALUES
  (0, 'CPU', 0, 'EPYC', 'AMD EPYC', '{}'),
  (2, 'GPU', 0, 'gfx942', 'AMD Instinct MI300X', '{"cu_count": 304}'),
  (3, 'GPU', 1, 'gfx942', 'AMD Instinct MI300X', 'not json');
INSERT INTO rocpd_info_kernel_symbol_0192 (id, kernel_name, display_name) VALUES (10, '_Z4gemmv', 'gemm()');
INSERT INTO rocpd_event_0192 (id, category_id, stack_id, extdata) VALUES
  (1, 2, 77, '{}'), (2, 6, 77, '{}'), (3, 3, 78, '{"message": "forward"}'), (4, 2, 79, '{}');
INSERT INTO rocpd_region_0192 (pid, tid, start, end, name_id, event_id) VALUES
  (4242, 4243, 100, 150, 1, 1), (4242, 4243, 50, 900, 4, 3), (4242, 4243, 200, 100, 1, 4);
INSERT INTO rocpd_kernel_dispatch_0192 (agent_id, kernel_id, queue_id, stream_id, start, end, workgroup_size_x,
  workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id) VALUES
  (2, 10, 1, 5, 300, 700, 256, 1, 1, 1024, 2, 1, 2), (3, 10, 9, 0, 800, 850, 64, 1, 1, 64, 1, 1, NULL),
  (7, 10, 1, 5, 300, 700, 1, 1, 1, 1, 1, 1, NULL);
INSERT INTO rocpd_memory_copy_0192 (start, end, name_id, dst_agent_id, src_agent_id, size, stream_id) VALUES
  (160, 260, 5, 0, 2, 4096, 5);
)";

struct Db {
  sqlite3* db = nullptr;
  explicit Db(const char* sql) {
    sqlite3_open(":memory:", &db);
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      ADD_FAILURE() << err;
      sqlite3_free(err);
    }
  }
  ~Db() { sqlite3_close(db); }
};

const Event* Find(const Trace& t, std::string_view name) {
  for (const Event& e : t.events) {
    if (t.strings.Get(e.name) == name) return &e;
  }
  return nullptr;
}

TEST(RocpdImport, KernelsCallsRangesAndCopiesFromEachProcesssTables) {
  Db db((std::string(testing::kRocpdSchema) + kRows).c_str());
  ASSERT_TRUE(IsRocpdDb(db.db));
  auto r = ImportRocpdDb(db.db, "x_results.db");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Trace& t = *r;
  EXPECT_EQ(t.format, "rocpd");
  EXPECT_EQ(t.runtime, "hip");
  EXPECT_EQ(t.device_name, "AMD Instinct MI300X");
  EXPECT_EQ(t.device_units, 304);
  EXPECT_EQ(t.host_pid, 4242);
  const Event* gemm = Find(t, "gemm()");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->kind, EventKind::kKernel);
  EXPECT_EQ(gemm->pid, 0);
  EXPECT_EQ(gemm->tid, 5);
  EXPECT_EQ(gemm->ts_ns, 300);
  EXPECT_EQ(gemm->dur_ns, 400);
  EXPECT_EQ(gemm->correlation, 77);
  EXPECT_EQ(ArgDims(t.strings.Get(gemm->args), "grid"), (std::vector<int64_t>{4, 2, 1}));
  const Event* launch = Find(t, "hipLaunchKernel");
  EXPECT_EQ(launch->kind, EventKind::kRuntime);
  EXPECT_EQ(launch->correlation, 77);  // joins the kernel
  EXPECT_EQ(Find(t, "forward")->kind, EventKind::kAnnotation);
  const Event* copy = Find(t, "MEMORY_COPY_DEVICE_TO_HOST");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->kind, EventKind::kMemcpy);
  EXPECT_EQ(ArgNumber(t.strings.Get(copy->args), "bytes"), 4096);
  // The second GPU's kernel (its queue as the stream), and two bad rows counted.
  int on_second = 0;
  for (const Event& e : t.events) on_second += e.pid == 1 && e.kind == EventKind::kKernel && e.tid == 9;
  EXPECT_EQ(on_second, 1);
  EXPECT_EQ(t.stats.malformed_reasons.at("unknown agent_id"), 1);
  EXPECT_EQ(t.stats.malformed_reasons.at("time out of range"), 1);
  EXPECT_EQ(t.events.size(), 5u);
  EXPECT_EQ(t.stats.events_read, 7);
}

TEST(RocpdImport, OtherDatabasesAndLaterSchemasAreRefusedInOneLine) {
  Db other("CREATE TABLE StringIds (id INTEGER, value TEXT);");
  EXPECT_FALSE(IsRocpdDb(other.db));
  auto r = ImportRocpdDb(other.db, "nsys.sqlite");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("nsys.sqlite: not a rocpd database"), std::string::npos);

  Db v4("CREATE TABLE rocpd_region_01 (id INTEGER); CREATE TABLE rocpd_timestamp_01 (value BIGINT);");
  auto later = ImportRocpdDb(v4.db, "v4.db");
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.status().message().find("does not read yet"), std::string::npos);

  // A table with a column missing: an SQL error named, not a crash.
  Db broken("CREATE TABLE rocpd_kernel_dispatch_01 (id INTEGER, start BIGINT);");
  auto b = ImportRocpdDb(broken.db, "b.db");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("b.db: reading rocpd_kernel_dispatch"), std::string::npos) << b.status().message();
}

}  // namespace
}  // namespace tierscope
