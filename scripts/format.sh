#!/usr/bin/env bash
# Format C sources with the repository's .clang-format; --check fails on any difference.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.c' '*.h')
if [[ ${1:-} == --check ]]; then
	clang-format-14 --dry-run --Werror "${files[@]}"
	echo "format: ${#files[@]} files clean"
else
	clang-format-14 -i "${files[@]}"
fi
