#!/usr/bin/env bash
# Reject banned C functions (c-style §1.9.14): unbounded or unsafe string and number handling.
set -euo pipefail
cd "$(dirname "$0")/.."
banned='\b(sprintf|vsprintf|strcpy|strcat|strtok|gets|atoi|atol|atoll|system|rand|srand)[[:space:]]*\('
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.h')
if hits=$(grep -nE "$banned" "${files[@]}" | grep -v 'checksrc: allow'); then
	echo "checksrc: banned functions used:" >&2
	echo "$hits" >&2
	exit 1
fi
echo "checksrc: ${#files[@]} files clean"
