// The PyTorch workload: request and inputs written to a temporary directory, run by a
// Python worker this process keeps (the embedded script, --serve), its response and
// output read back into a BenchResult.
#include "workload/torch_bench.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/paths.h"
#include "core/spawn.h"
#include "model/encoder_shape.h"
#include "trace/kineto_import.h"

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

// A Python process serving the workload (torch_bench.py --serve) for the life of this
// one: torch is imported, and each model loaded, once for every run a lab or sweep makes.
// Requests go one a line to its stdin; replies come one a line on its fd 3; its stdout
// and stderr go to a log whose last line explains a death.
class TorchWorker {
 public:
  // The worker for `python`, started on first use (or again after a death).
  static StatusOr<TorchWorker*> Get(const std::string& python) {
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<TorchWorker>> workers;
    std::lock_guard<std::mutex> lock(mu);
    auto it = workers.find(python);
    if (it != workers.end() && it->second->alive_) return it->second.get();
    if (it != workers.end()) workers.erase(it);
    TS_ASSIGN_OR_RETURN(ScratchDir dir, ScratchDir::Make());
    std::unique_ptr<TorchWorker> w(new TorchWorker(python, std::move(dir)));
    TS_RETURN_IF_ERROR(w->Start());
    return workers.emplace(python, std::move(w)).first->second.get();
  }

  ~TorchWorker() {
    if (to_ >= 0) close(to_);  // EOF on its stdin: it returns
    if (from_ >= 0) close(from_);
    Reap();
  }

  // Runs the request at `path`: OK, or the one line that says why not. A reply that does
  // not come within `timeout_s` seconds (0: no limit) stops the worker: a hung device or
  // driver ends the run with an error, not a hang, and the next run starts a fresh one.
  Status Run(const std::string& path, double timeout_s) {
    const std::string line = path + "\n";
    if (write(to_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return Died();
    TS_ASSIGN_OR_RETURN(std::optional<std::string> reply, ReadReply(timeout_s));
    if (!reply.has_value()) return Died();
    std::string text = std::move(*reply);
    while (!text.empty() && text.back() == '\r') text.pop_back();
    if (text == "ok") return OkStatus();
    if (text.starts_with("error ")) return FailedPrecondition("--engine torch: " + text.substr(6));
    if (text.starts_with("fatal ")) {  // it exits: the next run starts a fresh worker
      alive_ = false;
      Reap();
      return FailedPrecondition("--engine torch: " + text.substr(6));
    }
    Stop();  // out of step with its requests: the next run starts a fresh worker
    return Internal("--engine torch: the worker answered '" + text.substr(0, 200) + "'");
  }

  // Ends the worker after its reply (end of file on its stdin): the next run starts a
  // fresh one. After a profiled run: Kineto leaves CUPTI attached, which slows the launches
  // of every later run in the same process (pytorch/pytorch#144455).
  void Retire() {
    if (to_ >= 0) close(to_);
    to_ = -1;
    alive_ = false;
    Reap();
  }

 private:
  TorchWorker(std::string python, ScratchDir dir) : python_(std::move(python)), dir_(std::move(dir)) {}

  Status Start() {
    std::signal(SIGPIPE, SIG_IGN);  // a worker that died makes a write fail, not this process
    TS_RETURN_IF_ERROR(WriteFileAtomic(dir_.file("torch_bench.py"), kScript));
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) return Internal(std::string("--engine torch: pipe: ") + std::strerror(errno));
    if (pipe2(out, O_CLOEXEC) != 0) {
      const int e = errno;
      close(in[0]);
      close(in[1]);
      return Internal(std::string("--engine torch: pipe: ") + std::strerror(e));
    }
    const std::string log = dir_.file("stderr.txt");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, out[1], 3);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
    // Its own process group: a stop ends what it started too (WaitWithin); it still ends when
    // this process does, at end of file on its stdin.
    const int err = Spawn({python_, dir_.file("torch_bench.py"), "--serve"}, &fa, &pid_, /*own_group=*/true);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    if (err != 0) {
      pid_ = 0;
      return FailedPrecondition("--engine torch: cannot run " + python_ + ": " + std::strerror(err) +
                                " (name a Python with torch and transformers by --python or TIERSCOPE_PYTHON)");
    }
    alive_ = true;
    return OkStatus();
  }

  // The worker's next reply line (nullopt at end of file), waiting at most timeout_s.
  StatusOr<std::optional<std::string>> ReadReply(double timeout_s) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s > 0 ? timeout_s : 0);
    for (;;) {
      if (const size_t nl = pending_.find('\n'); nl != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        return std::optional<std::string>(std::move(line));
      }
      int wait_ms = -1;
      if (timeout_s > 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return TimedOut(timeout_s);
        wait_ms = static_cast<int>(std::min<int64_t>(left, 60'000));
      }
      pollfd p = {from_, POLLIN, 0};
      const int ready = poll(&p, 1, wait_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return Internal(std::string("--engine torch: poll: ") + std::strerror(errno));
      if (ready == 0) continue;  // the deadline is checked above
      char buf[4096];
      const ssize_t n = read(from_, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::optional<std::string>();
      if (pending_.size() + static_cast<size_t>(n) > (size_t{1} << 20)) {
        Stop();
        return Internal("--engine torch: the worker wrote over 1 MiB without ending a reply line");
      }
      pending_.append(buf, static_cast<size_t>(n));
    }
  }

  // No reply in time: the worker is stopped (and reaped), the next run starts a fresh one.
  Status TimedOut(double timeout_s) {
    Stop();
    char limit[32];
    std::snprintf(limit, sizeof(limit), "%g", timeout_s);
    return DeadlineExceeded("--engine torch: " + python_ + " gave no reply within " + limit +
                            " s and was stopped (--timeout sets the limit, 0 none)");
  }

  // Waits for the worker's exit, at most 30 s (a worker stuck in a device's teardown is then
  // killed); its status (-1 when there was none to wait for, or the wait failed).
  int Reap() {
    int status = -1;
    if (pid_ > 0) {
      StatusOr<int> s = WaitWithin(pid_, 30, python_);
      status = s.ok() ? *s : -1;
    }
    pid_ = 0;
    return status;
  }

  // Ends the worker now: the next run starts a fresh one.
  void Stop() {
    if (pid_ > 0) kill(-pid_, SIGKILL);
    alive_ = false;
    Reap();
    pending_.clear();
  }

  // The worker is gone: how it ended, and the last line it wrote.
  Status Died() {
    alive_ = false;
    const int status = Reap();
    const pid_t done = status >= 0 ? 1 : 0;
    const StatusOr<std::string> err = ReadFile(dir_.file("stderr.txt"));
    const std::string last = err.ok() ? LastLine(*err) : "";
    const std::string how = done > 0 && WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                            : done > 0 && WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                                            : "stopped answering";
    return FailedPrecondition("--engine torch: " + python_ + " " + how + (last.empty() ? "" : ": " + last));
  }

  std::string python_;
  ScratchDir dir_;
  pid_t pid_ = 0;
  int to_ = -1;
  int from_ = -1;
  std::string pending_;  // read from from_, not yet a whole reply line
  bool alive_ = false;
};

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
  // The model's vocabulary for the inputs, its positions, and its FLOPs where its layers
  // are BERT's (any encoder's config.json; for other layers the FLOPs are not counted: 0).
  TS_ASSIGN_OR_RETURN(EncoderShape shape, LoadEncoderShape(dir + "/config.json"));
  if (shape.vocab_size <= 100) {
    return InvalidArgument(dir + "/config.json: vocab_size " + std::to_string(shape.vocab_size) +
                           " leaves no ids above the 100 reserved ones to draw inputs from");
  }
  if (shape.positions > 0 && o.seq_len > shape.positions) {
    return InvalidArgument("--seq-len " + std::to_string(o.seq_len) + " exceeds the model's " +
                           std::to_string(shape.positions) + " positions");
  }
  TS_ASSIGN_OR_RETURN(ScratchDir scratch, ScratchDir::Make());
  const std::vector<int64_t> ids = BenchInputIds(o.seed, o.batch_size, o.seq_len, shape.vocab_size);
  TS_RETURN_IF_ERROR(WriteFileAtomic(scratch.file("input_ids.bin"),
                                     std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * 8)));
  const std::string trace = o.profile ? (o.trace_path.empty() ? scratch.file("trace.json") : o.trace_path) : "";
  TS_RETURN_IF_ERROR(
      WriteFileAtomic(scratch.file("request.json"), Request(o, mode, dir, scratch, trace).dump()));
  {
    // One run at a time: a worker answers requests in order, and a dead one is replaced.
    static std::mutex one_at_a_time;
    std::lock_guard<std::mutex> lock(one_at_a_time);
    TS_ASSIGN_OR_RETURN(TorchWorker * worker, TorchWorker::Get(TorchPython(o.python)));
    const Status ran = worker->Run(scratch.file("request.json"), o.timeout_s);
    if (o.profile) worker->Retire();  // no profiler state carried into later runs' timings
    TS_RETURN_IF_ERROR(ran);
  }
  TS_ASSIGN_OR_RETURN(Measured m, ReadMeasured(scratch.file("response.json"), o));
  TS_ASSIGN_OR_RETURN(std::string out, ReadFile(scratch.file("output.bin")));
  const int64_t hidden = shape.hidden_size;
  if (out.size() % 4 != 0 || out.empty() ||
      static_cast<int64_t>(out.size()) != 4 * o.batch_size * o.seq_len * hidden) {
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
  m.flops_per_sample = EncoderFlopsPerSample(shape, o.seq_len, ActivationDType(mode.dtype));
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
