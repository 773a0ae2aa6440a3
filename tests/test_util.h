// Helpers shared by the C++ tests: temporary directories, file writing, a GPU's properties,
// FP32 weights as a HostTensor.
#ifndef TIERSCOPE_TESTS_TEST_UTIL_H_
#define TIERSCOPE_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "core/host_tensor.h"

namespace tierscope::testing {

// True under CI=true (or 1): a test that cannot run there is a failure, not a skip, for
// a test that did not run checked nothing.
inline bool UnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string(ci) == "true" || std::string(ci) == "1");
}

// A launch hook that records the name of every kernel a backend launches, then runs it.
class LaunchNames : public LaunchHook {
 public:
  Status OnLaunch(Backend&, const LaunchDesc& desc, FunctionRef<StatusOr<KernelRun>()> run) override {
    names.push_back(desc.kernel);
    return run().status();
  }
  std::vector<std::string> names;
};

// A view of FP32 values `v` as a HostTensor of `shape` (v must outlive it), for PackWeight.
inline HostTensor Fp32View(const std::vector<float>& v, std::vector<int64_t> shape) {
  HostTensor h;
  h.dtype = DType::kF32;
  h.shape = std::move(shape);
  h.data = reinterpret_cast<const std::byte*>(v.data());
  h.bytes = v.size() * sizeof(float);
  return h;
}

// The shared corpus of real traces (../shared/corpus beside the checkout).
inline std::string CorpusDir() { return std::string(TIERSCOPE_SOURCE_DIR) + "/../shared/corpus"; }

// Skips the test when `cond` is false (data or a tool is missing) — except under CI,
// where it fails, naming what was missing.
#define TS_SKIP_UNLESS(cond, why)                                                      \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      if (::tierscope::testing::UnderCi()) FAIL() << "CI=true, and it is missing: " << why; \
      GTEST_SKIP() << why;                                                             \
    }                                                                                  \
  } while (0)

// The properties of an H100/H200-class GPU (132 SMs of 2048 threads, 32 blocks, 64K
// registers and 228 KiB shared memory with 1 KiB reserved per block), for tests of the
// GPU arithmetic without a GPU.
inline DeviceProps HopperProps() {
  DeviceProps p;
  p.kind = "cuda";
  p.name = "cuda:0: Test GPU (132 SMs, sm_90)";
  p.arch = "sm_90";
  p.compute_units = 132;
  p.max_threads_per_unit = 2048;
  p.max_blocks_per_unit = 32;
  p.regs_per_unit = 65536;
  p.shared_per_unit = 233472;
  p.reserved_shared_per_block = 1024;
  p.warp_size = 32;
  return p;
}

// A fresh directory under $TMPDIR, removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tierscope_test_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Sets (or with nullptr unsets) an environment variable for a scope, then puts back what
// was there, however the scope ends (a failed ASSERT returns early).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    had_ = std::getenv(name) != nullptr;
    if (value != nullptr) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

struct Result {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs the tierscope binary with `args` (shell words) and collects its output.
// `env`: assignments for the child only, as a shell writes them ("NAME='value' ...").
inline Result RunCli(const std::string& args, const std::string& env = "") {
  const std::string cmd = (env.empty() ? "" : env + " ") + std::string(TIERSCOPE_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Cosine similarity of two equally long vectors, in double.
inline double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A test suite whose TIERSCOPE_CACHE_DIR is a fresh directory, so the built-in model
// is written anew under it and nothing touches the user's cache.
class FreshCacheTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cache_ = new TempDir();
    setenv("TIERSCOPE_CACHE_DIR", cache_->path().c_str(), 1);
  }
  static void TearDownTestSuite() {
    unsetenv("TIERSCOPE_CACHE_DIR");
    delete cache_;
    cache_ = nullptr;
  }
  static inline TempDir* cache_ = nullptr;
};

}  // namespace tierscope::testing

#endif  // TIERSCOPE_TESTS_TEST_UTIL_H_
