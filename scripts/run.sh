#!/usr/bin/env bash
# `make run`: start landlord against a cluster.
#  - KUBECONFIG set: use that cluster (installs CRDs and RBAC there; needs cluster-admin).
#    The webhook serves on 127.0.0.1:9443 but is registered only if LANDLORD_WEBHOOK_URL says
#    where that cluster's API server reaches it (a fail-closed webhook pointing at a laptop
#    must not break a real cluster when the laptop sleeps).
#  - otherwise: start (or reuse) the local control plane in DIR and run landlord inside it
#    under its own least-privilege identity, with its admission webhook registered at
#    https://127.0.0.1:9443 (removed again when landlord stops with Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?state dir}
bin=build/release/landlord
# Helm (docs/helm.md): the pinned Helm 4 that `make deps` builds, and a Template of the sample
# chart (its path is on this machine, where landlord runs)
helm_bin="$HOME/.cache/landlord/helm/$(. tests/cluster/versions.env; echo "$HELM_VERSION")/helm"
helm_args=()
[[ -x $helm_bin ]] && helm_args=(--helm-binary "$helm_bin")
chart_template() {
	cat <<EOF
apiVersion: landlord.dev/v1alpha1
kind: Template
metadata: {name: greeting}
spec:
  parameters: [{name: WORDS, value: hello, validation: "^[a-z ]{1,40}\$"}]
  instantiableIn: {matchExpressions: [{key: landlord.dev/tenant, operator: Exists}]}
  resources:
    helm:
      path: $PWD/samples/charts/greeting
      values: "greeting: \${{WORDS}}"
EOF
}

if [[ -n ${KUBECONFIG:-} ]]; then
	kubectl=(kubectl)
	command -v kubectl >/dev/null || kubectl=("$HOME/.cache/landlord/k8s/$(. tests/cluster/versions.env; echo "$K8S_VERSION")/kubectl")
	echo "[run] using the cluster in KUBECONFIG=$KUBECONFIG"
	"${kubectl[@]}" apply -f deploy/namespace.yaml -f deploy/crds/ -f deploy/policies/
	# deploy/rbac.yaml with bind on every role the sample LandlordConfig maps
	scripts/render-rbac.py samples/landlordconfig.yaml | "${kubectl[@]}" apply -f -
	# kubectl wait errors (instead of waiting) while a new CRD has no conditions yet: retry.
	for _ in $(seq 1 60); do
		"${kubectl[@]}" wait --for condition=established --timeout=60s crd -l app.kubernetes.io/managed-by=landlord >/dev/null 2>&1 && break
		sleep 1
	done
	"${kubectl[@]}" apply -f samples/
	chart_template | "${kubectl[@]}" apply -f -
	exec "$bin" run --kubeconfig "$KUBECONFIG" --probe-addr 127.0.0.1:8081 "${helm_args[@]}"
fi

scripts/cluster-up.sh "$dir"
source "$dir/env"
# deploy/rbac.yaml (applied by cluster-up.sh) with bind on every role the sample LandlordConfig
# maps: landlord rejects a configuration naming a role it may not bind (docs/config.md)
scripts/render-rbac.py samples/landlordconfig.yaml | "$BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG" apply -f - >/dev/null
"$BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG" apply -f samples/ >/dev/null
chart_template | "$BIN_DIR/kubectl" --kubeconfig "$KUBECONFIG" apply -f - >/dev/null
cat <<MSG

landlord is starting against the local control plane ($API_URL).
In another terminal:

  export KUBECONFIG=$KUBECONFIG        # cluster admin
  export PATH=$BIN_DIR:\$PATH           # kubectl $(. tests/cluster/versions.env; echo "$K8S_VERSION"), matching the server
  kubectl get tnt                      # acme, globex, initech on the plans gold and silver
  kubectl get ns -L landlord.dev/tenant  # the namespaces they became
  kubectl describe tenant acme           # status conditions and Events
  kubectl get plans                      # tenants per plan

Act as a tenant user (alice owns acme, carol owns globex):

  kubectl --kubeconfig $KUBECONFIG_DIR/alice.kubeconfig -n acme-dev create configmap hello
  kubectl --kubeconfig $KUBECONFIG_DIR/alice.kubeconfig -n globex-dev get pods     # Forbidden
  kubectl --kubeconfig $KUBECONFIG_DIR/alice.kubeconfig get tenant acme            # her own Tenant
  kubectl -n acme-dev delete rolebinding landlord-owners-admin   # drift: landlord puts it back

landlord's admission webhook is registered at https://127.0.0.1:9443 (kubectl get
validatingwebhookconfigurations landlord); it judges tenant namespaces:

  kubectl --kubeconfig $KUBECONFIG_DIR/alice.kubeconfig -n acme-dev create rolebinding all \\
    --clusterrole=view --group=system:authenticated          # refused: members only
  kubectl --kubeconfig $KUBECONFIG_DIR/alice.kubeconfig create namespace acme-feature
                                   # self-service: labelled for acme and provisioned (gold: 10 at most)
  kubectl --kubeconfig $KUBECONFIG_DIR/alice.kubeconfig create namespace globex-mine  # refused: globex's

Templates (docs/templates.md): acme's owner stamps the sample Template into a namespace; it is
applied with her rights, never landlord's, and kept in sync:

  kubectl --kubeconfig $KUBECONFIG_DIR/alice.kubeconfig -n acme-dev apply -f - <<EOF
  apiVersion: landlord.dev/v1alpha1
  kind: TemplateInstance
  metadata: {name: settings}
  spec: {template: team-settings, sync: true, parameters: [{name: TEAM, value: shop}]}
  EOF
  kubectl -n acme-dev get ti,configmap/team-settings   # Ready; the ConfigMap it rendered

Helm charts (docs/helm.md; on when 'make deps' built the pinned helm): the Template "greeting"
carries a chart, installed by helm as acme's editor account, never as landlord:

  kubectl --kubeconfig $KUBECONFIG_DIR/alice.kubeconfig -n acme-dev apply -f - <<EOF
  apiVersion: landlord.dev/v1alpha1
  kind: TemplateInstance
  metadata: {name: hi}
  spec: {template: greeting, sync: true, parameters: [{name: WORDS, value: good morning}]}
  EOF
  kubectl -n acme-dev get ti hi -o jsonpath='{.status.rows[0].release}'   # deployed, revision 1
  kubectl -n acme-dev delete configmap greeting-greeting     # drift: helm puts it back

Hibernation (docs/hibernation.md): a ResourceSupervisor sleeps namespaces on a schedule; the
override sleeps acme-dev now, until the next scheduled wake, and deleting it wakes everything:

  kubectl -n acme-dev create deployment web --image=registry.k8s.io/pause:3.10 --replicas=2
  kubectl apply -f - <<EOF
  apiVersion: landlord.dev/v1alpha1
  kind: ResourceSupervisor
  metadata: {name: acme-nights}
  spec:
    namespaces: {names: [acme-dev]}
    schedule: {sleepSchedule: "0 20 * * *", wakeSchedule: "0 8 * * *", timezone: Europe/Berlin}
  EOF
  kubectl annotate rsup acme-nights landlord.dev/hibernation=sleep   # rewritten to sleep-until=...
  kubectl -n acme-dev get deploy web -o jsonpath='{.spec.replicas} {.metadata.annotations}'
  kubectl get rsup                              # state, next transition, namespaces
  kubectl delete rsup acme-nights               # web back at 2 replicas first

The tenant API proxy (docs/proxy.md) serves each tenant its own view of the API at
https://127.0.0.1:8444/tenants/<tenant>: short namespace names, nothing of other tenants:

  $bin kubeconfig --tenant acme --user alice > /tmp/alice-acme.kubeconfig
  kubectl --kubeconfig /tmp/alice-acme.kubeconfig get namespaces    # dev, build, prod, alice-sandbox
  kubectl --kubeconfig /tmp/alice-acme.kubeconfig -n dev create configmap hi
  kubectl -n acme-dev get configmap hi                               # upstream, as admin
  kubectl --kubeconfig /tmp/alice-acme.kubeconfig -n globex-dev get pods   # NotFound

Stop landlord with Ctrl-C (it removes its webhook configurations); stop the control plane with 'make cluster-down'.

MSG
exec "$bin" run --kubeconfig "$KUBECONFIG_DIR/landlord.kubeconfig" --probe-addr 127.0.0.1:8081 \
	--webhook-addr 127.0.0.1:9443 --webhook-url https://127.0.0.1:9443 \
	--proxy-kubeconfig "$KUBECONFIG_DIR/landlord-proxy.kubeconfig" "${helm_args[@]}"
