// The narrow Backend interface: device memory with accounting, synchronisation, device
// properties, and the launch descriptor every kernel launch carries. Model code reaches
// kernels only through Kernels (kernels.h) and never includes a concrete backend.
#ifndef TIERSCOPE_BACKEND_BACKEND_H_
#define TIERSCOPE_BACKEND_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/tensor.h"
#include "tierscope/status.h"

namespace tierscope {

struct Dim3 {
  int64_t x = 1, y = 1, z = 1;
  int64_t count() const { return x * y * z; }
};

// What every kernel launch says about itself; profilers and tier 3 read it.
// CPU: grid = tasks (e.g. M-tiles x N-tiles), block = the work of one task.
struct LaunchDesc {
  std::string_view kernel;  // "cpu_sgemm_nt_f32_64x64_bias_gelu"
  Dim3 grid, block;
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
};

struct DeviceProps {
  std::string name;          // "cpu: AMD EPYC (2 threads)"
  std::string kind;          // "cpu" or "cuda"
  int compute_units = 1;     // CPU: worker threads
  int64_t total_memory = 0;  // bytes
};

class Kernels;

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
};

// Creates the CPU backend with `threads` workers (0: all hardware threads).
StatusOr<std::unique_ptr<Backend>> CreateCpuBackend(int threads);

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_BACKEND_H_
