// Starting a child process: posix_spawnp with the caller's file actions and SIGPIPE back at
// its default in the child (tierscope ignores SIGPIPE while it talks to a worker over a
// pipe; profilers and workers it starts must not inherit that).
#ifndef TIERSCOPE_CORE_SPAWN_H_
#define TIERSCOPE_CORE_SPAWN_H_

#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "tierscope/status.h"

namespace tierscope {

// args[0] is looked up on PATH; returns posix_spawnp's error number (0: started). With
// `own_group` the child leads a process group of its own, so that StopGroup ends what it
// started too (a profiler's workload).
int Spawn(const std::vector<std::string>& args, const posix_spawn_file_actions_t* actions, pid_t* pid,
          bool own_group = false);

// Waits for `pid` (spawned with own_group) to exit, at most `timeout_s` seconds (0: no
// limit): its wait status, or DeadlineExceeded naming `what` after its process group was
// stopped (SIGTERM, then SIGKILL 5 s later) and reaped.
StatusOr<int> WaitWithin(pid_t pid, double timeout_s, const std::string& what);

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_SPAWN_H_
