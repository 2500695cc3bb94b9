#!/usr/bin/env bash
# Stop the control plane recorded in STATE_DIR/env: TERM, wait up to 10 s, then KILL.
# Only the recorded PIDs are signalled, and only while they still run the recorded binary.
#   tests/cluster/stop.sh STATE_DIR
set -uo pipefail
D=${1:?usage: stop.sh STATE_DIR}
[[ -f $D/env ]] || exit 0
# shellcheck disable=SC1091
source "$D/env"
# A rebuilt binary shows as "PATH (deleted)".
pid_is() { # pid binary-name
	local exe
	[[ -n $1 ]] || return 1
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	[[ ${exe% (deleted)} == "$(readlink -f "$BIN_DIR/$2")" ]]
}
pids=()
for pair in "${KCM_PID:-}:kube-controller-manager" "${APISERVER_PID:-}:kube-apiserver" "${ETCD_PID:-}:etcd"; do
	pid=${pair%%:*}
	pid_is "$pid" "${pair#*:}" || continue
	kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
done
for pid in "${pids[@]}"; do
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
done
exit 0
