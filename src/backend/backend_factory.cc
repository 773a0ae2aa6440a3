// Backend selection by device name: "cpu", or "cuda[:N]" where the CUDA backend is built.
#include <cstdlib>
#include <string>

#include "backend/backend.h"
#if defined(TIERSCOPE_HAVE_CUDA)
#include "backend/cuda/cuda_backend.h"
#endif

namespace tierscope {

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
#if defined(TIERSCOPE_HAVE_CUDA)
  const bool known = kind == TS_GPU_VENDOR;  // "cuda", or "musa" in a MUSA build
#else
  const bool known = kind == "cuda" || kind == "musa";
#endif
  if (!known) {
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
#if defined(TIERSCOPE_HAVE_CUDA)
  TS_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> b, CudaBackend::Create(ordinal));
  return std::unique_ptr<Backend>(std::move(b));
#else
  (void)ordinal;
  return Unimplemented("--device " + device +
                       ": this build has no GPU backend (configure with -DTIERSCOPE_CUDA=ON "
                       "on a machine with the CUDA toolkit)");
#endif
}

}  // namespace tierscope
