"""Two `landlord webhook` replicas behind the chart's Service, called by the real API server.

The chart is installed with the pinned Helm (as test_chart.py does) on a control plane of its
own, with `service.endpoints` listing two addresses of the test's network namespace (netns.py):
each replica serves the webhook from there, on one of them, and reaches the API server through
`netns.bridge_to_host()`. The replicas make the Secret, the CA and the `caBundle` themselves.
So this also covers the chart with landlord serving behind its Service.

Load: THREADS client threads as alice (an editor of tenant acme) creating Services (dry runs:
admitted through the webhook, nothing stored) in a tenant namespace, every answer recorded.

- a replica stopped gracefully mid-load (its address first removed from the Endpoints, as
  Kubernetes does for a terminating pod, then SIGTERM; or SIGTERM first and the Endpoints
  changed while it drains, which only the shutdown delay makes safe) loses no call;
- a replica killed (SIGKILL) loses only calls in flight to it: the failures are few, each a
  connection error to that replica, and afterwards every call succeeds;
- `landlord webhook` follows the LandlordConfig (privileged subjects, rule modes) with no
  controller running;
- a family in audit mode admits with a warning, and the Event appears (aggregated);
- maxNamespaces holds when twenty namespace creates race through the API server to both.
"""

import json
import signal
import threading
import time
import urllib.request
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from conftest import private_cluster, wait_for
from kube import grant_user
from netns import netns  # noqa: F401 (a fixture)
import procs
from procs import LANDLORD, Proc, parse_metrics
from test_chart import CHART, NS, RELEASE, WEBHOOK_PORT, helm, message  # noqa: F401 (helm)

THREADS = 6
SHUTDOWN_DELAY = "3s"
GROUP, VERSION = "landlord.dev", "v1alpha1"


class Replica:
    """One `landlord webhook` in the network namespace, on address ip."""

    def __init__(self, env, ip, name):
        self.ip = ip
        argv = ["ip", "netns", "exec", env.netns.name, LANDLORD, "webhook",
                "--kubeconfig", env.cluster.kubeconfig("landlord"),
                "--webhook-addr", f"{ip}:{WEBHOOK_PORT}", "--probe-addr", f"{ip}:0",
                "--shutdown-delay", SHUTDOWN_DELAY]
        self.proc = Proc(argv, env.dir / f"{name}-{uuid.uuid4().hex[:4]}.log")
        procs.STARTED.remove(self.proc)  # lives for the module, not one test: stopped here
        self.proc.wait_record("webhook listening")
        self.port = self.proc.wait_probe()
        self.proc.wait_record("informer caches synced")

    def get(self, path):
        try:
            with urllib.request.urlopen(f"http://{self.ip}:{self.port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def calls(self):
        """Admission reviews this replica answered at /validate."""
        status, text = self.get("/metrics")
        assert status == 200, text
        return sum(v for (n, lab), v in parse_metrics(text).items()
                   if n == "landlord_admission_requests_total"
                   and dict(lab).get("webhook") == "validate")

    def alive(self):
        return self.proc.popen.poll() is None


class Env:
    def __init__(self, cluster, netns, directory, ips):  # noqa: F811
        self.cluster, self.netns, self.dir, self.ips = cluster, netns, directory, ips
        self.admin = cluster.client("admin")
        self.core = k8s.CoreV1Api(self.admin)
        self.replicas = [Replica(self, ip, f"replica{i}") for i, ip in enumerate(ips)]

    def set_endpoints(self, ips):
        self.core.patch_namespaced_endpoints("landlord", NS, {"subsets": [{
            "addresses": [{"ip": ip} for ip in ips],
            "ports": [{"name": "https", "port": WEBHOOK_PORT, "protocol": "TCP"}]}]})

    def restart(self, i):
        if self.replicas[i].alive():
            self.replicas[i].proc.kill()
        self.replicas[i] = Replica(self, self.ips[i], f"replica{i}")
        return self.replicas[i]


@pytest.fixture(scope="module")
def env(tmp_path_factory, helm, netns):  # noqa: F811
    directory = tmp_path_factory.mktemp("ha")
    with private_cluster(tmp_path_factory.mktemp("ha-cluster")) as c:
        ips = [netns.ns_ip, netns.add_address()]
        netns.bridge_to_host(c.api_port, directory)
        helm("install", RELEASE, CHART, "-n", NS, "--create-namespace",
             "--set", f"service.endpoints={{{','.join(ips)}}}",
             "--set", "image.repository=registry.example/landlord", "--set", "image.tag=e2e",
             kubeconfig=c.kubeconfig("admin"))
        e = Env(c, netns, directory, ips)
        # Both replicas wrote the caBundle (or found it written): the webhook answers.
        yield e
        for r in e.replicas:
            if r.alive():
                r.proc.kill()


def tenant_namespace(admin):
    """A namespace of tenant "acme" where alice may edit, once landlord's quota is in force (the
    policy landlord-quota-in-force admits RoleBindings only then; retried, since the API server's
    policy reads the quota through a cache of its own)."""
    core = k8s.CoreV1Api(admin)
    name = f"acme-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name, "labels": {"landlord.dev/tenant": "acme"}}})
    core.create_namespaced_resource_quota(name, {"metadata": {"name": "landlord-quota"},
                                                 "spec": {"hard": {"pods": "10"}}})
    binding = {"metadata": {"name": "alice-edit"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "edit"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": "alice"}]}

    def bound():
        try:
            k8s.RbacAuthorizationV1Api(admin).create_namespaced_role_binding(name, binding)
            return True
        except ApiException as e:
            if e.status != 422:
                raise
            return False
    wait_for(bound, 30, interval=0.3, what="alice's RoleBinding admitted")
    return name


@pytest.fixture(scope="module")
def tenant_ns(env):
    """A namespace of tenant acme (a Tenant that refuses NodePort Services) where alice
    edits."""
    admin = env.admin
    k8s.CustomObjectsApi(admin).create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": "acme"},
        "spec": {"plan": "none", "services": {"nodePort": False}}})
    name = tenant_namespace(admin)
    alice = k8s.CoreV1Api(env.cluster.client("alice"))
    # The replicas' caches know the Tenant: a NodePort Service is refused by the rule.
    wait_for(lambda: "NodePort is not allowed" in str(create_service(alice, name, "NodePort")),
             30, what="the tenant rule served")
    return name


def service(kind="ClusterIP"):
    spec = {"type": kind, "ports": [{"port": 80}]}
    return {"metadata": {"generateName": "ha-"}, "spec": spec}


def create_service(api, ns, kind="ClusterIP", dry_run=True):
    """Create a Service; None when admitted, else the refusal's message."""
    try:
        api.create_namespaced_service(ns, service(kind), dry_run="All" if dry_run else None)
        return None
    except ApiException as e:
        return message(e) or f"{e.status} {e.reason}"
    except Exception as e:  # a connection error on the client's side
        return repr(e)


class Load:
    """THREADS threads creating Services as alice until stopped; results in order of answer."""

    def __init__(self, env, ns):
        self.results = []  # (ok, message)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.apis = [k8s.CoreV1Api(env.cluster.new_client("alice")) for _ in range(THREADS)]
        self.ns = ns
        self.threads = [threading.Thread(target=self.run, args=(api,), daemon=True)
                        for api in self.apis]

    def run(self, api):
        while not self.stopping.is_set():
            err = create_service(api, self.ns)
            with self.lock:
                self.results.append((err is None, err))

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for t in self.threads:
            t.join(30)

    def count(self):
        with self.lock:
            return len(self.results)

    def more(self, n, timeout=30):
        """Wait for n more answers."""
        target = self.count() + n
        wait_for(lambda: self.count() >= target, timeout, what=f"{n} more calls")

    def failures(self, start=0, end=None):
        with self.lock:
            return [m for ok, m in self.results[start:end] if not ok]


def both_serving(env, before):
    return all(r.calls() > b for r, b in zip(env.replicas, before))


@pytest.mark.parametrize("order", ["endpoints-first", "signal-first"])
def test_a_replica_stopped_gracefully_mid_load_loses_no_call(env, tenant_ns, order):
    """endpoints-first: what Kubernetes does for a terminating pod, out of the Endpoints and
    then SIGTERM. signal-first: the kubelet's SIGTERM may come first, and the Endpoints change
    only once the pod is not ready; calls the API server sends meanwhile (on new connections
    too) are still answered, through the shutdown delay."""
    a = env.replicas[0]
    b = env.replicas[1] if env.replicas[1].alive() else env.restart(1)
    env.set_endpoints(env.ips)
    before = [r.calls() for r in env.replicas]
    with Load(env, tenant_ns) as load:
        wait_for(lambda: both_serving(env, before), 30, what="both replicas serving the load")
        if order == "endpoints-first":
            env.set_endpoints([a.ip])
        b.proc.popen.send_signal(signal.SIGTERM)
        wait_for(lambda: b.get("/readyz")[0] == 503, 5, what="the stopping replica not ready")
        assert b.alive()  # still serving through the shutdown delay
        if order == "signal-first":
            # Draining, and still in the Endpoints: the API server keeps dialing it.
            b.proc.wait_record("webhook draining: not ready, each connection closed after its "
                               "answer", 10)
            load.more(4 * THREADS)
            env.set_endpoints([a.ip])
        assert b.proc.popen.wait(30) == 0
        at_exit = load.count()
        load.more(5 * THREADS)  # the load goes on, on the other replica
    made = load.count()
    failures = load.failures()
    print(f"graceful stop ({order}): {made} calls, {len(failures)} failed ({at_exit} by the "
          "exit)")
    assert not failures, failures[:5]
    assert b.proc.find("webhook stopped accepting; every request in flight answered"), \
        b.proc.log_path.read_text()[-3000:]


def connection_error_to(msg, ip, other_ip):
    """A failure to reach the webhook (not a denial) that names no other replica."""
    reached = 'failed calling webhook' in msg
    connection = any(s in msg for s in (ip, "EOF", "connection reset", "connection refused",
                                        "broken pipe"))
    return reached and connection and other_ip not in msg


def test_a_killed_replica_loses_only_calls_in_flight(env, tenant_ns):
    a = env.replicas[0]
    b = env.restart(1)
    env.set_endpoints([a.ip, b.ip])
    before = [r.calls() for r in env.replicas]
    try:
        with Load(env, tenant_ns) as load:
            wait_for(lambda: both_serving(env, before), 30, what="both replicas serving the load")
            killed_at = load.count()
            b.proc.kill()
            # Kubernetes drops a dead pod from the Endpoints (here at once).
            env.set_endpoints([a.ip])
            # Up to THREADS calls were in flight then, to either replica, still to be answered.
            moved_at = load.count() + THREADS

            # Afterwards every call succeeds: once 2 * THREADS calls in a row, all answered
            # after those in flight, have, a clean stretch.
            def settled():
                with load.lock:
                    tail = load.results[-2 * THREADS:]
                    fresh = len(load.results) - 2 * THREADS >= moved_at
                return fresh and all(ok for ok, _ in tail)
            wait_for(settled, 30, what="calls succeeding again")
            settled_at = load.count()
            load.more(40 * THREADS)
            after = load.failures(settled_at)
        lost = load.failures(killed_at, settled_at)
        print(f"SIGKILL: {load.count()} calls, {len(lost)} failed: {lost[:3]}")
        assert not after, after[:5]
        assert len(lost) <= 2 * THREADS, lost
        for msg in lost:
            assert connection_error_to(msg, b.ip, a.ip), msg
    finally:  # the tests after this one need both replicas
        env.restart(1)
        env.set_endpoints(env.ips)


def config(spec):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LandlordConfig",
            "metadata": {"name": "landlord"}, "spec": spec}


def put_config(env, spec):
    api = k8s.CustomObjectsApi(env.admin)
    try:
        old = api.get_cluster_custom_object(GROUP, VERSION, "landlordconfigs", "landlord")
        body = config(spec)
        body["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        api.replace_cluster_custom_object(GROUP, VERSION, "landlordconfigs", "landlord", body)
    except ApiException as e:
        if e.status != 404:
            raise
        api.create_cluster_custom_object(GROUP, VERSION, "landlordconfigs", config(spec))


def repeatedly(check, tries=2 * THREADS):
    return all(check() for _ in range(tries))


def put_config_everywhere(env, spec):
    """Change the LandlordConfig and wait until every replica has put it in force."""
    seen = [len(r.proc.find("webhook: LandlordConfig in force")) for r in env.replicas]
    put_config(env, spec)
    wait_for(lambda: all(len(r.proc.find("webhook: LandlordConfig in force")) > n
                         for r, n in zip(env.replicas, seen)), 30,
             what="every replica following the LandlordConfig")


def test_landlord_webhook_follows_the_landlordconfig(env, tenant_ns):
    alice = env.cluster.client("alice")

    def nodeport():
        return create_service(k8s.CoreV1Api(alice), tenant_ns, "NodePort")
    assert "NodePort is not allowed" in str(nodeport())
    put_config_everywhere(env, {"privileged": {"users": ["alice"]}})
    assert repeatedly(lambda: nodeport() is None)
    put_config_everywhere(env, {"privileged": {"users": ["bob"]}})
    assert repeatedly(lambda: "NodePort is not allowed" in str(nodeport()))


def test_audit_mode_admits_with_a_warning_and_an_event(env, tenant_ns):
    alice = env.cluster.client("alice")
    core = k8s.CoreV1Api(alice)
    put_config_everywhere(env, {"admission": {"modes": {"services": "audit"}}})

    def audited():
        try:
            _, _, headers = core.create_namespaced_service_with_http_info(
                tenant_ns, service("NodePort"), dry_run="All")
        except ApiException:
            return False
        return "audit: " in headers.get("Warning", "")
    wait_for(lambda: repeatedly(audited), 30, what="services audited")
    # Real creates (a dry run records no Event), five times the same Service.
    name = f"audited-{uuid.uuid4().hex[:6]}"
    body = service("NodePort")
    body["metadata"] = {"name": name}
    for _ in range(5):
        core.create_namespaced_service(tenant_ns, body)
        core.delete_namespaced_service(name, tenant_ns)

    def events():
        return [e for e in env.core.list_namespaced_event(tenant_ns).items
                if e.reason == "AdmissionAudited" and e.involved_object.name == name]
    # Five audited requests, aggregated (per replica).
    wait_for(lambda: sum(e.count or 0 for e in events()) == 5, 30,
             what="the audit Events counting five findings")
    for e in events():
        assert e.type == "Warning" and "NodePort is not allowed" in e.message, e
        assert e.involved_object.kind == "Service", e
    assert len(events()) <= len(env.replicas)
    put_config(env, {})


def test_max_namespaces_holds_under_20_concurrent_creates_on_two_replicas(env):
    """maxNamespaces 3, twenty `create namespace` calls at once by the tenant's owner through
    the API server, which calls the two replicas behind the Service: exactly three namespaces.
    No controller runs here, so the test grants what landlord's owners role would (create on
    namespaces, own on the Tenant). Which replica answers each call is the API server's choice
    of connection; test_self_service_webhook.py sends the reviews alternately to each."""
    env.set_endpoints(env.ips)
    for r in range(2):
        if not env.replicas[r].alive():
            env.restart(r)
    custom = k8s.CustomObjectsApi(env.admin)
    custom.create_cluster_custom_object(GROUP, VERSION, "plans", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Plan", "metadata": {"name": "three"},
        "spec": {"maxNamespaces": 3}})
    custom.create_cluster_custom_object(GROUP, VERSION, "tenants", {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant", "metadata": {"name": "initech"},
        "spec": {"plan": "three", "accessControl": {"owners": {"users": ["alice"]}}}})
    grant_user(env.admin, "e2e-initech-owner", [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create"]},
        {"apiGroups": [GROUP], "resources": ["tenants"], "resourceNames": ["initech"],
         "verbs": ["own"]}], "alice")
    wait_for(lambda: env.cluster.kubectl("alice", "auth", "can-i", "create", "namespaces")
             .stdout.strip() == "yes", 30, interval=0.3, what="alice may create namespaces")
    names = [f"initech-c{i}" for i in range(20)]
    before = sum(r.calls() for r in env.replicas)
    results, gate = {}, threading.Barrier(len(names))

    def create(name):
        api = k8s.CoreV1Api(env.cluster.new_client("alice"))
        gate.wait()
        try:
            api.create_namespace({"metadata": {"name": name}})
            results[name] = None
        except ApiException as e:
            results[name] = message(e)
    threads = [threading.Thread(target=create, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        made = sorted(n for n, m in results.items() if m is None)
        assert len(made) == 3, results
        for n, m in results.items():
            assert m is None or "maxNamespaces 3" in m, m
        labelled = env.core.list_namespace(label_selector="landlord.dev/tenant=initech").items
        assert sorted(n.metadata.name for n in labelled) == made  # labelled by /mutate
        assert sum(r.calls() for r in env.replicas) - before >= 20
    finally:
        for n in names:
            try:
                env.core.delete_namespace(n)
            except ApiException as e:
                if e.status != 404:
                    raise
