// What every command shares: the exit status of a failure, and the workload flags.
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <system_error>

#include "analysis/analysis_html.h"
#include "analysis/commands.h"
#include "analysis/job_files.h"
#include "cli/command.h"
#include "core/paths.h"
#include "core/spill_file.h"
#include "core/text.h"
#include "trace/kineto_stream.h"

namespace tierscope::cli {

namespace {
std::string& CommandLineStorage() {
  static std::string line;
  return line;
}
}  // namespace

void SetCommandLine(int argc, char** argv) {
  std::string& line = CommandLineStorage();
  line.clear();
  for (int i = 0; i < argc; ++i) line += (i ? " " : "") + std::string(argv[i]);
}

const std::string& CommandLine() { return CommandLineStorage(); }

std::vector<std::string> FilesRead(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    if (p.empty()) continue;
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      if (StatusOr<JobFileList> job = FindJobFiles({p}); job.ok()) {
        out.insert(out.end(), job->files.begin(), job->files.end());
        out.insert(out.end(), job->execution_traces.begin(), job->execution_traces.end());
      }
      continue;
    }
    out.push_back(p);
    for (std::string& et : ExecutionTracesBeside(p)) out.push_back(std::move(et));
  }
  return out;
}

Status CheckOutputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                    const std::vector<std::string>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [flag, path] = outputs[i];
    if (path.empty()) continue;
    TS_RETURN_IF_ERROR(RefuseInputAsOutput(path, inputs).WithContext(flag));
    for (size_t j = 0; j < i; ++j) {
      std::error_code ec;
      const auto normal = [&ec](const std::string& p) { return std::filesystem::absolute(p, ec).lexically_normal(); };
      if (outputs[j].second.empty()) continue;
      if (normal(path) == normal(outputs[j].second) ||
          (std::filesystem::exists(path, ec) && std::filesystem::equivalent(path, outputs[j].second, ec))) {
        return InvalidArgument(flag + " and " + outputs[j].first + " are both " + path + ": give each its own file");
      }
    }
  }
  return OkStatus();
}

int WriteAnalysisPage(const std::string& path, const std::string& json) {
  const std::string page = RenderAnalysisPage(json);
  if (Status s = WriteFileAtomic(path, page); !s.ok()) return Fail(s.WithContext("--html"));
  std::fprintf(stderr, "analysis page: %s (%.2f MB)\n", path.c_str(), static_cast<double>(page.size()) / 1e6);
  return 0;
}

int Fail(const Status& s) {
  std::cerr << "tierscope: error: " << s.message() << "\n";
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kOutOfRange ||
                 s.code() == StatusCode::kNotFound
             ? 2
             : 1;
}

CLI::Validator InRange(double lo, double hi, const std::string& unit) {
  const auto show = [](double v) {
    std::ostringstream o;
    o << std::setprecision(15) << v;
    return o.str();
  };
  const std::string range = "[" + show(lo) + ", " + show(hi) + "]" + unit;
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        const std::optional<double> v = ParseDecimal(text);
        if (!v) return "must be a decimal number in " + range + ", got " + text;
        if (*v < lo || *v > hi) return "must be in " + range + ", got " + text;
        return "";
      },
      "in " + range);
}

void NoteSkipped(const Trace& t, bool import_notes) {
  if (const std::string skipped = SkippedEntries(t); !skipped.empty()) {
    std::cerr << "tierscope: note: " << skipped << "\n";
  }
  if (!import_notes) return;
  if (!t.execution_trace.note.empty()) std::cerr << "tierscope: note: " << Printable(t.execution_trace.note) << "\n";
  for (const std::string& note : t.import_notes) {
    std::cerr << "tierscope: note: " << Printable(t.source + ": " + note) << "\n";
  }
}

CLI::Validator Seed() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [at, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || text[0] < '0' || text[0] > '9' || ec != std::errc() || at != end) {
          return "must be a whole number from 0 to 18446744073709551615, got " + text;
        }
        return "";
      },
      "0 to 2^64-1");
}

StatusOr<int64_t> ParseByteSize(const std::string& text) {
  // The number, then its unit: the trailing letters ("12G", "1.5e3MiB").
  size_t used = text.size();
  while (used > 0 && std::isalpha(static_cast<unsigned char>(text[used - 1]))) --used;
  const std::optional<double> number = ParseDecimal(std::string_view(text).substr(0, used));
  if (!number) return InvalidArgument("--memory-budget: '" + text + "' is not a size (e.g. 12G, 512MiB, 4000000000)");
  const double v = *number;
  std::string unit = text.substr(used);
  for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  // One flat table: a nested initializer_list's inner arrays would not outlive the loop's
  // first line.
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"", 1.0},         {"B", 1.0},
      {"K", 0x1p10},     {"KB", 0x1p10},  {"KIB", 0x1p10},
      {"M", 0x1p20},     {"MB", 0x1p20},  {"MIB", 0x1p20},
      {"G", 0x1p30},     {"GB", 0x1p30},  {"GIB", 0x1p30},
      {"T", 0x1p40},     {"TB", 0x1p40},  {"TIB", 0x1p40}};
  double scale = 0;
  for (const auto& [name, s] : kUnits) {
    if (unit == name) scale = s;
  }
  if (scale == 0 || !(v * scale >= 1) || v * scale > 9e18) {
    return InvalidArgument("--memory-budget: '" + text + "' is not a positive size (e.g. 12G, 512MiB, 4000000000)");
  }
  return static_cast<int64_t>(v * scale);
}

void AddMemoryBudgetOption(CLI::App* c) {
  c->add_option_function<std::string>(
      "--memory-budget",
      [](const std::string& v) {
        StatusOr<int64_t> bytes = ParseByteSize(v);
        if (!bytes.ok()) throw CLI::ValidationError(bytes.status().message());
        SetMemoryBudget(*bytes);
      },
      "memory the command may use, e.g. 12G (default: half of what is available): a trace that would not fit "
      "whole is streamed, and a job reads no more ranks at once than fit");
  c->add_option_function<std::string>(
      "--spill-dir",
      [](const std::string& v) {
        std::error_code ec;
        if (!std::filesystem::is_directory(v, ec)) {
          throw CLI::ValidationError("--spill-dir: '" + v + "' is not a directory" + (ec ? ": " + ec.message() : ""));
        }
        SetSpillDirectory(v);
      },
      "where a streamed trace's args are spilled, on ext4 or xfs (default: TIERSCOPE_SPILL_DIR, TMPDIR or /tmp)");
}

void AddWorkloadOptions(CLI::App* c, BenchOptions& bench) {
  c->add_option("--model", bench.model_dir, "Hugging Face model directory (default: the built-in model)");
  c->add_option("--mode", bench.mode, "serial-fp32 | batch-fp32 | batch-fp16 | batch-bf16 | batch-int8")
      ->capture_default_str();
  c->add_option("--batch-size", bench.batch_size, "samples per work unit")->capture_default_str();
  c->add_option("--seq-len", bench.seq_len, "tokens per sample")->capture_default_str();
  c->add_option("--warmup", bench.warmup, "untimed work units first")->capture_default_str();
  c->add_option("--iterations", bench.iterations, "timed work units")->capture_default_str();
  c->add_option("--seed", bench.seed, "input generator seed")->capture_default_str()->check(Seed());
  c->add_option("--pre-delay", bench.pre_delay_s, "seconds to sleep after loading, before warmup")
      ->capture_default_str();
  c->add_option("--threads", bench.threads, "worker threads (0: all cores)")->capture_default_str();
  c->add_option("--row-block", bench.row_block,
                "native: token rows run through every layer at a time: auto | off | a count "
                "(default: TIERSCOPE_ROW_BLOCK, else auto)");
  c->add_option("--device", bench.device, "cpu | cuda | cuda:N (--engine torch: also xpu, npu, musa)")
      ->capture_default_str();
  c->add_option("--engine", bench.engine,
                "native (tierscope's engine) | torch (the model through PyTorch and transformers, in Python)")
      ->capture_default_str();
  c->add_option("--python", bench.python,
                "--engine torch: the Python to run (default: TIERSCOPE_PYTHON, the test venv's, python3)");
  c->add_option("--timeout", bench.timeout_s,
                "--engine torch: seconds a run may take before its worker is stopped (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e7));
}

}  // namespace tierscope::cli
