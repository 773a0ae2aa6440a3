// rocprofv3's CSV files (ROCm 7's layout with "Agent N" ids and streams, ROCm 6.2's with
// node ids and no stream, rocpd's converter with a Guid column) read as one run: kernels on
// their GPU and stream with their grid in workgroups, API calls joined by correlation,
// roctx ranges, copies; bad rows counted, not fatal.
#include "trace/rocprof_csv.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "trace/args.h"

namespace tierscope {
namespace {

const char kAgents[] =
    "\"Node_Id\",\"Logical_Node_Id\",\"Agent_Type\",\"Cu_Count\",\"Name\",\"Product_Name\"\n"
    "0,0,\"CPU\",0,\"AMD EPYC\",\"AMD EPYC\"\n"
    "2,1,\"GPU\",304,\"gfx942\",\"AMD Instinct MI300X\"\n"
    "3,2,\"GPU\",304,\"gfx942\",\"AMD Instinct MI300X\"\n";
const char kKernels7[] =
    "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\","
    "\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\","
    "\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\","
    "\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"\n"
    "\"KERNEL_DISPATCH\",\"Agent 1\",1,7,834304,1,10,\"void add<float>(float*, float const*)\",5,1000,1500,0,0,8,0,16,"
    "256,1,1,1024,1,1\n"
    "\"KERNEL_DISPATCH\",\"Agent 2\",1,0,834304,2,11,\"gemm\",6,2000,2600,0,0,8,0,16,64,1,1,100,4,1\n"
    "\"KERNEL_DISPATCH\",\"Agent 9\",1,0,834304,3,11,\"gemm\",7,3000,3100,0,0,8,0,16,64,1,1,100,4,1\n"
    "\"KERNEL_DISPATCH\",\"Agent 1\",1,7,834304,4,11,\"gemm\",8,4000,3900,0,0,8,0,16,64,1,1,100,4,1\n"
    "\"KERNEL_DISPATCH\",\"Agent 1\",1,7\n";
const char kHip[] =
    "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n"
    "\"HIP_RUNTIME_API_EXT\",\"hipLaunchKernel\",4242,834304,5,900,950\n"
    "\"HIP_RUNTIME_API_EXT\",\"hipLaunchKernel\",4242,834304,6,1900,1950\n"
    "\"HIP_RUNTIME_API_EXT\",\"hipMemcpyAsync\",4242,834304,9,100,120\n";
const char kMarkers[] =
    "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n"
    "\"MARKER_CORE_API\",\"forward\",4242,834304,3,800,5000\n";
const char kCopies[] =
    "\"Kind\",\"Direction\",\"Stream_Id\",\"Source_Agent_Id\",\"Destination_Agent_Id\",\"Correlation_Id\","
    "\"Start_Timestamp\",\"End_Timestamp\"\n"
    "\"MEMORY_COPY\",\"MEMORY_COPY_HOST_TO_DEVICE\",7,\"Agent 0\",\"Agent 1\",9,130,400\n";

const Event* Find(const Trace& t, std::string_view name) {
  for (const Event& e : t.events) {
    if (t.strings.Get(e.name) == name) return &e;
  }
  return nullptr;
}

TEST(RocprofCsv, ARunsFilesBecomeOneTraceWithKernelsOnTheirGpuAndStream) {
  auto r = ImportRocprofCsvTexts({{"agent_info", kAgents},
                                  {"kernel_trace", kKernels7},
                                  {"hip_api_trace", kHip},
                                  {"marker_api_trace", kMarkers},
                                  {"memory_copy_trace", kCopies}},
                                 "run/4242_kernel_trace.csv");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Trace& t = *r;
  EXPECT_EQ(t.format, "rocprofv3-csv");
  EXPECT_EQ(t.runtime, "hip");
  EXPECT_EQ(t.device_name, "AMD Instinct MI300X");
  EXPECT_EQ(t.device_units, 304);
  EXPECT_EQ(t.host_pid, 4242);
  const Event* add = Find(t, "void add<float>(float*, float const*)");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->kind, EventKind::kKernel);
  EXPECT_EQ(add->pid, 0);  // Agent 1 = logical node 1 = the first GPU
  EXPECT_EQ(add->tid, 7);  // its stream
  EXPECT_EQ(add->ts_ns, 1000);
  EXPECT_EQ(add->dur_ns, 500);
  EXPECT_EQ(add->correlation, 5);
  EXPECT_EQ(ArgDims(t.strings.Get(add->args), "grid"), (std::vector<int64_t>{4, 1, 1}));  // 1024 items / 256
  EXPECT_EQ(ArgDims(t.strings.Get(add->args), "block"), (std::vector<int64_t>{256, 1, 1}));
  const Event* gemm = Find(t, "gemm");
  EXPECT_EQ(gemm->pid, 1);  // Agent 2: the second GPU
  EXPECT_EQ(gemm->tid, 1);  // no stream: its queue
  EXPECT_EQ(ArgDims(t.strings.Get(gemm->args), "grid"), (std::vector<int64_t>{2, 4, 1}));
  EXPECT_EQ(Find(t, "hipLaunchKernel")->kind, EventKind::kRuntime);
  EXPECT_EQ(Find(t, "forward")->kind, EventKind::kAnnotation);
  const Event* copy = Find(t, "MEMORY_COPY_HOST_TO_DEVICE");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->kind, EventKind::kMemcpy);
  EXPECT_EQ(copy->pid, 0);
  // Unknown agent, end before start, a short row: counted, the rest kept.
  EXPECT_EQ(t.stats.malformed, 3);
  EXPECT_EQ(t.stats.malformed_reasons.at("unknown Agent_Id"), 1);
  EXPECT_EQ(t.stats.malformed_reasons.at("time out of range"), 1);
  EXPECT_EQ(t.stats.malformed_reasons.at("row with missing columns or an open quote"), 1);
  EXPECT_EQ(t.events.size(), 7u);
  EXPECT_EQ(t.stats.events_kept, 7);
  EXPECT_EQ(t.stats.events_read, 10);
  for (size_t i = 1; i < t.events.size(); ++i) EXPECT_LE(t.events[i - 1].ts_ns, t.events[i].ts_ns);
}

TEST(RocprofCsv, Rocm62NodeIdsAndRocpdsGuidColumnAndLowerCaseHeadersRead) {
  const char old_kernels[] =
      "Kind,Agent_Id,Queue_Id,Kernel_Id,Kernel_Name,Correlation_Id,Start_Timestamp,End_Timestamp,"
      "Private_Segment_Size,Group_Segment_Size,Workgroup_Size_X,Workgroup_Size_Y,Workgroup_Size_Z,"
      "Grid_Size_X,Grid_Size_Y,Grid_Size_Z\n"
      "KERNEL_DISPATCH,3,5,1,k,1,10,20,0,0,64,1,1,640,1,1\n";
  auto old = ImportRocprofCsvTexts({{"agent_info", kAgents}, {"kernel_trace", old_kernels}}, "old");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  ASSERT_EQ(old->events.size(), 1u);
  EXPECT_EQ(old->events[0].pid, 1);  // node 3: the second GPU
  EXPECT_EQ(old->events[0].tid, 5);
  const char converted[] =
      "\"Guid\",\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Kernel_Name\",\"Correlation_Id\","
      "\"Start_Timestamp\",\"End_Timestamp\",\"Duration\",\"Workgroup_Size_X\",\"Grid_Size_X\"\n"
      "\"0000ddb5\",\"KERNEL_DISPATCH\",\"Agent 1\",1,3,\"k\",2,10,30,20,64,64\n";
  const char regions[] =
      "\"guid\",\"domain\",\"function\",\"process_id\",\"thread_id\",\"correlation_id\",\"start_timestamp\","
      "\"end_timestamp\"\n"
      "\"0000ddb5\",\"HIP_RUNTIME_API_EXT\",\"hipLaunchKernel\",137,137,2,5,8\n";
  auto conv = ImportRocprofCsvTexts({{"agent_info", kAgents}, {"kernel_trace", converted}, {"regions_trace", regions}},
                                    "out");
  ASSERT_TRUE(conv.ok()) << conv.status().ToString();
  ASSERT_EQ(conv->events.size(), 2u);
  EXPECT_EQ(conv->events[0].kind, EventKind::kRuntime);
  EXPECT_EQ(conv->events[1].tid, 3);
  EXPECT_EQ(conv->events[1].correlation, 2);
}

TEST(RocprofCsv, WithoutAgentInfoEachAgentIsAGpuInOrderOfSight) {
  auto r = ImportRocprofCsvTexts({{"kernel_trace", kKernels7}}, "k");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->stats.malformed_reasons.count("unknown Agent_Id"), 0u);
  EXPECT_EQ(r->device_name, "");
  EXPECT_EQ(Find(*r, "gemm")->pid, 1);
}

TEST(RocprofCsv, FilesNotOfATraceAndEmptyRunsAreClearErrors) {
  auto none = ImportRocprofCsvTexts({{"kernel_trace", "\"a\",\"b\"\n"}}, "x_kernel_trace.csv");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("x_kernel_trace.csv: no rocprofv3 trace rows"), std::string::npos)
      << none.status().message();
  auto bad_name = ImportRocprofCsv("/tmp/results.csv");
  EXPECT_EQ(bad_name.status().code(), StatusCode::kInvalidArgument);
}

TEST(RocprofCsv, AnyFileOfARunReadsTheWholeRunBesideIt) {
  testing::TempDir dir;
  const std::filesystem::path d(dir.path());
  std::ofstream(d / "4242_kernel_trace.csv") << kKernels7;
  std::ofstream(d / "4242_hip_api_trace.csv") << kHip;
  std::ofstream(d / "4242_agent_info.csv") << kAgents;
  std::ofstream(d / "99_hip_api_trace.csv") << kHip;  // another process's run: not read
  EXPECT_TRUE(IsRocprofCsv((d / "4242_hip_api_trace.csv").string()));
  EXPECT_FALSE(IsRocprofCsv((d / "4242_other.csv").string()));
  auto r = ImportRocprofCsv((d / "4242_hip_api_trace.csv").string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->events.size(), 5u);  // 2 kernels (one names an unknown agent) + 3 calls
  EXPECT_EQ(r->device_name, "AMD Instinct MI300X");
}

}  // namespace
}  // namespace tierscope
