#!/usr/bin/env bash
# Run every libFuzzer target built by the fuzz preset for N seconds each, starting from its
# committed seed corpus. New inputs go to a scratch directory so the repository stays clean.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
failed=()
# a third-party library's leak on malformed input, not landlord's (fuzz/lsan.supp says which)
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
for bin in build/fuzz/fuzz_*; do
	[[ -x $bin ]] || continue
	name=$(basename "$bin"); name=${name#fuzz_}
	mkdir -p "$scratch/$name" fuzz/crashes
	echo "[fuzz] $name for ${secs}s"
	if ! "$bin" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix=fuzz/crashes/ \
		"$scratch/$name" "fuzz/corpus/$name" 2>"$scratch/$name.log"; then
		tail -60 "$scratch/$name.log"; status=1; failed+=("$name")
	else
		grep -E 'stat::number_of_executed_units|Done' "$scratch/$name.log" | tail -2
	fi
done
if ((status)); then
	echo "[fuzz] FAILED: ${failed[*]} (inputs in fuzz/crashes/)"
	for f in fuzz/crashes/*; do
		[[ -f $f ]] && echo "[fuzz] $f: $(head -c 512 "$f" | base64 -w0)"
	done
fi
exit $status
