// GPU theoretical occupancy, as the CUDA occupancy calculator and Nsight Compute's
// Occupancy section compute it: how many blocks of a kernel fit on one SM at once, as
// limited by threads, the SM's block slots, registers (allocated per warp in units of
// 256, split over the SM's four sub-partitions) and shared memory (with the runtime's
// reserve per block) — and the waves a grid needs at that residency. Thread-block
// clusters (sm_90 kernels may launch them) are not modelled: for those the residency is
// an upper bound.
#ifndef TIERSCOPE_INSPECT_OCCUPANCY_H_
#define TIERSCOPE_INSPECT_OCCUPANCY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "backend/backend.h"

namespace tierscope {

struct Occupancy {
  int blocks_per_unit = 0;      // resident blocks per SM
  int warps_per_block = 0;
  double theoretical_pct = 0;   // resident warps / max warps per SM
  std::string limiter;          // "threads", "blocks", "registers" or "shared memory"
  double waves = 0;             // grid blocks / (SMs x blocks_per_unit)
};

// nullopt when the device properties lack what the arithmetic needs (a CPU), the block
// is empty or too large for an SM, or registers_per_thread is unknown (<= 0).
std::optional<Occupancy> TheoreticalOccupancy(const DeviceProps& device, const Dim3& grid,
                                              const Dim3& block, int registers_per_thread,
                                              int64_t shared_bytes_per_block);

}  // namespace tierscope

#endif  // TIERSCOPE_INSPECT_OCCUPANCY_H_
