"""The tenant rules, enforced by landlord's webhook as the real API server calls it over TLS:
landlord runs as in `make run` (it registers its configurations with --webhook-url and serves
the rules of docs/admission-rules.md from its informer caches). One allowed and one denied case
per rule exercised here, as the tenant's owner; the full set of decisions is the golden suite
(tests/unit/golden/admission)."""

import pytest
from kubernetes import client as k8s

from kube import RBAC_GROUP, refusal
from tenants import restricted_pod

REGISTRY = "ghcr.io/acme"


@pytest.fixture
def tenant_ns(kit):
    """Tenant with owner alice, editor bob, images only from ghcr.io/acme, storage class fast
    only, no NodePorts."""
    plan = kit.plan(hard={"pods": "10", "services": "5"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["bob"]},
                   prefixed=["dev"], allowed={"registries": [REGISTRY],
                                              "storageClasses": ["fast"]},
                   services={"nodePort": False})
    ns = kit.expect_namespace(f"{t}-dev")
    kit.start()
    kit.wait_ready(t, [ns])
    kit.wait_provisioned(ns, t)
    kit.wait_can_i("alice", "create", "pods", ns)
    kit.cluster.wait_for(lambda: refusal(lambda: pod_as(kit, "alice", ns, "docker.io/x:1")),
                         60, what="the webhook's caches synced")
    return t, ns


def pod_as(kit, user, ns, image):
    body = restricted_pod("p")
    body["spec"]["containers"][0]["image"] = image
    return k8s.CoreV1Api(kit.client(user)).create_namespaced_pod(ns, body, dry_run="All")


def test_pod_images_come_only_from_allowed_registries(kit, tenant_ns):
    t, ns = tenant_ns
    msg = refusal(lambda: pod_as(kit, "alice", ns, "docker.io/x:1"))
    assert f'image "docker.io/x:1" is not from a registry allowed for tenant "{t}"' in msg, msg
    assert REGISTRY in msg, msg
    assert pod_as(kit, "alice", ns, f"{REGISTRY}/app:1").metadata.name == "p"
    # a namespace of no tenant is not the webhook's business
    plain = kit.namespace()
    assert pod_as(kit, "admin", plain, "docker.io/x:1").metadata.name == "p"


def test_rolebindings_bind_only_the_tenants_members(kit, tenant_ns):
    _, ns = tenant_ns
    rbac = k8s.RbacAuthorizationV1Api(kit.client("alice"))

    def bind(kind, name):
        return rbac.create_namespaced_role_binding(ns, {
            "metadata": {"name": "b"},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": kind, "name": name}]}, dry_run="All")
    for kind, name in (("Group", "system:authenticated"), ("User", "frank")):
        msg = refusal(lambda: bind(kind, name))
        assert msg and name in msg, (kind, name, msg)
    assert bind("User", "bob").metadata.name == "b"


def test_services_follow_the_tenants_policy(kit, tenant_ns):
    _, ns = tenant_ns
    core = k8s.CoreV1Api(kit.client("alice"))

    def service(kind):
        return core.create_namespaced_service(ns, {
            "metadata": {"name": "s"},
            "spec": {"type": kind, "ports": [{"port": 80}], "selector": {"app": "x"}}},
            dry_run="All")
    msg = refusal(lambda: service("NodePort"))
    assert msg and "NodePort" in msg, msg
    assert service("ClusterIP").metadata.name == "s"


def test_a_cordoned_tenant_refuses_its_users_changes(kit, tenant_ns):
    """spec.cordoned: landlord labels each of the tenant's namespaces landlord.dev/cordoned, the
    webhook then refuses every create, update and delete by the tenant's users there; an
    administrator still may; uncordoned, the label goes and the users may again."""
    t, ns = tenant_ns
    core = k8s.CoreV1Api(kit.client("alice"))

    def configmap(name):
        return core.create_namespaced_config_map(ns, {"metadata": {"name": name}},
                                                 dry_run="All")
    assert configmap("before").metadata.name == "before"
    kit.patch_tenant(t, {"cordoned": True})
    kit.cluster.wait_for(lambda: refusal(lambda: configmap("during")), 60,
                         what="the cordon in force")
    assert f'tenant "{t}" is cordoned' in refusal(lambda: configmap("during"))
    assert kit.labels(ns).get("landlord.dev/cordoned") == "true"
    k8s.CoreV1Api(kit.client("admin")).create_namespaced_config_map(
        ns, {"metadata": {"name": "by-admin"}}, dry_run="All")
    kit.patch_tenant(t, {"cordoned": False})
    kit.cluster.wait_for(lambda: "landlord.dev/cordoned" not in kit.labels(ns), 60,
                         what="the cordon label removed")
    kit.cluster.wait_for(lambda: refusal(lambda: configmap("after")) is None, 60,
                         what="the cordon lifted")


def test_a_deployments_pod_template_is_checked_at_apply_time(kit, tenant_ns):
    t, ns = tenant_ns
    apps = k8s.AppsV1Api(kit.client("alice"))

    def deployment(image):
        pod = restricted_pod("p", labels={"app": "d"})
        pod["spec"]["containers"][0]["image"] = image
        return apps.create_namespaced_deployment(ns, {
            "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}},
                     "template": {"metadata": pod["metadata"], "spec": pod["spec"]}}},
            dry_run="All")
    msg = refusal(lambda: deployment("docker.io/x:1"))
    assert msg and f'is not from a registry allowed for tenant "{t}"' in msg, msg
    assert deployment(f"{REGISTRY}/app:1").metadata.name == "d"


def test_volume_claims_only_with_allowed_storage_classes(kit, tenant_ns):
    _, ns = tenant_ns
    core = k8s.CoreV1Api(kit.client("alice"))

    def claim(cls):
        return core.create_namespaced_persistent_volume_claim(ns, {
            "metadata": {"name": "c"},
            "spec": {"storageClassName": cls, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}, dry_run="All")
    msg = refusal(lambda: claim("slow"))
    assert msg and "slow" in msg and "fast" in msg, msg
    assert claim("fast").metadata.name == "c"
