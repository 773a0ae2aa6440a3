// The GPU backend as a plugin: the two symbols the executable looks up after opening
// libtierscope_cuda.so (or libtierscope_musa.so) — the build it was made by, so a plugin
// from another build is refused instead of misread, and the factory.
#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "tierscope/plugin_abi.h"

extern "C" {

__attribute__((visibility("default"))) const char* tierscope_gpu_plugin_build() {
  return TIERSCOPE_PLUGIN_ABI;
}

// Creates the backend of device `ordinal` into *out (a Status when it cannot).
__attribute__((visibility("default"))) void tierscope_gpu_plugin_create(
    int ordinal, tierscope::StatusOr<std::unique_ptr<tierscope::Backend>>* out) {
  auto backend = tierscope::CudaBackend::Create(ordinal);
  if (!backend.ok()) {
    *out = backend.status();
    return;
  }
  *out = std::unique_ptr<tierscope::Backend>(std::move(backend).value());
}

}  // extern "C"
