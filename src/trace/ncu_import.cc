// Nsight Compute CSV -> NcuReport: a small RFC 4180 reader (quoted fields with commas,
// doubled quotes and line breaks), header location by column name, and one NcuKernel
// per "ID" with its metric and rule rows.
#include "trace/ncu_import.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/paths.h"
#include "trace/csv_reader.h"

namespace tierscope {
namespace {

// ncu rounds a share near its ceiling to two decimals: up to this is 100% read as printed.
constexpr double kMaxPercent = 100.5;

constexpr size_t kMaxMalformedNotes = 10;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Where each known column is in the header (-1: absent).
struct Columns {
  int id = -1, process_id = -1, process_name = -1, kernel = -1, context = -1, stream = -1;
  int block = -1, grid = -1, device = -1, cc = -1;
  int section = -1, metric = -1, unit = -1, value = -1;
  int rule_name = -1, rule_type = -1, rule_description = -1, speedup_type = -1, speedup = -1;
  std::vector<std::string> header;
  std::vector<bool> is_meta;  // raw layout: column is launch metadata, not a metric

  bool Details() const { return metric >= 0 && value >= 0 && (id >= 0 || kernel >= 0); }
  bool Raw() const {
    if (metric >= 0 || id < 0 || kernel < 0) return false;
    return std::find(is_meta.begin(), is_meta.end(), false) != is_meta.end();
  }
};

int FindColumn(const std::vector<std::string>& header, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (IEquals(Trim(header[i]), name)) return static_cast<int>(i);
    }
  }
  return -1;
}

Columns LocateColumns(const std::vector<std::string>& header) {
  Columns c;
  c.header = header;
  c.id = FindColumn(header, {"ID"});
  c.process_id = FindColumn(header, {"Process ID"});
  c.process_name = FindColumn(header, {"Process Name"});
  c.kernel = FindColumn(header, {"Kernel Name", "Function Name", "Kernel", "Function", "Name"});
  c.context = FindColumn(header, {"Context"});
  c.stream = FindColumn(header, {"Stream"});
  c.block = FindColumn(header, {"Block Size"});
  c.grid = FindColumn(header, {"Grid Size"});
  c.device = FindColumn(header, {"Device"});
  c.cc = FindColumn(header, {"CC"});
  c.section = FindColumn(header, {"Section Name", "Section"});
  c.metric = FindColumn(header, {"Metric Name", "Metric"});
  c.unit = FindColumn(header, {"Metric Unit", "Unit"});
  c.value = FindColumn(header, {"Metric Value", "Value", "Average", "Avg"});
  c.rule_name = FindColumn(header, {"Rule Name"});
  c.rule_type = FindColumn(header, {"Rule Type"});
  c.rule_description = FindColumn(header, {"Rule Description"});
  c.speedup_type = FindColumn(header, {"Estimated Speedup Type"});
  c.speedup = FindColumn(header, {"Estimated Speedup"});
  static constexpr std::string_view kMeta[] = {"ID",          "Process ID",    "Process Name", "Host Name",
                                               "Kernel Name", "Function Name", "Kernel Time",  "Context",
                                               "Stream",      "Block Size",    "Grid Size",    "Device",
                                               "CC",          "API Stream"};
  c.is_meta.resize(header.size());
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string_view h = Trim(header[i]);
    bool meta = h.empty() || h.find("Range:") != std::string_view::npos;  // NVTX context columns
    for (std::string_view m : kMeta) meta = meta || IEquals(h, m);
    c.is_meta[i] = meta;
  }
  return c;
}

const std::string& Field(const std::vector<std::string>& f, int col) {
  static const std::string kEmpty;
  return col >= 0 && static_cast<size_t>(col) < f.size() ? f[static_cast<size_t>(col)] : kEmpty;
}

bool ParseId(std::string_view s, int64_t* out) {
  double d = 0;
  if (!ParseNcuNumber(s, &d) || d != std::floor(d) || std::fabs(d) > 9.0e15) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& source) : reader_(text) { report_.source = source; }

  StatusOr<NcuReport> Run() {
    if (!FindHeader()) {
      return InvalidArgument(
          report_.source +
          ": no Nsight Compute CSV header (a line with \"ID\", \"Kernel Name\", "
          "\"Metric Name\" and \"Metric Value\" columns, as ncu --csv --page details writes)");
    }
    std::vector<std::string> fields;
    while (!reader_.AtEnd()) {
      const std::string_view line = Trim(reader_.PeekLine());
      if (line.empty() || line.substr(0, 2) == "==") {  // blank, ==PROF== / ==WARNING== logs
        reader_.SkipLine();
        continue;
      }
      const int64_t line_no = reader_.line();
      const bool closed = reader_.ReadRecord(&fields);
      if (LooksLikeHeader(fields) && IsHeader(fields)) {  // concatenated outputs: rebind
        cols_ = LocateColumns(fields);
        continue;
      }
      ++report_.rows;
      if (!closed) {
        Malformed(line_no, "a quoted field is not closed before the end of the file");
      } else if (cols_.Details()) {
        DetailsRow(fields, line_no);
      } else {
        RawRow(fields, line_no);
      }
    }
    if (report_.malformed > static_cast<int64_t>(kMaxMalformedNotes)) {
      report_.notes.push_back("... " +
                              std::to_string(report_.malformed - static_cast<int64_t>(kMaxMalformedNotes)) +
                              " more malformed rows");
    }
    if (report_.kernels.empty()) report_.notes.push_back("no kernel rows after the header");
    return std::move(report_);
  }

 private:
  // A cheap test before IsHeader, which is too slow to run on every row.
  static bool LooksLikeHeader(const std::vector<std::string>& fields) {
    for (const std::string& f : fields) {
      const std::string_view t = Trim(f);
      if (IEquals(t, "Metric Name") || IEquals(t, "Kernel Name") || IEquals(t, "Function Name")) return true;
    }
    return false;
  }

  static bool IsHeader(const std::vector<std::string>& fields) {
    const Columns c = LocateColumns(fields);
    return c.Details() || c.Raw();
  }

  // Skips physical lines until one is a header; each is parsed on its own, so stray
  // quotes in program output cannot swallow the lines after them.
  bool FindHeader() {
    std::vector<std::string> fields;
    while (!reader_.AtEnd()) {
      std::string_view line = reader_.PeekLine();
      if (reader_.line() == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // BOM
      reader_.SkipLine();
      CsvReader one(line);
      one.ReadRecord(&fields);
      if (IsHeader(fields)) {
        cols_ = LocateColumns(fields);
        if (cols_.Raw()) {
          report_.notes.push_back(
              "--page raw layout: one row per kernel, metric units from the row "
              "after the header");
        }
        return true;
      }
    }
    return false;
  }

  void Malformed(int64_t line_no, const std::string& why) {
    ++report_.malformed;
    if (report_.malformed <= static_cast<int64_t>(kMaxMalformedNotes)) {
      report_.notes.push_back("line " + std::to_string(line_no) + ": " + why);
    }
  }

  // False (and counted) when `fields` cannot be read against the header: too few for
  // the columns needed, or more than the header has (one empty trailing field aside).
  // Missing trailing fields are fine: newer ncu leaves the rule columns off metric rows.
  bool FitsHeader(const std::vector<std::string>& fields, int needed, int64_t line_no) {
    const size_t n = cols_.header.size();
    const bool extra = fields.size() > n + 1 || (fields.size() == n + 1 && !Trim(fields.back()).empty());
    if (static_cast<int>(fields.size()) > needed && !extra) return true;
    Malformed(line_no,
              std::to_string(fields.size()) + " fields, header has " + std::to_string(cols_.header.size()));
    return false;
  }

  // The kernel a row belongs to, created from the row's launch columns when new.
  NcuKernel* KernelFor(const std::vector<std::string>& f, int64_t line_no) {
    int64_t id = 0;
    const std::string& name = Field(f, cols_.kernel);
    if (cols_.id >= 0) {
      if (!ParseId(Field(f, cols_.id), &id)) {
        Malformed(line_no, "ID \"" + Field(f, cols_.id) + "\" is not a number");
        return nullptr;
      }
    } else {
      auto [it, inserted] = ids_by_name_.emplace(name, static_cast<int64_t>(ids_by_name_.size()));
      id = it->second;
    }
    auto [it, inserted] = index_by_id_.emplace(id, report_.kernels.size());
    if (!inserted) return &report_.kernels[it->second];
    NcuKernel& k = report_.kernels.emplace_back();
    k.id = id;
    k.name = name;
    k.block_size = Field(f, cols_.block);
    k.grid_size = Field(f, cols_.grid);
    k.device = Field(f, cols_.device);
    k.cc = Field(f, cols_.cc);
    ParseId(Field(f, cols_.process_id), &k.process_id);
    k.process_name = Field(f, cols_.process_name);
    k.context = Field(f, cols_.context);
    k.stream = Field(f, cols_.stream);
    return &k;
  }

  void DetailsRow(const std::vector<std::string>& f, int64_t line_no) {
    const int needed = std::max({cols_.id, cols_.kernel, cols_.metric, cols_.value});
    if (!FitsHeader(f, needed, line_no)) return;
    const std::string& metric = Field(f, cols_.metric);
    const std::string& rule = Field(f, cols_.rule_name);
    if (Trim(metric).empty() && Trim(rule).empty()) {
      Malformed(line_no, "neither a metric nor a rule name");
      return;
    }
    NcuKernel* k = KernelFor(f, line_no);
    if (k == nullptr) return;
    if (!Trim(metric).empty()) {
      NcuMetric& m = k->metrics.emplace_back();
      m.section = Field(f, cols_.section);
      m.name = metric;
      m.unit = Field(f, cols_.unit);
      m.raw = Field(f, cols_.value);
      m.has_value = ParseNcuNumber(m.raw, &m.value);
      Plausible(m, line_no);
    } else {
      NcuRule& r = k->rules.emplace_back();
      r.section = Field(f, cols_.section);
      r.name = rule;
      r.type = Field(f, cols_.rule_type);
      r.description = Field(f, cols_.rule_description);
      r.speedup_type = Field(f, cols_.speedup_type);
      r.has_speedup = ParseNcuNumber(Field(f, cols_.speedup), &r.speedup);
    }
  }

  void RawRow(const std::vector<std::string>& f, int64_t line_no) {
    if (!FitsHeader(f, std::max(cols_.id, cols_.kernel), line_no)) return;
    if (Trim(Field(f, cols_.id)).empty() && Trim(Field(f, cols_.kernel)).empty()) {
      if (units_.empty()) {  // the units row
        units_ = f;
        units_.resize(cols_.header.size());
        return;
      }
      Malformed(line_no, "no ID or kernel name");
      return;
    }
    NcuKernel* k = KernelFor(f, line_no);
    if (k == nullptr) return;
    for (size_t i = 0; i < cols_.header.size() && i < f.size(); ++i) {
      if (cols_.is_meta[i]) continue;
      NcuMetric& m = k->metrics.emplace_back();
      m.name = cols_.header[i];
      m.unit = i < units_.size() ? units_[i] : std::string();
      m.raw = f[i];
      m.has_value = ParseNcuNumber(m.raw, &m.value);
      Plausible(m, line_no);
    }
  }

  // A value no counter can take (NaN, a negative time, size or cycle count), or outside its
  // logical range (a share past 100%, which ncu's guide says it does not clamp: counters
  // of different replay passes), is shown as written but never concluded from: counted
  // and noted, its row kept.
  void Plausible(NcuMetric& m, int64_t line_no) {
    const std::string_view unit = Trim(m.unit), raw = Trim(m.raw);
    const auto is = [raw](std::string_view word) {  // case-insensitive, only for unparsed values
      return raw.size() == word.size() && std::equal(raw.begin(), raw.end(), word.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) == b;
             });
    };
    std::string why;
    if (!m.has_value) {
      if (!is("nan") && !is("-nan") && !is("inf") && !is("-inf")) return;
      why = "not a number";
    } else if (unit == "%" && (m.value < 0 || m.value > kMaxPercent)) {
      why = "a share outside 0-100% (ncu does not clamp)";
    } else if (m.value < 0 && (IsTimeUnit(unit) || unit.find("byte") != std::string_view::npos ||
                               unit.find("cycle") != std::string_view::npos)) {
      why = "a negative " + std::string(unit) + " value";
    } else {
      return;
    }
    ++report_.implausible;
    if (report_.implausible <= static_cast<int64_t>(kMaxMalformedNotes)) {
      report_.notes.push_back("line " + std::to_string(line_no) + ": " + m.name + " = " + std::string(raw) +
                              (unit.empty() ? "" : " " + std::string(unit)) + ": " + why +
                              ", shown but not concluded from");
    }
    m.has_value = false;
    m.set_aside = true;
  }

  static bool IsTimeUnit(std::string_view unit) {
    return unit == "second" || unit == "msecond" || unit == "usecond" || unit == "nsecond" || unit == "s" ||
           unit == "ms" || unit == "us" || unit == "ns";
  }

  CsvReader reader_;
  NcuReport report_;
  Columns cols_;
  std::vector<std::string> units_;
  std::map<int64_t, size_t> index_by_id_;
  std::unordered_map<std::string, int64_t> ids_by_name_;
};

}  // namespace

const NcuMetric* NcuKernel::Find(std::string_view metric_name) const {
  for (const NcuMetric& m : metrics) {
    if (m.name == metric_name) return &m;
  }
  return nullptr;
}

const NcuMetric* NcuKernel::Find(std::string_view section, std::string_view metric_name) const {
  for (const NcuMetric& m : metrics) {
    if (m.section == section && m.name == metric_name) return &m;
  }
  return nullptr;
}

std::optional<double> NcuKernel::Value(std::string_view metric_name) const {
  const NcuMetric* m = Find(metric_name);
  if (m == nullptr || !m->has_value) return std::nullopt;
  return m->value;
}

const NcuKernel* NcuReport::FindKernel(int64_t id) const {
  for (const NcuKernel& k : kernels) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

bool ParseNcuNumber(std::string_view raw, double* out) {
  std::string_view s = Trim(raw);
  if (!s.empty() && s.back() == '%') s = Trim(s.substr(0, s.size() - 1));
  if (s.empty()) return false;
  std::string digits;
  digits.reserve(s.size());
  size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    if (s[0] == '-') digits += '-';
    i = 1;
  }
  // Thousands separators: 1-3 leading digits, then groups of exactly three, and only
  // in the integer part.
  const size_t int_end = std::min(s.find_first_of(".eE", i), s.size());
  const std::string_view int_part = s.substr(i, int_end - i);
  if (int_part.find(',') != std::string_view::npos) {
    size_t group = 0;
    bool first = true;
    for (char c : int_part) {
      if (c == ',') {
        if (group == 0 || (first && group > 3) || (!first && group != 3)) return false;
        first = false;
        group = 0;
      } else if (c >= '0' && c <= '9') {
        ++group;
        digits += c;
      } else {
        return false;
      }
    }
    if (group != 3) return false;
  } else {
    digits += int_part;
  }
  digits += s.substr(int_end);
  if (digits.empty() || digits == "-") return false;
  double v = 0;
  const char* begin = digits.data();
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

StatusOr<NcuReport> ParseNcuCsv(std::string_view text, const std::string& source) {
  return Parser(text, source).Run();
}

StatusOr<NcuReport> ImportNcuCsv(const std::string& path) {
  TS_RETURN_IF_ERROR(CheckReadableFile(path));
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (f == nullptr) return NotFound(path + ": cannot open");
  // Read once into a string sized from stat (not a stream's buffer and then its copy),
  // refused before reading when stat says it is too big, and while reading otherwise
  // (a pipe): an ncu CSV of one kernel's sections is kilobytes, a whole run's megabytes.
  constexpr uint64_t kMaxNcuCsvBytes = uint64_t{1} << 32;
  const auto too_big = [&path](uint64_t bytes) {
    return ResourceExhausted(path + ": " + std::to_string(bytes) + " bytes, more than the " +
                             std::to_string(kMaxNcuCsvBytes) + " an ncu CSV is read up to");
  };
  struct stat st;
  std::string text;
  if (::fstat(fileno(f.get()), &st) == 0 && S_ISREG(st.st_mode)) {
    if (static_cast<uint64_t>(st.st_size) > kMaxNcuCsvBytes) return too_big(static_cast<uint64_t>(st.st_size));
    text.reserve(static_cast<size_t>(st.st_size) + 1);
  }
  char chunk[1 << 16];
  for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), f.get())) > 0;) {
    if (text.size() + n > kMaxNcuCsvBytes) return too_big(text.size() + n);
    text.append(chunk, n);
  }
  if (std::ferror(f.get())) return DataLoss(path + ": read error");
  return ParseNcuCsv(text, path);
}

}  // namespace tierscope
