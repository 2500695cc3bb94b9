#!/usr/bin/env bash
# Build and run one module's unit test without building the whole library:
#   scripts/unit-one.sh quantity      -> tests/unit/test_quantity.c linked with every lib/*/*.c and src/*/*.c
#                                        and the fake API server (tests/fake/fake_*.c)
# ASan/UBSan on. Live tests run when LANDLORD_TEST_KUBECONFIG names a cluster's kubeconfig.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$1
srcs=(lib/*/*.c src/*/*.c tests/fake/fake_*.c)
out=build/unit-one; mkdir -p "$out"
gcc -std=c17 -D_GNU_SOURCE -DLANDLORD_VERSION='"dev"' -g -O1 -Wall -Wextra -Werror -Wshadow \
	-Wformat=2 -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wno-unused-parameter \
	-fsanitize=address,undefined -fno-omit-frame-pointer -Ilib -Isrc -Itests/fake \
	"tests/unit/test_$mod.c" "${srcs[@]}" -o "$out/test_$mod" \
	$(pkg-config --cflags --libs jansson libcurl libmicrohttpd libfyaml openssl libpcre2-8 cmocka) \
	-lpthread -lm
LANDLORD_TEST_DATA=$PWD/tests/data ASAN_OPTIONS=detect_leaks=1 "$out/test_$mod"
