#!/usr/bin/env bash
# Restart only kube-apiserver with the flags start.sh stored in STATE_DIR/apiserver.args (same
# port, same etcd), wait for /readyz and update APISERVER_PID in STATE_DIR/env.
#   tests/cluster/restart-apiserver.sh STATE_DIR
set -euo pipefail
D=${1:?usage: restart-apiserver.sh STATE_DIR}
# shellcheck disable=SC1091
source "$D/env"
pid=$APISERVER_PID
exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
if [[ -n $pid && ${exe% (deleted)} == "$(readlink -f "$BIN_DIR/kube-apiserver")" ]]; then
	kill -TERM "$pid"
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
fi
t0=$(date +%s%N)
mapfile -t args <"$D/apiserver.args"
echo "--- restart-apiserver.sh $(date -u +%FT%TZ) ---" >>"$D/logs/kube-apiserver.log"
setsid "$BIN_DIR/kube-apiserver" "${args[@]}" >>"$D/logs/kube-apiserver.log" 2>&1 </dev/null &
new=$!
sed -i "s/^APISERVER_PID=.*/APISERVER_PID=$new/" "$D/env"
end=$((SECONDS + 120))
until curl -fsS --cacert "$CA" --cert "$PKI_DIR/admin.crt" --key "$PKI_DIR/admin.key" \
	"$API_URL/readyz" >/dev/null 2>&1; do
	if ! kill -0 "$new" 2>/dev/null || ((SECONDS >= end)); then
		echo "restart-apiserver.sh: kube-apiserver not ready; see $D/logs/kube-apiserver.log" >&2
		exit 1
	fi
	sleep 0.1
done
ms=$((($(date +%s%N) - t0) / 1000000))
printf 'kube-apiserver restarted (pid %d) and ready in %d.%03ds\n' "$new" $((ms / 1000)) $((ms % 1000))
