// rocpd's schema 3 tables (rocprofiler-sdk's rocpd_tables.sql), the columns tierscope's
// import reads, for one process's UUID suffix "_0192": shared by the import's test and its
// fuzzer.
#ifndef TIERSCOPE_TESTS_TRACE_ROCPD_SCHEMA_H_
#define TIERSCOPE_TESTS_TRACE_ROCPD_SCHEMA_H_

namespace tierscope::testing {

inline constexpr char kRocpdSchema[] = R"(
CREATE TABLE rocpd_string_0192 (id INTEGER PRIMARY KEY, guid TEXT, string TEXT NOT NULL UNIQUE);
CREATE TABLE rocpd_info_agent_0192 (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, type TEXT,
  absolute_index INTEGER, logical_index INTEGER, type_index INTEGER, uuid INTEGER, name TEXT, model_name TEXT,
  vendor_name TEXT, product_name TEXT, user_name TEXT, extdata JSONB DEFAULT "{}" NOT NULL);
CREATE TABLE rocpd_info_kernel_symbol_0192 (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER,
  code_object_id INTEGER, kernel_name TEXT, display_name TEXT, extdata JSONB DEFAULT "{}" NOT NULL);
CREATE TABLE rocpd_event_0192 (id INTEGER PRIMARY KEY, guid TEXT, category_id INTEGER, stack_id INTEGER,
  parent_stack_id INTEGER, correlation_id INTEGER, call_stack JSONB DEFAULT "{}" NOT NULL,
  line_info JSONB DEFAULT "{}" NOT NULL, extdata JSONB DEFAULT "{}" NOT NULL);
CREATE TABLE rocpd_region_0192 (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER,
  start BIGINT, end BIGINT, name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT "{}" NOT NULL);
CREATE TABLE rocpd_kernel_dispatch_0192 (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER,
  agent_id INTEGER, kernel_id INTEGER, dispatch_id INTEGER, queue_id INTEGER, stream_id INTEGER, start BIGINT,
  end BIGINT, private_segment_size INTEGER, group_segment_size INTEGER, workgroup_size_x INTEGER,
  workgroup_size_y INTEGER, workgroup_size_z INTEGER, grid_size_x INTEGER, grid_size_y INTEGER,
  grid_size_z INTEGER, region_name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT "{}" NOT NULL);
CREATE TABLE rocpd_memory_copy_0192 (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER,
  start BIGINT, end BIGINT, name_id INTEGER, dst_agent_id INTEGER, dst_address INTEGER, src_agent_id INTEGER,
  src_address INTEGER, size INTEGER, queue_id INTEGER, stream_id INTEGER, region_name_id INTEGER,
  event_id INTEGER, extdata JSONB DEFAULT "{}" NOT NULL);
)";

}  // namespace tierscope::testing

#endif  // TIERSCOPE_TESTS_TRACE_ROCPD_SCHEMA_H_
