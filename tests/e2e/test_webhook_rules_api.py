"""The tenant rules that test_webhook_rules.py leaves out, through the real API server and the
webhook landlord registers with --webhook-url (issue 12, points 5, 7 and 8; the messages are
docs/admission-rules.md's): Ingress classes and hosts, HTTPRoute hostnames on the Gateway API's
real CRDs (pinned, tests/cluster/gateway-api-crds.sh), a host another tenant uses, a pod's image
changed after creation, ephemeral containers, pods a controller creates, pull policies, classes
and ServiceAccounts, Service types and externalIPs, Tenant and Plan objects, audit mode, RBAC's
own escalation check, a namespace landlord's cache has not seen yet, and the webhook down.

One landlord and two tenants serve the whole module, so that it stays fast: tenant A (owner
alice, editor bob; images from ghcr.io/acme, ingress class nginx, listed hosts and a regex) and
tenant B (owner carol; any host but wildcards). The last test kills landlord and starts it
again."""

import contextlib
import json
import signal

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kube import GROUP, RBAC_GROUP, VERSION, custom, ignore_404, invalid, refusal
from procs import WEBHOOK_CONFIG, detach, remove_registered_webhooks
from tenants import Kit, restricted_pod, tenant_body

REGISTRY = "ghcr.io/acme"
GW_GROUP, GW_VERSION = "gateway.networking.k8s.io", "v1"
GATEWAY_API = {"apiGroups": [GW_GROUP], "resources": ["httproutes", "gateways"],
              "verbs": ["create", "get", "list", "update", "patch", "delete"]}


class World:
    """The module's landlord, tenants and namespaces (the `world` fixture)."""

    def __init__(self, kit):
        self.kit = kit
        self.cluster = kit.cluster

    def start_landlord(self):
        """landlord run, owned by the module: not stopped after each test."""
        detach(self.kit.start(), self.cluster)

    def core(self, user):
        return k8s.CoreV1Api(self.cluster.client(user))

    def net(self, user):
        return k8s.NetworkingV1Api(self.cluster.client(user))

    def routes(self, user):
        return k8s.CustomObjectsApi(self.cluster.client(user))

    def pod(self, user, ns, name, image, dry_run="All", api=None):
        body = restricted_pod(name)
        body["spec"]["containers"][0]["image"] = image
        api = api or self.core(user)
        return api.create_namespaced_pod(ns, body, dry_run=dry_run)

    def webhook_answers(self):
        """landlord's webhook refuses A's disallowed image (its caches are loaded)."""
        return refusal(lambda: self.pod("alice", self.a_ns, "probe", "docker.io/x:1"))


@pytest.fixture(scope="module")
def world(installed, tmp_path_factory):
    with Kit(installed, tmp_path_factory.mktemp("rules-api")) as kit, classes(kit) as cls:
        w = World(kit)
        w.priority, w.runtime = cls
        plan = kit.plan(hard={"pods": "20", "services": "10"})
        w.a = a = kit.name("ta")
        kit.tenant(a, plan=plan, owners={"users": ["alice"]}, editors={"users": ["bob"]},
                   prefixed=["web", "gone"],
                   allowed={"registries": [REGISTRY], "ingressClasses": ["nginx"],
                            "hosts": {"names": [f"shop.{a}.test", f"*.apps.{a}.test"],
                                      "regex": rf"[a-z0-9-]+\.{a}\.example"},
                            "imagePullPolicies": ["IfNotPresent"],
                            "priorityClasses": ["", w.priority["ok"]],
                            "runtimeClasses": [w.runtime["ok"]]},
                   denied={"serviceAccounts": ["builder"]},
                   services={"loadBalancer": False, "externalName": False})
        w.b = b = kit.name("tb")
        kit.tenant(b, plan=plan, owners={"users": ["carol"]}, prefixed=["web"],
                   allowed={"hosts": {"denyWildcards": True}}, services={"externalIPs": True})
        w.a_ns, w.a_gone, w.b_ns = (kit.expect_namespace(n)
                                    for n in (f"{a}-web", f"{a}-gone", f"{b}-web"))
        kit.grant([GATEWAY_API], [{"apiGroup": RBAC_GROUP, "kind": "User", "name": u}
                                 for u in ("alice", "carol")], "e2e-routes-")
        w.start_landlord()
        kit.wait_ready(a, [w.a_ns, w.a_gone])
        kit.wait_ready(b, [w.b_ns])
        for ns, t, user in ((w.a_ns, a, "alice"), (w.a_gone, a, "alice"), (w.b_ns, b, "carol")):
            kit.wait_provisioned(ns, t)
            kit.wait_can_i(user, "create", "pods", ns)
        kit.wait_default_sa(w.a_ns)
        installed.wait_for(w.webhook_answers, 60, what="the webhook's caches loaded")
        try:
            yield w
        finally:
            if kit.landlord is None or kit.landlord.popen.poll() is not None:
                remove_registered_webhooks(installed)


@contextlib.contextmanager
def classes(kit):
    """A PriorityClass and a RuntimeClass tenant A may use ("ok") and one of each it may not
    ("bad"): the Priority and RuntimeClass admission plugins refuse a pod naming one that does
    not exist before any webhook sees it."""
    sched = k8s.SchedulingV1Api(kit.admin)
    node = k8s.NodeV1Api(kit.admin)
    priority = {k: kit.name(f"e2e-prio-{k}-") for k in ("ok", "bad")}
    runtime = {k: kit.name(f"e2e-rt-{k}-") for k in ("ok", "bad")}
    try:
        for name in priority.values():
            sched.create_priority_class({"metadata": {"name": name}, "value": 100})
        for name in runtime.values():
            node.create_runtime_class({"metadata": {"name": name}, "handler": "runc"})
        yield priority, runtime
    finally:
        for name in priority.values():
            ignore_404(sched.delete_priority_class, name)
        for name in runtime.values():
            ignore_404(node.delete_runtime_class, name)


# ---------- Ingress and HTTPRoute (family ingress) ----------

def ingress(name, hosts, cls="nginx"):
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    spec = {"rules": [{"host": h, "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": backend}]}} for h in hosts]}
    if cls is not None:
        spec["ingressClassName"] = cls
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name}, "spec": spec}


def create_ingress(w, user, ns, name, hosts, cls="nginx", dry_run="All"):
    return w.net(user).create_namespaced_ingress(ns, ingress(name, hosts, cls),
                                                 dry_run=dry_run)


def route(name, hostnames=None):
    spec = {"parentRefs": [{"name": "gw"}],
            "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}
    if hostnames is not None:
        spec["hostnames"] = hostnames
    return {"apiVersion": f"{GW_GROUP}/{GW_VERSION}", "kind": "HTTPRoute",
            "metadata": {"name": name}, "spec": spec}


def create_route(w, user, ns, name, hostnames=None, dry_run="All"):
    return w.routes(user).create_namespaced_custom_object(
        GW_GROUP, GW_VERSION, ns, "httproutes", route(name, hostnames), dry_run=dry_run)


def test_ingress_classes(world):
    w = world
    msg = refusal(lambda: create_ingress(w, "alice", w.a_ns, "web", [f"shop.{w.a}.test"],
                                         cls="traefik"))
    assert msg and f'ingress class "traefik" of Ingress "web" is not allowed for tenant ' \
                  f'"{w.a}" (allowed: nginx)' in msg, msg
    msg = refusal(lambda: create_ingress(w, "alice", w.a_ns, "web", [f"shop.{w.a}.test"],
                                         cls=None))
    assert msg and f'Ingress "web" without an ingress class is not allowed for tenant ' \
                  f'"{w.a}" (allowed: nginx)' in msg, msg
    assert create_ingress(w, "alice", w.a_ns, "web", [f"shop.{w.a}.test"]).metadata.name


def test_ingress_hosts_match_allowed_names_or_the_regex(world):
    w, a = world, world.a
    for host in (f"shop.{a}.test", f"*.apps.{a}.test", f"api.{a}.example"):
        assert create_ingress(w, "alice", w.a_ns, "web", [host]).metadata.name, host
    allowed = f'(allowed: shop.{a}.test, *.apps.{a}.test; hosts matching "[a-z0-9-]+'
    # a wildcard only when listed: "*.a.test" is not, and the regex does not match the '*'
    for host in ("shop.evil.test", f"a.b.{a}.example", f"*.{a}.test"):
        msg = refusal(lambda: create_ingress(w, "alice", w.a_ns, "web", [host]))
        assert msg and f'host "{host}" is not allowed for tenant "{a}" {allowed}' in msg, \
            (host, msg)
    # a rule without a host serves every host: refused while the tenant lists hosts
    msg = refusal(lambda: create_ingress(w, "alice", w.a_ns, "web", [None]))
    assert msg and f'a rule without a host serves every host, which tenant "{a}" may not' in msg


def test_wildcard_hosts_denied_by_the_tenant(world):
    w, b = world, world.b
    want = f'wildcard host "*.{b}.test" is not allowed for tenant "{b}" ' \
           f'(wildcard hosts are denied)'
    msg = refusal(lambda: create_ingress(w, "carol", w.b_ns, "web", [f"*.{b}.test"], cls=None))
    assert msg and want in msg, msg
    msg = refusal(lambda: create_route(w, "carol", w.b_ns, "r", [f"*.{b}.test"]))
    assert msg and want in msg, msg
    # B lists no hosts: any other host, and an Ingress without a class (no class list)
    assert create_ingress(w, "carol", w.b_ns, "web", [f"www.{b}.test"], cls=None).metadata.name
    assert create_route(w, "carol", w.b_ns, "r", [f"www.{b}.test"])["metadata"]["name"] == "r"


def test_httproute_hostnames(world):
    """The real Gateway API CRDs: an HTTPRoute's hostnames follow allowed.hosts like an
    Ingress's hosts; one without hostnames is admitted (it takes its Gateway listeners'). An
    HTTPRoute has no class, and landlord checks nothing of its parentRefs."""
    w, a = world, world.a
    ok = create_route(w, "alice", w.a_ns, "r",
                      [f"shop.{a}.test", f"*.apps.{a}.test", f"api.{a}.example"])
    assert ok["metadata"]["name"] == "r"
    assert create_route(w, "alice", w.a_ns, "r")["metadata"]["name"] == "r"
    msg = refusal(lambda: create_route(w, "alice", w.a_ns, "r", [f"shop.{a}.test",
                                                                 "shop.evil.test"]))
    assert msg and f'host "shop.evil.test" is not allowed for tenant "{a}" (allowed: ' \
                  f'shop.{a}.test, *.apps.{a}.test; hosts matching' in msg, msg
    assert 'admission webhook "tenant-objects.landlord.dev" denied the request' in msg, msg


def test_a_host_another_tenant_uses_is_refused(world):
    """A's Ingress and HTTPRoute (real objects) hold their hosts: B may not serve them, by
    Ingress or HTTPRoute, nor a host under A's wildcard; A itself may serve them again."""
    w, a, b = world, world.a, world.b
    create_ingress(w, "alice", w.a_ns, "shared", [f"shop.{a}.test"], dry_run=None)
    create_route(w, "alice", w.a_ns, "shared", [f"api.{a}.example", f"*.apps.{a}.test"],
                 dry_run=None)
    used = 'is already used by tenant "{}" (a host serves one tenant: choose another)'.format(a)

    def refused_to_b(call, want):
        msg = w.cluster.wait_for(lambda: refusal(call), 30, interval=0.2,
                                 what="landlord's cache to hold A's hosts")
        assert want in msg, msg
    refused_to_b(lambda: create_ingress(w, "carol", w.b_ns, "web", [f"shop.{a}.test"], None),
                 f'host "shop.{a}.test" {used}')
    refused_to_b(lambda: create_route(w, "carol", w.b_ns, "r", [f"shop.{a}.test"]),
                 f'host "shop.{a}.test" {used}')
    refused_to_b(lambda: create_ingress(w, "carol", w.b_ns, "web", [f"api.{a}.example"], None),
                 f'host "api.{a}.example" {used}')
    refused_to_b(lambda: create_route(w, "carol", w.b_ns, "r", [f"x.apps.{a}.test"]),
                 f'host "x.apps.{a}.test" overlaps "*.apps.{a}.test", a host of tenant "{a}"')
    # a tenant's own hosts never conflict
    assert create_ingress(w, "alice", w.a_ns, "again", [f"shop.{a}.test"]).metadata.name
    assert create_route(w, "alice", w.a_ns, "again", [f"api.{a}.example"])


def test_gateway_classes_and_listener_hosts(world):
    """docs/admission-rules.md: a Gateway's gatewayClassName is checked against
    allowed.ingressClasses and its listeners' hostnames against allowed.hosts."""
    w, a = world, world.a

    def gateway(cls, host):
        return w.routes("alice").create_namespaced_custom_object(
            GW_GROUP, GW_VERSION, w.a_ns, "gateways", {
                "apiVersion": f"{GW_GROUP}/{GW_VERSION}", "kind": "Gateway",
                "metadata": {"name": "gw"},
                "spec": {"gatewayClassName": cls, "listeners": [
                    {"name": "http", "port": 80, "protocol": "HTTP", "hostname": host}]}},
            dry_run="All")
    assert gateway("nginx", f"shop.{a}.test")["metadata"]["name"] == "gw"
    msg = refusal(lambda: gateway("istio", f"shop.{a}.test"))
    assert msg and f'gateway class "istio" of Gateway "gw" is not allowed for tenant "{a}" ' \
                   f'(allowed: nginx)' in msg, msg


# ---------- pods, whoever sends them (family pods) ----------

def not_allowed(image, tenant):
    return f'image "{image}" is not from a registry allowed for tenant "{tenant}" ' \
           f'(allowed: {REGISTRY})'


def debug_container(image):
    return {"name": "debug", "image": image,
            "securityContext": {"allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]}}}


@pytest.fixture(scope="module")
def running_pod(world):
    """A real pod of tenant A (no kubelet runs: it stays Pending, an API object)."""
    world.pod("alice", world.a_ns, "p", f"{REGISTRY}/app:1", dry_run=None)
    return "p"


def test_an_image_changed_on_an_existing_pod_is_refused(world, running_pod):
    w = world
    core = w.core("alice")

    def image(img):
        return core.patch_namespaced_pod(running_pod, w.a_ns, {"spec": {"containers": [
            {"name": "app", "image": img}]}}, dry_run="All")
    msg = refusal(lambda: image("docker.io/x:2"))
    assert msg and not_allowed("docker.io/x:2", w.a) in msg, msg
    assert 'admission webhook "pods.landlord.dev" denied the request' in msg
    assert image(f"{REGISTRY}/app:2").spec.containers[0].image == f"{REGISTRY}/app:2"


def test_an_ephemeral_container_is_checked(world, running_pod):
    """pods/ephemeralcontainers (kubectl debug); the test grants alice the subresource, which
    the admin role does not hold."""
    w = world
    w.kit.grant([{"apiGroups": [""], "resources": ["pods/ephemeralcontainers"],
                  "verbs": ["patch", "update"]}],
                [{"apiGroup": RBAC_GROUP, "kind": "User", "name": "alice"}], "e2e-debug-")
    w.kit.wait_can_i("alice", "patch", "pods/ephemeralcontainers", w.a_ns)
    core = w.core("alice")

    def debug(img):
        return core.patch_namespaced_pod_ephemeralcontainers(
            running_pod, w.a_ns, {"spec": {"ephemeralContainers": [debug_container(img)]}},
            dry_run="All")
    msg = refusal(lambda: debug("docker.io/nicolaka/netshoot"))
    assert msg and not_allowed("docker.io/nicolaka/netshoot", w.a) in msg, msg
    got = debug(f"{REGISTRY}/debug:1")
    assert [c.image for c in got.spec.ephemeral_containers] == [f"{REGISTRY}/debug:1"]


def test_a_pod_from_a_controllers_identity_is_checked(world):
    """The ReplicaSet controller's identity (an administrator impersonating it) creates a
    Deployment's pods: exempt from the other rules, not from the pod rules."""
    w = world
    sa = "system:serviceaccount:kube-system:replicaset-controller"
    api = k8s.CoreV1Api(w.cluster.new_client("admin", impersonate=sa))
    msg = refusal(lambda: w.pod(None, w.a_ns, "rs-p", "docker.io/x:1", api=api))
    assert msg and not_allowed("docker.io/x:1", w.a) in msg, msg
    assert w.pod(None, w.a_ns, "rs-p", f"{REGISTRY}/app:1", api=api).metadata.name == "rs-p"


def test_a_replication_controllers_pod_template_is_checked_at_apply_time(world):
    """docs/admission-rules.md lists ReplicationControllers among the pod templates checked at
    apply time (their pods are checked when created, whatever happens here)."""
    w = world

    def rc(image):
        pod = restricted_pod("p", labels={"app": "rc"})
        pod["spec"]["containers"][0]["image"] = image
        return w.core("alice").create_namespaced_replication_controller(w.a_ns, {
            "metadata": {"name": "rc"},
            "spec": {"selector": {"app": "rc"},
                     "template": {"metadata": pod["metadata"], "spec": pod["spec"]}}},
            dry_run="All")
    assert rc(f"{REGISTRY}/app:1").metadata.name == "rc"
    msg = refusal(lambda: rc("docker.io/x:1"))
    assert msg and not_allowed("docker.io/x:1", w.a) in msg, msg


def test_pull_policies_classes_and_service_accounts(world):
    """The pod rules beyond registries, each with a pod it admits and one it refuses (A allows
    IfNotPresent, the priority classes "" and ok, the runtime class ok, and denies the
    ServiceAccount builder)."""
    w, a = world, world.a
    prio, rt = w.priority, w.runtime
    ignore_404(w.core("admin").create_namespaced_service_account, w.a_ns,
               {"metadata": {"name": "builder"}})

    def pod(**spec):
        body = restricted_pod("pp")
        body["spec"]["containers"][0]["image"] = f"{REGISTRY}/app:1"
        policy = spec.pop("pull", None)
        if policy:
            body["spec"]["containers"][0]["imagePullPolicy"] = policy
        body["spec"].update(spec)
        return w.core("alice").create_namespaced_pod(w.a_ns, body, dry_run="All")
    cases = [
        (dict(pull="Always"), 'image pull policy "Always" of container "app" is not allowed '
                              f'for tenant "{a}" (allowed: IfNotPresent)'),
        (dict(priorityClassName=prio["bad"]),
         f'priority class "{prio["bad"]}" of a pod is not allowed for tenant "{a}" '
         f'(allowed: "" (none), {prio["ok"]})'),
        (dict(runtimeClassName=rt["bad"]),
         f'runtime class "{rt["bad"]}" of a pod is not allowed for tenant "{a}" '
         f'(allowed: {rt["ok"]})'),
        (dict(serviceAccountName="builder"),
         f'service account "builder" is denied to pods of tenant "{a}" (any other is '
         f'allowed; denied: builder)'),
    ]
    for spec, want in cases:
        msg = refusal(lambda: pod(**dict(spec)))
        assert msg and want in msg, (spec, msg)
    admitted = pod(pull="IfNotPresent", priorityClassName=prio["ok"],
                   runtimeClassName=rt["ok"], serviceAccountName="default")
    assert admitted.spec.priority_class_name == prio["ok"]


# ---------- Services (family services) ----------

def test_service_types_and_external_ips(world):
    """A refuses LoadBalancer and ExternalName (NodePort unset: allowed) and, like every tenant
    by default, externalIPs; B sets spec.services.externalIPs and restricts no type."""
    w, a = world, world.a

    def svc(user, ns, kind="ClusterIP", ips=None):
        spec = {"type": kind}
        if kind == "ExternalName":
            spec["externalName"] = "db.example.com"
        else:
            spec["ports"] = [{"port": 80}]
        if ips:
            spec["externalIPs"] = ips
        return w.core(user).create_namespaced_service(
            ns, {"metadata": {"name": "s"}, "spec": spec}, dry_run="All")
    for kind in ("LoadBalancer", "ExternalName"):
        msg = refusal(lambda: svc("alice", w.a_ns, kind))
        assert msg and f'Service "s" of type {kind} is not allowed for tenant "{a}" (allowed ' \
                       f'types: ClusterIP, NodePort)' in msg, msg
        assert svc("carol", w.b_ns, kind).spec.type == kind
    assert svc("alice", w.a_ns, "NodePort").spec.type == "NodePort"
    msg = refusal(lambda: svc("alice", w.a_ns, ips=["192.0.2.10"]))
    assert msg and f'Service "s" sets externalIPs "192.0.2.10", which tenant "{a}" may not ' \
                   f'use (allowed: none; an administrator allows them with ' \
                   f'spec.services.externalIPs)' in msg, msg
    assert svc("carol", w.b_ns, ips=["192.0.2.10"]).spec.external_i_ps == ["192.0.2.10"]


# ---------- Tenant and Plan objects (family tenants) ----------

@pytest.fixture(scope="module")
def operator(world):
    """frank, a platform operator who may manage Tenants and Plans but is no cluster
    administrator: administrators are exempt from the webhook (its match conditions)."""
    world.kit.grant([{"apiGroups": [GROUP], "resources": ["tenants", "plans"],
                      "verbs": ["create", "get", "list", "update", "patch", "delete"]}],
                    [{"apiGroup": RBAC_GROUP, "kind": "User", "name": "frank"}], "e2e-ops-")
    world.kit.wait_can_i("frank", "delete", "plans.landlord.dev", None)
    return "frank"


def tenant_as(w, user, name, dry_run="All", **kw):
    body = tenant_body(name, w.kit.plans[0], **kw)
    return custom(w.cluster, user).create_cluster_custom_object(GROUP, VERSION, "tenants", body,
                                                                dry_run=dry_run)


def test_tenant_names(world, operator):
    """The CRD's schema refuses an invalid name before any webhook sees it (validation runs
    before validating admission); landlord's own name rule is the second line, for a CRD older
    than its schema (the golden case tenant-denied-name)."""
    w = world
    for name, why in (("bad.name", "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"),
                      ("x" * 41, "Too long: may not be more than 40 bytes")):
        msg = invalid(lambda: tenant_as(w, operator, name))
        assert "metadata.name" in msg and why in msg, msg
    assert tenant_as(w, operator, "x" * 40)["metadata"]["name"] == "x" * 40


def test_a_namespace_claimed_by_two_tenants(world, operator):
    w = world
    t = w.kit.name("tc")
    msg = refusal(lambda: tenant_as(w, operator, t, unprefixed=[w.a_ns]))
    assert msg and f'namespace "{w.a_ns}" of tenant "{t}" is already claimed by tenant ' \
                  f'"{w.a}" (a namespace belongs to one tenant)' in msg, msg
    msg = refusal(lambda: tenant_as(w, operator, t, prefixed=["tools"],
                                    unprefixed=[f"{t}-tools"]))
    assert msg and f'namespace "{t}-tools" is claimed twice by tenant "{t}" (each namespace ' \
                  f'name may come from one entry only)' in msg, msg
    ok = tenant_as(w, operator, t, prefixed=["web"], unprefixed=[f"{t}-free"])
    assert ok["metadata"]["name"] == t


def test_a_without_prefix_name_already_taken(world, operator):
    w = world
    t, taken = w.kit.name("tc"), w.kit.namespace()
    msg = w.cluster.wait_for(lambda: refusal(lambda: tenant_as(w, operator, t,
                                                               unprefixed=[taken])),
                             30, interval=0.2, what="landlord's cache to hold the namespace")
    assert f'spec.namespaces.withoutTenantPrefix of tenant "{t}" names namespace ' \
                  f'"{taken}", which already exists and is not the tenant\'s (allowed: a name ' \
                  f'not taken, or a namespace labelled landlord.dev/tenant={t})' in msg, msg
    assert tenant_as(w, operator, t, unprefixed=[f"{taken}-not"])["metadata"]["name"] == t


def test_a_released_namespace_is_taken_until_labelled_again(world, operator):
    """A withoutTenantPrefix namespace the tenant let go is released (no tenant label,
    landlord.dev/released-from): claiming it again is refused, as the controller would report
    it a collision, until an administrator labels it for the tenant (adoption)."""
    w, kit = world, world.kit
    t, n = kit.name("tr"), kit.name("legacy")
    kit.tenants.append(t)
    kit.expect_namespace(n)
    ops = custom(w.cluster, operator)
    ops.create_cluster_custom_object(GROUP, VERSION, "tenants",
                                     tenant_body(t, kit.plans[0], unprefixed=[n]))
    kit.wait_ready(t, [n])

    def claim(names):
        return ops.patch_cluster_custom_object(GROUP, VERSION, "tenants", t, {
            "spec": {"namespaces": {"withoutTenantPrefix": names}}})
    claim([])
    w.cluster.wait_for(lambda: (kit.read_namespace(n).metadata.annotations or {}).get(
        "landlord.dev/released-from") == t, 30, interval=0.2, what=f"{n} released")
    msg = w.cluster.wait_for(lambda: refusal(lambda: claim([n])), 30, interval=0.2,
                             what="landlord's cache to see the release")
    assert f'names namespace "{n}", which already exists and is not the tenant\'s' in msg, msg
    kit.core.patch_namespace(n, {"metadata": {"labels": {"landlord.dev/tenant": t}}})
    w.cluster.wait_for(lambda: refusal(lambda: claim([n])) is None, 30, interval=0.2,
                       what=f"{n}, labelled for {t}, claimed again")
    kit.wait_ready(t, [n])


def test_a_host_policy_that_does_not_compile(world, operator):
    w = world
    t = w.kit.name("tc")
    msg = refusal(lambda: tenant_as(w, operator, t, allowed={"hosts": {"regex": "[a-z"}}))
    assert msg and f'spec.allowed.hosts of tenant "{t}" is not valid: "allowed.hosts.regex: ' \
                   f'invalid regular expression at offset' in msg, msg
    ok = tenant_as(w, operator, t, allowed={"hosts": {"regex": "[a-z]+\\.example"}})
    assert ok["metadata"]["name"] == t


def test_a_missing_plan_is_a_warning(world, operator):
    """GitOps may apply a Tenant before its Plan: admitted, with an admission warning that
    kubectl prints; so is a registry entry that allows no image."""
    w = world
    t, plan = w.kit.name("tc"), w.kit.name("missing")

    def create(body):
        r = w.cluster.kubectl(operator, "create", "--dry-run=server", "-o", "name", "-f", "-",
                              input=json.dumps(body))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == f"tenant.{GROUP}/{t}", r.stdout
        return r.stderr
    warned = create(tenant_body(t, plan, allowed={"registries": ["nginx", REGISTRY]}))
    assert f'Warning: plan "{plan}" does not exist yet: the namespaces of tenant "{t}" are ' \
           f'created but nothing is granted in them until it does (PlanNotFound)' in warned, \
        warned
    assert 'Warning: spec.allowed.registries entry "nginx" allows no image: an allowed ' \
           'registry starts with a host' in warned, warned
    assert "Warning" not in create(tenant_body(t, w.kit.plans[0])), "no warning expected"


def test_a_plan_in_use_cannot_be_deleted(world, operator):
    w = world
    plan = w.kit.plan()
    t = w.kit.name("tc")
    w.kit.tenants.append(t)
    custom(w.cluster, operator).create_cluster_custom_object(
        GROUP, VERSION, "tenants", tenant_body(t, plan))
    ops = custom(w.cluster, operator)

    def delete_plan():
        return ops.delete_cluster_custom_object(GROUP, VERSION, "plans", plan)
    used = w.cluster.wait_for(lambda: refusal(delete_plan), 30, interval=0.2,
                              what="landlord's cache to hold the new Tenant")
    assert f'plan "{plan}" is still used by tenant "{t}" (allowed: deleting a plan no ' \
           f'tenant names; move its tenants first)' in used, used
    # administrators are exempt: the configurations' match conditions never send their requests
    custom(w.cluster).delete_cluster_custom_object(GROUP, VERSION, "plans", plan, dry_run="All")

    ops.delete_cluster_custom_object(GROUP, VERSION, "tenants", t)
    w.cluster.wait_for(lambda: w.kit.get_tenant(t) is None, 30, interval=0.2,
                       what=f"tenant {t} gone")

    def deleted():
        if refusal(delete_plan):  # the cache may still hold the Tenant for a moment
            return False
        return w.kit.get_plan(plan) is None
    w.cluster.wait_for(deleted, 30, interval=0.2, what=f"plan {plan} deleted")


# ---------- RBAC's own escalation check ----------

def test_rbac_escalation_check_still_holds(world):
    """landlord only adds refusals: binding a member (bob) to a role the requester does not
    hold is refused by RBAC itself, before the webhook. bob, an editor, gets create on
    RoleBindings here (edit has none), so that the escalation check is what refuses him."""
    w = world
    rbac = k8s.RbacAuthorizationV1Api(w.cluster.client("admin"))
    rbac.create_namespaced_role(w.a_ns, {"metadata": {"name": "e2e-bind"}, "rules": [{
        "apiGroups": [RBAC_GROUP], "resources": ["rolebindings"], "verbs": ["create"]}]})
    rbac.create_namespaced_role_binding(w.a_ns, {
        "metadata": {"name": "e2e-bind"},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "e2e-bind"},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": "bob"}]})
    try:
        w.kit.wait_can_i("bob", "create", "rolebindings", w.a_ns)

        def bind(user, role):
            return k8s.RbacAuthorizationV1Api(w.cluster.client(user)) \
                .create_namespaced_role_binding(w.a_ns, {
                    "metadata": {"name": "b"},
                    "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
                    "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": "bob"}]},
                    dry_run="All")
        for user, role in (("bob", "admin"), ("bob", "cluster-admin"),
                           ("alice", "cluster-admin")):
            with pytest.raises(ApiException) as e:
                bind(user, role)
            assert e.value.status == 403, e.value.body
            assert "is attempting to grant RBAC permissions not currently held" in e.value.body
            assert "landlord.dev" not in e.value.body, e.value.body
        # what each holds, each may bind, to a member: the webhook admits it
        assert bind("bob", "view").metadata.name == "b"
        assert bind("alice", "admin").metadata.name == "b"
    finally:
        ignore_404(rbac.delete_namespaced_role_binding, "e2e-bind", w.a_ns)
        ignore_404(rbac.delete_namespaced_role, "e2e-bind", w.a_ns)


# ---------- audit mode ----------

def test_a_family_in_audit_mode_admits_with_a_warning(world):
    """LandlordConfig spec.admission.modes.pods: audit admits A's disallowed image with the
    denial as a warning and counts it; the default (deny) is back when the entry goes."""
    w = world
    body = restricted_pod("audited")
    body["spec"]["containers"][0]["image"] = "docker.io/x:1"

    def create():
        return w.cluster.kubectl("alice", "-n", w.a_ns, "create", "--dry-run=server", "-o",
                                 "name", "-f", "-", input=json.dumps(body))
    before = w.kit.landlord.metric("landlord_admission_audit_total", family="pods")
    with w.kit.landlord_config({"admission": {"modes": {"pods": "audit"}}}):
        r = w.cluster.wait_for(lambda: (lambda r: r if r.returncode == 0 else None)(create()),
                               30, interval=0.2, what="the pods family in audit mode")
        assert f'Warning: audit: {not_allowed("docker.io/x:1", w.a)}' in r.stderr, r.stderr
        assert w.kit.landlord.metric("landlord_admission_audit_total", family="pods") > before
    w.cluster.wait_for(w.webhook_answers, 30, interval=0.2, what="the pods family denying again")


# ---------- a namespace landlord's cache does not know yet ----------

def test_a_namespace_the_cache_has_not_seen_yet_is_not_a_bypass(world):
    """The namespaces watch of landlord's cache paused (test hook), an administrator makes a
    namespace for tenant A and lets alice edit there. The API server sends her pod (the
    namespace carries the tenant label); landlord, not knowing the namespace yet, refuses it
    with 503 to be retried rather than judge it as no tenant's and admit it. Once the cache
    catches up, the rules judge it."""
    w, kit = world, world.kit
    proc = kit.landlord
    ns = kit.expect_namespace(kit.name(f"{w.a}-lag"))
    rbac = k8s.RbacAuthorizationV1Api(kit.admin)
    status, body = proc.get("/debug/pause-watch?resource=namespaces&paused=true")
    assert status == 200, body
    try:
        kit.core.create_namespace({"metadata": {"name": ns,
                                                "labels": {"landlord.dev/tenant": w.a}}})
        rbac.create_namespaced_role_binding(ns, {
            "metadata": {"name": "e2e-alice-edit"},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": "alice"}]})
        kit.wait_can_i("alice", "create", "pods", ns)
        kit.wait_default_sa(ns)
        for image in ("docker.io/x:1", f"{REGISTRY}/app:1"):
            with pytest.raises(ApiException) as e:
                w.pod("alice", ns, "lag", image)
            msg = json.loads(e.value.body)["message"]
            assert e.value.status == 503, e.value.body
            assert f'namespace "{ns}" is not in landlord\'s caches yet (just created or ' \
                   f'labelled for a tenant): try again in a moment' in msg, msg
    finally:
        status, body = proc.get("/debug/pause-watch?resource=namespaces&paused=false")
        assert status == 200, body
    msg = w.cluster.wait_for(lambda: refusal(lambda: w.pod("alice", ns, "lag", "docker.io/x:1")),
                             30, interval=0.2, what="the cache to know the namespace")
    assert not_allowed("docker.io/x:1", w.a) in msg, msg
    assert w.pod("alice", ns, "lag", f"{REGISTRY}/app:1").metadata.name == "lag"


# ---------- the webhook down (last: it kills landlord and starts it again) ----------

def failed_closed(call):
    with pytest.raises(ApiException) as e:
        call()
    assert "failed calling webhook" in e.value.body, e.value.body


def test_the_webhook_down(world, running_pod):
    """landlord killed (SIGKILL leaves its configurations registered): tenant namespaces fail
    closed for tenant users, but a pod's label-only update is not sent to the webhook (its
    match condition compares the images); kube-system and a namespace of no tenant keep
    working for a user with rights there; deleting a tenant namespace completes (the namespace
    controller of kube-controller-manager finalizes it)."""
    w, kit = world, world.kit
    plain = kit.namespace()
    rbac = k8s.RbacAuthorizationV1Api(w.cluster.client("admin"))
    edit = {"metadata": {"name": "e2e-frank-edit"},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": "frank"}]}
    for ns in ("kube-system", plain):
        rbac.create_namespaced_role_binding(ns, edit)
    admin = w.core("admin")
    admin.create_namespaced_config_map(w.a_gone, {"metadata": {"name": "c"}})
    admin.create_namespaced_service(w.a_gone, service("s"))
    kit.wait_default_sa(w.a_gone)
    w.pod("alice", w.a_gone, "p", f"{REGISTRY}/app:1", dry_run=None)
    try:
        for ns in ("kube-system", plain):
            kit.wait_can_i("frank", "create", "services", ns)
        assert kit.landlord.stop(signal.SIGKILL) == -signal.SIGKILL
        adm = k8s.AdmissionregistrationV1Api(w.cluster.client("admin"))
        assert adm.read_validating_webhook_configuration(WEBHOOK_CONFIG)

        alice = w.core("alice")
        failed_closed(lambda: alice.create_namespaced_service(w.a_ns, service("down"),
                                                              dry_run="All"))
        failed_closed(lambda: alice.patch_namespaced_pod(running_pod, w.a_ns, {"spec": {
            "containers": [{"name": "app", "image": f"{REGISTRY}/app:3"}]}}))
        labelled = alice.patch_namespaced_pod(running_pod, w.a_ns,
                                              {"metadata": {"labels": {"down": "yes"}}})
        assert labelled.metadata.labels["down"] == "yes"

        frank = w.core("frank")
        for ns in ("kube-system", plain):
            frank.create_namespaced_service(ns, service("e2e-down"))
            frank.delete_namespaced_service("e2e-down", ns)

        admin.delete_namespace(w.a_gone)
        w.cluster.wait_for(lambda: not w.cluster.namespace_exists(w.a_gone), 60, interval=0.2,
                           what=f"tenant namespace {w.a_gone} deleted with the webhook down")
    finally:
        for ns in ("kube-system", plain):
            ignore_404(rbac.delete_namespaced_role_binding, "e2e-frank-edit", ns)
        if kit.landlord.popen.poll() is not None:
            w.start_landlord()
    w.cluster.wait_for(w.webhook_answers, 60, what="a landlord started again answering")


def service(name):
    return {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}
