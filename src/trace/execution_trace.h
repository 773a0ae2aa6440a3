// PyTorch execution traces (ExecutionTraceObserver / Chakra ET JSON: {"schema", "pid",
// "nodes": [{"name", "id", "rf_id", "input_shapes", "input_types", ...}]}) joined to a
// Kineto trace's operators by record id, as HTA's correlate_execution_trace does: a
// cpu_op or user_annotation whose "Record function id" (else its External id) is a node's
// rf_id is that node's run. Joined operators without shapes in the Kineto trace (one
// recorded without record_shapes) gain the node's as "Input Dims" and "Input type", so
// the roofline can read them.
#ifndef TIERSCOPE_TRACE_EXECUTION_TRACE_H_
#define TIERSCOPE_TRACE_EXECUTION_TRACE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

struct ExecutionTrace {
  struct Node {
    std::string name;
    std::string input_shapes;  // as JSON text
    std::string input_types;   // as JSON text, in Kineto's names ("float", "Scalar", "")
  };
  std::string source;
  int64_t pid = -1;
  int64_t nodes = 0;  // operator nodes (the observer's thread/process roots not counted)
  std::unordered_map<int64_t, Node> by_record_id;
  int64_t min_record_id = 0, max_record_id = 0;
  int64_t malformed = 0;  // nodes without a usable rf_id or name
  int64_t bad_shapes = 0;  // nodes whose input shapes or types are not lists (left out, said)
  std::string ignored;  // bytes after its gzip data that were ignored (ReadJsonInput's note), or ""
};

// Reads one (plain or gzip; schema 1.0.x's node fields, or 1.1's inputs/attrs).
// InvalidArgument for JSON that is not one or has no node with a record id; DataLoss for
// bad JSON.
StatusOr<ExecutionTrace> ReadExecutionTrace(const std::string& path);

// Joins `et` to `trace`'s operators (see above) and records it in trace.execution_trace.
// FailedPrecondition, naming both, when they are not the same run: the trace's host pid
// is not the execution trace's, or its record ids do not cover the execution trace's (HTA
// then joins nothing either).
Status JoinExecutionTrace(Trace& trace, const ExecutionTrace& et);

}  // namespace tierscope

#endif  // TIERSCOPE_TRACE_EXECUTION_TRACE_H_
