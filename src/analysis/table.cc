// Table renderers.
#include "analysis/table.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>

#include "core/text.h"

namespace tierscope {

std::string CellText(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  if (const auto* i = std::get_if<int64_t>(&c)) return std::to_string(*i);
  const double d = std::get<double>(c);
  char buf[64];
  if (std::fabs(d) >= 1e6 || d == std::floor(d)) {
    std::snprintf(buf, sizeof(buf), "%.0f", d);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3f", d);
  }
  return buf;
}

namespace {

bool IsNumber(const Cell& c) { return !std::holds_alternative<std::string>(c); }

// A number, or the dash that stands for a missing one: both right-aligned in a number column.
bool IsNumberOrDash(const Cell& c) {
  const auto* s = std::get_if<std::string>(&c);
  return s == nullptr || *s == "-";
}

// Terminal columns `s` takes: a code point each, two for East Asian wide and fullwidth
// ones (CJK, Hangul, fullwidth forms), none for a UTF-8 continuation byte.
size_t DisplayWidth(const std::string& s) {
  size_t w = 0;
  for (size_t i = 0; i < s.size();) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    const size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
    uint32_t cp = len == 1 ? b : b & (0xFF >> (len + 1));
    for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    const bool wide_cp = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
                         (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
                         (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                         (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1FAFF) ||
                         (cp >= 0x20000 && cp <= 0x3FFFD);
    w += wide_cp ? 2 : 1;
    i += len;
  }
  return w;
}

std::string Pad(size_t n) { return std::string(n, ' '); }

std::string CsvQuote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

void Table::NoteCount(int64_t count, const std::string& what) {
  if (count > 0) notes.push_back(std::to_string(count) + " " + what);
}

void Table::AddRow(std::vector<Cell> row) {
  for (Cell& c : row) {
    if (auto* s = std::get_if<std::string>(&c)) *s = Printable(*s);
  }
  rows.push_back(std::move(row));
}

std::string ShortenMiddle(const std::string& s, size_t max) {
  if (s.size() <= max || max < 8) return s;
  const size_t head = (max - 3 + 1) / 2, tail = max - 3 - head;
  // Never cut a UTF-8 sequence: move the cuts to character boundaries.
  size_t h = head, t = s.size() - tail;
  while (h > 0 && (static_cast<unsigned char>(s[h]) & 0xC0) == 0x80) --h;
  while (t < s.size() && (static_cast<unsigned char>(s[t]) & 0xC0) == 0x80) ++t;
  return s.substr(0, h) + "..." + s.substr(t);
}

bool ParseOutputFormat(const std::string& s, OutputFormat* out) {
  if (s == "text") *out = OutputFormat::kText;
  else if (s == "json") *out = OutputFormat::kJson;
  else if (s == "csv") *out = OutputFormat::kCsv;
  else return false;
  return true;
}

std::string FormatNs(double ns) {
  char buf[32];
  const double a = std::fabs(ns);
  if (a >= 1e9) std::snprintf(buf, sizeof(buf), "%.3f s", ns / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof(buf), "%.3f ms", ns / 1e6);
  else if (a >= 1e3) std::snprintf(buf, sizeof(buf), "%.3f us", ns / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f ns", ns);
  return buf;
}

void WriteText(std::ostream& os, const Table& t, bool wide) {
  std::vector<size_t> width(t.columns.size());
  std::vector<bool> numeric(t.columns.size(), true);  // numbers (or '-') only: right-aligned
  for (size_t c = 0; c < t.columns.size(); ++c) width[c] = DisplayWidth(t.columns[c]);
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : t.rows) {
    cells.emplace_back();
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      std::string text = CellText(row[c]);
      if (!IsNumber(row[c]) && !wide) text = ShortenMiddle(text, c + 1 == width.size() ? 100 : 60);
      numeric[c] = numeric[c] && IsNumberOrDash(row[c]);
      width[c] = std::max(width[c], DisplayWidth(text));
      cells.back().push_back(std::move(text));
    }
  }
  if (!t.title.empty()) os << Printable(t.title) << "\n\n";
  auto line = [&](const std::vector<std::string>& v, const std::vector<Cell>* row) {
    std::string l;
    for (size_t c = 0; c < v.size(); ++c) {
      const bool last = c + 1 == width.size();
      // A number column is right-aligned, the last one too; a last column of names is not padded.
      const bool right = numeric[c] || (!last && row != nullptr && IsNumber((*row)[c]));
      const size_t w = DisplayWidth(v[c]);
      if (c) l += "  ";
      if (last && !right) l += v[c];
      else if (right) l += Pad(width[c] - w) + v[c];
      else l += v[c] + Pad(width[c] - w);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  os << line(t.columns, nullptr);
  std::vector<std::string> dashes;
  for (size_t w : width) dashes.push_back(std::string(std::min<size_t>(w, 60), '-'));
  os << line(dashes, nullptr);
  for (size_t r = 0; r < cells.size(); ++r) {
    os << line(cells[r], &t.rows[r]);
    std::vector<std::string>().swap(cells[r]);  // written: its text goes as the next is made
  }
  if (t.rows.empty()) os << "(no rows)\n";
  for (const auto& n : t.notes) os << Printable(n) << "\n";  // one line each, whatever a trace named
}

std::string RenderText(const Table& t, bool wide) {
  std::ostringstream out;
  WriteText(out, t, wide);
  return std::move(out).str();
}

std::string RenderTable(const Table& t, const RenderOptions& r) {
  if (r.format == OutputFormat::kJson) return ReportJsonText(TableToJson(t));
  if (r.format == OutputFormat::kCsv) return RenderCsv(t);
  return RenderText(t, r.wide);
}

void WriteCsv(std::ostream& out, const Table& t) {
  std::string line;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (c) line += ',';
    line += CsvQuote(t.columns[c]);
  }
  out << line << "\n";
  for (const auto& row : t.rows) {
    line.clear();
    for (size_t c = 0; c < row.size(); ++c) {
      if (c) line += ',';
      line += CsvQuote(CellText(row[c]));
    }
    out << line << "\n";
  }
}

std::string RenderCsv(const Table& t) {
  std::ostringstream out;
  WriteCsv(out, t);
  return std::move(out).str();
}

namespace {

nlohmann::json RowToJson(const Table& t, const std::vector<Cell>& row) {
  nlohmann::json r = nlohmann::json::object();
  for (size_t c = 0; c < row.size() && c < t.columns.size(); ++c) {
    std::visit([&](const auto& v) { r[t.columns[c]] = v; }, row[c]);
  }
  return r;
}

}  // namespace

nlohmann::json TableToJson(const Table& t) {
  nlohmann::json j;
  j["name"] = t.name;
  j["title"] = t.title;
  j["columns"] = t.columns;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : t.rows) rows.push_back(RowToJson(t, row));
  j["rows"] = std::move(rows);
  if (!t.notes.empty()) j["notes"] = t.notes;
  return j;
}

std::string JsonAt(const nlohmann::json& j, int depth) {
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string indent = "\n" + std::string(2 * static_cast<size_t>(std::max(depth, 0)), ' ');
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {  // a newline is never inside a dumped string (it is escaped there)
    if (ch == '\n') out += indent;
    else out += ch;
  }
  return out;
}

void WriteTableJson(std::ostream& out, const Table& t, int depth) {
  // The keys in nlohmann's order (sorted), each member on its own line, as dump() writes them.
  const std::string in(2 * static_cast<size_t>(depth + 1), ' ');
  out << "{\n" << in << "\"columns\": " << JsonAt(t.columns, depth + 1) << ",\n";
  out << in << "\"name\": " << JsonAt(t.name, depth + 1) << ",\n";
  if (!t.notes.empty()) out << in << "\"notes\": " << JsonAt(t.notes, depth + 1) << ",\n";
  out << in << "\"rows\": ";
  if (t.rows.empty()) {
    out << "[]";
  } else {
    const std::string row_in(2 * static_cast<size_t>(depth + 2), ' ');
    out << "[\n";
    for (size_t r = 0; r < t.rows.size(); ++r) {
      out << row_in << JsonAt(RowToJson(t, t.rows[r]), depth + 2) << (r + 1 < t.rows.size() ? ",\n" : "\n");
    }
    out << in << "]";
  }
  out << ",\n" << in << "\"title\": " << JsonAt(t.title, depth + 1) << "\n";
  out << std::string(2 * static_cast<size_t>(depth), ' ') << "}";
}

}  // namespace tierscope
