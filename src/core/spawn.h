// Starting a child process: posix_spawnp with the caller's file actions and SIGPIPE back at
// its default in the child (tierscope ignores SIGPIPE while it talks to a worker over a
// pipe; profilers and workers it starts must not inherit that).
#ifndef TIERSCOPE_CORE_SPAWN_H_
#define TIERSCOPE_CORE_SPAWN_H_

#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace tierscope {

// args[0] is looked up on PATH; returns posix_spawnp's error number (0: started).
int Spawn(const std::vector<std::string>& args, const posix_spawn_file_actions_t* actions, pid_t* pid);

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_SPAWN_H_
