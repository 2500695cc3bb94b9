#!/usr/bin/env bash
# Build the pinned OCI registry (REGISTRY_VERSION in versions.env: the distribution project's
# `registry`) from the Go module proxy into a cache outside the repository, keyed by version, like
# build-helm.sh does for Helm:
#   tests/cluster/build-registry.sh  # ~/.cache/landlord/registry/<REGISTRY_VERSION>/registry
# (a no-op when cached).
# LANDLORD_REGISTRY_BIN overrides the directory. github.com/distribution/distribution/v3 has no
# replace directives, so `go install module@version` builds exactly the versions its go.mod and
# go.sum pin (checked against the checksum database). Its go directive needs Go 1.26; an older
# local Go fetches that toolchain from the proxy (GOTOOLCHAIN=go<version>). The binary goes to
# OUT.partial first and is moved into place only once it runs, so an interrupted build leaves no
# half binary where the tests look.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.env"
OUT=${LANDLORD_REGISTRY_BIN:-$HOME/.cache/landlord/registry/$REGISTRY_VERSION}
if [[ -x $OUT/registry ]]; then
	echo "registry $REGISTRY_VERSION cached in $OUT"
	exit 0
fi
command -v go >/dev/null || { echo "build-registry: Go is required (see README)" >&2; exit 1; }
export CGO_ENABLED=0 GOFLAGS=
mod=github.com/distribution/distribution/v3
# The go directive of the registry's own go.mod; a local Go older than it is swapped for that
# toolchain.
need=$(GOTOOLCHAIN=local go mod download -json "$mod@$REGISTRY_VERSION" | python3 -c '
import json, re, sys
d = json.load(sys.stdin)
if d.get("Error"):
    sys.exit(d["Error"])
print(re.search(r"^go (\S+)", open(d["GoMod"]).read(), re.M).group(1))')
have=$(GOTOOLCHAIN=local go env GOVERSION)
have=${have#go}
if [[ $(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1) != "$need" ]]; then
	echo "build-registry: Go $have is older than the registry's go $need;" \
		"using toolchain go$need from the proxy"
	export GOTOOLCHAIN=go$need
else
	export GOTOOLCHAIN=local
fi
start=$SECONDS
echo "Building registry $REGISTRY_VERSION from the Go module proxy into $OUT" \
	"(about 2 minutes on 2 cores)."
rm -rf "$OUT.partial"
mkdir -p "$OUT.partial"
GOBIN="$OUT.partial" go install -trimpath -buildvcs=false \
	-ldflags="-s -w -buildid= -X $mod/version.version=$REGISTRY_VERSION" \
	"$mod/cmd/registry@$REGISTRY_VERSION"
"$OUT.partial/registry" --version | grep -q " ${REGISTRY_VERSION}\$" ||
	{ echo "build-registry: the built registry does not report $REGISTRY_VERSION" >&2; exit 1; }
rm -rf "$OUT" && mv "$OUT.partial" "$OUT"
echo "[build-registry] done in $((SECONDS - start))s: $OUT/registry"
