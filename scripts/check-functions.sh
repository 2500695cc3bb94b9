#!/usr/bin/env bash
# Function length and complexity guard over product code (lib/, src/, cmd/), as curl's
# scripts/top-length: prints the ten longest and the ten most complex functions, and fails
# when one is over a limit and not in scripts/function-limits.allow ("file:function  why").
# Length is lines from the signature to the closing brace; complexity is lizard's cyclomatic
# complexity number (CCN).
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_LINES=${MAX_LINES:-60}
MAX_CCN=${MAX_CCN:-20}
if ! command -v lizard >/dev/null; then
	echo "check-functions: lizard is missing: python3 -m pip install lizard (make deps does)" >&2
	exit 1
fi
lizard -l c --csv lib src cmd 2>/dev/null | python3 -c '
import csv, sys
max_lines, max_ccn = int(sys.argv[1]), int(sys.argv[2])
allow = {}
for line in open("scripts/function-limits.allow"):
    line = line.strip()
    if line and not line.startswith("#"):
        where, _, why = line.partition(" ")
        allow[where] = why.strip()
funcs = [(int(r[4]), int(r[1]), f"{r[6]}:{r[7]}") for r in csv.reader(sys.stdin)]
print(f"check-functions: {len(funcs)} functions; longest (lines) and most complex (CCN):")
for key, col in (("lines", 0), ("CCN", 1)):
    for f in sorted(funcs, key=lambda f: -f[col])[:10]:
        print(f"  {f[col]:4d} {key:5s} {f[2]}")
over = [f for f in funcs if (f[0] > max_lines or f[1] > max_ccn) and f[2] not in allow]
for lines, ccn, where in over:
    print(f"check-functions: {where} has {lines} lines and CCN {ccn}; the limits are "
          f"{max_lines} lines and CCN {max_ccn}: split it (or say why not in "
          "scripts/function-limits.allow)", file=sys.stderr)
stale = [w for w in allow if not any(f[2] == w and (f[0] > max_lines or f[1] > max_ccn)
                                     for f in funcs)]
for w in stale:
    print(f"check-functions: {w} is within the limits now: remove it from "
          "scripts/function-limits.allow", file=sys.stderr)
sys.exit(1 if over or stale else 0)
' "$MAX_LINES" "$MAX_CCN"
