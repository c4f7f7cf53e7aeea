#!/usr/bin/env python3
"""Runs the shipped job questions in DuckDB over per-rank tables.

    python3 sql/run.py ROOT [QUERY.sql ...] [--json]

ROOT is the folder `summary TRACE --write-parquet ROOT` wrote (one
`<table>/rank=<r>/part.parquet` per rank). The views of tables.sql and
matched.sql are made first; then each QUERY (default: every question file
here) is run and printed as a table, or with --json as one object
{"<file stem>": [rows...]} on stdout, and each query's time on stderr.
Needs the duckdb package (pip install duckdb).
"""
import json
import pathlib
import sys
import time

import duckdb

HERE = pathlib.Path(__file__).resolve().parent
SETUP = ["tables.sql", "matched.sql"]


def main(argv):
    as_json = "--json" in argv
    args = [a for a in argv if a != "--json"]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = pathlib.Path(args[0])
    if not (root / "summary").is_dir():
        print(f"run.py: {root} holds no summary/ table: not a --write-parquet folder", file=sys.stderr)
        return 2
    queries = [pathlib.Path(q) for q in args[1:]] or sorted(
        p for p in HERE.glob("*.sql") if p.name not in SETUP
    )
    con = duckdb.connect()
    con.execute("SET VARIABLE root = ?", [str(root)])
    for name in SETUP:
        con.execute((HERE / name).read_text())
    out = {}
    for q in queries:
        start = time.perf_counter()
        rel = con.sql(q.read_text())
        cols = rel.columns
        rows = rel.fetchall()
        ms = (time.perf_counter() - start) * 1e3
        print(f"{q.stem}: {len(rows)} rows in {ms:.1f} ms", file=sys.stderr)
        if as_json:
            out[q.stem] = [dict(zip(cols, r)) for r in rows]
        else:
            print(f"-- {q.stem}")
            print(rel)
    if as_json:
        json.dump(out, sys.stdout, indent=1, default=str)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
