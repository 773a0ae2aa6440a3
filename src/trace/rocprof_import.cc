// rocprofv3 JSON -> Trace (rocprof_import.h), with simdjson's DOM: the document is one
// object of tables that refer to each other (kinds, kernel symbols, agents), so it is read
// whole, then its records are walked.
#include "trace/rocprof_import.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/json_input.h"
#include "trace/rocm_devices.h"

namespace tierscope {
namespace {

namespace dom = simdjson::dom;

// A member as an integer, or `fallback` when absent or mistyped.
int64_t Int(dom::element e, const char* key, int64_t fallback = -1) {
  int64_t v = 0;
  if (e[key].get_int64().get(v) == simdjson::SUCCESS) return v;
  uint64_t u = 0;
  if (e[key].get_uint64().get(u) == simdjson::SUCCESS && u <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(u);
  }
  return fallback;
}
// A {"handle": N} member's N.
int64_t Handle(dom::element e, const char* key) {
  dom::element h;
  if (e[key].get(h) != simdjson::SUCCESS) return -1;
  return Int(h, "handle");
}
std::string_view Text(dom::element e, const char* key) {
  std::string_view s;
  if (e[key].get_string().get(s) != simdjson::SUCCESS) return {};
  return s;
}

class Importer {
 public:
  // `devices`: kernels per device name and its units, over every process read.
  Importer(Trace* t, int32_t host_pid, std::map<std::string, std::pair<int64_t, int64_t>>* devices)
      : t_(*t), host_pid_(host_pid), devices_(*devices) {}

  Status Run(dom::element tool) {
    TS_RETURN_IF_ERROR(Agents(tool));
    TS_RETURN_IF_ERROR(Kinds(tool));
    TS_RETURN_IF_ERROR(Symbols(tool));
    TS_RETURN_IF_ERROR(Markers(tool));
    dom::object records;
    if (tool["buffer_records"].get_object().get(records) != simdjson::SUCCESS) {
      return InvalidArgument(t_.source + ": a rocprofv3 result without buffer_records");
    }
    for (auto [kind, list] : records) {
      dom::array a;
      if (list.get_array().get(a) != simdjson::SUCCESS) {  // never read as no events of that kind
        return InvalidArgument(t_.source + ": buffer_records." + std::string(kind) + " is not an array");
      }
      for (dom::element r : a) Record(kind, r);
    }
    Finish();
    return OkStatus();
  }

 private:
  // `parent`[`key`] as an array in *out: absent is fine (false, nothing to read), another
  // type is an error naming `what` (a table read as empty would be a wrong answer).
  StatusOr<bool> ArrayAt(dom::element parent, const char* key, const std::string& what, dom::array* out) {
    dom::element v;
    if (parent[key].get(v) != simdjson::SUCCESS) return false;
    if (v.get_array().get(*out) != simdjson::SUCCESS) return InvalidArgument(t_.source + ": " + what + " is not an array");
    return true;
  }

  // The tool's "strings" object: absent (nullopt) or an object; another type is an error.
  StatusOr<std::optional<dom::element>> Strings(dom::element tool) {
    dom::element v;
    if (tool["strings"].get(v) != simdjson::SUCCESS) return std::optional<dom::element>();
    if (!v.is_object()) return InvalidArgument(t_.source + ": strings is not an object");
    return std::optional<dom::element>(v);
  }

  void Malformed(const char* reason) {
    ++t_.stats.malformed;
    ++t_.stats.malformed_reasons[reason];
  }

  Status Agents(dom::element tool) {
    dom::array agents;
    TS_ASSIGN_OR_RETURN(const bool present, ArrayAt(tool, "agents", "agents", &agents));
    if (!present) return OkStatus();
    int32_t gpu = 0;
    for (dom::element a : agents) {
      if (Int(a, "type") != 2) continue;  // 1: CPU, 2: GPU
      const int64_t id = Handle(a, "id");
      std::string name(Text(a, "product_name"));
      if (name.empty()) name = Text(a, "name");
      gpus_[id] = {gpu++, name, Int(a, "cu_count", 0)};
    }
    return OkStatus();
  }

  // strings.buffer_records: each kind's name and operation names, at the kind's number.
  Status Kinds(dom::element tool) {
    dom::array kinds;
    TS_ASSIGN_OR_RETURN(const std::optional<dom::element> strings, Strings(tool));
    if (!strings) return OkStatus();
    TS_ASSIGN_OR_RETURN(const bool present, ArrayAt(*strings, "buffer_records", "strings.buffer_records", &kinds));
    if (!present) return OkStatus();
    for (dom::element k : kinds) {
      std::vector<std::string> ops;
      dom::array a;
      dom::element v;
      if (k["operations"].get(v) == simdjson::SUCCESS && v.get_array().get(a) != simdjson::SUCCESS) {
        return InvalidArgument(t_.source + ": strings.buffer_records[].operations is not an array");
      }
      if (k["operations"].get_array().get(a) == simdjson::SUCCESS) {
        for (dom::element o : a) {
          std::string_view s;
          ops.emplace_back(o.get_string().get(s) == simdjson::SUCCESS ? s : std::string_view());
        }
      }
      operations_.push_back(std::move(ops));
    }
    return OkStatus();
  }

  Status Symbols(dom::element tool) {
    dom::array symbols;
    TS_ASSIGN_OR_RETURN(const bool present, ArrayAt(tool, "kernel_symbols", "kernel_symbols", &symbols));
    if (!present) return OkStatus();
    for (dom::element s : symbols) {
      std::string_view name = Text(s, "formatted_kernel_name");
      if (name.empty()) name = Text(s, "kernel_name");
      kernels_[Int(s, "kernel_id")] = t_.strings.Intern(name);
    }
    return OkStatus();
  }

  // roctx messages, by the marker call's correlation id.
  Status Markers(dom::element tool) {
    dom::array markers;
    TS_ASSIGN_OR_RETURN(const std::optional<dom::element> strings, Strings(tool));
    if (!strings) return OkStatus();
    TS_ASSIGN_OR_RETURN(const bool present, ArrayAt(*strings, "marker_api", "strings.marker_api", &markers));
    if (!present) return OkStatus();
    for (dom::element m : markers) {
      const int64_t key = Int(m, "key");
      const std::string_view value = Text(m, "value");
      if (key >= 0 && !value.empty()) messages_[key] = std::string(value);
    }
    return OkStatus();
  }

  // Name of operation `op` of kind `kind`, or "" when the tables do not have it.
  std::string_view Operation(int64_t kind, int64_t op) const {
    if (kind < 0 || op < 0 || static_cast<size_t>(kind) >= operations_.size()) return {};
    const std::vector<std::string>& ops = operations_[static_cast<size_t>(kind)];
    return static_cast<size_t>(op) < ops.size() ? std::string_view(ops[static_cast<size_t>(op)]) : std::string_view();
  }

  // The event's times and correlation, or false (counted) when they are missing or absurd.
  bool Times(dom::element r, Event* e) {
    const int64_t start = Int(r, "start_timestamp"), end = Int(r, "end_timestamp");
    if (start < 0 || end < 0) {
      Malformed("no start_timestamp / end_timestamp");
      return false;
    }
    if (end < start || !TimeInRange(start, end - start)) {
      Malformed("time out of range");
      return false;
    }
    e->ts_ns = start;
    e->dur_ns = end - start;
    dom::element c;
    if (r["correlation_id"].get(c) == simdjson::SUCCESS) e->correlation = std::max<int64_t>(0, Int(c, "internal", 0));
    return true;
  }

  void Record(std::string_view table, dom::element r) {
    ++t_.stats.events_read;
    ++t_.stats.by_category[std::string(table)];
    Event e;
    if (table == "kernel_dispatch") {
      if (!Times(r, &e)) return;
      dom::element d;
      if (r["dispatch_info"].get(d) != simdjson::SUCCESS) return Malformed("no dispatch_info");
      const auto kernel = kernels_.find(Int(d, "kernel_id"));
      const auto gpu = gpus_.find(Handle(d, "agent_id"));
      if (kernel == kernels_.end()) return Malformed("unknown kernel_id");
      if (gpu == gpus_.end()) return Malformed("unknown agent_id");
      e.kind = EventKind::kKernel;
      e.name = kernel->second;
      e.pid = gpu->second.index;
      const int64_t stream = Handle(r, "stream_id");
      e.tid = static_cast<int32_t>(std::clamp<int64_t>(stream > 0 ? stream : Handle(d, "queue_id"), 0, INT32_MAX));
      ++kernels_on_[gpu->first];
      e.args = t_.strings.Append(GridArgs(d));
    } else if (table == "memory_copy") {
      if (!Times(r, &e)) return;
      auto gpu = gpus_.find(Handle(r, "dst_agent_id"));
      if (gpu == gpus_.end()) gpu = gpus_.find(Handle(r, "src_agent_id"));
      if (gpu == gpus_.end()) return Malformed("memory copy with no GPU agent");
      const std::string_view op = Operation(Int(r, "kind"), Int(r, "operation"));
      e.kind = EventKind::kMemcpy;
      e.name = t_.strings.Intern(op.empty() ? "MEMORY_COPY" : op);
      e.pid = gpu->second.index;
      e.tid = static_cast<int32_t>(std::clamp<int64_t>(Handle(r, "stream_id"), 0, INT32_MAX));
      e.args = t_.strings.Append("\"bytes\": " + std::to_string(std::max<int64_t>(0, Int(r, "bytes", 0))));
    } else if (table == "hip_api" || table == "hsa_api" || table == "rccl_api" || table == "marker_api") {
      if (!Times(r, &e)) return;
      const std::string_view op = Operation(Int(r, "kind"), Int(r, "operation"));
      if (op.empty()) return Malformed("unknown kind or operation");
      const bool marker = table == "marker_api";
      const auto message = marker ? messages_.find(e.correlation) : messages_.end();
      e.kind = marker ? EventKind::kAnnotation : EventKind::kRuntime;
      e.name = t_.strings.Intern(message != messages_.end() ? std::string_view(message->second) : op);
      e.pid = host_pid_;
      e.tid = static_cast<int32_t>(std::clamp<int64_t>(Int(r, "thread_id", 0), 0, INT32_MAX));
    } else {
      ++t_.stats.metadata;  // scratch memory, allocations, page faults, samples: not a timeline here
      return;
    }
    ++t_.stats.events_kept;
    t_.events.push_back(e);
  }

  // Kineto's grid is in blocks; rocprofiler's grid_size counts work-items.
  static std::string GridArgs(dom::element d) {
    dom::element grid_size, workgroup;
    const bool has_grid = d["grid_size"].get(grid_size) == simdjson::SUCCESS;
    const bool has_block = d["workgroup_size"].get(workgroup) == simdjson::SUCCESS;
    int64_t items[3], sizes[3];
    const char* axes[] = {"x", "y", "z"};
    for (int i = 0; i < 3; ++i) {
      items[i] = has_grid ? Int(grid_size, axes[i], 1) : 1;
      sizes[i] = has_block ? Int(workgroup, axes[i], 1) : 1;
    }
    return rocm::GridArgs(items, sizes);
  }

  void Finish() {
    for (const auto& [id, gpu] : gpus_) {
      const auto n = kernels_on_.find(id);
      auto& [count, units] = devices_[gpu.name];
      count += n == kernels_on_.end() ? 0 : n->second;
      units = std::max(units, gpu.cu_count);
    }
  }

  struct Gpu {
    int32_t index;
    std::string name;
    int64_t cu_count;
  };
  Trace& t_;
  const int32_t host_pid_;
  std::map<std::string, std::pair<int64_t, int64_t>>& devices_;
  std::map<int64_t, Gpu> gpus_;  // agent handle -> GPU
  std::map<int64_t, int64_t> kernels_on_;
  std::vector<std::vector<std::string>> operations_;
  std::unordered_map<int64_t, int32_t> kernels_;  // kernel_id -> interned name
  std::unordered_map<int64_t, std::string> messages_;
};

}  // namespace

bool LooksLikeRocprofJson(std::string_view head) {
  const size_t first = head.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && head[first] == '{' &&
         head.substr(first, 64).find("\"rocprofiler-sdk-tool\"") != std::string_view::npos;
}

StatusOr<Trace> ImportRocprofJson(std::string_view json, const std::string& source) {
  dom::parser parser;
  dom::element doc;
  if (const auto error = parser.parse(json.data(), json.size(), false).get(doc); error != simdjson::SUCCESS) {
    if (error == simdjson::MEMALLOC) return ResourceExhausted(source + ": out of memory");
    return DataLoss(source + ": not valid JSON (" + simdjson::error_message(error) + ")");
  }
  dom::array tools;
  if (doc["rocprofiler-sdk-tool"].get_array().get(tools) != simdjson::SUCCESS || tools.size() == 0) {
    return InvalidArgument(source + ": not a rocprofv3 result (no \"rocprofiler-sdk-tool\" array)");
  }
  Trace t;
  t.source = source;
  t.format = "rocprofv3";
  t.stats.bytes = static_cast<int64_t>(json.size());
  // One result per profiled process (rocprofv3 writes one a file; merged files have more).
  std::map<std::string, std::pair<int64_t, int64_t>> devices;
  for (dom::element tool : tools) {
    dom::element metadata;
    const int64_t pid = tool["metadata"].get(metadata) == simdjson::SUCCESS ? Int(metadata, "pid", 1) : 1;
    Importer importer(&t, static_cast<int32_t>(std::clamp<int64_t>(pid, 1, INT32_MAX)), &devices);
    TS_RETURN_IF_ERROR(importer.Run(tool));
    if (t.host_pid == 0) t.host_pid = static_cast<int32_t>(std::clamp<int64_t>(pid, 1, INT32_MAX));
  }
  t.runtime = "hip";
  std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
  int64_t most = -1;
  for (const auto& [name, counts] : devices) {
    if (counts.first > most) {
      most = counts.first;
      t.device_name = name;
      t.device_units = static_cast<int32_t>(std::clamp<int64_t>(counts.second, 0, INT32_MAX));
    }
  }
  return t;
}

}  // namespace tierscope
