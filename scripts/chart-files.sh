#!/usr/bin/env bash
# The chart's copies of deploy/: deploy/chart/files/{crds,policies,rbac.yaml} are byte-for-byte
# deploy/crds, deploy/policies and deploy/rbac.yaml (Helm reads no file outside the chart, and
# symlinked ones make every helm command log a line). deploy/ is the source of truth.
#   scripts/chart-files.sh           # check (make check): fail, naming the files, when they differ
#   scripts/chart-files.sh --write   # copy deploy/ into the chart
# The check also lints and renders the chart with the pinned Helm when it is built
# (tests/cluster/build-helm.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
files=deploy/chart/files
if [[ ${1:-} == --write ]]; then
	rm -rf "$files/crds" "$files/policies"
	mkdir -p "$files"
	cp -r deploy/crds deploy/policies deploy/rbac.yaml "$files/"
	echo "chart-files: copied deploy/{crds,policies,rbac.yaml} into $files"
	exit 0
fi
if ! diff -r deploy/crds "$files/crds" >/dev/null || ! diff -r deploy/policies "$files/policies" >/dev/null ||
	! diff deploy/rbac.yaml "$files/rbac.yaml" >/dev/null; then
	echo "chart-files: $files differs from deploy/ (run scripts/chart-files.sh --write):" >&2
	diff -rq deploy/crds "$files/crds" >&2 || true
	diff -rq deploy/policies "$files/policies" >&2 || true
	diff -q deploy/rbac.yaml "$files/rbac.yaml" >&2 || true
	exit 1
fi
source tests/cluster/versions.env
helm=${LANDLORD_HELM_BIN:-$HOME/.cache/landlord/helm/$HELM_VERSION}/helm
if [[ -x $helm ]]; then
	"$helm" lint --quiet deploy/chart -n landlord-system >/dev/null ||
		{ "$helm" lint deploy/chart -n landlord-system >&2; exit 1; }
	"$helm" template landlord deploy/chart -n landlord-system --set 'service.endpoints={10.0.0.1}' >/dev/null
fi
