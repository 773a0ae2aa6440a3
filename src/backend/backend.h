// The narrow Backend interface: device memory with accounting, synchronisation, device
// properties, and the launch descriptor every kernel launch carries. Model code reaches
// kernels only through Kernels (kernels.h) and never includes a concrete backend.
#ifndef TIERSCOPE_BACKEND_BACKEND_H_
#define TIERSCOPE_BACKEND_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"
#include "backend/launch.h"
#include "backend/memory.h"
#include "backend/observer.h"
#include "core/clock.h"
#include "core/tensor.h"
#include "tierscope/status.h"

namespace tierscope {

class Kernels;

// A recorded sequence of launches (a CUDA graph), replayed as one.
class Graph {
 public:
  virtual ~Graph() = default;
};

class Backend : public Allocator {
 public:
  ~Backend() override = default;
  virtual const DeviceProps& props() const = 0;
  virtual Status CopyHostToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual Status CopyDeviceToHost(void* dst, const void* src, size_t bytes) = 0;
  // Waits until every launched kernel has finished.
  virtual Status Synchronize() = 0;
  // The op kernels of this backend.
  virtual Kernels& kernels() = 0;
  // Attaches (or with nullptr detaches) the observer. Not thread-safe against launches.
  virtual void SetObserver(BackendObserver* observer) = 0;
  // Attaches (or with nullptr detaches) a tier-3 launch hook. Not thread-safe against
  // launches.
  virtual void SetLaunchHook(LaunchHook* hook) = 0;
  // Graph capture: launches between BeginCapture and EndCapture are recorded, not run;
  // LaunchGraph replays them (same buffers, same shapes). Backends without graphs say so.
  virtual Status BeginCapture() { return Unimplemented(props().kind + " backend has no graphs"); }
  virtual StatusOr<std::unique_ptr<Graph>> EndCapture() {
    return Unimplemented(props().kind + " backend has no graphs");
  }
  virtual Status LaunchGraph(Graph& graph) {
    return Unimplemented(props().kind + " backend has no graphs");
  }
  // Evicts what kernels left in the device's caches (tier 3's --cache-control all): CPU,
  // writes over twice the last-level cache; GPU, a memset over twice L2.
  virtual Status FlushCaches() = 0;
  // Bytes new allocations can still get: the host's available memory (CPU) or the
  // device's free memory (GPU), plus what the allocator keeps cached for reuse; -1 when
  // unknown.
  virtual int64_t AvailableMemory() const = 0;
  // Measures the device's peaks with its own kernels (GPUs; ~1 s). The CPU's peaks are
  // measured by inspect/calibration.h instead, so the CPU backend says Unimplemented.
  virtual StatusOr<DevicePeaks> MeasurePeaks() {
    return Unimplemented(props().kind + " backend measures no peaks of its own");
  }
};

// Tensor t read back to the host into *out, widened to FP32.
inline Status CopyToHostFloats(Backend& backend, const Tensor& t, std::vector<float>* out) {
  std::vector<std::byte> raw(t.bytes());
  TS_RETURN_IF_ERROR(backend.CopyDeviceToHost(raw.data(), t.data(), raw.size()));
  out->resize(static_cast<size_t>(t.numel()));
  ToFloat(t.dtype(), raw.data(), out->data(), out->size());
  return OkStatus();
}

// Creates the CPU backend with `threads` workers (0: all hardware threads).
StatusOr<std::unique_ptr<Backend>> CreateCpuBackend(int threads);
// Creates the backend `device` names: "cpu", "cuda" (device 0) or "cuda:N" (also
// "musa[:N]" in a MUSA build). InvalidArgument for an unknown name, Unimplemented when
// this build has no GPU backend, FailedPrecondition when its plugin cannot be used or no
// such device is present ("no <kind> device ...").
StatusOr<std::unique_ptr<Backend>> CreateBackend(const std::string& device, int threads);
// True when this build has the CUDA (or MUSA) backend compiled in.
bool HaveGpuBackend();
// The GPU kind this build's plugin serves: "cuda", or "musa" in a MUSA build.
const char* GpuKind();

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_BACKEND_H_
