#!/usr/bin/env bash
# The Gateway API's standard-channel CRDs (GATEWAY_API_VERSION in versions.env), taken from the
# Go module sigs.k8s.io/gateway-api through the Go module proxy into a cache outside the
# repository, keyed by version, like build-k8s.sh does for the control plane; never committed:
#   tests/cluster/gateway-api-crds.sh   # prints the path of each CRD file, one a line
# The first run downloads the module (`go mod download`, verified against the checksum
# database) into ~/.cache/landlord/gateway-api/<version>/ (LANDLORD_GATEWAY_API_DIR overrides
# it); later runs only print. The channel's ValidatingAdmissionPolicy (safe-upgrades) is not a
# CRD and is left out. Used by `make deps` and by the e2e session (tests/e2e/conftest.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.env"
mod=sigs.k8s.io/gateway-api
cache=${LANDLORD_GATEWAY_API_DIR:-$HOME/.cache/landlord/gateway-api/$GATEWAY_API_VERSION}
dir=$cache/mod/$mod@$GATEWAY_API_VERSION/config/crd/standard
if [[ ! -f $dir/gateway.networking.k8s.io_httproutes.yaml ]]; then
	command -v go >/dev/null || { echo "gateway-api-crds: Go is required (see README)" >&2; exit 1; }
	mkdir -p "$cache"
	# outside any module, with a module cache of its own that `rm -rf` can remove
	(cd "$cache" && GOMODCACHE=$cache/mod GOFLAGS=-modcacherw GOTOOLCHAIN=local GO111MODULE=on \
		go mod download -json "$mod@$GATEWAY_API_VERSION") >"$cache/download.json" ||
		{ echo "gateway-api-crds: go mod download $mod@$GATEWAY_API_VERSION failed:" >&2
		  cat "$cache/download.json" >&2; exit 1; }
	echo "[gateway-api-crds] $mod@$GATEWAY_API_VERSION cached in $cache" >&2
fi
shopt -s nullglob
files=("$dir"/gateway.networking.k8s.io_*.yaml)
found=0
for f in "${files[@]}"; do
	[[ $f == *_vap_* ]] && continue
	echo "$f"
	found=1
done
((found)) || { echo "gateway-api-crds: no CRD files in $dir" >&2; exit 1; }
