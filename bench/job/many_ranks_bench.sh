#!/usr/bin/env bash
# A thousand ranks (issue 29): synthetic jobs of 128, 256, 512 and RANKS (default 1,024)
# small ranks (make_job.py: a real DDP trace's events, its NCCL collectives, one straggler),
# each analysed by `tierscope analyze DIR --format json` (the job's steps timed: ranks read,
# ranks assigned, stragglers with clock alignment and the permutation test, findings,
# tables), the largest also by `tierscope.dask.analyze_job` on a LocalCluster of two
# workers, with the answers compared. Goal: every cross-rank step near-linear in the ranks
# (its time per rank at RANKS within 2x of its time per rank at 128), and the text output a
# summary, not one row per rank.
#   bash bench/job/many_ranks_bench.sh [RANKS=1024] [SIZE_MB=0.25]
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=${1:-1024}
size=${2:-0.25}
bin=build/release/tierscope
[ -x "$bin" ] || bash scripts/build.sh release
python=${TIERSCOPE_VENV:-$HOME/.cache/tierscope/venv}/bin/python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sizes=()
for n in 128 256 512 "$ranks"; do
  [ "$n" -le "$ranks" ] && sizes+=("$n")
done
sizes=($(printf '%s\n' "${sizes[@]}" | sort -n -u))
for n in "${sizes[@]}"; do
  echo "== $n ranks of $size MB"
  python3 bench/job/make_job.py "$work/job$n" "$n" "$size" >/dev/null
  t0=$EPOCHREALTIME
  "$bin" analyze "$work/job$n" --format json --timings >"$work/job$n.json" 2>/dev/null
  t1=$EPOCHREALTIME
  "$bin" analyze "$work/job$n" >"$work/job$n.txt" 2>/dev/null
  echo "wall $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s; text output $(wc -l <"$work/job$n.txt") lines"
done
largest=${sizes[-1]}
echo "== tierscope.dask.analyze_job, $largest ranks, LocalCluster of 2 workers"
dask_ok=FAIL
if "$python" -c "import dask.distributed, tierscope" 2>/dev/null; then
  # A file, not stdin: Dask's worker processes start by importing the main module.
  cat >"$work/dask_run.py" <<'PY'
import json, sys, time
from tierscope.dask import analyze_job

if __name__ == "__main__":
    t0 = time.time()
    job = analyze_job(sys.argv[1], n_workers=2)
    print(f"dask: {time.time() - t0:.2f} s for {len(job['ranks'])} ranks")
    cli = json.load(open(sys.argv[2]))
    assert job["ranks"] == cli["ranks"] and job["findings"] == cli["findings"], "dask and the CLI disagree"
    print("dask: ranks and findings equal to the CLI's")
PY
  "$python" "$work/dask_run.py" "$work/job$largest" "$work/job$largest.json" && dask_ok=PASS
else
  echo "dask or the tierscope package missing in $python (bash scripts/test.sh makes them)"
fi
"$python" - "$work" "${sizes[@]}" <<'PY'
import json, sys
work, sizes = sys.argv[1], [int(n) for n in sys.argv[2:]]
docs = {n: json.load(open(f"{work}/job{n}.json")) for n in sizes}
steps = list(docs[sizes[0]]["seconds"])
print(f"{'step':<48}" + "".join(f"{n:>10}" for n in sizes) + "   per rank, largest / smallest")
worst = 0.0
for s in steps:
    t = [docs[n]["seconds"].get(s, 0.0) for n in sizes]
    ratio = (t[-1] / sizes[-1]) / (t[0] / sizes[0]) if t[0] > 0 else float("nan")
    if s != "ranks read and analysed" and t[0] > 0.005:  # steps too short to time are not judged
        worst = max(worst, ratio)
    print(f"{s:<48}" + "".join(f"{x:>10.3f}" for x in t) + f"   {ratio:.2f}")
lines = {n: sum(1 for _ in open(f"{work}/job{n}.txt")) for n in sizes}
print(f"cross-rank steps near-linear (per-rank time at {sizes[-1]} within 2x of {sizes[0]}): "
      f"{'PASS' if worst <= 2 else 'FAIL'} (worst {worst:.2f}x)")
print(f"text output: {lines[sizes[0]]} lines at {sizes[0]} ranks, {lines[sizes[-1]]} at {sizes[-1]} "
      f"({'PASS' if lines[sizes[-1]] < 2 * lines[sizes[0]] else 'FAIL'}: a summary, not a row per rank)")
PY
echo "dask agrees with the CLI: $dask_ok"
