// PyTorch execution traces joined to a Kineto trace's operators by record id: shapes and
// types added where the trace lacks them (in Kineto's names), kept where it has them, and
// a trace of another run refused with both named.
#include "trace/execution_trace.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <string>

#include "trace/args.h"
#include "trace/kineto_import.h"
#include "trace/kineto_test_traces.h"
#include "test_util.h"

namespace tierscope {
namespace {

using testing::TempDir;
using testing::WriteBytes;

const char kEt[] = R"json({"schema": "1.0.1", "pid": 77, "nodes": [
  {"name": "[pytorch|profiler|execution_trace|thread]", "id": 2, "rf_id": 0, "input_shapes": [], "input_types": []},
  {"name": "aten::mm", "id": 5, "rf_id": 10, "input_shapes": [[64, 128], [128, 32]],
   "input_types": ["Tensor(c10::BFloat16)", "Tensor(c10::BFloat16)"]},
  {"name": "aten::add", "id": 6, "rf_id": 11, "input_shapes": [[8], [8], []], "input_types": ["Tensor(float)", "Tensor(float)", "Int"]},
  {"name": "aten::relu", "id": 7, "rf_id": 12, "input_shapes": [[4]], "input_types": ["Tensor(float)"]},
  {"name": "no rf id", "id": 8}]})json";

std::string Kineto(int pid) {
  const std::string p = std::to_string(pid);
  return R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": )" + p + R"(, "tid": 1, "ts": 1, "dur": 5, "args": {"External id": 10}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": )" + p + R"(, "tid": 1, "ts": 7, "dur": 1,
     "args": {"External id": 99, "Record function id": 11}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": )" + p + R"(, "tid": 1, "ts": 9, "dur": 1,
     "args": {"External id": 12, "Input Dims": [[5]], "Input type": ["float"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::other", "pid": )" + p + R"(, "tid": 1, "ts": 11, "dur": 1, "args": {"External id": 13}}]})";
}

TEST(ExecutionTrace, OperatorsGainTheNodesShapesByRecordId) {
  TempDir dir;
  WriteBytes(dir.file("et.json"), kEt);
  auto et = ReadExecutionTrace(dir.file("et.json"));
  ASSERT_TRUE(et.ok()) << et.status().ToString();
  EXPECT_EQ(et->pid, 77);
  EXPECT_EQ(et->nodes, 3);      // the observer's root not counted
  EXPECT_EQ(et->malformed, 1);  // no rf_id
  auto t = ImportKinetoJson(Kineto(77), "k.json", 1);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(JoinExecutionTrace(*t, *et).ok());
  EXPECT_EQ(t->execution_trace.ops, 4);
  EXPECT_EQ(t->execution_trace.joined, 3);        // mm by External id, add by its Record function id, relu
  EXPECT_EQ(t->execution_trace.shapes_added, 2);  // relu keeps the trace's own
  const auto args = [&](int i) { return std::string(t->strings.Get(t->events[static_cast<size_t>(i)].args)); };
  EXPECT_EQ(ArgValue(args(0), "Input Dims"), "[[64,128],[128,32]]");
  EXPECT_EQ(ArgValue(args(0), "Input type"), R"(["c10::BFloat16", "c10::BFloat16"])");
  EXPECT_EQ(ArgValue(args(1), "Input type"), R"(["float", "float", "Scalar"])");
  EXPECT_EQ(ArgValue(args(2), "Input Dims"), "[[5]]");
  EXPECT_EQ(ArgValue(args(3), "Input Dims"), "");
}

// A gzip execution trace with bytes after its data joins as the plain one did, and the
// join's note says what was ignored.
TEST(ExecutionTrace, BytesAfterItsGzipDataAreSaidInTheJoinsNote) {
  TempDir dir;
  const std::string path = dir.file("et.json.gz");
  gzFile f = gzopen(path.c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  ASSERT_GT(gzputs(f, kEt), 0);
  gzclose(f);
  WriteBytes(path, testing::ReadBytes(path) + "trailing");
  auto et = ReadExecutionTrace(path);
  ASSERT_TRUE(et.ok()) << et.status().ToString();
  auto t = ImportKinetoJson(Kineto(77), "k.json", 1);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(JoinExecutionTrace(*t, *et).ok());
  EXPECT_EQ(t->execution_trace.joined, 3);
  EXPECT_EQ(t->execution_trace.note,
            path + ": ignored 8 bytes after its gzip data that are not a gzip member (gzip, too, ignores such bytes, "
                   "with a warning)");
}

// PyTorch 2.3 on (Chakra schema 1.1): the record id among the attrs, shapes and types
// under inputs.
TEST(ExecutionTrace, TheChakraSchemaOfNewerPyTorchJoinsToo) {
  TempDir dir;
  WriteBytes(dir.file("et.json"), R"json({"schema": "1.1.1-chakra.0.0.4", "pid": 77, "nodes": [
    {"id": 5, "name": "aten::mm", "ctrl_deps": 1,
     "inputs": {"values": [[1, 2, 0, 8192, 2, "cuda:0"], [3, 4, 0, 4096, 2, "cuda:0"]],
                "shapes": [[64, 128], [128, 32]], "types": ["Tensor(c10::BFloat16)", "Tensor(c10::BFloat16)"]},
     "outputs": {"values": [], "shapes": [[64, 32]], "types": ["Tensor(c10::BFloat16)"]},
     "attrs": [{"name": "rf_id", "type": "uint64", "value": 10}, {"name": "fw_parent", "type": "uint64", "value": 0}]}]})json");
  auto et = ReadExecutionTrace(dir.file("et.json"));
  ASSERT_TRUE(et.ok()) << et.status().ToString();
  EXPECT_EQ(et->nodes, 1);
  auto t = ImportKinetoJson(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 77,
    "tid": 1, "ts": 1, "dur": 5, "args": {"External id": 10}}]})", "k.json", 1);
  ASSERT_TRUE(JoinExecutionTrace(*t, *et).ok());
  EXPECT_EQ(t->execution_trace.shapes_added, 1);
  EXPECT_EQ(ArgValue(t->strings.Get(t->events[0].args), "Input Dims"), "[[64,128],[128,32]]");
  // Nodes without a record id in either form: an error, not an empty join.
  WriteBytes(dir.file("none.json"), R"json({"schema": "1.1.1", "nodes": [{"id": 1, "name": "x", "attrs": []}]})json");
  const Status none = ReadExecutionTrace(dir.file("none.json")).status();
  EXPECT_EQ(none.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.message().find("1 node(s) without a string name or a record id"), std::string::npos) << none.message();
}

TEST(ExecutionTrace, AnotherRunsTraceIsRefusedNamingBoth) {
  TempDir dir;
  WriteBytes(dir.file("et.json"), kEt);
  auto et = ReadExecutionTrace(dir.file("et.json"));
  ASSERT_TRUE(et.ok());
  auto other_pid = ImportKinetoJson(Kineto(78), "k.json", 1);
  const Status s = JoinExecutionTrace(*other_pid, *et);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("not the same run"), std::string::npos) << s.message();
  auto few = ImportKinetoJson(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 77,
    "tid": 1, "ts": 1, "dur": 5, "args": {"External id": 10}}]})", "few.json", 1);
  const Status s2 = JoinExecutionTrace(*few, *et);
  EXPECT_NE(s2.message().find("record ids (10..12) are not within few.json's (10..10)"), std::string::npos)
      << s2.message();
  WriteBytes(dir.file("bad.json"), R"({"schema": "1.0.1", "nodes": [)");
  EXPECT_EQ(ReadExecutionTrace(dir.file("bad.json")).status().code(), StatusCode::kDataLoss);
  WriteBytes(dir.file("no.json"), R"({"schema": "1.0.1"})");
  EXPECT_EQ(ReadExecutionTrace(dir.file("no.json")).status().code(), StatusCode::kInvalidArgument);
}

TEST(ExecutionTrace, TheCorpusPairJoinsAsHtaJoinsIt) {
  const std::string dir = CorpusPath("vendors/execution_trace/");
  struct stat st;
  TS_SKIP_UNLESS(::stat(dir.c_str(), &st) == 0, "the execution-trace corpus at " << dir);
  auto et = ReadExecutionTrace(dir + "execution_trace__benchmark_simple_add_et.json.gz");
  auto t = ImportKinetoTrace(dir + "execution_trace__benchmark_simple_add_trace.json.gz");
  ASSERT_TRUE(et.ok()) << et.status().ToString();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE(JoinExecutionTrace(*t, *et).ok());
  // Every cpu_op and annotation of the Kineto file whose External id is a node's rf_id
  // and whose name is the node's (counted independently in tests/trace/test_execution_trace.py).
  EXPECT_GT(t->execution_trace.joined, 0);
  EXPECT_EQ(t->execution_trace.joined, t->execution_trace.shapes_added);  // the trace recorded no shapes
}

}  // namespace
}  // namespace tierscope
