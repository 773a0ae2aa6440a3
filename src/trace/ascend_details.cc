// kernel_details.csv and profiler_info_N.json joined to a torch_npu trace: see
// ascend_details.h.
#include "trace/ascend_details.h"

#include <charconv>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/json_text.h"
#include "core/paths.h"
#include "trace/ascend_layout.h"
#include "trace/csv_reader.h"
#include "trace/kineto_scan.h"

namespace tierscope::ascend {
namespace {

namespace fs = std::filesystem;

// kernel_details.csv is read up to this size (a run of millions of tasks is ~1 GB).
constexpr uintmax_t kMaxDetailsBytes = uintmax_t{4} << 30;
constexpr int64_t kMatchNs = 1000;

// Columns the trace already has, or that identify the row rather than describe the task.
bool IsKeyColumn(std::string_view c) {
  return c == "Step Id" || c == "Model ID" || c == "Task ID" || c == "Stream ID" || c == "Name" ||
         c == "Start Time(us)" || c == "Duration(us)" || c == "Context ID";
}

std::string_view Unquote(std::string_view v) {
  v = kineto::Trim(v);
  while (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = kineto::Trim(v.substr(1, v.size() - 2));
  return v;
}

// A member for a column's value: a number as a number, anything else as a string.
std::string Member(const std::string& column, std::string_view value) {
  // A header or value need not be UTF-8: dump() replaces what is not (it throws otherwise).
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  std::string m = nlohmann::json(column).dump(-1, ' ', false, kReplace) + ":";
  double d = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), d);
  if (ec == std::errc() && end == value.data() + value.size() && std::isfinite(d)) {
    m += nlohmann::json(d).dump();
  } else {
    m += nlohmann::json(std::string(value)).dump(-1, ' ', false, kReplace);
  }
  return m;
}

}  // namespace

Status JoinKernelDetails(Trace& t, std::string_view csv, const std::string& source) {
  if (csv.substr(0, 3) == "\xEF\xBB\xBF") csv.remove_prefix(3);
  CsvReader reader(csv);
  std::vector<std::string> header;
  reader.ReadRecord(&header);
  int name_col = -1, start_col = -1, block_col = -1;
  for (size_t i = 0; i < header.size(); ++i) {
    header[i] = std::string(kineto::Trim(header[i]));
    if (header[i] == "Name") name_col = static_cast<int>(i);
    if (header[i] == "Start Time(us)") start_col = static_cast<int>(i);
    if (header[i] == "Block Dim") block_col = static_cast<int>(i);
  }
  if (name_col < 0 || start_col < 0) {
    return InvalidArgument(source + ": not torch_npu's kernel_details.csv (no \"Name\" and \"Start Time(us)\" columns)");
  }
  std::map<std::pair<std::string_view, int64_t>, size_t> kernels;  // name, start -> event
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.kind == EventKind::kKernel) kernels.try_emplace({t.strings.Get(e.name), e.ts_ns}, i);
  }
  // The CSV's start and the trace's are rounded apart (a collective's by 1 ns): the kernel
  // of that name starting nearest, within kMatchNs.
  const auto find = [&](std::string_view name, int64_t start) {
    auto best = kernels.end();
    const int64_t from = start > INT64_MIN + kMatchNs ? start - kMatchNs : INT64_MIN;
    const int64_t to = start < INT64_MAX - kMatchNs ? start + kMatchNs : INT64_MAX;
    for (auto it = kernels.lower_bound({name, from}); it != kernels.end() && it->first.first == name && it->first.second <= to;
         ++it) {
      if (best == kernels.end() || std::abs(it->first.second - start) < std::abs(best->first.second - start)) best = it;
    }
    return best;
  };
  std::set<size_t> joined;
  int64_t unmatched = 0, malformed = 0;
  std::vector<std::string> fields;
  while (!reader.AtEnd()) {
    const bool closed = reader.ReadRecord(&fields);
    if (fields.size() == 1 && kineto::Trim(fields[0]).empty()) continue;  // a blank line
    int64_t start_ns = 0;
    if (!closed || fields.size() != header.size() || !kineto::MicrosToNs(kineto::Trim(fields[start_col]), &start_ns)) {
      ++malformed;
      continue;
    }
    const auto it = find(std::string_view(fields[name_col]), start_ns);
    if (it == kernels.end() || !joined.insert(it->second).second) {
      ++unmatched;
      continue;
    }
    Event& e = t.events[it->second];
    std::string args(e.args >= 0 ? t.strings.Get(e.args) : std::string_view());
    for (size_t c = 0; c < fields.size(); ++c) {
      const std::string_view v = Unquote(fields[c]);
      if (IsKeyColumn(header[c]) || v.empty() || v == "N/A") continue;
      if (!args.empty()) args += ',';
      args += Member(header[c], v);
    }
    int64_t blocks = 0;
    const std::string_view b = block_col >= 0 ? kineto::Trim(fields[block_col]) : std::string_view();
    if (!b.empty() && std::from_chars(b.data(), b.data() + b.size(), blocks).ptr == b.data() + b.size() && blocks > 0) {
      args += std::string(args.empty() ? "" : ",") + "\"grid\":[" + std::to_string(blocks) + ",1,1]";
    }
    e.args = t.strings.Append(args);
    e.arg_keys = 0;
  }
  const std::string name = fs::path(source).filename().string();
  t.stats.layout["ascend: " + name + " rows joined to their kernel"] += static_cast<int64_t>(joined.size());
  if (unmatched > 0) t.stats.layout["ascend: " + name + " rows naming no kernel of the trace"] += unmatched;
  if (malformed > 0) t.stats.layout["ascend: " + name + " rows malformed (skipped)"] += malformed;
  return OkStatus();
}

void AttachAscendOutputs(Trace& t, const std::string& trace_path) {
  const fs::path path(trace_path);
  const std::string file = path.filename().string();
  if ((file != "trace_view.json" && file != "trace_view.json.gz") || !IsAscendLayout(t)) return;
  std::error_code ec;
  const fs::path details = path.parent_path() / "kernel_details.csv";
  if (fs::is_regular_file(details, ec)) {
    const uintmax_t size = fs::file_size(details, ec);
    StatusOr<std::string> text = ec ? StatusOr<std::string>(NotFound(details.string() + ": cannot read its size"))
                                 : size > kMaxDetailsBytes
                                     ? StatusOr<std::string>(InvalidArgument(details.string() + ": " + std::to_string(size) +
                                                                             " bytes, over the 4 GiB read"))
                                     : ReadFile(details.string());
    const Status s = text.ok() ? JoinKernelDetails(t, *text, details.string()) : text.status();
    if (!s.ok()) t.import_notes.push_back("kernel_details.csv not joined: " + s.message());
  }
  if (t.rank >= 0) return;
  // ../profiler_info_N.json (torch_npu names it for the rank; "rank_id" inside, -1 for a
  // run that was not distributed). A file that says nothing usable is named in a note when
  // no other file gives the rank.
  std::set<int64_t> ranks;
  std::vector<std::string> unusable;
  for (fs::directory_iterator it(path.parent_path().parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (!n.starts_with("profiler_info") || !n.ends_with(".json") || !it->is_regular_file(ec)) continue;
    if (it->file_size(ec) > (uintmax_t{1} << 20)) {
      unusable.push_back(n + " is over 1 MiB");
      continue;
    }
    StatusOr<std::string> text = ReadFile(it->path().string());
    if (!text.ok()) {
      unusable.push_back(text.status().message());
      continue;
    }
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      unusable.push_back(n + " is not valid JSON");
    } else if (!j.is_object()) {
      unusable.push_back(n + " is not a JSON object");
    } else if (!j.contains("rank_id")) {
      unusable.push_back(n + " has no rank_id");
    } else if (!j["rank_id"].is_number_integer()) {
      unusable.push_back(n + "'s rank_id is " + JsonExcerpt(j["rank_id"]) + ", not a whole number");
    } else if (const int64_t r = j["rank_id"].get<int64_t>(); r >= 0 && r < (int64_t{1} << 20)) {
      ranks.insert(r);
    } else if (r != -1) {
      unusable.push_back(n + "'s rank_id " + std::to_string(r) + " is out of range");
    }
  }
  if (ranks.empty() && !unusable.empty()) {
    std::string note = "the rank is left unknown: ";
    for (size_t i = 0; i < unusable.size(); ++i) note += (i > 0 ? "; " : "") + unusable[i];
    t.import_notes.push_back(std::move(note));
  }
  if (ranks.size() == 1) {
    t.rank = static_cast<int32_t>(*ranks.begin());
  } else if (ranks.size() > 1) {
    t.import_notes.push_back("profiler_info files beside the trace name " + std::to_string(ranks.size()) +
                             " ranks: the rank is left unknown");
  }
}

}  // namespace tierscope::ascend
