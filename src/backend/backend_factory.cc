// Backend selection by device name: "cpu", or "cuda[:N]" ("musa[:N]" in a MUSA build),
// whose backend is a plugin opened on first use — a command that never names a GPU loads
// none of its runtime.
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "tierscope/plugin_abi.h"

namespace tierscope {
namespace {

#if defined(TIERSCOPE_MUSA)
constexpr const char* kGpuKind = "musa";
#else
constexpr const char* kGpuKind = "cuda";
#endif

using CreateFn = void (*)(int, StatusOr<std::unique_ptr<Backend>>*);
using BuildFn = const char* (*)();

// The directory of the running executable ("" if unknown).
std::string ExecutableDir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

std::string PluginFileName() { return std::string("libtierscope_") + kGpuKind + ".so"; }

// Where the plugin may be: $TIERSCOPE_GPU_PLUGIN (alone, when set), beside the executable
// (the build tree), or in ../lib/tierscope/ (an installed prefix).
std::vector<std::string> PluginCandidates() {
  const std::string file = PluginFileName();
  std::vector<std::string> v;
  if (const char* env = std::getenv("TIERSCOPE_GPU_PLUGIN"); env != nullptr && *env != '\0') {
    v.push_back(env);
    return v;
  }
  const std::string dir = ExecutableDir();
  if (!dir.empty()) {
    v.push_back(dir + "/" + file);
    v.push_back(dir + "/../lib/tierscope/" + file);
  }
  return v;
}

// Opens the plugin once per process (it stays loaded: backends it made may outlive any
// caller); the factory, or why there is none.
StatusOr<CreateFn> LoadPlugin() {
  static std::once_flag once;
  static CreateFn create = nullptr;
  static Status failure;
  std::call_once(once, [] {
    std::string tried;
    for (const std::string& path : PluginCandidates()) {
      if (access(path.c_str(), F_OK) != 0) {
        tried += (tried.empty() ? "" : ", ") + path;
        continue;
      }
      void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) {
        const char* e = dlerror();
        failure = FailedPrecondition(path + " cannot be loaded: " + (e ? e : "unknown error") +
                                     " (is the " + kGpuKind + " runtime installed and on the library path?)");
        return;
      }
      auto build = reinterpret_cast<BuildFn>(dlsym(h, "tierscope_gpu_plugin_build"));
      auto make = reinterpret_cast<CreateFn>(dlsym(h, "tierscope_gpu_plugin_create"));
      if (build == nullptr || make == nullptr) {
        failure = FailedPrecondition(path + " is not a tierscope GPU plugin");
        return;
      }
      if (std::string(build()) != TIERSCOPE_PLUGIN_ABI) {
        failure = FailedPrecondition(path + " was built by another build (" + build() + ", this is " +
                                     TIERSCOPE_PLUGIN_ABI + "): rebuild or reinstall them together");
        return;
      }
      create = make;
      return;
    }
#if defined(TIERSCOPE_HAVE_CUDA)
    // This build made a plugin, but it is not where the executable looks for it.
    failure = FailedPrecondition(std::string("no ") + kGpuKind + " backend: " + PluginFileName() +
                                 " is missing (looked for " + tried +
                                 "); reinstall it with the executable, or set TIERSCOPE_GPU_PLUGIN to its path");
#else
    failure = Unimplemented(std::string("no ") + kGpuKind + " backend: this tierscope was built without it; "
                            "build with -DTIERSCOPE_CUDA=ON on a machine with the CUDA toolkit");
#endif
  });
  if (create == nullptr) return failure;
  return create;
}

}  // namespace

const char* GpuKind() { return kGpuKind; }

bool HaveGpuBackend() {
#if defined(TIERSCOPE_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

StatusOr<std::unique_ptr<Backend>> CreateBackend(const std::string& device, int threads) {
  if (device == "cpu") return CreateCpuBackend(threads);
  std::string kind = device, index;
  if (auto colon = device.find(':'); colon != std::string::npos) {
    kind = device.substr(0, colon);
    index = device.substr(colon + 1);
  }
  if (kind != "cuda" && kind != "musa") {
    return InvalidArgument("--device must be cpu, cuda or cuda:N, got '" + device + "'");
  }
  int ordinal = 0;
  if (device.find(':') != std::string::npos) {
    char* end = nullptr;
    const long v = std::strtol(index.c_str(), &end, 10);
    if (end == index.c_str() || *end != '\0' || v < 0 || v > 1024) {
      return InvalidArgument("--device " + device + ": the device index must be a number >= 0");
    }
    ordinal = static_cast<int>(v);
  }
  if (kind != kGpuKind) {
    return Unimplemented("--device " + device + ": this build's GPU backend is " + kGpuKind);
  }
  TS_ASSIGN_OR_RETURN(CreateFn create, LoadPlugin());
  StatusOr<std::unique_ptr<Backend>> backend = Unimplemented("the plugin made no backend");
  create(ordinal, &backend);
  return backend;
}

}  // namespace tierscope
