#!/usr/bin/env bash
# Install everything landlord needs to build, run and test on Debian 12, then build the pinned
# Kubernetes control plane into ~/.cache/landlord/k8s/<version>, the pinned Helm into
# ~/.cache/landlord/helm/<version>, the pinned OCI registry (chart-source tests) into
# ~/.cache/landlord/registry/<version>, the pinned Gateway API CRDs into
# ~/.cache/landlord/gateway-api/<version> and the pinned CRDs of KEDA, Argo CD and Argo Rollouts
# into ~/.cache/landlord/ecosystem/<name>-<version>, and the stub kubelet the proxy's exec tests
# use into ~/.cache/landlord/stubkubelet/<version>-<hash> (once; later runs are no-ops).
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(build-essential cmake ninja-build pkg-config git curl openssl python3 python3-pip
	libjansson-dev libcurl4-openssl-dev libmicrohttpd-dev libgnutls28-dev libssl-dev libfyaml-dev
	libpcre2-dev libcmocka-dev libyajl-dev zlib1g-dev clang-14 libclang-rt-14-dev clang-format-14 valgrind
	tzdata)
missing=()
for p in "${debs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
	echo "[deps] installing Debian packages: ${missing[*]}"
	sudo_cmd=(); [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
	"${sudo_cmd[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null; then
	echo "[deps] Go >= 1.24 is needed to build the local Kubernetes control plane and Helm" >&2
	echo "       (Helm's go.mod needs Go 1.26; an older Go fetches that toolchain from the proxy)." >&2
	echo "       Debian 12's golang-go is too old; install Go from go.dev or a backport." >&2
	exit 1
fi

if ! python3 -c 'import kubernetes, pytest, bcrypt' >/dev/null 2>&1; then
	echo "[deps] installing Python test packages"
	python3 -m pip install -q -r tests/e2e/requirements.txt
fi
if ! command -v lizard >/dev/null || ! python3 -c 'import yaml' >/dev/null 2>&1; then
	echo "[deps] installing lizard (scripts/check-functions.sh) and PyYAML (scripts/render-rbac.py)"
	python3 -m pip install -q -r scripts/requirements.txt
fi

tests/cluster/build-k8s.sh
tests/cluster/build-helm.sh
tests/cluster/build-registry.sh
tests/cluster/build-stubkubelet.sh >/dev/null
tests/cluster/gateway-api-crds.sh >/dev/null
tests/cluster/ecosystem-crds.sh >/dev/null
