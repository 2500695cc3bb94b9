"""The shared helpers of the Helm end-to-end suites (test_helm_instances.py, test_helm_groups.py,
test_helm_sources.py, test_helm_recovery.py; the process scans of test_helm_pull.py and
test_helm_run.py; the TemplateInstance creation of test_template_instances.py): Templates with a
`helm` source, TemplateInstances created as a real user and waited on, their release rows and
failures, Helm's release records and landlord's ledger of a release, TemplateGroupInstances,
and the search of every process's arguments and environment for a secret.

Most helpers take the suites' `env`: a dict with the fixture `kit`, the `created` list of
cluster objects to remove, and, for TemplateInstances, the tenant namespace `ns`. No helper
asserts: the suites do.
"""

import contextlib
import json
import os
import pathlib
import socket
import threading
import time

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from charts import pinned
from kube import GROUP, VERSION, message

TI, TGI, TPL = "templateinstances", "templategroupinstances", "templates"
SYSTEM = "landlord-system"
TIMEOUT = 90
ANY_TENANT = {"matchExpressions": [{"key": "landlord.dev/tenant", "operator": "Exists"}]}


def absent(read, *args):
    """Whether read(*args) answers 404."""
    try:
        read(*args)
    except ApiException as e:
        return e.status == 404
    return False


def configmap(env, name, ns=None):
    """ConfigMap @name of @ns (env's namespace by default); None while there is none."""
    try:
        return env["kit"].core.read_namespaced_config_map(name, ns or env["ns"])
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def greeting(env, release, kind="hello"):
    """The greeting a test chart wrote in its ConfigMap <release>-<kind>; None while absent."""
    cm = configmap(env, f"{release}-{kind}")
    return None if cm is None else cm.data["greeting"]


# ---------- Templates ----------

def template_body(name, helm, manifests=None, parameters=None, instantiable=True):
    """A Template @name with the chart @helm (and @manifests, @parameters), instantiable in
    every tenant namespace unless @instantiable is false."""
    spec = {"resources": {"helm": helm}}
    if manifests:
        spec["resources"]["manifests"] = manifests
    if parameters:
        spec["parameters"] = parameters
    if instantiable:
        spec["instantiableIn"] = ANY_TENANT
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Template", "metadata": {"name": name},
            "spec": spec}


def template(env, helm, manifests=None, parameters=None, instantiable=True):
    """Create the Template of template_body(), retrying while the webhook answers 503 (landlord's
    caches loading); its name, in env["created"]."""
    kit = env["kit"]
    name = kit.name("tpl")
    body = template_body(name, helm, manifests, parameters, instantiable)

    def create():
        try:
            kit.custom.create_cluster_custom_object(GROUP, VERSION, TPL, body)
            return True
        except ApiException as e:
            if e.status != 503:
                raise
            return False
    kit.cluster.wait_for(create, TIMEOUT, what=f"Template {name} admitted")
    env["created"].append((TPL, name))
    return name


def patch_template(env, name, spec):
    env["kit"].custom.patch_cluster_custom_object(GROUP, VERSION, TPL, name, {"spec": spec})


# ---------- TemplateInstances ----------

def instance(env, user, tmpl, params=None, sync=True, name=None):
    """Create a TemplateInstance of @tmpl in env's namespace as @user (spec.sync left out when
    @sync is None); its name. Retried while the webhook, which learns of a new Template through
    its watch a moment after it is made, says the Template does not exist."""
    name = name or env["kit"].name("ti")
    spec = {"template": tmpl}
    if sync is not None:
        spec["sync"] = sync
    spec["parameters"] = [{"name": k, "value": v} for k, v in (params or {}).items()]
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TemplateInstance",
            "metadata": {"name": name}, "spec": spec}
    api = k8s.CustomObjectsApi(env["kit"].client(user))

    def create():
        try:
            return api.create_namespaced_custom_object(GROUP, VERSION, env["ns"], TI, body)
        except ApiException as e:
            if e.status == 403 and f'Template "{tmpl}" does not exist' in message(e):
                return None
            raise
    env["kit"].cluster.wait_for(create, 10, what=f"the webhook knows Template {tmpl}")
    return name


def delete_tis(env, timeout=TIMEOUT):
    """Delete every TemplateInstance of env's namespace and wait until they are gone, while the
    test's landlord (with helm) still runs: their finalizers uninstall their releases. Left to
    the cleanup's landlord, which runs no helm, an instance would outlive its namespace's
    deadline and its release would stay. Return: whether they all went in time."""
    kit, ns = env["kit"], env["ns"]
    names = [i["metadata"]["name"] for i in
             kit.custom.list_namespaced_custom_object(GROUP, VERSION, ns, TI)["items"]]
    for name in names:
        try:
            kit.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, TI, name)
        except ApiException as e:
            if e.status != 404:
                raise
    deadline = time.monotonic() + timeout
    while kit.custom.list_namespaced_custom_object(GROUP, VERSION, ns, TI)["items"]:
        if time.monotonic() > deadline:  # e.g. a tampered release: the cleanup's landlord
            print(f"instances of {ns} still there after {timeout}s")  # ends them
            return False
        time.sleep(0.2)
    return True


def get_ti(env, name):
    return env["kit"].custom.get_namespaced_custom_object(GROUP, VERSION, env["ns"], TI, name)


def wait_ti(env, name, predicate, what, timeout=TIMEOUT):
    """Wait until predicate(instance @name); the instance. Its status printed if it never is."""
    kit = env["kit"]
    try:
        kit.cluster.wait_for(lambda: predicate(get_ti(env, name)), timeout,
                             what=f"{what} ({name})\n{kit.log_tail()}")
    except BaseException:
        print(json.dumps(get_ti(env, name).get("status"), indent=1))
        raise
    return get_ti(env, name)


def ready_condition(obj):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == "Ready":
            return c
    return None


def release_row(obj):
    """The release of an instance's (first) row: {name, status, revision, chartVersion}."""
    rows = (obj.get("status") or {}).get("rows") or []
    return (rows[0].get("release") or {}) if rows else {}


def deployed(revision=None):
    """Predicate: Ready and the release deployed (at @revision, if given)."""
    def ok(obj):
        c, rel = ready_condition(obj), release_row(obj)
        return bool(c and c["status"] == "True" and rel.get("status") == "deployed" and
                    (revision is None or rel.get("revision") == revision))
    return ok


def failing(reason):
    """Predicate: the first failure in status has @reason."""
    def ok(obj):
        f = (obj.get("status") or {}).get("failing") or []
        return bool(f) and f[0]["reason"] == reason
    return ok


# ---------- a release's records and ledger ----------

def records(env, release, ns=None):
    """Helm's release records (Secrets) of @release in @ns (env's namespace by default),
    oldest revision first."""
    items = env["kit"].core.list_namespaced_secret(
        ns or env["ns"], label_selector=f"owner=helm,name={release}").items
    return sorted(items, key=lambda s: int(s.metadata.labels["version"]))


def ledger(env, release, ns=None):
    """landlord's ledger of @release in @ns (env's namespace by default): the spec of the
    HelmLedger <ns>.<release>; None while there is none."""
    try:
        return env["kit"].custom.get_cluster_custom_object(
            GROUP, VERSION, "helmledgers", f"{ns or env['ns']}.{release}")["spec"]
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def release_mark(env, release, ns=None):
    """The annotation landlord.dev/helm.<release> on @ns (env's namespace by default), by which
    the landlord-helm-records policy guards the release's records; None while there is none."""
    annotations = env["kit"].core.read_namespace(ns or env["ns"]).metadata.annotations or {}
    return annotations.get(f"landlord.dev/helm.{release}")


HELM_RECORDS_POLICY = (pathlib.Path(__file__).resolve().parents[2] / "deploy" / "policies" /
                       "helm-records.yaml")


@contextlib.contextmanager
def helm_records_policy(env, user, release):
    """deploy/policies/helm-records.yaml in force for the block (@user's dry-run write of a
    record of landlord's @release refused), removed afterwards."""
    kit, ns = env["kit"], env["ns"]
    probe = {"metadata": {"name": f"sh.helm.release.v1.{release}.v99",
                          "labels": {"owner": "helm", "name": release, "version": "99"}}}
    last = {}

    def refused():
        try:
            k8s.CoreV1Api(kit.client(user)).create_namespaced_secret(ns, probe, dry_run="All")
            last["answer"] = "created"
            return False
        except ApiException as e:
            last["answer"] = f"{e.status} {e.body}"
            return e.status == 403 and "landlord-helm-records" in e.body
    assert kit.cluster.kubectl("admin", "apply", "-f", HELM_RECORDS_POLICY).returncode == 0
    try:
        try:
            kit.cluster.wait_for(refused, TIMEOUT, what="the helm records policy in force")
        except BaseException:
            print("the probe's last answer:", last)
            raise
        yield
    finally:  # gone from the API server's view too, before another test applies it again
        kit.cluster.kubectl("admin", "delete", "--ignore-not-found", "-f", HELM_RECORDS_POLICY)
        kit.cluster.wait_for(lambda: not refused(), TIMEOUT, what="the helm records policy gone")


# ---------- TemplateGroupInstances ----------

def tgi(kit, tmpl, selector, sync=True):
    """Create a TemplateGroupInstance of @tmpl over the namespaces @selector selects (spec.sync
    left out when @sync is None); its name."""
    name = kit.name("tgi")
    spec = {"template": tmpl}
    if sync is not None:
        spec["sync"] = sync
    spec["selector"] = selector
    kit.custom.create_cluster_custom_object(GROUP, VERSION, TGI, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "TemplateGroupInstance",
        "metadata": {"name": name}, "spec": spec})
    return name


def get_tgi(kit, name):
    return kit.custom.get_cluster_custom_object(GROUP, VERSION, TGI, name)


def wait_tgi(kit, name, predicate, what, timeout=TIMEOUT):
    """Wait until predicate(group instance @name); the instance. Its status printed if never."""
    last = {}

    def ok():
        last["obj"] = get_tgi(kit, name)
        return predicate(last["obj"])
    try:
        kit.cluster.wait_for(ok, timeout, what=f"{name}: {what}")
    except BaseException:
        print((last.get("obj") or {}).get("status"), kit.log_tail())
        raise
    return last["obj"]


def tgi_rows(obj):
    """A group instance's rows by namespace."""
    return {r["namespace"]: r for r in (obj.get("status") or {}).get("rows") or []}


def all_deployed(namespaces):
    """Predicate: a group instance has a ready row, its release deployed, in each of
    @namespaces and no other."""
    def ok(obj):
        rs = tgi_rows(obj)
        return set(rs) == set(namespaces) and all(
            r["ready"] and r.get("release", {}).get("status") == "deployed" for r in rs.values())
    return ok


def delete_tgis(kit, names, timeout=TIMEOUT):
    """Delete the group instances @names (those already gone too) and wait until they are gone:
    their finalizers uninstall their releases, so landlord must still run."""
    for name in names:
        try:
            kit.custom.delete_cluster_custom_object(GROUP, VERSION, TGI, name)
        except ApiException as e:
            if e.status != 404:
                raise
    kit.cluster.wait_for(
        lambda: all(absent(get_tgi, kit, name) for name in names), timeout,
        what=f"{', '.join(names)} gone (uninstalled everywhere)\n{kit.log_tail()}")


# ---------- processes ----------

def helm_processes(parent=None):
    """{pid: argv} of the live (not zombie) processes of the pinned helm; only @parent's
    children if given."""
    helm, out = os.path.realpath(pinned("helm")), {}
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if os.readlink(p / "exe") != helm:
                continue
            state, ppid = (p / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            if state == "Z" or (parent is not None and int(ppid) != parent):
                continue
            out[int(p.name)] = (p / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            pass
    return out


def helm_running():
    """Whether any process of the pinned helm runs."""
    return bool(helm_processes())


def holders(needle, pids=None):
    """(pid, file, program) of the processes (all, or those of @pids) whose arguments or
    environment hold @needle. Never the needle itself."""
    pids = None if pids is None else {str(p) for p in pids}
    found = []
    for p in pathlib.Path("/proc").iterdir():
        if not p.name.isdigit() or (pids is not None and p.name not in pids):
            continue
        for what in ("cmdline", "environ"):
            try:
                if needle in (p / what).read_bytes():
                    found.append((p.name, what, (p / "comm").read_text().strip()))
            except OSError:
                pass
    return found


@pytest.fixture
def silent_server():
    """A TCP listener on 127.0.0.1 that accepts connections and never answers (a pull or login
    from it hangs until a time-out): its port."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held, stop = [], threading.Event()

    def accept():
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(5)
    for c in held:
        c.close()
    srv.close()
