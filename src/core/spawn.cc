// posix_spawnp with SIGPIPE at its default in the child, and a wait with a time limit.
#include "core/spawn.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

extern char** environ;

namespace tierscope {

int Spawn(const std::vector<std::string>& args, const posix_spawn_file_actions_t* actions, pid_t* pid,
          bool own_group) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t def;
  sigemptyset(&def);
  sigaddset(&def, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &def);
  short flags = POSIX_SPAWN_SETSIGDEF;
  if (own_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);
  const int err = posix_spawnp(pid, copy.front().c_str(), actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  return err;
}

namespace {

// waitpid without blocking: true once `pid` was reaped (its status in *status).
StatusOr<bool> Reaped(pid_t pid, int* status, const std::string& what) {
  for (;;) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r == 0) return false;
    if (errno != EINTR) return Internal("waiting for " + what + ": " + std::strerror(errno));
  }
}

}  // namespace

StatusOr<int> WaitWithin(pid_t pid, double timeout_s, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  int status = 0;
  if (!(timeout_s > 0)) {
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return Internal("waiting for " + what + ": " + std::strerror(errno));
    }
    return status;
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  auto pause = std::chrono::milliseconds(1);
  while (Clock::now() < deadline) {
    TS_ASSIGN_OR_RETURN(bool done, Reaped(pid, &status, what));
    if (done) return status;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
  // Past the limit: the group (the tool and what it started) is asked to stop, then made to.
  kill(-pid, SIGTERM);
  const auto grace = Clock::now() + std::chrono::seconds(5);
  bool done = false;
  while (!done && Clock::now() < grace) {
    TS_ASSIGN_OR_RETURN(done, Reaped(pid, &status, what));
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(-pid, SIGKILL);
  while (!done) {
    if (waitpid(pid, &status, 0) == pid) break;
    if (errno != EINTR) break;
  }
  char limit[32];
  std::snprintf(limit, sizeof(limit), "%g", timeout_s);
  return DeadlineExceeded(what + " ran past its " + std::string(limit) + " s limit and was stopped (--timeout)");
}

}  // namespace tierscope
