// The PyTorch workload: request, inputs and the embedded script written to a temporary
// directory, the script run with the chosen Python (stdin from /dev/null, stderr kept),
// its response and output read back into a BenchResult.
#include "workload/torch_bench.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/paths.h"
#include "model/bert.h"
#include "trace/kineto_import.h"

extern char** environ;

namespace tierscope {
namespace {

constexpr const char kScript[] =
#include "torch_bench.inc"
    ;

// A private temporary directory, removed with everything in it.
class ScratchDir {
 public:
  static StatusOr<ScratchDir> Make() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/tierscope-torch-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return FailedPrecondition("cannot make a temporary directory " + pattern + ": " + std::strerror(errno));
    }
    return ScratchDir(pattern);
  }
  ScratchDir(ScratchDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The last non-empty line of `text`.
std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \n\r\t");
  if (end == std::string::npos) return "";
  const size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// Runs `python script request` with stdin from /dev/null and stderr into `log`; its exit
// status, or an error when it could not start or died.
StatusOr<int> RunPython(const std::string& python, const std::string& script, const std::string& request,
                        const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
  std::vector<std::string> args = {python, script, request};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, python.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) {
    return FailedPrecondition("--engine torch: cannot run " + python + ": " + std::strerror(err) +
                              " (name a Python with torch and transformers by --python or TIERSCOPE_PYTHON)");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Internal("--engine torch: waiting for " + python + ": " + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) {
    return Internal("--engine torch: " + python + " was killed by signal " + std::to_string(WTERMSIG(status)));
  }
  return WEXITSTATUS(status);
}

nlohmann::json Request(const BenchOptions& o, const BenchMode& mode, const std::string& dir, const ScratchDir& scratch,
                       const std::string& trace) {
  nlohmann::json r = {{"model_dir", dir},
                      {"device", o.device},
                      {"serial", mode.serial},
                      {"dtype", mode.dtype == DType::kI8 ? std::string("int8") : std::string(DTypeName(mode.dtype))},
                      {"batch_size", o.batch_size},
                      {"seq_len", o.seq_len},
                      {"warmup", o.warmup},
                      {"iterations", o.iterations},
                      {"pre_delay_s", o.pre_delay_s},
                      {"threads", o.threads},
                      {"ids_path", scratch.file("input_ids.bin")},
                      {"output_path", scratch.file("output.bin")},
                      {"response_path", scratch.file("response.json")},
                      {"trace_path", trace}};
  if (o.profile) {
    r["profile"] = {{"skip", o.profile_skip},          {"units", o.profile_units},
                    {"delay_s", o.profile_delay_s},    {"duration_s", o.profile_duration_s},
                    {"record_shapes", o.record_shapes}, {"profile_memory", o.profile_memory}};
  }
  return r;
}

// The response's measurements, checked: a figure that cannot be is an error, not a result.
StatusOr<Measured> ReadMeasured(const std::string& path, const BenchOptions& o) {
  TS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Internal("--engine torch: " + path + " is not a JSON object");
  Measured m;
  try {
    m.unit_ms = j.at("latencies_ms").get<std::vector<double>>();
    m.total_s = j.at("total_s").get<double>();
    m.peak_bytes = j.at("peak_bytes").get<int64_t>();
    m.memory_source = j.at("memory_source").get<std::string>();
    m.weight_bytes = j.at("weight_bytes").get<int64_t>();
    m.threads = j.at("threads").get<int>();
    m.profiled_units = j.at("profiled_units").get<int64_t>();
    m.device = o.device + ": " + j.at("device_name").get<std::string>();
    m.runtime = j.at("runtime");
  } catch (const nlohmann::json::exception& e) {
    return Internal("--engine torch: " + path + ": " + e.what());
  }
  if (static_cast<int64_t>(m.unit_ms.size()) != o.iterations || !(m.total_s > 0)) {
    return Internal("--engine torch: the workload timed " + std::to_string(m.unit_ms.size()) + " units in " +
                    std::to_string(m.total_s) + " s for " + std::to_string(o.iterations) + " iterations");
  }
  for (double v : m.unit_ms) {
    if (!(v >= 0) || !std::isfinite(v)) return Internal("--engine torch: a unit's latency is " + std::to_string(v));
  }
  if (m.device.find(": ") + 2 == m.device.size()) m.device += "unnamed";
  if (m.threads > 0 && o.device == "cpu") m.device += " (" + std::to_string(m.threads) + " threads)";
  return m;
}

}  // namespace

std::string TorchPython(const std::string& python) {
  if (!python.empty()) return python;
  const char* env = std::getenv("TIERSCOPE_PYTHON");
  if (env != nullptr && *env != '\0') return env;
  std::string venv;
  if (const char* v = std::getenv("TIERSCOPE_VENV"); v != nullptr && *v != '\0') {
    venv = v;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    venv = std::string(home) + "/.cache/tierscope/venv";
  }
  if (!venv.empty() && access((venv + "/bin/python").c_str(), X_OK) == 0) return venv + "/bin/python";
  return "python3";
}

StatusOr<BenchReport> RunTorchBench(const BenchOptions& o) {
  TS_RETURN_IF_ERROR(ValidateBenchOptions(o));
  TS_ASSIGN_OR_RETURN(BenchMode mode, ParseBenchMode(o.mode));
  if (o.graph || o.launch_hook != nullptr || o.after_run) {
    return InvalidArgument("--engine torch runs the model in PyTorch: --graph and tier 3's replay are the native "
                           "engine's (tier 3 on torch reads an ncu CSV or the trace)");
  }
  TS_ASSIGN_OR_RETURN(std::string dir, ResolveModelDir(o.model_dir));
  // The model's vocabulary for the inputs, and its FLOPs, from its config (a BERT-family
  // encoder's; for others the FLOPs are not counted: 0).
  TS_ASSIGN_OR_RETURN(std::string config_text, ReadFile(dir + "/config.json"));
  StatusOr<BertConfig> cfg = ParseBertConfig(config_text, dir + "/config.json");
  const nlohmann::json raw_cfg = nlohmann::json::parse(config_text, nullptr, false);
  int64_t vocab = cfg.ok() ? cfg->vocab_size : 0;
  if (!cfg.ok() && raw_cfg.is_object() && raw_cfg.contains("vocab_size") && raw_cfg["vocab_size"].is_number_integer()) {
    vocab = raw_cfg["vocab_size"].get<int64_t>();
  }
  if (vocab <= 100) return InvalidArgument(dir + "/config.json: no vocab_size above 100 to draw input ids from");
  if (cfg.ok() && o.seq_len > cfg->max_position_embeddings) {
    return InvalidArgument("--seq-len " + std::to_string(o.seq_len) + " exceeds the model's max_position_embeddings " +
                           std::to_string(cfg->max_position_embeddings));
  }
  TS_ASSIGN_OR_RETURN(ScratchDir scratch, ScratchDir::Make());
  const std::vector<int64_t> ids = BenchInputIds(o.seed, o.batch_size, o.seq_len, vocab);
  TS_RETURN_IF_ERROR(WriteFileAtomic(scratch.file("input_ids.bin"),
                                     std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * 8)));
  TS_RETURN_IF_ERROR(WriteFileAtomic(scratch.file("torch_bench.py"), kScript));
  const std::string trace = o.profile ? (o.trace_path.empty() ? scratch.file("trace.json") : o.trace_path) : "";
  TS_RETURN_IF_ERROR(
      WriteFileAtomic(scratch.file("request.json"), Request(o, mode, dir, scratch, trace).dump()));
  const std::string python = TorchPython(o.python);
  const std::string log = scratch.file("stderr.txt");
  TS_ASSIGN_OR_RETURN(int code, RunPython(python, scratch.file("torch_bench.py"), scratch.file("request.json"), log));
  if (code != 0) {
    const StatusOr<std::string> err = ReadFile(log);
    const std::string line = err.ok() ? LastLine(*err) : "";
    if (line.starts_with("torch workload: ")) return FailedPrecondition("--engine torch: " + line.substr(16));
    return FailedPrecondition("--engine torch: " + python + " exited with status " + std::to_string(code) +
                              (line.empty() ? "" : ": " + line));
  }
  TS_ASSIGN_OR_RETURN(Measured m, ReadMeasured(scratch.file("response.json"), o));
  TS_ASSIGN_OR_RETURN(std::string out, ReadFile(scratch.file("output.bin")));
  const int64_t hidden = cfg.ok() ? cfg->hidden_size : 0;
  if (out.size() % 4 != 0 || out.empty() ||
      (hidden > 0 && static_cast<int64_t>(out.size()) != 4 * o.batch_size * o.seq_len * hidden)) {
    return Internal("--engine torch: the output holds " + std::to_string(out.size()) + " bytes, not [" +
                    std::to_string(o.batch_size) + ", " + std::to_string(o.seq_len) + ", " + std::to_string(hidden) +
                    "] float32");
  }
  std::vector<float> values(out.size() / 4);
  std::memcpy(values.data(), out.data(), out.size());
  m.checksum = OrderSensitiveChecksum(values.data(), values.size());
  if (!std::isfinite(m.checksum)) {
    return Internal("the output has non-finite values (checksum " + std::to_string(m.checksum) + ")");
  }
  m.flops_per_sample = cfg.ok() ? BertFlopsPerSample(*cfg, o.seq_len, ActivationDType(mode.dtype)) : 0;
  BenchReport report;
  if (o.profile) {
    if (m.profiled_units > 0) {
      TS_ASSIGN_OR_RETURN(Trace t, ImportKinetoTrace(trace));
      report.profile_text = ProfileText(t, o, mode.serial ? "serial_bert_forward" : "batched_bert_forward",
                                        m.profiled_units);
    } else {
      report.profile_text = ProfileText(Trace{}, o, "", 0);
    }
  }
  report.result = MakeBenchResult(o, mode, dir, m);
  if (o.profile && o.trace_path.empty()) report.result.trace.clear();
  if (o.keep_output) report.output = std::move(values);
  return report;
}

}  // namespace tierscope
