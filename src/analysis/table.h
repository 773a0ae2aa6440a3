// Table: the one result shape every report produces, rendered as an aligned text
// table for people or as CSV / JSON for programs.
#ifndef TIERSCOPE_ANALYSIS_TABLE_H_
#define TIERSCOPE_ANALYSIS_TABLE_H_

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

  void AddRow(std::vector<Cell> row) { rows.push_back(std::move(row)); }
};

enum class OutputFormat { kText, kJson, kCsv };

// Parses "text", "json", "csv".
bool ParseOutputFormat(const std::string& s, OutputFormat* out);

std::string RenderText(const Table& t);
std::string RenderCsv(const Table& t);
nlohmann::json TableToJson(const Table& t);

// "1.234 ms" style durations for text.
std::string FormatNs(double ns);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_TABLE_H_
