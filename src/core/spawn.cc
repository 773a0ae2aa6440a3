// posix_spawnp with SIGPIPE at its default in the child.
#include "core/spawn.h"

#include <csignal>

extern char** environ;

namespace tierscope {

int Spawn(const std::vector<std::string>& args, const posix_spawn_file_actions_t* actions, pid_t* pid) {
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
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  const int err = posix_spawnp(pid, copy.front().c_str(), actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  return err;
}

}  // namespace tierscope
