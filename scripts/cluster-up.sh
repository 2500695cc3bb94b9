#!/usr/bin/env bash
# Start (or reuse) the local control plane in DIR and install landlord's CRDs and RBAC into it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?state dir}
running() { [[ -f $dir/env ]] && (source "$dir/env"; kill -0 "$APISERVER_PID" 2>/dev/null); }
if running; then
	echo "[cluster] reusing the control plane in $dir"
else
	rm -rf "$dir"
	echo "[cluster] starting etcd, kube-apiserver and kube-controller-manager on 127.0.0.1"
	tests/cluster/start.sh "$dir"
fi
source "$dir/env"
kubectl=("$BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG")
"${kubectl[@]}" apply -f deploy/namespace.yaml -f deploy/crds/ -f deploy/rbac.yaml -f deploy/policies/ >/dev/null
# kubectl wait errors (instead of waiting) while a new CRD has no conditions yet: retry.
for _ in $(seq 1 60); do
	"${kubectl[@]}" wait --for condition=established --timeout=60s crd -l app.kubernetes.io/managed-by=landlord >/dev/null 2>&1 && break
	sleep 1
done
echo "[cluster] CRDs, RBAC and admission policies installed"
