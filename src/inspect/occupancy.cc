// Theoretical occupancy arithmetic (see occupancy.h).
#include "inspect/occupancy.h"

#include <algorithm>

#include "core/int_math.h"

namespace tierscope {
namespace {

constexpr int64_t kRegisterUnit = 256;    // registers are allocated per warp in these
constexpr int kSubPartitions = 4;         // an SM's warp schedulers (sm_70 and later)
constexpr int64_t kSharedUnit = 128;      // shared memory allocation granularity, bytes

}  // namespace

std::optional<Occupancy> TheoreticalOccupancy(const DeviceProps& device, const Dim3& grid,
                                              const Dim3& block, int registers_per_thread,
                                              int64_t shared_bytes_per_block) {
  const int warp = device.warp_size > 0 ? device.warp_size : 32;
  if (device.compute_units <= 0 || device.max_threads_per_unit <= 0 ||
      device.max_blocks_per_unit <= 0 || device.regs_per_unit <= 0 || registers_per_thread <= 0) {
    return std::nullopt;
  }
  const int64_t threads = block.count();
  if (threads <= 0 || threads > device.max_threads_per_unit || grid.count() <= 0) return std::nullopt;
  Occupancy o;
  o.warps_per_block = static_cast<int>((threads + warp - 1) / warp);
  const int64_t max_warps = device.max_threads_per_unit / warp;

  struct Limit {
    int64_t blocks;
    const char* name;
  };
  Limit limits[4] = {
      {max_warps / o.warps_per_block, "threads"},
      {device.max_blocks_per_unit, "blocks"},
      {0, "registers"},
      {device.max_blocks_per_unit, "shared memory"},
  };
  // Registers: each warp takes ceil(regs x 32 / 256) x 256; a warp lives in one
  // sub-partition, which holds a quarter of the SM's registers.
  const int64_t regs_per_warp = RoundUp(int64_t{registers_per_thread} * warp, kRegisterUnit);
  const int64_t warps_by_regs =
      (device.regs_per_unit / kSubPartitions) / regs_per_warp * kSubPartitions;
  limits[2].blocks = warps_by_regs / o.warps_per_block;
  if (device.shared_per_unit > 0) {
    const int64_t per_block =
        RoundUp(std::max<int64_t>(shared_bytes_per_block, 0) + device.reserved_shared_per_block,
                kSharedUnit);
    if (per_block > 0) limits[3].blocks = device.shared_per_unit / per_block;
  }
  const Limit* least = &limits[0];
  for (const Limit& l : limits) {
    if (l.blocks < least->blocks) least = &l;
  }
  if (least->blocks <= 0) return std::nullopt;  // the block does not fit on an SM
  o.blocks_per_unit = static_cast<int>(least->blocks);
  o.limiter = least->name;
  o.theoretical_pct = 100.0 * static_cast<double>(o.blocks_per_unit * o.warps_per_block) /
                      static_cast<double>(max_warps);
  o.waves = static_cast<double>(grid.count()) /
            (static_cast<double>(device.compute_units) * o.blocks_per_unit);
  return o;
}

}  // namespace tierscope
