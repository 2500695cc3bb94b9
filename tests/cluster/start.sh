#!/usr/bin/env bash
# Start a real control plane (etcd, kube-apiserver, kube-controller-manager) on 127.0.0.1.
#   tests/cluster/start.sh STATE_DIR
# Writes STATE_DIR/env (sourceable), STATE_DIR/kubeconfigs/<user>.kubeconfig, STATE_DIR/pki,
# STATE_DIR/logs. Stop it with tests/cluster/stop.sh STATE_DIR. See tests/cluster/README.md.
# LANDLORD_APISERVER_PROFILING=true serves /debug/pprof (benchmarks profiling the API server).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
D=${1:?usage: start.sh STATE_DIR}
source "$here/versions.env"
BIN_DIR=${LANDLORD_K8S_BIN:-$HOME/.cache/landlord/k8s/$K8S_VERSION}
for b in etcd kube-apiserver kube-controller-manager kubectl; do
	[[ -x $BIN_DIR/$b ]] || { echo "start.sh: $BIN_DIR/$b missing; run tests/cluster/build-k8s.sh" >&2; exit 1; }
done
BIN_DIR=$(cd "$BIN_DIR" && pwd -P)
mkdir -p "$D"
D=$(cd "$D" && pwd)
P=$D/pki
t0=$(date +%s%N)

# A PID counts as ours only if it still runs the binary we recorded for it (PIDs get reused).
# A rebuilt binary shows as "PATH (deleted)".
pid_is() { # pid binary-name
	local exe
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	[[ ${exe% (deleted)} == "$(readlink -f "$BIN_DIR/$2")" ]]
}
if [[ -f $D/env ]]; then
	(
		source "$D/env"
		BIN_DIR=${BIN_DIR:-}
		for pair in "${ETCD_PID:-}:etcd" "${APISERVER_PID:-}:kube-apiserver" \
			"${KCM_PID:-}:kube-controller-manager"; do
			if pid_is "${pair%%:*}" "${pair#*:}"; then
				echo "start.sh: $D already runs ${pair#*:} (pid ${pair%%:*}); stop.sh it first" >&2
				exit 1
			fi
		done
	)
	rm -f "$D/env"
fi
mkdir -p "$P" "$D/logs" "$D/kubeconfigs"

# ---------- PKI (idempotent: each file is made only when missing) ----------
sign() { # name subject extensions
	[[ -s $P/$1.crt && -s $P/$1.key ]] && return 0
	openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$P/$1.key" -out "$P/$1.csr" 2>/dev/null
	printf '%b' "$3" >"$P/$1.ext"
	openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
		-days 3650 -extfile "$P/$1.ext" -out "$P/$1.crt" 2>/dev/null
	rm -f "$P/$1.csr" "$P/$1.ext"
}
if [[ ! -s $P/ca.crt || ! -s $P/ca.key ]]; then
	rm -f "$P"/*.crt "$P"/*.key
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=landlord-test-ca" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-keyout "$P/ca.key" -out "$P/ca.crt" 2>/dev/null
fi
SRV='subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n'
CLI='extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n'
sign apiserver "/CN=kube-apiserver" "$SRV"
sign webhook "/CN=landlord-webhook" "$SRV"
sign admin "/O=system:masters/CN=admin" "$CLI"
sign kcm "/O=system:masters/CN=kube-controller-manager" "$CLI"
sign landlord "/CN=system:serviceaccount:landlord-system:landlord" "$CLI"
sign landlord-proxy "/CN=system:serviceaccount:landlord-system:landlord-proxy" "$CLI"
if [[ ! -s $P/sa.key ]]; then
	openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
	openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
fi
chmod 600 "$P"/*.key

# Static bearer tokens: token,user,uid,"group,group". Users are documented in README.md.
TENANTS="alice bob carol dave erin frank"
cat >"$P/tokens.csv" <<'TOK'
admin-token-0123456789,admin,uid-admin,"system:masters"
alice-token-0123456789,alice,uid-alice,"tenant-users,team-a"
bob-token-0123456789,bob,uid-bob,"tenant-users,team-a"
carol-token-0123456789,carol,uid-carol,"tenant-users,team-b"
dave-token-0123456789,dave,uid-dave,"tenant-users,team-b"
erin-token-0123456789,erin,uid-erin,"tenant-users"
frank-token-0123456789,frank,uid-frank,"tenant-users"
TOK

# Four distinct free ports: all sockets stay bound until every port is picked, so the kernel
# cannot hand out the same port twice.
read -r ETCD_PORT ETCD_PEER_PORT API_PORT KCM_PORT < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
')
ETCD_URL=http://127.0.0.1:$ETCD_PORT
API_URL=https://127.0.0.1:$API_PORT
ETCD_PID= APISERVER_PID= KCM_PID=

# ---------- kubeconfigs: certificates for admin/kcm/landlord, tokens for tenants ----------
kubeconfig() { # user auth-yaml-lines
	cat >"$D/kubeconfigs/$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: landlord-test
  cluster:
    server: $API_URL
    certificate-authority: $P/ca.crt
users:
- name: $1
  user:
$2
contexts:
- name: $1@landlord-test
  context: {cluster: landlord-test, user: $1}
current-context: $1@landlord-test
KC
}
for u in admin kcm landlord landlord-proxy; do
	kubeconfig "$u" "    client-certificate: $P/$u.crt
    client-key: $P/$u.key"
done
for u in $TENANTS; do
	kubeconfig "$u" "    token: $u-token-0123456789"
done

write_env() {
	cat >"$D/env.tmp" <<ENV
# written by tests/cluster/start.sh; source it
STATE_DIR=$D
BIN_DIR=$BIN_DIR
K8S_VERSION=$K8S_VERSION
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
ETCD_URL=$ETCD_URL
API_PORT=$API_PORT
API_URL=$API_URL
KCM_PORT=$KCM_PORT
KUBECONFIG=$D/kubeconfigs/admin.kubeconfig
KUBECONFIG_DIR=$D/kubeconfigs
PKI_DIR=$P
CA=$P/ca.crt
ETCD_PID=$ETCD_PID
APISERVER_PID=$APISERVER_PID
KCM_PID=$KCM_PID
ENV
	mv "$D/env.tmp" "$D/env"
}
# On any failure, stop what this run started.
trap 'rc=$?; if (( rc != 0 )); then echo "start.sh: failed; logs in $D/logs" >&2; "$here/stop.sh" "$D" || true; fi' EXIT

wait_for() { # seconds pid description cmd...
	local end=$((SECONDS + $1)) pid=$2 what=$3
	shift 3
	until "$@" >/dev/null 2>&1; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "start.sh: $what exited; see $D/logs" >&2
			return 1
		fi
		if ((SECONDS >= end)); then
			echo "start.sh: timeout waiting for $what" >&2
			return 1
		fi
		sleep 0.1
	done
}
admin_curl() {
	curl -fsS --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" "$@"
}

# ---------- etcd (fresh data each run) ----------
rm -rf "$D/etcd"
setsid "$BIN_DIR/etcd" --name landlord-test --data-dir "$D/etcd" \
	--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster "landlord-test=http://127.0.0.1:$ETCD_PEER_PORT" \
	--unsafe-no-fsync=true --auto-compaction-retention=0 --quota-backend-bytes=4294967296 \
	--log-level warn >"$D/logs/etcd.log" 2>&1 </dev/null &
ETCD_PID=$!
write_env
wait_for 30 "$ETCD_PID" etcd curl -fsS "$ETCD_URL/health"

# ---------- kube-apiserver (flags kept for restart-apiserver.sh) ----------
cat >"$D/apiserver.args" <<ARGS
--etcd-servers=$ETCD_URL
--bind-address=127.0.0.1
--advertise-address=127.0.0.1
--secure-port=$API_PORT
--tls-cert-file=$P/apiserver.crt
--tls-private-key-file=$P/apiserver.key
--client-ca-file=$P/ca.crt
--token-auth-file=$P/tokens.csv
--authorization-mode=RBAC
--service-account-issuer=https://kubernetes.default.svc.cluster.local
--service-account-key-file=$P/sa.pub
--service-account-signing-key-file=$P/sa.key
--service-cluster-ip-range=10.0.0.0/24
--endpoint-reconciler-type=none
--enable-aggregator-routing=true
--watch-cache-sizes=podtemplates#0
--allow-privileged=true
--profiling=${LANDLORD_APISERVER_PROFILING:-false}
--v=1
ARGS
start_apiserver() {
	local args
	mapfile -t args <"$D/apiserver.args"
	setsid "$BIN_DIR/kube-apiserver" "${args[@]}" >>"$D/logs/kube-apiserver.log" 2>&1 </dev/null &
	APISERVER_PID=$!
}
start_apiserver
write_env
# /readyz with the admin cert: anonymous callers get 403 until RBAC bootstrap finishes.
wait_for 120 "$APISERVER_PID" kube-apiserver admin_curl "$API_URL/readyz"
wait_for 30 "$APISERVER_PID" kube-apiserver admin_curl "$API_URL/api/v1/namespaces/default"

# ---------- kube-controller-manager ----------
# The flags go to STATE_DIR/kcm.args, one a line, so that kcm.sh can stop and start it again
# (with another client QPS, for the quota benchmark). Deployments, ReplicaSets, StatefulSets,
# Jobs and CronJobs make pods, which stay Pending (no kubelet runs here; the template roll-up
# test marks some Running) and count in quotas; the HPA controller reports on its targets
# every 3 s (the hibernation tests: an HPA whose target sleeps at 0 replicas).
KCFG=$D/kubeconfigs/kcm.kubeconfig
printf '%s\n' \
	--kubeconfig="$KCFG" --authentication-kubeconfig="$KCFG" --authorization-kubeconfig="$KCFG" \
	--controllers=namespace-controller,garbage-collector-controller,clusterrole-aggregation-controller,resourcequota-controller,serviceaccount-controller,serviceaccount-token-controller,root-ca-cert-publisher,deployment-controller,replicaset-controller,statefulset-controller,job-controller,cronjob-controller,horizontal-pod-autoscaler-controller \
	--service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
	--use-service-account-credentials=false --leader-elect=false --authentication-skip-lookup=true \
	--kube-api-qps=200 --kube-api-burst=400 --horizontal-pod-autoscaler-sync-period=3s \
	--bind-address=127.0.0.1 --secure-port="$KCM_PORT" --v=1 >"$D/kcm.args"
mapfile -t kcm_args <"$D/kcm.args"
setsid "$BIN_DIR/kube-controller-manager" "${kcm_args[@]}" \
	>"$D/logs/kube-controller-manager.log" 2>&1 </dev/null &
KCM_PID=$!
write_env
wait_for 60 "$KCM_PID" kube-controller-manager curl -fsSk "https://127.0.0.1:$KCM_PORT/healthz"
# Built-in admin/edit/view stay empty until clusterrole-aggregation-controller fills them.
admin_has_rules() {
	admin_curl "$API_URL/apis/rbac.authorization.k8s.io/v1/clusterroles/admin" | grep -q '"verbs"'
}
wait_for 60 "$KCM_PID" "aggregated admin ClusterRole" admin_has_rules

t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
printf 'control plane ready in %d.%03ds: %s (env: %s/env)\n' $((ms / 1000)) $((ms % 1000)) "$API_URL" "$D"
