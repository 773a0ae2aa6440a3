// Every report of every corpus trace — the HTA and Kineto test traces, other people's field
// runs (H100, B200, MI210/MI300X, vLLM graphs, SGLang, torch.compile) and the nsys export —
// renders one line per row: no cell or finding holds a newline, and the text, wide text and
// CSV views have exactly one line per row.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/commands.h"
#include "test_util.h"

namespace tierscope {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  for (const char* sub : {"traces", "traces/field", "nsys"}) {
    const fs::path dir = fs::path(testing::CorpusDir()) / sub;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string p = entry.path().string();
      if (p.ends_with(".json.gz") || p.ends_with(".json") || p.ends_with(".sqlite")) files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

bool OneLine(const std::string& s) { return s.find_first_of("\n\r") == std::string::npos; }

void ExpectOneLinePerRow(const Table& t, const std::string& where) {
  for (const auto& row : t.rows) {
    for (const Cell& c : row) {
      if (const auto* s = std::get_if<std::string>(&c)) {
        EXPECT_TRUE(OneLine(*s)) << where << " " << t.name << ": a cell spans lines: " << *s;
      }
    }
  }
  size_t notes = 0;
  for (const std::string& n : t.notes) notes += 1 + Lines(n);
  const size_t header = (t.title.empty() ? 0 : 2) + 2;
  const size_t rows = std::max<size_t>(t.rows.size(), 1);  // "(no rows)"
  EXPECT_EQ(Lines(RenderText(t)), header + rows + notes) << where << " " << t.name;
  EXPECT_EQ(Lines(RenderText(t, /*wide=*/true)), header + rows + notes) << where << " " << t.name;
  EXPECT_EQ(Lines(RenderCsv(t)), 1 + t.rows.size()) << where << " " << t.name;
  // Rows stay readable (notes may hold a whole command to copy, long names included).
  Table rows_only = t;
  rows_only.notes.clear();
  const std::string text = RenderText(rows_only);
  for (size_t a = 0, b; (b = text.find('\n', a)) != std::string::npos; a = b + 1) {
    EXPECT_LE(b - a, 400u) << where << " " << t.name << ": " << text.substr(a, 200);
  }
}

TEST(FieldCorpus, EveryReportOfEveryTraceIsOneLinePerRow) {
  const std::vector<std::string> files = CorpusFiles();
  TS_SKIP_UNLESS(files.size() >= 17, "the trace corpus in " + testing::CorpusDir());
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto trace = LoadTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    const TraceAnalysis a = Analyze(*trace, {});
    EXPECT_GE(a.reports.size(), 10u);
    for (const Table& t : a.reports) ExpectOneLinePerRow(t, path);
    for (const Finding& f : a.findings) {
      EXPECT_TRUE(OneLine(f.title) && OneLine(f.threshold) && OneLine(f.next_step)) << f.title;
      for (const auto& e : f.evidence) EXPECT_TRUE(OneLine(e)) << f.rule << ": " << e;
      for (const auto& e : f.examples) EXPECT_TRUE(OneLine(e)) << f.rule << ": " << e;
    }
  }
}

// `analyze` writes each report as it is made and drops it; the document is the one the
// whole analysis gives (JSON: as nlohmann dumps it whole).
TEST(FieldCorpus, AnalysisWrittenAsItIsMadeIsTheWholeDocument) {
  const std::vector<std::string> files = CorpusFiles();
  TS_SKIP_UNLESS(files.size() >= 17, "the trace corpus in " + testing::CorpusDir());
  size_t checked = 0;
  for (const std::string& path : files) {
    if (!path.ends_with("b200__eager_trace.json.gz") && !path.ends_with(".sqlite") &&
        !path.ends_with("mi250_minitoy_train_ROCm6_2_kineto.json.gz")) {
      continue;
    }
    SCOPED_TRACE(path);
    ++checked;
    auto trace = LoadTrace(path);
    ASSERT_TRUE(trace.ok()) << trace.status().ToString();
    AnalysisOptions o;
    o.critical_path = true;
    const TraceAnalysis a = Analyze(*trace, o);
    nlohmann::json j;
    j["trace"] = {{"source", trace->source}, {"format", trace->format}, {"runtime", trace->runtime},
                  {"device", trace->device_name}, {"compute_units", trace->device_units},
                  {"events", trace->events.size()}};
    j["unit"] = a.index.unit_name;
    j["units"] = a.index.units.size();
    j["reports"] = nlohmann::json::array();
    for (const Table& tb : a.reports) j["reports"].push_back(TableToJson(tb));
    j["findings"] = FindingsToJson(a.findings);
    j["quality"] = a.quality.Line();
    for (OutputFormat f : {OutputFormat::kJson, OutputFormat::kText, OutputFormat::kCsv}) {
      std::ostringstream out;
      WriteAnalysis(out, *trace, o, f);
      EXPECT_EQ(out.str(), f == OutputFormat::kJson ? ReportJsonText(j) : RenderAnalysis(a, f));
    }
    std::string csv, text;
    for (const Table& tb : a.reports) {
      csv += "# " + tb.name + "\n" + RenderCsv(tb) + "\n";
      text += "== " + tb.name + " ==\n" + RenderText(tb) + "\n";
    }
    EXPECT_EQ(RenderAnalysis(a, OutputFormat::kCsv), csv);
    text += RenderFindings(a.findings);  // after the header and the verdict
    const std::string written = RenderAnalysis(a, OutputFormat::kText);
    ASSERT_GT(written.size(), text.size());
    EXPECT_EQ(written.substr(written.size() - text.size()), text);
    EXPECT_NE(written.find(a.quality.Line() + "\n\n== import_stats =="), std::string::npos);
  }
  EXPECT_EQ(checked, 3u);
}

const Table* Find(const TraceAnalysis& a, const std::string& name) {
  for (const Table& t : a.reports) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// PyTorch pretty-prints "Input Dims" and a kernel's grid one number per line; the reports
// show them compact.
TEST(FieldCorpus, ShapesAndGridsAreCompact) {
  const std::string path = testing::CorpusDir() + "/traces/field/b200__eager_trace.json.gz";
  TS_SKIP_UNLESS(fs::exists(path), path);
  auto trace = LoadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const TraceAnalysis a = Analyze(*trace, {});
  const Table* ops = Find(a, "op_sum");
  ASSERT_NE(ops, nullptr);
  ASSERT_EQ(ops->columns.back(), "Name");
  ASSERT_EQ(ops->columns[ops->columns.size() - 2], "Input Shapes");
  bool moe = false;
  for (const auto& row : ops->rows) {
    if (std::get<std::string>(row.back()) == "vllm::moe_forward") {
      moe = true;
      EXPECT_EQ(std::get<std::string>(row[row.size() - 2]), "[888,3072]x[888,128]x[]");
    }
  }
  EXPECT_TRUE(moe);
  const Table* hot = Find(a, "hot_kernels");
  ASSERT_NE(hot, nullptr);
  ASSERT_FALSE(hot->rows.empty());
  const std::string grid = std::get<std::string>(hot->rows[0][4]);
  EXPECT_EQ(hot->columns[4], "Grid");
  EXPECT_TRUE(grid == "-" || (grid.front() == '[' && grid.find(' ') == std::string::npos)) << grid;
}

// A long kernel name is shortened in the middle in text, whole with --wide and in CSV/JSON.
TEST(FieldCorpus, LongNamesAreShortenedInTheMiddleUnlessWide) {
  Table t;
  t.name = "k";
  t.columns = {"Time (ns)", "Name"};
  const std::string name = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_" + std::string(200, 'x') +
                           "_align4>(Params)";
  t.AddRow({int64_t{5}, name});
  const std::string text = RenderText(t);
  EXPECT_EQ(text.find(name), std::string::npos);
  EXPECT_NE(text.find("void cutlass::Kernel2<"), std::string::npos) << text;
  EXPECT_NE(text.find("..."), std::string::npos) << text;
  EXPECT_NE(text.find("_align4>(Params)"), std::string::npos) << text;
  EXPECT_NE(RenderText(t, true).find(name), std::string::npos);
  EXPECT_NE(RenderCsv(t).find(name), std::string::npos);
  EXPECT_EQ(ShortenMiddle(name, 100).size(), 100u);
  EXPECT_EQ(ShortenMiddle("short", 100), "short");
  // A newline in a name (a Python function's repr) never breaks a row.
  t.AddRow({int64_t{1}, std::string("line one\nline two")});
  EXPECT_EQ(std::get<std::string>(t.rows.back()[1]), "line one line two");
}

TEST(FieldCorpus, ColumnsLineUpWithWideCharactersAndDashes) {
  Table t;
  t.name = "r";
  t.columns = {"Range", "Time (ns)", "Name"};
  t.AddRow({std::string("前向传播"), int64_t{5}, std::string("a")});   // 4 wide characters: 8 columns
  t.AddRow({std::string("forward µs"), std::string("-"), std::string("b")});
  const std::string text = RenderText(t);
  // Every row's last cell starts at the same terminal column.
  std::vector<size_t> starts;
  size_t pos = 0;
  for (std::string line; pos < text.size();) {
    const size_t nl = text.find('\n', pos);
    line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty() || line.back() == ')' || line.find("Range") == 0 || line[0] == '-') continue;
    size_t cols = 0;
    const size_t cut = line.rfind("  ") + 2;
    for (size_t k = 0; k < cut; ++k) {
      const unsigned char b = static_cast<unsigned char>(line[k]);
      if ((b & 0xC0) == 0x80) continue;
      cols += b >= 0xE4 && b <= 0xE9 ? 2 : 1;  // the CJK above: 3-byte sequences led by E4-E9
    }
    starts.push_back(cols);
  }
  ASSERT_EQ(starts.size(), 2u) << text;
  EXPECT_EQ(starts[0], starts[1]) << text;
  // The dash under a number column is right-aligned with the numbers.
  EXPECT_NE(text.find("          5  a"), std::string::npos) << text;
  EXPECT_NE(text.find("          -  b"), std::string::npos) << text;
}

}  // namespace
}  // namespace tierscope
