// Table: the one result shape every report produces, rendered as an aligned text
// table for people or as CSV / JSON for programs.
#ifndef TIERSCOPE_ANALYSIS_TABLE_H_
#define TIERSCOPE_ANALYSIS_TABLE_H_

#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace tierscope {

using Cell = std::variant<std::string, int64_t, double>;

struct Table {
  std::string name;   // report name, e.g. "cuda_gpu_kern_sum"
  std::string title;  // one line for people
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> notes;  // printed under the table

  // Every cell is one line: a control character in a string (a newline in a name, a tab)
  // becomes a space.
  void AddRow(std::vector<Cell> row);
  // A note "<count> <what>" when count > 0 ("3 row(s) above ..."); nothing otherwise.
  void NoteCount(int64_t count, const std::string& what);
};

enum class OutputFormat { kText, kJson, kCsv };

// How reports are written: the format, and (text) whether long names stay whole.
struct RenderOptions {
  OutputFormat format = OutputFormat::kText;
  bool wide = false;
  bool timings = false;  // a job's JSON: each step's wall seconds (not reproducible; bench/job)
  RenderOptions() = default;
  RenderOptions(OutputFormat f, bool w = false) : format(f), wide(w) {}  // NOLINT: implicit
};

// Parses "text", "json", "csv".
bool ParseOutputFormat(const std::string& s, OutputFormat* out);

// Aligned text, one line per row. Unless `wide`, a long string is shortened in the middle
// ("void at::native::vector...(int, float*)"): to 60 characters in a column before the
// last, to 100 in the last (the name).
std::string RenderText(const Table& t, bool wide = false);
// The same, each line written to `out` as it is made (a large table is never whole twice).
void WriteText(std::ostream& out, const Table& t, bool wide = false);
// A cell as the text and CSV renderers write it.
std::string CellText(const Cell& c);
// `s` cut to `max` characters by replacing its middle with "..." (whole when it fits).
std::string ShortenMiddle(const std::string& s, size_t max);
std::string RenderCsv(const Table& t);
void WriteCsv(std::ostream& out, const Table& t);  // RenderCsv a row at a time
nlohmann::json TableToJson(const Table& t);
// A report as JSON text (2-space indent, a newline after): bytes that are not UTF-8 (a
// file path, a name from a trace's string table) come out as U+FFFD instead of throwing.
inline std::string ReportJsonText(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}
// `j` as ReportJsonText writes it nested `depth` levels deep in a larger document (its
// lines after the first indented 2 x depth more; no newline after): documents written a
// part at a time read exactly as if dumped whole.
std::string JsonAt(const nlohmann::json& j, int depth);
// TableToJson(t) as JsonAt(.., depth) writes it, a row at a time (the table's JSON is
// never whole in memory: an object per row is most of it).
void WriteTableJson(std::ostream& out, const Table& t, int depth);

// One table alone in the chosen format: JSON (TableToJson), CSV, or aligned text.
std::string RenderTable(const Table& t, const RenderOptions& r);

// "1.234 ms" style durations for text.
std::string FormatNs(double ns);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_TABLE_H_
