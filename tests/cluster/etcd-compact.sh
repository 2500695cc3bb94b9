#!/usr/bin/env bash
# Compact etcd to its current revision through the v3 HTTP gateway and print that revision.
# Watches (and the apiserver's uncached lists) from an older resourceVersion then get 410 Gone.
#   tests/cluster/etcd-compact.sh STATE_DIR
set -euo pipefail
D=${1:?usage: etcd-compact.sh STATE_DIR}
# shellcheck disable=SC1091
source "$D/env"
rev=$(curl -fsS -X POST "$ETCD_URL/v3/kv/range" -d '{"key":"AA==","limit":1}' |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])')
# Compacting twice at the same revision is not an error for us: it is already compacted.
out=$(curl -sS -X POST "$ETCD_URL/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}")
if [[ $out == *'"error"'* && $out != *'required revision has been compacted'* ]]; then
	echo "etcd-compact.sh: $out" >&2
	exit 1
fi
echo "$rev"
