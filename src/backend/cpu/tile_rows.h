// How a CPU GEMM's rows are cut into the row blocks of its tasks: blocks of the kernel's
// most rows, or, where there are few, as many blocks as make each worker's share of the
// tasks equal (the pool hands each worker a contiguous run of task indices).
#ifndef TIERSCOPE_BACKEND_CPU_TILE_ROWS_H_
#define TIERSCOPE_BACKEND_CPU_TILE_ROWS_H_

#include <algorithm>
#include <cstdint>

namespace tierscope {

// Row block b is rows [begin(b), begin(b + 1)) of m; each block but the last holds whole
// granules, at most max_rows rows: `uniform` rows each, or, where uniform is 0, the
// granules shared out evenly (block b ends at granule (b + 1) * granules / blocks).
struct TileRows {
  int64_t m = 0, blocks = 0, granule = 1, granules = 0, uniform = 0;
  int64_t begin(int64_t b) const {
    if (blocks == 0) return 0;
    return std::min(m, uniform > 0 ? b * uniform : granule * (b * granules / blocks));
  }
  int64_t rows(int64_t b) const { return begin(b + 1) - begin(b); }
  // The most rows of a block (a launch's block size).
  int64_t most_rows() const {
    if (blocks == 0) return 0;
    return std::min(m, uniform > 0 ? uniform : granule * ((granules + blocks - 1) / blocks));
  }
};

// The row blocks of an m-row GEMM whose row blocks each make the same number of tasks, for
// `workers` workers: blocks of max_rows (a multiple of granule) where there are at least 4
// a worker; else a multiple of the workers (at most one a granule), the granules shared
// out evenly, so that each worker's contiguous run of tasks holds as many rows. (128 rows
// on 2 workers: 4 blocks of 32, where blocks of 48 would give one worker 96 rows.)
inline TileRows SplitTileRows(int64_t m, int64_t max_rows, int64_t granule, int workers) {
  TileRows t;
  t.m = m;
  t.granule = granule;
  t.granules = (m + granule - 1) / granule;
  if (t.granules == 0) return t;  // no rows: no blocks
  const int64_t most = max_rows / granule;
  const int64_t fewest = (t.granules + most - 1) / most;
  if (workers <= 1 || fewest >= 4 * int64_t{workers}) {
    t.blocks = fewest;
    t.uniform = max_rows;
    return t;
  }
  t.blocks = std::min(t.granules, (fewest + workers - 1) / workers * workers);
  return t;
}

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_TILE_ROWS_H_
