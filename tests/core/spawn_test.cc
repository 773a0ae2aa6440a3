// Spawning a child and waiting for it with a time limit: a child past the limit is
// stopped with everything it started, and the wait says so; one within it gives its status.
#include "core/spawn.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace tierscope {
namespace {

// Whether `pid` is a live process (not gone, not a zombie waiting for its parent).
bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

TEST(WaitWithin, AChildWithinTheLimitGivesItsExitStatus) {
  pid_t pid = 0;
  ASSERT_EQ(Spawn({"sh", "-c", "exit 3"}, nullptr, &pid, /*own_group=*/true), 0);
  StatusOr<int> status = WaitWithin(pid, 30, "sh");
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 3);
  ASSERT_EQ(Spawn({"sh", "-c", "exit 0"}, nullptr, &pid, /*own_group=*/true), 0);
  status = WaitWithin(pid, 0, "sh");  // no limit
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(WEXITSTATUS(*status), 0);
}

TEST(WaitWithin, AChildPastTheLimitIsStoppedWithWhatItStarted) {
  // A "profiler" that starts a workload and waits for it forever, ignoring SIGTERM: the
  // limit stops both (SIGKILL after the grace), and the error names the tool and limit.
  const std::string pid_file = testing::TempDir() + "/spawn_test_grandchild.pid";
  std::remove(pid_file.c_str());
  pid_t pid = 0;
  ASSERT_EQ(Spawn({"sh", "-c", "trap '' TERM; sleep 300 & echo $! > " + pid_file + "; wait; wait"}, nullptr, &pid,
                  /*own_group=*/true),
            0);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<int> status = WaitWithin(pid, 0.5, "stand-in-profiler");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.status().message(), "stand-in-profiler ran past its 0.5 s limit and was stopped (--timeout)");
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 20);
  std::ifstream in(pid_file);
  pid_t grandchild = 0;
  ASSERT_TRUE(in >> grandchild) << "the stand-in did not start its workload";
  // The grandchild is reparented and reaped by init; give it a moment to go.
  for (int i = 0; i < 100 && Alive(grandchild); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(Alive(grandchild)) << "the workload the stand-in started outlived the limit";
  EXPECT_FALSE(Alive(pid));
}

}  // namespace
}  // namespace tierscope
