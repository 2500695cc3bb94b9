"""Smoke tests for the control-plane harness itself."""

import json

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kube import ignore_404


def test_admin_lists_namespaces(k8s_client):
    names = {ns.metadata.name for ns in k8s.CoreV1Api(k8s_client("admin")).list_namespace().items}
    assert {"default", "kube-system"} <= names


def test_tenant_cannot_list_namespaces(k8s_client, kubectl):
    with pytest.raises(ApiException) as exc:
        k8s.CoreV1Api(k8s_client("alice")).list_namespace()
    assert exc.value.status == 403
    r = kubectl("alice", "auth", "can-i", "list", "namespaces")
    assert (r.returncode, r.stdout.strip()) == (1, "no")


@pytest.mark.parametrize("user,groups", [
    ("alice", {"tenant-users", "team-a"}),
    ("carol", {"tenant-users", "team-b"}),
    ("erin", {"tenant-users"}),
    ("landlord", set()),
])
def test_identities(kubectl, user, groups):
    r = kubectl(user, "auth", "whoami", "-o", "json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)["status"]["userInfo"]
    expected = "system:serviceaccount:landlord-system:landlord" if user == "landlord" else user
    assert info["username"] == expected
    assert set(info["groups"]) == groups | {"system:authenticated"}


def test_admin_clusterrole_is_aggregated(k8s_client):
    rules = k8s.RbacAuthorizationV1Api(k8s_client("admin")).read_cluster_role("admin").rules
    assert rules and any("configmaps" in (r.resources or []) for r in rules)


def test_group_bound_to_edit_can_write_only_its_namespace(cluster, k8s_client, namespace):
    binding = k8s.V1RoleBinding(
        metadata=k8s.V1ObjectMeta(name="team-a-edit"),
        role_ref=k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole",
                               name="edit"),
        subjects=[k8s.RbacV1Subject(api_group="rbac.authorization.k8s.io", kind="Group",
                                    name="team-a")])
    k8s.RbacAuthorizationV1Api(k8s_client("admin")).create_namespaced_role_binding(
        namespace, binding)
    cm = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="from-bob"), data={"k": "v"})
    # RBAC bindings reach the authorizer's informer asynchronously.
    cluster.wait_for(lambda: _try_create_configmap(k8s_client("bob"), namespace, cm),
                     what="bob's edit binding to take effect")
    with pytest.raises(ApiException) as exc:
        k8s.CoreV1Api(k8s_client("carol")).list_namespaced_config_map(namespace)
    assert exc.value.status == 403


def _try_create_configmap(api_client, namespace, cm):
    try:
        k8s.CoreV1Api(api_client).create_namespaced_config_map(namespace, cm)
        return True
    except ApiException as e:
        if e.status == 403:
            return False
        raise


def test_resourcequota_status_is_filled(cluster, k8s_client, namespace):
    core = k8s.CoreV1Api(k8s_client("admin"))
    # root-ca-cert-publisher puts kube-root-ca.crt into every namespace, and the quota counts it
    cluster.wait_for(lambda: ignore_404(core.read_namespaced_config_map, "kube-root-ca.crt",
                                        namespace), what="the root CA ConfigMap")
    hard = {"configmaps": "4", "pods": "2"}
    core.create_namespaced_resource_quota(namespace, k8s.V1ResourceQuota(
        metadata=k8s.V1ObjectMeta(name="q"), spec=k8s.V1ResourceQuotaSpec(hard=hard)))
    status = cluster.wait_for(
        lambda: (lambda s: s if s and s.hard == hard and s.used is not None else None)(
            core.read_namespaced_resource_quota("q", namespace).status),
        what="resourcequota-controller to fill status")
    assert status.used == {"configmaps": "1", "pods": "0"}
    for i in range(3):
        core.create_namespaced_config_map(namespace, k8s.V1ConfigMap(
            metadata=k8s.V1ObjectMeta(name=f"cm{i}")))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map(namespace, k8s.V1ConfigMap(
            metadata=k8s.V1ObjectMeta(name="one-too-many")))
    assert exc.value.status == 403 and "exceeded quota" in exc.value.body


def test_namespace_deletion_completes(cluster, k8s_client):
    name = cluster.create_namespace("e2e-del")
    core = k8s.CoreV1Api(k8s_client("admin"))
    core.create_namespaced_config_map(name, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="x")))
    cluster.delete_namespace(name, wait=True, timeout=60)
    assert not cluster.namespace_exists(name)


def test_etcd_compaction_expires_old_watch(cluster, k8s_client, namespace):
    core = k8s.CoreV1Api(k8s_client("admin"))
    rv = core.list_namespaced_pod_template(namespace).metadata.resource_version
    for i in range(2):
        core.create_namespaced_config_map(namespace, k8s.V1ConfigMap(
            metadata=k8s.V1ObjectMeta(name=f"bump{i}")))
    assert cluster.etcd_compact() > int(rv)
    # podtemplates have no watch cache, so this watch is served from etcd and must expire.
    body = core.list_namespaced_pod_template(namespace, watch=True, resource_version=rv,
                                             timeout_seconds=5, _preload_content=False)
    first = json.loads(body.readline())
    assert first["type"] == "ERROR" and first["object"]["code"] == 410


def test_restart_apiserver_keeps_data_and_port(cluster, k8s_client, namespace):
    old_pid = cluster.env["APISERVER_PID"]
    cluster.restart_apiserver()
    assert cluster.env["APISERVER_PID"] != old_pid
    assert int(cluster.env["API_PORT"]) == cluster.api_port
    assert cluster.namespace_exists(namespace)
