// The profilers' command lines and the runner that keeps stdin away from them.
#include "analysis/profilers.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/spawn.h"

namespace tierscope {

std::string ToolName(const std::string& tool) {
  const size_t slash = tool.rfind('/');
  return slash == std::string::npos ? tool : tool.substr(slash + 1);
}

std::string SystemProfilerFor(const std::string& device) {
  if (device.starts_with("cuda")) return "nsys";
  if (device.starts_with("musa")) return "msys";
  return "";
}

std::string KernelProfilerFor(const std::string& device) {
  if (device.starts_with("cuda")) return "ncu";
  if (device.starts_with("musa")) return "mcu";
  return "";
}

std::vector<std::string> SystemProfileArgs(const std::string& tool, double delay_s, const std::string& report,
                                           const std::vector<std::string>& command) {
  std::ostringstream delay;
  delay << delay_s;
  std::vector<std::string> a = {tool, "profile", "-t", ToolName(tool) == "msys" ? "musa" : "cuda", "--delay", delay.str(),
                                "--force-overwrite", "true", "-o", report};
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

std::string SystemReportFile(const std::string& tool, const std::string& report) {
  return report + (ToolName(tool) == "msys" ? ".msys-rep" : ".nsys-rep");
}

std::vector<std::string> SystemExportArgs(const std::string& tool, const std::string& report_file,
                                          const std::string& sqlite) {
  return {tool, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", sqlite, report_file};
}

std::vector<std::string> KernelProfileArgs(const std::string& tool, const std::string& kernel, const std::string& csv,
                                           const std::vector<std::string>& command) {
  // Kineto names kernels by their demangled signature; ncu matches the bare function name
  // unless told to match the demangled one.
  std::vector<std::string> a = {tool, "--kernel-name-base", "demangled", "-k", kernel, "-c", "1", "--section",
                                "SpeedOfLight", "--section", "LaunchStats",
                                "--section", "MemoryWorkloadAnalysis", "--target-processes", "all", "--csv", "--page",
                                "details", "--log-file", csv};
  // ncu locks the clocks to base by default; the study times kernels at the clocks they
  // run at (and a shared machine's clocks are not ours to set).
  // Occupancy, and DRAM bytes in plain units, for the roofline's memory side.
  if (ToolName(tool) == "ncu") {
    a.insert(a.begin() + 1, {"--clock-control", "none", "--section", "Occupancy", "--print-units", "base",
                             "--metrics", "dram__bytes_read.sum,dram__bytes_write.sum"});
  }
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

std::string CommandLineText(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                          "0123456789-_./:=,+") == std::string::npos;
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += (out.empty() ? "" : " ") + (plain ? a : q + "'");
  }
  return out;
}

bool OnPath(const std::string& tool) {
  if (tool.find('/') != std::string::npos) return access(tool.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && access((dir + "/" + tool).c_str(), X_OK) == 0) return true;
  }
  return false;
}

StatusOr<int> RunTool(const std::vector<std::string>& args, const std::string& log, double timeout_s) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int err = Spawn(args, &fa, &pid, /*own_group=*/true);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) return FailedPrecondition("cannot run " + args.front() + ": " + std::strerror(err));
  TS_ASSIGN_OR_RETURN(int status, WaitWithin(pid, timeout_s, args.front()));
  if (WIFSIGNALED(status)) return Internal(args.front() + " was killed by signal " + std::to_string(WTERMSIG(status)));
  return WEXITSTATUS(status);
}

}  // namespace tierscope
