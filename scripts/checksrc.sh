#!/usr/bin/env bash
# Reject banned C functions (docs/conventions.md §7 and §14): unbounded or unsafe string and number handling,
# and, in product code (lib/, src/, cmd/), raw allocation anywhere but lib/base/mem.c: out of
# memory is fatal through mem.h's x* wrappers, arrays grow through vec.h, strings through buf.h.
# A line may opt out with a "checksrc: allow" comment that says why.
set -euo pipefail
cd "$(dirname "$0")/.."
banned='\b(sprintf|vsprintf|strcpy|strcat|strtok|gets|atoi|atol|atoll|system|rand|srand)[[:space:]]*\('
raw_alloc='(^|[^_[:alnum:]])(malloc|calloc|realloc|reallocarray|strdup|strndup|asprintf|vasprintf)[[:space:]]*\('
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.h')
mapfile -t product < <(printf '%s\n' "${files[@]}" | grep -E '^(lib|src|cmd)/' |
	grep -vx 'lib/base/mem\.[ch]')
status=0
if hits=$(grep -nE "$banned" "${files[@]}" | grep -v 'checksrc: allow'); then
	echo "checksrc: banned functions used:" >&2
	echo "$hits" >&2
	status=1
fi
if hits=$(grep -nE "$raw_alloc" "${product[@]}" | grep -v 'checksrc: allow'); then
	echo "checksrc: raw allocation outside lib/base/mem.c (use mem.h, vec.h or buf.h):" >&2
	echo "$hits" >&2
	status=1
fi
((status == 0)) && echo "checksrc: ${#files[@]} files clean"
exit $status
