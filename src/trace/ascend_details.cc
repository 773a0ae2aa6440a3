// kernel_details.csv and profiler_info_N.json joined to a torch_npu trace: see
// ascend_details.h.
#include "trace/ascend_details.h"

#include <charconv>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
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

namespace {

// The rank a torch_npu profiler_info file gives: its "rank_id" (a whole number, or a
// string of one: newer torch_npu copies the RANK variable; -1 for a run that was not
// distributed), else the N of its name profiler_info_N.json (older torch_npu left the file
// empty). Where it gives none, `*why` says what was wrong (a single device's
// profiler_info.json, which needs no rank, excepted); where its rank_id is bad or disagrees
// with its name, `*why` says which was used.
std::optional<int64_t> RankFromProfilerInfo(const fs::path& file, std::string* why) {
  constexpr int64_t kMaxRank = int64_t{1} << 20;
  const std::string n = file.filename().string();
  const auto whole = [](std::string_view text) -> std::optional<int64_t> {
    int64_t v = 0;
    const auto [at, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || at != text.data() + text.size()) return std::nullopt;
    return v;
  };
  const std::string_view stem = std::string_view(n).substr(0, n.size() - 5);  // less ".json"
  std::optional<int64_t> named;
  if (stem.starts_with("profiler_info_")) named = whole(stem.substr(14));
  if (named && (*named < 0 || *named >= kMaxRank)) named.reset();
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  std::string problem;
  std::optional<int64_t> said;
  bool single = false;  // rank_id -1: not distributed
  bool quiet = true;    // no problem, or one older torch_npu's files have
  if (ec) {
    problem = n + ": cannot read its size: " + ec.message();
  } else if (size > (uintmax_t{1} << 20)) {
    problem = n + " is over 1 MiB";
  } else if (StatusOr<std::string> text = ReadFile(file.string()); !text.ok()) {
    problem = text.status().message();
  } else if (text->find_first_not_of(" \t\r\n") == std::string::npos) {
    problem = n + " is empty";
  } else {
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      problem = n + " is not valid JSON";
      quiet = false;
    } else if (!j.is_object()) {
      problem = n + " is not a JSON object";
      quiet = false;
    } else if (!j.contains("rank_id")) {
      problem = n + " has no rank_id";
    } else {
      const nlohmann::json& id = j["rank_id"];
      said = id.is_number_integer() ? std::optional<int64_t>(id.get<int64_t>())
             : id.is_string()       ? whole(id.get<std::string>())
                                    : std::nullopt;
      single = said == -1;
      if (!said) {
        problem = n + "'s rank_id is " + JsonExcerpt(id) + ", not an integer";
      } else if (!single && (*said < 0 || *said >= kMaxRank)) {
        problem = n + "'s rank_id " + std::to_string(*said) + " is out of range";
      }
      quiet = problem.empty();
      if (!problem.empty() || single) said.reset();
    }
  }
  if (said) {
    if (named && *named != *said) *why = n + "'s rank_id is " + std::to_string(*said) + ": that is the rank read";
    return said;
  }
  if (named) {
    // An empty file or one without a rank_id is what older torch_npu wrote: nothing to say.
    if (!quiet) *why = problem + ": the rank is read from its name";
    return named;
  }
  if (!single && stem.starts_with("profiler_info_")) *why = std::move(problem);
  return std::nullopt;
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

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
  // ../profiler_info_N.json: see RankFromProfilerInfo. A file that says nothing usable is
  // named in a note when no other file gives the rank.
  std::set<int64_t> ranks;
  std::vector<std::string> unusable, disagree;
  for (fs::directory_iterator it(path.parent_path().parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (!n.starts_with("profiler_info") || !n.ends_with(".json") || !it->is_regular_file(ec)) continue;
    std::string why;
    const std::optional<int64_t> r = RankFromProfilerInfo(it->path(), &why);
    if (r) ranks.insert(*r);
    if (!why.empty()) (r ? disagree : unusable).push_back(std::move(why));
  }
  if (ranks.empty() && !unusable.empty()) t.import_notes.push_back("the rank is left unknown: " + Joined(unusable));
  if (!disagree.empty()) t.import_notes.push_back(Joined(disagree));
  if (ranks.size() == 1) {
    t.rank = static_cast<int32_t>(*ranks.begin());
  } else if (ranks.size() > 1) {
    t.import_notes.push_back("profiler_info files beside the trace name " + std::to_string(ranks.size()) +
                             " ranks: the rank is left unknown");
  }
}

}  // namespace tierscope::ascend
