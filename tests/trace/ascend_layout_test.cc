// torch_npu's trace_view.json read into the common kinds: device tasks by their process
// and task type, HCCL collectives as communication kernels on their stream, duplicates
// left out and counted, operators joined to their tasks by the async_npu flows; the same
// whole or streamed, and the real 2-rank job with kernel_details.csv and its ranks.
#include "trace/ascend_layout.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"
#include "trace/args.h"
#include "trace/ascend_details.h"
#include "trace/kineto_import.h"
#include "trace/kineto_stream.h"
#include "trace/kineto_test_traces.h"

namespace tierscope {
namespace {

// A bare list, as torch_npu writes it, with its process names last (after the events) and
// string timestamps. Hardware pid 9, CANN 8, HCCL 7, Overlap Analysis 6, Python 1.
const char kAscend[] = R"([
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":"100.000","dur":50},
{"ph":"X","cat":"cpu_op","name":"aten::inner","pid":1,"tid":1,"ts":"110.000","dur":10},
{"ph":"s","cat":"async_npu","name":"torch_to_npu","id":777,"pid":1,"tid":1,"ts":"112.000","bp":"e"},
{"ph":"X","name":"AscendCL@aclnnMm","pid":8,"tid":2,"ts":"129.000","dur":8,"args":{"connection_id":41}},
{"ph":"X","name":"Node@launch","pid":8,"tid":2,"ts":"130.000","dur":5,"args":{"connection_id":42}},
{"ph":"X","name":"aclnnMm_MatMulV2","pid":9,"tid":2,"ts":"140.000","dur":20,"args":{"Task Type":"AI_CORE","connection_id":42}},
{"ph":"f","cat":"async_npu","name":"torch_to_npu","id":777,"pid":9,"tid":2,"ts":"140.000","bp":"e"},
{"ph":"X","name":"EVENT_WAIT","pid":9,"tid":2,"ts":"161.000","dur":1,"args":{"Task Type":"EVENT_WAIT_SQE"}},
{"ph":"X","name":"MEMCPY_ASYNC","pid":9,"tid":3,"ts":"162.000","dur":4,"args":{"Task Type":"PCIE_DMA_SQE"}},
{"ph":"X","name":"PROFILING_ENABLE","pid":9,"tid":0,"ts":"90.000","dur":0.02,"args":{"Task Type":"PLACE_HOLDER_SQE"}},
{"ph":"X","name":"hcom_allReduce__1_0_1","pid":7,"tid":0,"ts":"200.000","dur":30,"args":{"connection_id":43,"count":1024}},
{"ph":"X","name":"Notify_Wait","pid":7,"tid":1,"ts":"201.000","dur":5,"args":{"task type":"Notify_Wait","stream id":4}},
{"ph":"X","name":"Notify Wait","pid":9,"tid":4,"ts":"201.000","dur":5,"args":{"Task Type":"Notify Wait","connection_id":43}},
{"ph":"X","name":"Write Value","pid":9,"tid":4,"ts":"205.000","dur":1,"args":{"Task Type":"Write Value"}},
{"ph":"X","name":"aclnnAdd_AddAiCore_Add","pid":9,"tid":2,"ts":"170.000","dur":3,"args":{"Task Type":"KERNEL_AICORE"}},
{"ph":"X","name":"EVENT_RECORD","pid":9,"tid":2,"ts":"174.000","dur":1,"args":{"Task Type":"EVENT_RECORD"}},
{"ph":"X","name":"SDMA","pid":9,"tid":4,"ts":"300.000","dur":5,"args":{"Task Type":"SDMA"}},
{"ph":"X","name":"Computing","pid":6,"tid":0,"ts":"140.000","dur":20},
{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"Python"}},
{"ph":"M","name":"process_name","pid":9,"tid":0,"args":{"name":"Ascend Hardware"}},
{"ph":"M","name":"process_name","pid":8,"tid":0,"args":{"name":"CANN"}},
{"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"HCCL"}},
{"ph":"M","name":"process_name","pid":6,"tid":0,"args":{"name":"Overlap Analysis"}}
])";

const Event* Find(const Trace& t, std::string_view name) {
  for (const Event& e : t.events) {
    if (t.strings.Get(e.name) == name) return &e;
  }
  return nullptr;
}

TEST(AscendLayout, DeviceTasksBecomeKernelsCopiesAndSyncsJoinedToTheirOperatorAndLaunch) {
  auto r = ImportKinetoJson(kAscend, "trace_view.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Trace& t = *r;
  EXPECT_EQ(t.runtime, "cann");
  const Event* kernel = Find(t, "aclnnMm_MatMulV2");
  const Event* launch = Find(t, "Node@launch");
  const Event* inner = Find(t, "aten::inner");
  ASSERT_TRUE(kernel && launch && inner);
  EXPECT_EQ(kernel->kind, EventKind::kKernel);
  EXPECT_EQ(launch->kind, EventKind::kRuntime);
  EXPECT_EQ(kernel->correlation, 42);
  EXPECT_EQ(launch->correlation, 42);
  // The flow starts inside aten::inner (nested in aten::mm): the innermost is the operator.
  EXPECT_NE(inner->external_id, 0);
  EXPECT_EQ(kernel->external_id, inner->external_id);
  EXPECT_EQ(launch->external_id, inner->external_id);
  EXPECT_EQ(Find(t, "aten::mm")->external_id, 0);
  EXPECT_EQ(Find(t, "EVENT_WAIT")->kind, EventKind::kSync);
  EXPECT_EQ(Find(t, "MEMCPY_ASYNC")->kind, EventKind::kMemcpy);
  EXPECT_EQ(Find(t, "PROFILING_ENABLE")->kind, EventKind::kOther);
  // Newer CANN's task names: a compute task stays a kernel, an event record a sync.
  EXPECT_EQ(Find(t, "aclnnAdd_AddAiCore_Add")->kind, EventKind::kKernel);
  EXPECT_EQ(Find(t, "EVENT_RECORD")->kind, EventKind::kSync);
  // The library call around the launch is not a second runtime call.
  EXPECT_EQ(Find(t, "AscendCL@aclnnMm")->kind, EventKind::kOther);
  EXPECT_EQ(t.stats.layout.at("ascend: CANN API calls that made other calls (library calls), read as other"), 1);
}

TEST(AscendLayout, CollectivesMoveOntoTheirStreamAndTheirTasksAreCountedNotKept) {
  auto r = ImportKinetoJson(kAscend, "trace_view.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Trace& t = *r;
  const Event* coll = Find(t, "hcom_allReduce__1_0_1");
  ASSERT_NE(coll, nullptr);
  EXPECT_EQ(coll->kind, EventKind::kKernel);
  EXPECT_EQ(coll->pid, 9);
  EXPECT_EQ(coll->tid, 4);
  // Its plane task and its hardware task (joined by connection_id) are gone; an HCCL task
  // outside any collective stays, named as HCCL's.
  EXPECT_EQ(Find(t, "Notify_Wait"), nullptr);
  EXPECT_EQ(Find(t, "Notify Wait"), nullptr);
  EXPECT_EQ(Find(t, "Computing"), nullptr);
  ASSERT_NE(Find(t, "hcom SDMA"), nullptr);
  EXPECT_EQ(Find(t, "hcom SDMA")->kind, EventKind::kKernel);
  const auto& l = t.stats.layout;
  EXPECT_EQ(l.at("ascend: HCCL plane tasks left out (the same tasks as on the hardware streams)"), 1);
  EXPECT_EQ(l.at("ascend: HCCL tasks on a hardware stream, joined to their collective by connection_id, left out"), 1);
  EXPECT_EQ(l.at("ascend: HCCL tasks on a hardware stream inside their collective, left out"), 1);  // by time
  EXPECT_EQ(l.at("ascend: Overlap Analysis ranges left out (the profiler's own summary)"), 1);
  EXPECT_EQ(l.at("ascend: device tasks joined to their operator by async_npu flows"), 1);
  EXPECT_EQ(t.stats.events_kept, static_cast<int64_t>(t.events.size()));
  EXPECT_EQ(t.events.size(), 12u);
}

TEST(AscendLayout, TheSameWholeAndStreamedThroughSmallWindows) {
  char path[] = "/tmp/ascend_layout_XXXXXX.json";
  const int fd = mkstemps(path, 5);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << kAscend;
  auto whole = ImportKinetoTrace(path);
  auto streamed = ImportKinetoStream(path, 256, 2);
  std::remove(path);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
  ExpectSameTrace(*whole, *streamed);
}

TEST(AscendLayout, ATraceWithoutTheHardwareProcessIsUntouched) {
  auto r = ImportKinetoJson(R"([{"ph":"X","name":"x","pid":9,"tid":2,"ts":1,"dur":1,"args":{"Task Type":"AI_CORE"}},
                                {"ph":"M","name":"process_name","pid":9,"args":{"name":"GPU 0"}}])",
                            "t.json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->events[0].kind, EventKind::kOther);
  EXPECT_TRUE(r->stats.layout.empty());
  EXPECT_NE(r->runtime, "cann");
}

TEST(AscendDetails, KernelDetailsRowsAddTheirColumnsAndGridToTheNearestKernelOfTheirName) {
  auto r = ImportKinetoJson(kAscend, "trace_view.json");
  ASSERT_TRUE(r.ok());
  Trace& t = *r;
  const std::string csv =
      "Step Id,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Block Dim,Input Shapes,Context ID\n"
      "1,2,aclnnMm_MatMulV2,MatMulV2,AI_CORE,140.001\t,20,24,\"\"\"32,64\"\"\",N/A\n"  // 1 ns off
      "1,4,hcom_allReduce__1_0_1,hcom_allReduce_,HCCL,200.000\t,30,0,N/A,N/A\n"
      "1,2,aclnnMm_MatMulV2,MatMulV2,AI_CORE,900.000\t,20,24,N/A,N/A\n"  // no such kernel
      "1,2,short row\n";
  ASSERT_TRUE(ascend::JoinKernelDetails(t, csv, "/x/kernel_details.csv").ok());
  const Event* kernel = Find(t, "aclnnMm_MatMulV2");
  const std::string_view args = t.strings.Get(kernel->args);
  EXPECT_EQ(ArgDims(args, "grid"), (std::vector<int64_t>{24, 1, 1}));
  EXPECT_EQ(ArgText(args, "Accelerator Core"), "AI_CORE");
  EXPECT_EQ(ArgText(args, "Input Shapes"), "32,64");
  EXPECT_EQ(ArgText(args, "Type"), "MatMulV2");
  EXPECT_EQ(ArgText(args, "Task Type"), "AI_CORE");  // the trace's own args kept
  EXPECT_TRUE(ArgValue(args, "Context ID").empty());
  EXPECT_EQ(kernel->arg_keys, 0);  // its args replaced: the importer's note no longer holds
  EXPECT_TRUE(ArgValue(t.strings.Get(Find(t, "hcom_allReduce__1_0_1")->args), "grid").empty());  // Block Dim 0
  const auto& l = t.stats.layout;
  EXPECT_EQ(l.at("ascend: kernel_details.csv rows joined to their kernel"), 2);
  EXPECT_EQ(l.at("ascend: kernel_details.csv rows naming no kernel of the trace"), 1);
  EXPECT_EQ(l.at("ascend: kernel_details.csv rows malformed (skipped)"), 1);

  const Status bad = ascend::JoinKernelDetails(t, "a,b\n1,2\n", "k.csv");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("k.csv: not torch_npu's kernel_details.csv"), std::string::npos) << bad.message();
}

// The rank from ../profiler_info*.json: its rank_id (a whole number or a string of one),
// else the N of profiler_info_N.json (older torch_npu left it empty); -1 (a run that was
// not distributed) or a single device's profiler_info.json leaves it unknown without a
// word; a file that says nothing usable, or contradicts its name, is named in a note.
TEST(AscendDetails, ProfilerInfoGivesTheRankOrANoteNamingWhatWasWrong) {
  struct Case {
    const char* file;
    const char* info;
    int rank;
    const char* note;
  };
  const Case cases[] = {
      {"profiler_info_3.json", R"({"rank_id": 3})", 3, ""},
      {"profiler_info_3.json", R"({"rank_id": "3"})", 3, ""},
      {"profiler_info_3.json", "", 3, ""},
      {"profiler_info_3.json", R"({"config": {}})", 3, ""},
      {"profiler_info.json", R"({"rank_id": -1})", -1, ""},
      {"profiler_info.json", R"({"config": {}})", -1, ""},
      {"profiler_info_3.json", R"({"rank_id": 2})", 2, "profiler_info_3.json's rank_id is 2: that is the rank read"},
      {"profiler_info_3.json", R"({"rank_id": [3]})", 3,
       "profiler_info_3.json's rank_id is [3], not an integer: the rank is read from its name"},
      {"profiler_info_3.json", R"({"rank_id": 3)", 3,
       "profiler_info_3.json is not valid JSON: the rank is read from its name"},
      {"profiler_info_x.json", R"({"rank_id": "x"})", -1,
       "the rank is left unknown: profiler_info_x.json's rank_id is \"x\", not an integer"},
      {"profiler_info_x.json", R"({"rank_id": 2.5})", -1,
       "the rank is left unknown: profiler_info_x.json's rank_id is 2.5, not an integer"},
      {"profiler_info_x.json", R"({"rank_id": 99999999})", -1,
       "the rank is left unknown: profiler_info_x.json's rank_id 99999999 is out of range"},
      {"profiler_info_x.json", R"([3])", -1, "the rank is left unknown: profiler_info_x.json is not a JSON object"},
      {"profiler_info_x.json", "", -1, "the rank is left unknown: profiler_info_x.json is empty"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.file) + ": " + c.info);
    testing::TempDir dir;
    std::filesystem::create_directories(dir.file("rank_ascend_pt/ASCEND_PROFILER_OUTPUT"));
    std::ofstream(dir.file(std::string("rank_ascend_pt/") + c.file)) << c.info;
    auto r = ImportKinetoJson(kAscend, "trace_view.json");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ascend::AttachAscendOutputs(*r, dir.file("rank_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"));
    EXPECT_EQ(r->rank, c.rank);
    ASSERT_EQ(r->import_notes.size(), std::string(c.note).empty() ? 0u : 1u);
    if (!r->import_notes.empty()) EXPECT_EQ(r->import_notes[0], c.note);
  }
}

// The real job: each rank's tasks, collectives and kernel_details rows (counts from
// Python's json and csv, tests/trace/test_vendor_imports.py), and the rank from
// profiler_info_N.json.
TEST(AscendCorpus, TheRealJobsRanksReadTheirTasksDetailsAndRank) {
  for (int rank = 0; rank < 2; ++rank) {
    const std::string path = CorpusPath("vendors/ascend_2rank/rank" + std::to_string(rank) +
                                        "_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json.gz");
    struct stat st;
    TS_SKIP_UNLESS(::stat(path.c_str(), &st) == 0, "the Ascend corpus trace " << path);
    auto r = ImportKinetoTrace(path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Trace& t = *r;
    ascend::AttachAscendOutputs(t, path);
    EXPECT_EQ(t.rank, rank);
    const auto& l = t.stats.layout;
    EXPECT_EQ(l.at("ascend: hardware tasks read as kernels"), 187);
    EXPECT_EQ(l.at("ascend: hardware tasks read as copies"), 24);
    EXPECT_EQ(l.at("ascend: hardware tasks read as syncs (event record / wait)"), 24);
    EXPECT_EQ(l.at("ascend: HCCL collectives read as communication kernels"), 4);
    EXPECT_EQ(l.at("ascend: HCCL tasks on a hardware stream, joined to their collective by connection_id, left out"), 296);
    EXPECT_EQ(l.count("ascend: HCCL tasks on a hardware stream inside their collective, left out"), 0u);
    EXPECT_EQ(l.at("ascend: device tasks joined to their operator by async_npu flows"), 210);
    EXPECT_EQ(l.at("ascend: kernel_details.csv rows joined to their kernel"), 191);
    EXPECT_EQ(l.count("ascend: kernel_details.csv rows naming no kernel of the trace"), 0u);
    EXPECT_TRUE(t.import_notes.empty());
  }
}

}  // namespace
}  // namespace tierscope
