#!/usr/bin/env bash
# Build the pinned Helm (HELM_VERSION in versions.env) from the Go module proxy into a cache
# outside the repository, keyed by version, like build-k8s.sh does for the control plane:
#   tests/cluster/build-helm.sh      # ~/.cache/landlord/helm/<HELM_VERSION>/helm; no-op when cached
# LANDLORD_HELM_BIN overrides the directory. How it builds: go-tool.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.env"
source "$here/go-tool.sh"
OUT=${LANDLORD_HELM_BIN:-$HOME/.cache/landlord/helm/$HELM_VERSION}
if [[ -x $OUT/helm ]]; then
	echo "Helm $HELM_VERSION cached in $OUT"
	exit 0
fi
mod=helm.sh/helm/v4
v=$mod/internal/version
go_tool_build helm "$mod" "$HELM_VERSION" "$mod/cmd/helm" "$OUT" \
	"-s -w -buildid= -X $v.version=$HELM_VERSION -X $v.metadata= -X $v.gitTreeState=clean" \
	"about 3 minutes"
"$OUT.partial/helm" version --short | grep -qx "${HELM_VERSION}.*" ||
	{ echo "build-helm: the built helm does not report $HELM_VERSION" >&2; exit 1; }
go_tool_install helm "$OUT"
