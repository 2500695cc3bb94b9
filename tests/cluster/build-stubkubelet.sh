#!/usr/bin/env bash
# Build the stub kubelet of the e2e tests (tests/stubkubelet: exec, attach, port-forward and logs
# through the real kube-apiserver, on k8s.io/kubelet/pkg/cri/streaming) from the Go module proxy
# into a cache outside the repository, like build-helm.sh and build-registry.sh do:
#   tests/cluster/build-stubkubelet.sh   # ~/.cache/landlord/stubkubelet/<key>/stubkubelet
# A no-op when cached. The key is K8S_VERSION (versions.env; tests/stubkubelet/go.mod pins the
# matching k8s.io/* v0.X.Y) and a hash of tests/stubkubelet's sources, so an edit to the stub
# gets a new binary (and the build of the old sources is removed). LANDLORD_STUBKUBELET_BIN
# overrides the directory. Prints the binary's path on stdout, everything else on stderr.
#
# It builds with the flags and tags of build-k8s.sh (CGO_ENABLED=0, -trimpath, -buildvcs=false,
# -tags=selinux,notest) from the same module versions (tests/cluster/k8s/go.mod), so after
# build-k8s.sh every client-go/apimachinery package comes from the Go build cache and only the
# stub's own few packages compile.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../stubkubelet" && pwd)
source "$here/versions.env"
key=$K8S_VERSION-$(cd "$src" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)
OUT=${LANDLORD_STUBKUBELET_BIN:-$HOME/.cache/landlord/stubkubelet/$key}
if [[ -x $OUT/stubkubelet ]]; then
	echo "stub kubelet cached in $OUT" >&2
	echo "$OUT/stubkubelet"
	exit 0
fi
command -v go >/dev/null || { echo "build-stubkubelet: Go is required (see README)" >&2; exit 1; }
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
want=v0.${K8S_VERSION#v1.}
have=$(cd "$src" && go list -m -f '{{.Version}}' k8s.io/kubelet)
[[ $have == "$want" ]] || {
	echo "build-stubkubelet: tests/stubkubelet/go.mod pins k8s.io/kubelet $have, K8S_VERSION $K8S_VERSION" \
		"wants $want: update its k8s.io/* requirements (go get k8s.io/kubelet@$want ... && go mod tidy)" >&2
	exit 1
}
start=$SECONDS
echo "Building the stub kubelet ($K8S_VERSION) into $OUT (about 15 s after build-k8s.sh," \
	"about 4 minutes with an empty Go build cache, on 2 cores)." >&2
rm -rf "$OUT.partial"
mkdir -p "$OUT.partial"
(cd "$src" && go build -trimpath -buildvcs=false -tags=selinux,notest \
	-ldflags="-s -w -buildid= -X main.version=$K8S_VERSION" -o "$OUT.partial/stubkubelet" .) >&2
"$OUT.partial/stubkubelet" --version | grep -qx "stubkubelet $K8S_VERSION" ||
	{ echo "build-stubkubelet: the built stub does not report $K8S_VERSION" >&2; exit 1; }
rm -rf "$OUT" && mv "$OUT.partial" "$OUT"
# Builds of earlier sources are dead weight (about 54 MB each): keep only this one.
if [[ -z ${LANDLORD_STUBKUBELET_BIN:-} ]]; then
	for old in "$HOME/.cache/landlord/stubkubelet"/*; do
		[[ $old == "$OUT" ]] || rm -rf "$old"
	done
fi
echo "[build-stubkubelet] done in $((SECONDS - start))s: $OUT" >&2
echo "$OUT/stubkubelet"
