#!/usr/bin/env bash
# Build the pinned OCI registry (REGISTRY_VERSION in versions.env: the distribution project's
# `registry`) from the Go module proxy into a cache outside the repository, keyed by version, like
# build-helm.sh does for Helm:
#   tests/cluster/build-registry.sh  # ~/.cache/landlord/registry/<REGISTRY_VERSION>/registry
# (a no-op when cached). LANDLORD_REGISTRY_BIN overrides the directory. How it builds:
# go-tool.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.env"
source "$here/go-tool.sh"
OUT=${LANDLORD_REGISTRY_BIN:-$HOME/.cache/landlord/registry/$REGISTRY_VERSION}
if [[ -x $OUT/registry ]]; then
	echo "registry $REGISTRY_VERSION cached in $OUT"
	exit 0
fi
mod=github.com/distribution/distribution/v3
go_tool_build registry "$mod" "$REGISTRY_VERSION" "$mod/cmd/registry" "$OUT" \
	"-s -w -buildid= -X $mod/version.version=$REGISTRY_VERSION" "about 2 minutes"
"$OUT.partial/registry" --version | grep -q " ${REGISTRY_VERSION}\$" ||
	{ echo "build-registry: the built registry does not report $REGISTRY_VERSION" >&2; exit 1; }
go_tool_install registry "$OUT"
