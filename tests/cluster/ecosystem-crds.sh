#!/usr/bin/env bash
# The CRDs of KEDA, Argo CD and Argo Rollouts at the versions pinned in versions.env, taken from
# their Go modules through the Go module proxy into a cache outside the repository, keyed by
# version, like gateway-api-crds.sh does for the Gateway API; never committed:
#   tests/cluster/ecosystem-crds.sh [keda|argocd|rollouts]...   # none: all three
# prints the path of each CRD file, one a line. The first run of a set downloads its module
# (`go mod download`, verified against the checksum database) into
# ~/.cache/landlord/ecosystem/<name>-<version>/ (LANDLORD_ECOSYSTEM_DIR overrides the root),
# checks the module zip's SHA-256 against the pin in versions.env (a mismatch fails and removes
# the download), and copies only the CRD files out of that zip into crds/; the zip stays cached,
# the module tree that go extracts is removed. Later runs only print, offline.
#   keda      config/crd/bases/keda.sh_*.yaml (ScaledObject, ScaledJob, TriggerAuthentication,
#             ClusterTriggerAuthentication; the eventing.keda.sh CloudEventSources are left out,
#             and so are the validation tweaks config/crd/patches adds through kustomize)
#   argocd    manifests/crds/*-crd.yaml (Application, ApplicationSet, AppProject)
#   rollouts  manifests/crds/*-crd.yaml (Rollout, Experiment, AnalysisRun, AnalysisTemplate,
#             ClusterAnalysisTemplate)
# A module whose go directive is newer than the local Go is still fetched: `go mod download`
# downloads, verifies and extracts it before it reports that Go is too old to build it, and only
# YAML is read here. Used by `make deps` and by the e2e tests (tests/e2e/ecosystem.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/versions.env"
root=${LANDLORD_ECOSYSTEM_DIR:-$HOME/.cache/landlord/ecosystem}

die() {
	echo "ecosystem-crds: $*" >&2
	exit 1
}

# A field of the JSON object that `go mod download -json` wrote to file $2 (empty if absent).
json_field() {
	python3 -c '
import json, sys
try:
    print(json.load(open(sys.argv[2])).get(sys.argv[1], ""))
except ValueError:
    pass' "$1" "$2"
}

# Copies the members of zip $1 directly under folder $2 whose names match $3 into folder $4.
unzip_crds() {
	python3 - "$@" <<-'EOF'
		import fnmatch, os, sys, zipfile
		path, prefix, pattern, out = sys.argv[1:]
		os.makedirs(out)
		with zipfile.ZipFile(path) as z:
		    for name in z.namelist():
		        base = name[len(prefix):]
		        if name.startswith(prefix) and "/" not in base and fnmatch.fnmatch(base, pattern):
		            with open(os.path.join(out, base), "wb") as f:
		                f.write(z.read(name))
	EOF
}

# fetch NAME MODULE VERSION SHA256 FOLDER PATTERN MUST: prints the CRD files of one set in
# $root/NAME-VERSION/crds/, downloaded and checked first unless already there.
fetch() {
	local dir=$root/$1-$3
	[[ -d $dir/crds ]] || download "$@"
	local files=("$dir"/crds/*.yaml)
	((${#files[@]})) || die "no CRD files in $dir/crds"
	printf '%s\n' "${files[@]}"
}

# download NAME MODULE VERSION SHA256 FOLDER PATTERN MUST: fetches MODULE@VERSION, checks its
# zip against SHA256 and copies FOLDER/PATTERN out of it into crds/ (through crds.partial, so an
# interrupted run leaves no crds/). MUST is a file the set cannot do without: a layout change in
# a new version fails here, not in a test.
download() {
	local name=$1 mod=$2 version=$3 want=$4 folder=$5 pattern=$6 must=$7
	local dir=$root/$name-$version zip got err
	command -v go >/dev/null || die "Go is required (see README)"
	rm -rf "$dir"
	mkdir -p "$dir"
	# outside any module, with a module cache of its own that `rm -rf` can remove; the exit
	# status is not enough (see above): the reported zip, its sum and the pin decide
	(cd "$dir" && GOMODCACHE=$dir/mod GOFLAGS=-modcacherw GOTOOLCHAIN=local GO111MODULE=on \
		go mod download -json "$mod@$version") >"$dir/download.json" 2>"$dir/download.err" || true
	zip=$(json_field Zip "$dir/download.json")
	if [[ -z $zip || ! -f $zip || -z $(json_field Sum "$dir/download.json") ]]; then
		echo "ecosystem-crds: go mod download $mod@$version failed:" >&2
		cat "$dir/download.json" "$dir/download.err" >&2
		rm -rf "$dir"
		exit 1
	fi
	got=$(sha256sum "$zip")
	got=${got%% *}
	if [[ $got != "$want" ]]; then
		rm -rf "$dir"
		die "$mod@$version: module zip SHA-256 mismatch: expected $want (versions.env), got $got"
	fi
	err=$(json_field Error "$dir/download.json")
	[[ -z $err ]] || echo "[ecosystem-crds] note: $err; only its CRD files are read" >&2
	unzip_crds "$zip" "$mod@$version/$folder/" "$pattern" "$dir/crds.partial"
	[[ -f $dir/crds.partial/$must ]] ||
		{ rm -rf "$dir"; die "$mod@$version: no $folder/$must in the module zip"; }
	rm -rf "${dir:?}/mod/$mod@$version"
	mv "$dir/crds.partial" "$dir/crds"
	echo "[ecosystem-crds] $mod@$version cached in $dir ($(du -sh "$dir" | cut -f1))" >&2
}

(($#)) || set -- keda argocd rollouts
for which in "$@"; do
	case $which in
	keda | argocd | rollouts) ;;
	*) echo "usage: $0 [keda|argocd|rollouts]...  (none: all)" >&2; exit 2 ;;
	esac
done
shopt -s nullglob
for which in "$@"; do
	case $which in
	keda)
		fetch keda github.com/kedacore/keda/v2 "$KEDA_VERSION" "$KEDA_ZIP_SHA256" \
			config/crd/bases 'keda.sh_*.yaml' keda.sh_scaledobjects.yaml ;;
	argocd)
		fetch argocd github.com/argoproj/argo-cd/v3 "$ARGOCD_VERSION" "$ARGOCD_ZIP_SHA256" \
			manifests/crds '*-crd.yaml' appproject-crd.yaml ;;
	rollouts)
		fetch rollouts github.com/argoproj/argo-rollouts "$ARGO_ROLLOUTS_VERSION" \
			"$ARGO_ROLLOUTS_ZIP_SHA256" manifests/crds '*-crd.yaml' rollout-crd.yaml ;;
	esac
done
