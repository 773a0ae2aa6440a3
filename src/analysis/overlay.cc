// The overlay trace: the original JSON text with the analysis's events spliced into the end
// of its traceEvents array.
#include "analysis/overlay.h"

#include <simdjson.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "analysis/timeline.h"
#include "profile/chrome_trace.h"
#include "profile/trace_sink.h"
#include "trace/json_input.h"

namespace tierscope {
namespace {

// At most this many of the path's events are drawn (the longest on the path first).
constexpr size_t kMaxPathEvents = 20'000;

// Kineto's microseconds, exactly: "123.456".
std::string Us(int64_t ns) {
  char buf[48];
  const bool neg = ns < 0;
  const uint64_t a = neg ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  std::snprintf(buf, sizeof(buf), "%s%" PRIu64 ".%03" PRIu64, neg ? "-" : "", a / 1000, a % 1000);
  return buf;
}

std::string ChromeEvent(const char* ph, std::string_view name, int64_t pid, int64_t tid, int64_t ts_ns,
                  const std::string& rest) {
  std::string o = "{\"ph\": \"";
  o += ph;
  o += "\", \"name\": ";
  AppendJsonString(o, name);
  o += ", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + Us(ts_ns) + rest + "}";
  return o;
}

std::string Meta(const char* what, int64_t pid, int64_t tid, const std::string& value) {
  return "{\"ph\": \"M\", \"name\": \"" + std::string(what) + "\", \"pid\": " + std::to_string(pid) +
         ", \"tid\": " + std::to_string(tid) + ", \"args\": " + nlohmann::json{{"name", value}}.dump() + "}";
}

// Where the overlay's events go: the offset of the traceEvents array's ']' (or the bare
// list's), and whether the array already holds an event.
StatusOr<std::pair<size_t, bool>> EventsEnd(PaddedBuffer& buf, const std::string& path) {
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  const auto bad = [&](const char* what) { return InvalidArgument(path + ": not a Chrome trace JSON (" + what + ")"); };
  if (parser.iterate(buf.data(), buf.size(), buf.capacity()).get(doc)) return bad("does not parse");
  simdjson::ondemand::json_type type;
  if (doc.type().get(type)) return bad("does not parse");
  std::string_view raw;
  if (type == simdjson::ondemand::json_type::array) {
    simdjson::ondemand::array a;
    if (doc.get_array().get(a) || a.raw_json().get(raw)) return bad("a list that does not parse");
  } else if (type == simdjson::ondemand::json_type::object) {
    simdjson::ondemand::object o;
    if (doc.get_object().get(o)) return bad("does not parse");
    for (auto field : o) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return bad("a key that does not parse");
      if (key != "traceEvents") continue;
      simdjson::ondemand::array a;
      if (field.value().get_array().get(a) || a.raw_json().get(raw)) return bad("traceEvents is not a list");
      break;
    }
    if (raw.empty()) return bad("no traceEvents");
  } else {
    return bad("neither an object nor a list");
  }
  const size_t begin = static_cast<size_t>(raw.data() - buf.data());
  size_t end = begin + raw.size();
  while (end > begin && buf.data()[end - 1] != ']') --end;
  if (end == begin) return bad("traceEvents has no end");
  --end;  // the ']'
  const std::string_view inside(buf.data() + begin + 1, end - begin - 1);
  return std::make_pair(end, inside.find_first_not_of(" \t\r\n") != std::string_view::npos);
}

}  // namespace

Status CanOverlay(const Trace& trace) {
  if (trace.format == "kineto") return OkStatus();
  return FailedPrecondition("--overlay writes the Chrome trace JSON it read with the analysis added; " + trace.source +
                            " is " + trace.format + ", which Perfetto and chrome://tracing do not open as such");
}

Status WriteOverlay(const std::string& trace_path, const TraceIndex& index, const std::vector<Finding>& findings,
                    const std::string& step, const std::string& out_path) {
  const Trace& trace = *index.trace;
  TS_RETURN_IF_ERROR(CanOverlay(trace));
  TS_ASSIGN_OR_RETURN(PaddedBuffer buf, ReadJsonInput(trace_path));
  TS_ASSIGN_OR_RETURN(const auto at, EventsEnd(buf, trace_path));

  // The step, as the page chooses it, and its critical path: each event once.
  TS_ASSIGN_OR_RETURN(const StepChoice choice, ChooseStep(index, step));
  const WorkUnit& w = choice.step();
  const CriticalPath path = AnalyzeCriticalPath(index, w.begin_ns, w.end_ns, w.name);
  std::vector<CriticalPath::OnPath> on = PathEventsOnce(path);  // longest first
  if (on.size() > kMaxPathEvents) on.resize(kMaxPathEvents);
  std::sort(on.begin(), on.end(), [&](const auto& a, const auto& b) {
    return std::make_pair(trace.events[a.event].ts_ns, a.event) < std::make_pair(trace.events[b.event].ts_ns, b.event);
  });

  int64_t pid = 0;  // a process of its own
  for (const Event& e : trace.events) pid = std::max<int64_t>(pid, e.pid);
  ++pid;
  std::vector<std::string> added;
  added.push_back(Meta("process_name", pid, 0, "tierscope analysis"));
  // The path's events on tracks of this process, one per track of the trace they come from
  // (so an op and the kernel it launched never share one), in time order.
  std::map<std::pair<int32_t, int32_t>, int64_t> track_of;
  std::vector<int64_t> track;
  for (const CriticalPath::OnPath& p : on) {
    const Event& e = trace.events[p.event];
    auto [it, fresh] = track_of.emplace(std::make_pair(e.pid, e.tid), static_cast<int64_t>(track_of.size()) + 1);
    if (fresh) {
      added.push_back(Meta("thread_name", pid, it->second,
                           "critical path of " + w.name + ": pid " + std::to_string(e.pid) + " tid " +
                               std::to_string(e.tid)));
    }
    track.push_back(it->second);
    const nlohmann::json args = {{"cause", PathCauseName(p.cause)},
                                 {"on path (ns)", p.ns},
                                 {"event", {{"pid", e.pid}, {"tid", e.tid}, {"kind", EventKindName(e.kind)}}}};
    added.push_back(ChromeEvent("X", trace.strings.Get(e.name), pid, it->second, e.ts_ns,
                                ", \"dur\": " + Us(e.dur_ns) + ", \"cat\": \"tierscope_critical_path\", \"args\": " +
                                    args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  }
  // Flows along the path between those copies, forward in time: from just inside one
  // event's start to just inside the next's (each binds to the copy that encloses it).
  for (size_t k = 0; k + 1 < on.size(); ++k) {
    const Event& a = trace.events[on[k].event];
    const Event& b = trace.events[on[k + 1].event];
    const std::string id = ", \"id\": " + std::to_string(k + 1) + ", \"cat\": \"tierscope_critical_path\", \"bp\": \"e\"";
    added.push_back(ChromeEvent("s", "critical path", pid, track[k], a.ts_ns + std::min<int64_t>(a.dur_ns, 1), id));
    added.push_back(ChromeEvent("f", "critical path", pid, track[k + 1], b.ts_ns + std::min<int64_t>(b.dur_ns, 1), id));
  }
  const int64_t first_finding_tid = static_cast<int64_t>(track_of.size()) + 1;
  // Each finding over the step, on a track of its own.
  for (size_t k = 0; k < findings.size(); ++k) {
    const Finding& f = findings[k];
    const int64_t tid = first_finding_tid + static_cast<int64_t>(k);
    added.push_back(Meta("thread_name", pid, tid, "finding " + std::to_string(k + 1) + ": " + f.rule));
    const nlohmann::json args = {{"rule", f.rule},           {"explains (ns)", f.explained_ns}, {"evidence", f.evidence},
                                 {"examples", f.examples},   {"next step", f.next_step},        {"threshold", f.threshold}};
    added.push_back(ChromeEvent("X", f.title, pid, tid, w.begin_ns,
                          ", \"dur\": " + Us(std::max<int64_t>(w.end_ns - w.begin_ns, 1)) +
                              ", \"cat\": \"tierscope_finding\", \"args\": " +
                              args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  }

  TS_ASSIGN_OR_RETURN(std::unique_ptr<TraceSink> sink, TraceSink::Open(out_path));
  std::string& o = sink->buf();
  const size_t chunk = 1 << 20;
  for (size_t from = 0; from < at.first; from += chunk) {
    o.append(buf.data() + from, std::min(chunk, at.first - from));
    sink->MaybeFlush();
  }
  bool first = !at.second;
  for (const std::string& e : added) {
    o += first ? "\n" : ",\n";
    o += e;
    first = false;
    sink->MaybeFlush();
  }
  o += "\n";
  o.append(buf.data() + at.first, buf.size() - at.first);
  return sink->Close(out_path);
}

}  // namespace tierscope
