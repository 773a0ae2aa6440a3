#!/usr/bin/env bash
# Fuzzes every libFuzzer target of a TIERSCOPE_FUZZ build for a fixed time, starting from
# its seed corpus (tests/fuzz/corpus/<target>); any crash, leak, sanitizer report or
# timeout fails the run, and the input that caused it is kept under
# <build>/fuzz/artifacts/ (add it to the seed corpus once fixed).
#   bash tests/fuzz/run.sh [build dir, default build/asan] [seconds per target, default 20]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build/asan}"
seconds="${2:-20}"
# A fixed seed: a failure in CI is the same failure when run again (TIERSCOPE_FUZZ_SEED
# changes it, for a longer hunt).
seed="${TIERSCOPE_FUZZ_SEED:-2026}"
targets=(safetensors_fuzzer torch_bin_fuzzer pickle_fuzzer kineto_fuzzer nsys_fuzzer
         ncu_csv_fuzzer rocpd_fuzzer vendor_csv_fuzzer http_request_fuzzer)
work="$build/fuzz"
mkdir -p "$work/artifacts"
failed=()
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/$t"
  [ -x "$bin" ] || { echo "fuzz: $bin is not built (configure with the asan preset)" >&2; exit 1; }
  mkdir -p "$work/corpus/$t"
  echo "fuzz: $t for ${seconds}s (seed $seed)"
  # New inputs go to the build's corpus; the seeds in the repo are only read.
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$bin" -seed="$seed" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" \
      "$work/corpus/$t" "tests/fuzz/corpus/$t" >"$work/$t.log" 2>&1; then
    failed+=("$t")
    tail -n 60 "$work/$t.log" >&2
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$work/$t.log" | tr '\n' ' ' || true
  echo
done
if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]} (inputs under $work/artifacts/)" >&2
  exit 1
fi
echo "fuzz: every target ran ${seconds}s without a failure"
