// `tierscope bench --engine torch`: the study's workload through PyTorch and transformers
// in a Python process (torch_bench.py, embedded in the binary), on the same inputs as the
// native engine, its measurements turned into the same BenchResult by tierscope.
#ifndef TIERSCOPE_WORKLOAD_TORCH_BENCH_H_
#define TIERSCOPE_WORKLOAD_TORCH_BENCH_H_

#include <string>

#include "tierscope/status.h"
#include "workload/bench.h"

namespace tierscope {

// The Python to run: `python` when given, else $TIERSCOPE_PYTHON, else the test venv's
// ($TIERSCOPE_VENV, or ~/.cache/tierscope/venv) when it exists, else python3.
std::string TorchPython(const std::string& python);

// Runs the workload through PyTorch; a missing Python, torch, device or model is one
// line naming it.
StatusOr<BenchReport> RunTorchBench(const BenchOptions& options);

}  // namespace tierscope

#endif  // TIERSCOPE_WORKLOAD_TORCH_BENCH_H_
