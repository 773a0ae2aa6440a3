"""python -m tierscope export INPUT OUT [--format parquet|sqlite] [--force]: the CLI's
export from the Python package (Parquet needs pyarrow; sqlite, of one trace, is written by
the same C++ code as `tierscope export`)."""
from __future__ import annotations

import argparse
import sys
import warnings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tierscope")
    sub = ap.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="a trace or a job directory as Parquet tables (partitioned by rank)")
    ex.add_argument("input")
    ex.add_argument("out")
    ex.add_argument("--format", default="parquet", choices=["parquet", "sqlite"])
    ex.add_argument("--force", action="store_true", help="replace an existing OUT's tables")
    a = ap.parse_args(argv)
    # What an import notes (entries skipped) is one line on stderr, as the CLI says it.
    warnings.showwarning = lambda message, *_args, **_kw: print(f"tierscope: note: {message}", file=sys.stderr)
    try:
        if a.format == "sqlite":
            from . import read_trace
            print("export: " + a.out + ": " + read_trace(a.input).export_sqlite(a.out, force=a.force))
            return 0
        from .export import export_parquet
        rows = export_parquet(a.input, a.out, force=a.force)
    except ImportError as e:
        print(f"tierscope: error: --format parquet needs pyarrow ({e})", file=sys.stderr)
        return 2
    except (OSError, ValueError) as e:
        print(f"tierscope: error: {e}", file=sys.stderr)
        return 2
    print("export: " + a.out + ": " + ", ".join(f"{n} {r}" for n, r in rows.items() if r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
