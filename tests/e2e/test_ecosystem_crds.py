"""The pinned CRDs of KEDA, Argo CD and Argo Rollouts (tests/cluster/ecosystem-crds.sh, applied by
ecosystem.install_ecosystem_crds) install on the test control plane and serve what tests of
tenants using them rely on, read back from the API server as the cluster admin: an AppProject
keeps spec.syncWindows and spec.destinationServiceAccounts (the API server prunes fields a CRD's
schema does not know, and does prune here, so these fields surviving proves the pinned Argo CD
knows them), a ScaledObject keeps KEDA's paused-replicas annotation, and a Rollout answers on its
/scale subresource. No controller of theirs runs: only the API is tested."""

import pytest

from ecosystem import install_ecosystem_crds
from kube import custom, ignore_404

ARGO, KEDA, V1ALPHA1 = "argoproj.io", "keda.sh", "v1alpha1"

# The CRDs the ecosystem tests use, by set; each set may bring more.
WANTED = {"scaledobjects.keda.sh", "scaledjobs.keda.sh", "triggerauthentications.keda.sh",
          "clustertriggerauthentications.keda.sh", "applications.argoproj.io",
          "appprojects.argoproj.io", "applicationsets.argoproj.io", "rollouts.argoproj.io"}


@pytest.fixture(scope="module")
def crds(cluster):
    """The names of the CRDs installed (all three sets); they stay for the rest of the session,
    like the Gateway API's."""
    return install_ecosystem_crds(cluster)


@pytest.fixture
def stored(cluster, crds, namespace):
    """stored(group, plural, body): creates body in this test's namespace as the cluster admin
    and returns the object as the API server then serves it; deleted after the test."""
    api = custom(cluster)
    made = []

    def create(group, plural, body, **kw):
        name = body["metadata"]["name"]
        api.create_namespaced_custom_object(group, V1ALPHA1, namespace, plural, body, **kw)
        made.append((group, plural, name))
        return api.get_namespaced_custom_object(group, V1ALPHA1, namespace, plural, name)

    yield create
    for group, plural, name in made:
        ignore_404(api.delete_namespaced_custom_object, group, V1ALPHA1, namespace, plural, name)


def test_all_sets_established(crds):
    """Every CRD the ecosystem tests use is installed and established (install_ecosystem_crds
    waits for that), one apply of all three sets."""
    assert WANTED <= set(crds), f"missing: {sorted(WANTED - set(crds))}"


def test_appproject_keeps_sync_windows_and_destination_service_accounts(stored, namespace):
    """An AppProject with one sync window and one destination service account is stored with
    both as given, while a field the schema does not know is pruned: the pinned Argo CD's
    schema knows syncWindows (with syncOverrun) and destinationServiceAccounts."""
    windows = [{"kind": "deny", "schedule": "0 22 * * *", "duration": "8h", "timeZone": "UTC",
                "applications": ["*"], "manualSync": True, "syncOverrun": True}]
    accounts = [{"server": "https://kubernetes.default.svc", "namespace": namespace,
                 "defaultServiceAccount": "deployer"}]
    spec = {"sourceRepos": ["*"],
            "destinations": [{"server": "https://kubernetes.default.svc",
                              "namespace": namespace}],
            "syncWindows": windows, "destinationServiceAccounts": accounts,
            "notAField": "pruned"}
    got = stored(ARGO, "appprojects", {
        "apiVersion": f"{ARGO}/{V1ALPHA1}", "kind": "AppProject",
        "metadata": {"name": "team"}, "spec": spec}, field_validation="Ignore")
    assert "notAField" not in got["spec"], "the API server did not prune an unknown field"
    assert got["spec"].get("syncWindows") == windows
    assert got["spec"].get("destinationServiceAccounts") == accounts


def test_scaledobject_keeps_paused_replicas(stored):
    """A ScaledObject paused at zero replicas (KEDA's autoscaling.keda.sh/paused-replicas
    annotation) is stored with its annotation, target and trigger as given."""
    spec = {"scaleTargetRef": {"name": "web"}, "minReplicaCount": 0, "maxReplicaCount": 4,
            "triggers": [{"type": "cron", "metadata": {
                "timezone": "UTC", "start": "0 8 * * *", "end": "0 18 * * *",
                "desiredReplicas": "2"}}]}
    got = stored(KEDA, "scaledobjects", {
        "apiVersion": f"{KEDA}/{V1ALPHA1}", "kind": "ScaledObject",
        "metadata": {"name": "web", "annotations": {"autoscaling.keda.sh/paused-replicas": "0"}},
        "spec": spec})
    assert got["metadata"]["annotations"].get("autoscaling.keda.sh/paused-replicas") == "0"
    assert got["spec"] == spec


def test_rollout_scale_subresource(cluster, stored, namespace):
    """A Rollout with spec.replicas 2 answers GET .../rollouts/<name>/scale with replicas 2, and
    a replicas change through /scale (what an HPA or KEDA does) lands in its spec.replicas."""
    labels = {"app": "web"}
    got = stored(ARGO, "rollouts", {
        "apiVersion": f"{ARGO}/{V1ALPHA1}", "kind": "Rollout", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}},
                 "strategy": {"canary": {"steps": [{"setWeight": 50}]}}}})
    assert got["spec"]["replicas"] == 2
    api = custom(cluster)
    scale = api.get_namespaced_custom_object_scale(ARGO, V1ALPHA1, namespace, "rollouts", "web")
    assert (scale["kind"], scale["spec"]["replicas"]) == ("Scale", 2), scale
    scale["spec"]["replicas"] = 3
    api.replace_namespaced_custom_object_scale(ARGO, V1ALPHA1, namespace, "rollouts", "web", scale)
    got = api.get_namespaced_custom_object(ARGO, V1ALPHA1, namespace, "rollouts", "web")
    assert got["spec"]["replicas"] == 3
