// How a CPU GEMM's rows are cut into the row blocks of its tasks: blocks of the kernel's
// most rows, or, where there are few (or each task holds whole rows), as many blocks as
// make each worker's share of the tasks equal (the pool hands each worker a contiguous run
// of task indices).
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

// m rows in at least `blocks` blocks, rounded up to a multiple of the workers (at most
// one a granule), the granules shared out evenly: the one construction of both splits.
inline TileRows EvenTileRows(int64_t m, int64_t granule, int64_t blocks, int workers) {
  const int64_t w = std::max(1, workers);
  TileRows t;
  t.m = m;
  t.granule = granule;
  t.granules = (m + granule - 1) / granule;
  t.blocks = std::min(t.granules, (blocks + w - 1) / w * w);
  return t;
}

// The row blocks of an m-row GEMM whose row blocks each make the same number of tasks, for
// `workers` workers: blocks of max_rows (a multiple of granule) where there are at least 4
// a worker; else a multiple of the workers (at most one a granule), the granules shared
// out evenly, so that each worker's contiguous run of tasks holds as many rows. (128 rows
// on 2 workers: 4 blocks of 32, where blocks of 48 would give one worker 96 rows.)
inline TileRows SplitTileRows(int64_t m, int64_t max_rows, int64_t granule, int workers) {
  const int64_t most = max_rows / granule;
  const int64_t fewest = ((m + granule - 1) / granule + most - 1) / most;
  if (workers > 1 && fewest < 4 * int64_t{workers}) return EvenTileRows(m, granule, fewest, workers);
  TileRows t = EvenTileRows(m, granule, fewest, 1);  // no rows: no blocks
  t.uniform = max_rows;
  return t;
}

// The row blocks of a launch whose tasks each hold whole rows (an INT8 Linear writing
// codes: a row's range must be known before it is quantized; a Linear with LayerNorm in
// its epilogue: a row's statistics must be): as many blocks as max_rows
// make, or blocks of fewer granules where that leaves under 4 a worker, rounded up to a
// multiple of the workers, the granules shared out evenly. Each worker's contiguous run of
// tasks then holds as many rows, within a granule: 1,024 rows in 48-row blocks on 2
// workers make 22 blocks of 48 or 32 rows, 512 rows a worker, where uniform blocks gave
// one worker 528 and the other 496 (a whole-row task is too coarse for stealing to even
// that out).
inline TileRows SplitRowTasks(int64_t m, int64_t max_rows, int64_t granule, int workers) {
  int64_t most = max_rows;
  while (most > granule && (m + most - 1) / most < 4 * int64_t{std::max(1, workers)}) most -= granule;
  return EvenTileRows(m, granule, (m + most - 1) / most, workers);
}

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_TILE_ROWS_H_
