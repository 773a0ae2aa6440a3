#!/usr/bin/env bash
# Trace ingest speed and memory: `tierscope stats --report import_stats` on the largest
# corpus trace (216k events) and on a synthetic trace of SIZE_MB (default 1024), with
# MB/s of uncompressed JSON and peak RSS; Python's json.load on the same files for
# comparison. Usage: bench/ingest_bench.sh [SIZE_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
size="${1:-1024}"
bin=./build/release/tierscope
[ -x "$bin" ] || bash scripts/build.sh release >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus=../shared/corpus/traces/df_index_resolver.json.gz
files=()
if [ -f "$corpus" ]; then files+=("$corpus"); fi
python3 bench/make_synthetic_trace.py "$work/synthetic.json" "$size"
files+=("$work/synthetic.json")
printf "%-28s %10s %9s %10s %12s %14s\n" file "MB" "seconds" "MB/s" "peak RSS MB" "RSS / size"
for f in "${files[@]}"; do
  if [[ "$f" == *.gz ]]; then mb=$(gzip -dc "$f" | wc -c); else mb=$(stat -c %s "$f"); fi
  mb=$(python3 -c "print($mb / 1048576)")
  /usr/bin/time -f "%e %M" -o "$work/time" "$bin" stats "$f" --report import_stats >/dev/null
  read -r secs rss_kb <"$work/time"
  python3 -c "m=$mb; s=$secs; r=$rss_kb/1024; print('%-28s %10.1f %9.2f %10.1f %12.1f %14.2f' % ('tierscope: ' + '$(basename "$f")'[:17], m, s, m/s, r, r/m))"
  if [ "$(python3 -c "print(int($mb <= 512))")" = 1 ]; then
    /usr/bin/time -f "%e %M" -o "$work/time" python3 -c "import gzip,json,sys; p=sys.argv[1]; o=gzip.open if p.endswith('.gz') else open; json.load(o(p,'rt'))" "$f"
    read -r secs rss_kb <"$work/time"
    python3 -c "m=$mb; s=$secs; r=$rss_kb/1024; print('%-28s %10.1f %9.2f %10.1f %12.1f %14.2f' % ('python json: ' + '$(basename "$f")'[:15], m, s, m/s, r, r/m))"
  fi
done
