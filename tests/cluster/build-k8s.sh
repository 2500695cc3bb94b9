#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager, kubectl and etcd from the Go module proxy into a
# cache outside the repository, keyed by version. Uses the committed wrapper modules in
# tests/cluster/k8s and tests/cluster/etcd; `--regenerate` rewrites them from k8s.io/kubernetes' go.mod.
#   tests/cluster/build-k8s.sh            # build (no-op when cached)
#   tests/cluster/build-k8s.sh --regenerate
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.env"
OUT=${LANDLORD_K8S_BIN:-$HOME/.cache/landlord/k8s/$K8S_VERSION}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

regenerate() {
  local gomod staging go_dir godebug
  gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(d.get("Error")) if d.get("Error") else print(d["GoMod"])')
  eval "$(go mod edit -json "$gomod" | python3 -c '
import json, sys
m = json.load(sys.stdin); req = m.get("Require") or []
print("go_dir=%s" % m["Go"])
print("godebug=\"%s\"" % " ".join("%s=%s" % (g["Key"], g["Value"]) for g in (m.get("Godebug") or [])))
print("staging=\"%s\"" % " ".join(r["Path"] for r in req if r["Version"] == "v0.0.0"))
print("etcd=%s" % next((r["Version"] for r in req if r["Path"] == "go.etcd.io/etcd/server/v3"), ""))
')"
  [[ $etcd == "$ETCD_VERSION" ]] || echo "note: k8s $K8S_VERSION lists etcd $etcd; versions.env says $ETCD_VERSION" >&2
  (cd "$here/k8s" && rm -f go.mod go.sum &&
    go mod init landlord.dev/tests/k8s >/dev/null 2>&1 && go mod edit -go="$go_dir" &&
    for kv in $godebug; do go mod edit -godebug="$kv"; done &&
    go mod edit -require="k8s.io/kubernetes@$K8S_VERSION" &&
    for m in $staging; do go mod edit -replace="$m=$m@v0.${K8S_VERSION#v1.}"; done &&
    go mod tidy)
  (cd "$here/etcd" && rm -f go.mod go.sum &&
    go mod init landlord.dev/tests/etcd >/dev/null 2>&1 &&
    go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go mod tidy)
}

[[ ${1:-} == --regenerate ]] && regenerate

if [[ -x $OUT/kube-apiserver && -x $OUT/kube-controller-manager && -x $OUT/kubectl && -x $OUT/etcd ]]; then
  echo "Kubernetes $K8S_VERSION binaries cached in $OUT"
  exit 0
fi
command -v go >/dev/null || { echo "build-k8s: Go is required (apt-get install golang or see README)" >&2; exit 1; }
mkdir -p "$OUT.partial"
start=$SECONDS
echo "Building Kubernetes $K8S_VERSION and etcd $ETCD_VERSION from source into $OUT."
echo "The first build takes about 5 minutes on 2 cores (plus module downloads); later runs reuse the cache."
minor=$(cut -d. -f2 <<<"$K8S_VERSION")
ldflags="-s -w -buildid="
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
for cmd in kube-apiserver kube-controller-manager kubectl; do
  echo "[build-k8s] $cmd ($((SECONDS - start))s elapsed)"
  (cd "$here/k8s" && go build -trimpath -buildvcs=false -tags=selinux,notest -ldflags="$ldflags" \
    -o "$OUT.partial/$cmd" "k8s.io/kubernetes/cmd/$cmd")
done
echo "[build-k8s] etcd ($((SECONDS - start))s elapsed)"
(cd "$here/etcd" && go build -trimpath -buildvcs=false -ldflags="-s -w" -o "$OUT.partial/etcd" go.etcd.io/etcd/server/v3)
rm -rf "$OUT" && mv "$OUT.partial" "$OUT"
echo "[build-k8s] done in $((SECONDS - start))s: $OUT"
