#!/usr/bin/env bash
# Build the pinned Helm (HELM_VERSION in versions.env) from the Go module proxy into a cache
# outside the repository, keyed by version, like build-k8s.sh does for the control plane:
#   tests/cluster/build-helm.sh      # ~/.cache/landlord/helm/<HELM_VERSION>/helm; no-op when cached
# LANDLORD_HELM_BIN overrides the directory. helm.sh/helm/v4 has no replace directives, so
# `go install module@version` builds exactly the versions its go.mod and go.sum pin (checked
# against the checksum database). Its go directive needs Go 1.26; an older local Go fetches that
# toolchain from the proxy (GOTOOLCHAIN=go<version>), a newer one builds it as it is.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.env"
OUT=${LANDLORD_HELM_BIN:-$HOME/.cache/landlord/helm/$HELM_VERSION}
if [[ -x $OUT/helm ]]; then
	echo "Helm $HELM_VERSION cached in $OUT"
	exit 0
fi
command -v go >/dev/null || { echo "build-helm: Go is required (see README)" >&2; exit 1; }
export CGO_ENABLED=0 GOFLAGS=
mod=helm.sh/helm/v4
# The go directive of Helm's own go.mod; a local Go older than it is swapped for that toolchain.
need=$(GOTOOLCHAIN=local go mod download -json "$mod@$HELM_VERSION" | python3 -c '
import json, re, sys
d = json.load(sys.stdin)
if d.get("Error"):
    sys.exit(d["Error"])
print(re.search(r"^go (\S+)", open(d["GoMod"]).read(), re.M).group(1))')
have=$(GOTOOLCHAIN=local go env GOVERSION)
have=${have#go}
if [[ $(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1) != "$need" ]]; then
	echo "build-helm: Go $have is older than Helm's go $need; using toolchain go$need from the proxy"
	export GOTOOLCHAIN=go$need
else
	export GOTOOLCHAIN=local
fi
start=$SECONDS
echo "Building Helm $HELM_VERSION from the Go module proxy into $OUT (about 3 minutes on 2 cores)."
rm -rf "$OUT.partial"
mkdir -p "$OUT.partial"
v=$mod/internal/version
GOBIN="$OUT.partial" go install -trimpath -buildvcs=false \
	-ldflags="-s -w -buildid= -X $v.version=$HELM_VERSION -X $v.metadata= -X $v.gitTreeState=clean" \
	"$mod/cmd/helm@$HELM_VERSION"
"$OUT.partial/helm" version --short | grep -qx "${HELM_VERSION}.*" ||
	{ echo "build-helm: the built helm does not report $HELM_VERSION" >&2; exit 1; }
rm -rf "$OUT" && mv "$OUT.partial" "$OUT"
echo "[build-helm] done in $((SECONDS - start))s: $OUT/helm"
