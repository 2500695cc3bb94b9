#!/usr/bin/env bash
# Stop or start only kube-controller-manager of the control plane in STATE_DIR, with the flags
# start.sh stored in STATE_DIR/kcm.args (extra flags after "start" are appended, so a later
# --kube-api-qps wins), and keep KCM_PID in STATE_DIR/env current. Stops by the recorded PID,
# and only if that PID is still this cluster's kube-controller-manager.
#   tests/cluster/kcm.sh STATE_DIR stop
#   tests/cluster/kcm.sh STATE_DIR start [--kube-api-qps=20 --kube-api-burst=30]
set -euo pipefail
D=${1:?usage: kcm.sh STATE_DIR stop|start [flags...]}
action=${2:?usage: kcm.sh STATE_DIR stop|start [flags...]}
shift 2
# shellcheck disable=SC1091
source "$D/env"

stop() {
	local pid=${KCM_PID:-} exe
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
	if [[ -n $pid && ${exe% (deleted)} == "$(readlink -f "$BIN_DIR/kube-controller-manager")" ]]; then
		kill -TERM "$pid"
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	sed -i "s/^KCM_PID=.*/KCM_PID=/" "$D/env"
}

start() {
	local new end
	mapfile -t args <"$D/kcm.args"
	echo "--- kcm.sh start $* $(date -u +%FT%TZ) ---" >>"$D/logs/kube-controller-manager.log"
	setsid "$BIN_DIR/kube-controller-manager" "${args[@]}" "$@" \
		>>"$D/logs/kube-controller-manager.log" 2>&1 </dev/null &
	new=$!
	sed -i "s/^KCM_PID=.*/KCM_PID=$new/" "$D/env"
	end=$((SECONDS + 60))
	until curl -fsSk "https://127.0.0.1:$KCM_PORT/healthz" >/dev/null 2>&1; do
		if ! kill -0 "$new" 2>/dev/null || ((SECONDS >= end)); then
			echo "kcm.sh: kube-controller-manager not healthy; see $D/logs/kube-controller-manager.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	echo "kube-controller-manager started (pid $new)"
}

case $action in
stop) stop ;;
start) stop && start "$@" ;;
*) echo "kcm.sh: unknown action $action (stop or start)" >&2; exit 2 ;;
esac
