// PyTorch execution traces, read and joined to a Kineto trace (execution_trace.h).
#include "trace/execution_trace.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <climits>

#include "trace/args.h"
#include "trace/json_input.h"
#include "trace/kineto_scan.h"

namespace tierscope {
namespace {

std::string Minified(simdjson::dom::element e) { return simdjson::minify(e); }

// An execution trace's input type as Kineto's "Input type" writes it: "Tensor(float)" ->
// "float", "Int" / "Double" / "Bool" -> "Scalar", "None" -> "", others as they are.
std::string KinetoType(std::string_view t) {
  if (t.starts_with("Tensor(") && t.ends_with(")")) return std::string(t.substr(7, t.size() - 8));
  if (t == "Int" || t == "Double" || t == "Bool") return "Scalar";
  if (t == "None") return "";
  return std::string(t);
}

// A node's record-function id: "rf_id" (schema 1.0.x), else its attrs' {"name": "rf_id"}
// (1.1 on).
bool RecordId(simdjson::dom::element n, int64_t* out) {
  if (n["rf_id"].get(*out) == simdjson::SUCCESS) return true;
  simdjson::dom::array attrs;
  if (n["attrs"].get(attrs) != simdjson::SUCCESS) return false;
  for (simdjson::dom::element a : attrs) {
    std::string_view name;
    if (a["name"].get(name) != simdjson::SUCCESS || name != "rf_id") continue;
    uint64_t u = 0;
    if (a["value"].get(*out) == simdjson::SUCCESS) return true;
    if (a["value"].get(u) == simdjson::SUCCESS && u <= static_cast<uint64_t>(INT64_MAX)) {
      *out = static_cast<int64_t>(u);
      return true;
    }
  }
  return false;
}

// The types as a JSON array of Kineto's names.
std::string KinetoTypes(simdjson::dom::array types) {
  std::string out = "[";
  for (simdjson::dom::element v : types) {
    std::string_view t;
    if (v.get(t) != simdjson::SUCCESS) t = "";
    if (out.size() > 1) out += ", ";
    out += '"';
    for (char c : KinetoType(t)) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    out += '"';
  }
  return out + "]";
}

}  // namespace

StatusOr<ExecutionTrace> ReadExecutionTrace(const std::string& path) {
  std::string ignored;
  TS_ASSIGN_OR_RETURN(PaddedBuffer buf, ReadJsonInput(path, &ignored));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (const auto err = parser.parse(buf.data(), buf.size(), false).get(doc)) {
    return DataLoss(path + ": invalid JSON: " + simdjson::error_message(err));
  }
  simdjson::dom::array nodes;
  if (doc["nodes"].get(nodes) != simdjson::SUCCESS) {
    return InvalidArgument(path + ": not a PyTorch execution trace: no \"nodes\" array");
  }
  ExecutionTrace et;
  et.source = path;
  et.ignored = std::move(ignored);
  int64_t pid = -1;
  if (doc["pid"].get(pid) == simdjson::SUCCESS) et.pid = pid;
  bool first = true;
  for (simdjson::dom::element n : nodes) {
    std::string_view name;
    int64_t rf = 0;
    if (n["name"].get(name) != simdjson::SUCCESS || !RecordId(n, &rf)) {
      ++et.malformed;
      continue;
    }
    // The observer's own roots ("[pytorch|profiler|execution_trace|thread]", "...|process").
    if (name.find("execution_trace|") != std::string_view::npos) continue;
    ExecutionTrace::Node node;
    node.name = std::string(name);
    // Schema 1.0.x: input_shapes / input_types on the node; 1.1 (Chakra, PyTorch 2.3 on):
    // inputs.shapes / inputs.types.
    // Shapes and types are lists; another value is left out and counted, never joined
    // as shapes an operator report cannot read.
    simdjson::dom::element v;
    if (n["input_shapes"].get(v) == simdjson::SUCCESS || n.at_pointer("/inputs/shapes").get(v) == simdjson::SUCCESS) {
      if (v.is_array()) {
        node.input_shapes = Minified(v);
      } else {
        ++et.bad_shapes;
      }
    }
    simdjson::dom::element t;
    if (n["input_types"].get(t) == simdjson::SUCCESS || n.at_pointer("/inputs/types").get(t) == simdjson::SUCCESS) {
      simdjson::dom::array types;
      if (t.get_array().get(types) == simdjson::SUCCESS) {
        node.input_types = KinetoTypes(types);
      } else if (!node.input_shapes.empty()) {
        ++et.bad_shapes;
        node.input_shapes.clear();  // shapes without their types are not joined either
      }
    }
    ++et.nodes;
    et.min_record_id = first ? rf : std::min(et.min_record_id, rf);
    et.max_record_id = first ? rf : std::max(et.max_record_id, rf);
    first = false;
    et.by_record_id.emplace(rf, std::move(node));
  }
  if (et.nodes == 0) {
    return InvalidArgument(path + ": an execution trace without an operator node that has a name and a record id "
                           "(rf_id)" +
                           (et.malformed > 0 ? ": " + std::to_string(et.malformed) +
                                                   " node(s) without a string name or a record id"
                                             : ""));
  }
  return et;
}

Status JoinExecutionTrace(Trace& t, const ExecutionTrace& et) {
  if (et.pid >= 0 && t.host_pid > 0 && et.pid != t.host_pid) {
    return FailedPrecondition(et.source + ": the execution trace of process " + std::to_string(et.pid) + ", " +
                              t.source + " the trace of process " + std::to_string(t.host_pid) + ": not the same run");
  }
  const auto record_id = [&](const Event& e) -> int64_t {
    if (e.args >= 0) {
      const std::string_view v = ArgValue(t.strings.Get(e.args), "Record function id");
      int64_t id = 0;
      if (!v.empty() && std::from_chars(v.data(), v.data() + v.size(), id).ec == std::errc()) return id;
    }
    return e.external_id;
  };
  const auto joinable = [](const Event& e) { return e.kind == EventKind::kOp || e.kind == EventKind::kAnnotation; };
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const Event& e : t.events) {
    if (!joinable(e)) continue;
    lo = std::min(lo, record_id(e));
    hi = std::max(hi, record_id(e));
  }
  if (et.nodes > 0 && (lo > et.min_record_id || hi < et.max_record_id)) {
    return FailedPrecondition(et.source + ": its record ids (" + std::to_string(et.min_record_id) + ".." +
                              std::to_string(et.max_record_id) + ") are not within " + t.source + "'s (" +
                              (lo > hi ? std::string("none") : std::to_string(lo) + ".." + std::to_string(hi)) +
                              "): not the same run");
  }
  Trace::ExecutionTraceJoin& j = t.execution_trace;
  j = {};
  j.source = et.source;
  j.nodes = et.nodes;
  for (Event& e : t.events) {
    if (!joinable(e)) continue;
    ++j.ops;
    const auto it = et.by_record_id.find(record_id(e));
    if (it == et.by_record_id.end() || it->second.name != t.strings.Get(e.name)) continue;
    ++j.joined;
    const std::string_view args = e.args >= 0 ? t.strings.Get(e.args) : std::string_view();
    if (!ArgValue(args, "Input Dims").empty() || it->second.input_shapes.empty()) continue;
    std::string more = std::string(kineto::Trim(args));
    more += std::string(more.empty() ? "" : ", ") + "\"Input Dims\": " + it->second.input_shapes;
    if (!it->second.input_types.empty()) more += ", \"Input type\": " + it->second.input_types;
    e.args = t.strings.Append(more);
    e.arg_keys = 0;
    ++j.shapes_added;
  }
  if (et.bad_shapes > 0) {
    j.note = std::to_string(et.bad_shapes) + " of " + et.source +
             "'s nodes have input shapes or types that are not lists: their operators were given none";
  }
  if (!et.ignored.empty()) j.note += (j.note.empty() ? "" : "; ") + et.source + ": " + et.ignored;
  if (j.joined == 0 && j.ops > 0) {
    const std::string source = j.source;
    const int64_t ops = j.ops;
    j = {};
    return FailedPrecondition(source + ": none of " + t.source + "'s " + std::to_string(ops) +
                              " operators has a node of its record id and name: not the same run");
  }
  return OkStatus();
}

}  // namespace tierscope
