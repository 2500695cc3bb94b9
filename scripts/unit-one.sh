#!/usr/bin/env bash
# Build and run one module's unit test without building the whole library:
#   scripts/unit-one.sh quantity            -> tests/unit/test_quantity.c + lib/quantity.c
#   scripts/unit-one.sh informer kube watchsplit   (extra lib modules it needs)
# Always links the shared basics (err, mem, buf, json, log, metrics if present). ASan/UBSan on.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$1; shift
srcs=(lib/err.c lib/mem.c lib/buf.c lib/json.c lib/log.c)
for m in "$mod" "$@"; do srcs+=("lib/$m.c"); done
for extra in metrics ratelimit; do
	[[ -f lib/$extra.c && " ${srcs[*]} " != *" lib/$extra.c "* ]] && srcs+=("lib/$extra.c")
done
out=build/unit-one; mkdir -p "$out"
gcc -std=c17 -D_GNU_SOURCE -DLANDLORD_VERSION='"dev"' -g -O1 -Wall -Wextra -Werror -Wshadow \
	-Wformat=2 -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wno-unused-parameter \
	-fsanitize=address,undefined -fno-omit-frame-pointer -Iinclude -Ilib -Isrc \
	"tests/unit/test_$mod.c" "${srcs[@]}" -o "$out/test_$mod" \
	$(pkg-config --cflags --libs jansson libcurl libmicrohttpd libfyaml openssl libpcre2-8 cmocka) \
	-lpthread -lm
LANDLORD_TEST_DATA=$PWD/tests/data ASAN_OPTIONS=detect_leaks=1 "$out/test_$mod"
