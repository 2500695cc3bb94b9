"""Chart sources and attacks of Helm charts per tenant namespace (issue 14; docs/helm.md), end to
end on the real control plane with the pinned Helm 4, as the real users:

- TemplateInstances install charts from a chart repository the test serves on loopback (basic
  auth, TLS from a test CA: the credentials Secret holds username, password and ca.crt) and from
  the real OCI registry (TLS from a test CA, htpasswd; the chart pushed with `helm push`); a
  missing version is ChartNotFound with Helm's message, a wrong password fails with Helm's 401;
- while landlord's helm hangs (a chart repository that never answers; a pre-install hook Job that
  never completes, there being no kubelet), no process's arguments or environment hold the
  repository password or the run's ServiceAccount token;
- attacks, each refused with the API server's or the webhook's own message in status: an
  editor's chart with an image from a registry the tenant does not allow, a RoleBinding to
  ClusterRole admin, a ClusterRole; `${{X}}` in repoUrl (the Template refused, naming the field);
  an editor forging a release record so that the next upgrade, run as the owner account, would
  delete a RoleBinding the editor cannot delete (ReleaseTampered, no helm ran, the RoleBinding
  still there).
"""

import base64
import gzip
import json
import pathlib
import secrets
import time

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

import helm_env
import procs
from charts import CHARTS, ChartRepo, Helm, Registry, pinned
from helm_env import (SYSTEM, TPL, absent, delete_tis, failing, get_ti, greeting, helm_processes,
                      helm_records_policy, holders, instance, ledger, patch_template, records,
                      release_row, template, template_body)
from helm_env import silent_server  # noqa: F401 (a fixture of this module's tests)
from kube import GROUP, VERSION

TIMEOUT = 60
HELM_TIMEOUT = "12s"  # the runner's; helm's own --timeout is half of it (6 s)
KNOBS = CHARTS / "knobs"


# ---------- sources: packaged once, served for the whole module ----------

@pytest.fixture(scope="module")
def tgzs(tmp_path_factory):
    """hello packaged as 0.1.0 and as 0.2.0 (0.2.0 is only ever asked with a wrong password:
    the pull cache is keyed by source, not by credentials)."""
    d = tmp_path_factory.mktemp("packaged")
    helm = Helm(d / "helm")
    first = helm.package(CHARTS / "hello", d)
    second = pathlib.Path(helm("package", CHARTS / "hello", "-d", d, "--version", "0.2.0")
                          .stdout.split("saved it to: ")[1].strip())
    return [first, second]


@pytest.fixture(scope="module")
def registry(tgzs, tmp_path_factory):
    """The real OCI registry with hello 0.1.0 and 0.2.0 pushed to oci://<host>/charts/hello."""
    with Registry(tmp_path_factory.mktemp("registry")) as reg:
        pusher = Helm(tmp_path_factory.mktemp("pusher"))
        pusher.registry_login(reg)
        for tgz in tgzs:
            pusher.push(tgz, reg)
        yield reg


@pytest.fixture(scope="module")
def repo(tgzs, tmp_path_factory):
    """The chart repository on https://127.0.0.1 behind basic auth, with both versions."""
    d = tmp_path_factory.mktemp("chart-repo")
    with ChartRepo(d / "repo", tgzs, Helm(d / "helm"), tls=True) as r:
        yield r


# ---------- the tenant and landlord ----------

@pytest.fixture
def env(kit, created, tmp_path):
    """Tenant t (owner alice, editor bob, images from registry.k8s.io only) with namespace t-dev,
    a namespace `platform` for the repositories' credentials, and landlord with the pinned helm,
    a short --helm-timeout and its own TMPDIR (where its helm runs keep their files)."""
    plan = kit.plan(hard={"pods": "10"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, editors={"users": ["bob"]},
                   prefixed=["dev"], allowed={"registries": ["registry.k8s.io"]})
    kit.expect_namespace(f"{t}-dev")
    platform = kit.namespace(kit.name("platform"))
    tmp = tmp_path / "landlord-tmp"
    tmp.mkdir()
    kit.landlord = procs.start_controllers(
        kit.cluster, tmp_path, "--helm-binary", str(pinned("helm")), "--helm-timeout",
        HELM_TIMEOUT, name="landlord-helm-sources", env={"TMPDIR": str(tmp)})
    kit.wait_ready(t, [f"{t}-dev"])
    kit.wait_can_i("bob", "create", "templateinstances.landlord.dev", f"{t}-dev")
    kit.wait_can_i("alice", "create", "templateinstances.landlord.dev", f"{t}-dev")
    e = {"kit": kit, "t": t, "ns": f"{t}-dev", "platform": platform, "created": created,
         "tmp": tmp}
    yield e
    # a tampered release is never uninstalled: the cleanup's landlord ends its instance
    delete_tis(e, timeout=0 if e.get("tampered") else 30)


def credentials(env, username, password, ca_file=None):
    """A credentials Secret in the platform namespace: its secretRef."""
    name = env["kit"].name("creds")
    data = {"username": username, "password": password}
    if ca_file:
        data["ca.crt"] = pathlib.Path(ca_file).read_text()
    env["kit"].core.create_namespaced_secret(env["platform"], {
        "metadata": {"name": name}, "stringData": data})
    return {"secretRef": {"namespace": env["platform"], "name": name}}


def wait_ti(env, name, predicate, what, timeout=TIMEOUT):
    return helm_env.wait_ti(env, name, predicate, what, timeout)


def deployed(obj):
    return release_row(obj).get("status") == "deployed"


def failure(obj):
    return obj["status"]["failing"][0]


# ---------- 1. sources ----------

def test_charts_from_a_repository_and_an_oci_registry_with_credentials(env, repo, registry):
    """Both sources install as an editor's instances; a missing version is ChartNotFound with
    Helm's message; a wrong password fails with Helm's 401 (the repository's refusal)."""
    repo_creds = credentials(env, repo.username, repo.password, repo.ca_file)
    oci_creds = credentials(env, registry.username, registry.password, registry.ca_file)
    bad_repo = credentials(env, repo.username, "not-" + repo.password, repo.ca_file)
    bad_oci = credentials(env, registry.username, "not-" + registry.password, registry.ca_file)
    oci = registry.oci("charts/hello")

    def from_repo(release, version, creds, **values):
        return template(env, {"repoUrl": repo.url, "chart": "hello", "version": version,
                              "releaseName": release, "credentials": creds,
                              "values": "".join(f"{k}: {v}\n" for k, v in values.items())})

    def from_oci(release, version, creds, **values):
        return template(env, {"repoUrl": oci, "version": version, "releaseName": release,
                              "credentials": creds,
                              "values": "".join(f"{k}: {v}\n" for k, v in values.items())})

    tis = {
        "repo": instance(env, "bob", from_repo("by-repo", "0.1.0", repo_creds, greeting="r")),
        "oci": instance(env, "bob", from_oci("by-oci", "0.1.0", oci_creds, greeting="o")),
        "repo-missing": instance(env, "bob", from_repo("repo-missing", "9.9.9", repo_creds)),
        "oci-missing": instance(env, "bob", from_oci("oci-missing", "9.9.9", oci_creds)),
        "repo-denied": instance(env, "bob", from_repo("repo-denied", "0.2.0", bad_repo)),
        "oci-denied": instance(env, "bob", from_oci("oci-denied", "0.2.0", bad_oci)),
    }

    for what, release, value in (("repo", "by-repo", "r"), ("oci", "by-oci", "o")):
        obj = wait_ti(env, tis[what], deployed, f"the chart from the {what} deployed")
        assert release_row(obj) == {"name": release, "status": "deployed", "revision": 1,
                                    "chartVersion": "0.1.0"}, obj["status"]
        assert greeting(env, release) == value
        [rec] = records(env, release)
        assert rec.metadata.labels["status"] == "deployed"
    # the repository was asked with its credentials, over TLS, for the packaged chart
    assert ("GET", "/hello-0.1.0.tgz", True) in repo.requests
    assert 200 in registry.access("GET", "/v2/charts/hello/manifests/0.1.0")

    obj = wait_ti(env, tis["repo-missing"], failing("ChartNotFound"), "ChartNotFound")
    assert "no chart version found" in failure(obj)["message"], obj["status"]
    obj = wait_ti(env, tis["oci-missing"], failing("ChartNotFound"), "ChartNotFound")
    assert "/charts/hello:9.9.9: not found" in failure(obj)["message"], obj["status"]

    # a refused password: Helm's message (the pull's EACCES: Forbidden)
    obj = wait_ti(env, tis["repo-denied"], failing("Forbidden"), "the repository's refusal")
    assert "401 Unauthorized" in failure(obj)["message"], obj["status"]
    obj = wait_ti(env, tis["oci-denied"], failing("Forbidden"), "the registry's refusal")
    msg = failure(obj)["message"]
    assert "401" in msg and "unauthorized" in msg, obj["status"]
    for release in ("repo-missing", "oci-missing", "repo-denied", "oci-denied"):
        assert records(env, release) == [] and greeting(env, release) is None

    # all six deleted at once: each uninstalls as the namespace's apply account, which the
    # last of them releases only once the others are gone
    assert delete_tis(env), "the instances deleted together did not all go"
    for release in ("by-repo", "by-oci"):
        assert records(env, release) == [] and greeting(env, release) is None


# ---------- 2. no secret in a process's arguments or environment ----------

def test_no_process_holds_the_password_or_the_token_while_helm_runs(env, silent_server):
    """Two helms of landlord hang at once: a pull from a repository that never answers (its
    password went to `helm repo add` on stdin), and an install whose pre-install hook Job never
    completes (its token in a kubeconfig file). Every process is searched meanwhile."""
    kit = env["kit"]
    password = secrets.token_hex(24)
    hung = template(env, {"repoUrl": f"http://127.0.0.1:{silent_server}", "chart": "hello",
                          "version": "0.1.0", "releaseName": "hung",
                          "credentials": credentials(env, "reader", password)})
    hook = template(env, {"path": str(KNOBS), "releaseName": "hook", "values": "hook: true\n"})
    pull_ti, hook_ti = instance(env, "bob", hung), instance(env, "bob", hook)
    landlord = kit.landlord.popen.pid

    def both_running():
        argvs = list(helm_processes(landlord).values())
        return (any(b"repo" in a and b"add" in a for a in argvs) and
                any(b"install" in a for a in argvs))  # a first install
    kit.cluster.wait_for(both_running, 30, 0.05, f"both helms running\n{kit.log_tail()}")
    kubeconfig = kit.cluster.wait_for(
        lambda: next(env["tmp"].glob("landlord-helm-*/kubeconfig"), None), 10, 0.02,
        "the run's kubeconfig")
    kit.cluster.wait_for(lambda: kubeconfig.stat().st_size > 0, 5, 0.02, "its content")
    assert kubeconfig.stat().st_mode & 0o777 == 0o600
    token = json.loads(kubeconfig.read_text())["users"][0]["user"]["token"].encode()
    size = len(token)  # apart: pytest would print the token in len(token)
    assert size > 100 and token.startswith(b"eyJ"), size
    claims = token.split(b".")[1]
    claims = json.loads(base64.urlsafe_b64decode(claims + b"=" * (-len(claims) % 4)))
    assert claims["sub"] == f"system:serviceaccount:{SYSTEM}:ti.{env['ns']}.editor", claims["sub"]
    for _ in range(5):
        helms = helm_processes(landlord)
        assert len(helms) >= 2, helms.keys()
        assert holders(password.encode()) == []
        assert holders(token) == []
        # no bearer token of any kind in landlord's or its helms' arguments or environment
        assert holders(b"eyJ", {str(landlord), *helms}) == []
        time.sleep(0.2)

    # the hook ends as a failed install at helm's --timeout, the pull at the runner's
    obj = wait_ti(env, hook_ti, failing("HelmFailed"), "the hook's time-out", 30)
    assert "pre-install" in failure(obj)["message"], obj["status"]
    assert not kubeconfig.exists()  # the run's directory is gone
    obj = wait_ti(env, pull_ti, failing("HelmTimedOut"), "the pull's time-out", 30)
    msg = failure(obj)["message"]  # killed by the runner, at --helm-timeout
    assert msg.startswith("helm pull: killed by SIG") and "timed out" in msg, msg
    assert password not in json.dumps(obj["status"])


# ---------- 3. attacks ----------

def test_an_editors_chart_cannot_do_what_the_editor_cannot(env):
    """Each refused with the webhook's or the API server's message, nothing of it written."""
    kit, ns = env["kit"], env["ns"]
    image = template(env, {"path": str(KNOBS), "releaseName": "image",
                           "values": "image: docker.io/evil/miner:1\n"})
    bind = template(env, {"path": str(KNOBS), "releaseName": "bind",
                          "values": "bindAdmin: bob\n"})
    cluster_role = template(env, {"path": str(KNOBS), "releaseName": "cr",
                                  "values": "clusterRole: true\n"})
    tis = [instance(env, "bob", t) for t in (image, bind, cluster_role)]
    account = f"system:serviceaccount:{SYSTEM}:ti.{ns}.editor"

    obj = wait_ti(env, tis[0], failing("Forbidden"), "the image refused")
    msg = failure(obj)["message"]
    assert "docker.io/evil/miner:1" in msg and "not from a registry allowed" in msg, msg
    assert "admission webhook" in msg and "denied the request" in msg, msg
    assert absent(k8s.AppsV1Api(kit.admin).read_namespaced_deployment, "image-app", ns)

    obj = wait_ti(env, tis[1], failing("Forbidden"), "the RoleBinding refused")
    msg = failure(obj)["message"]
    # the editor account may not even read RoleBindings: Helm's look at the object before
    # creating it fails with the API server's refusal
    assert (f'"bind-grab-admin" is forbidden: User "{account}" cannot get resource '
            '"rolebindings" in API group "rbac.authorization.k8s.io"' in msg), msg
    assert absent(kit.rbac.read_namespaced_role_binding, "bind-grab-admin", ns)

    obj = wait_ti(env, tis[2], failing("Forbidden"), "the ClusterRole refused")
    msg = failure(obj)["message"]
    assert (f'"{ns}-cr-grab" is forbidden: User "{account}" cannot get resource '
            '"clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope'
            in msg), msg
    assert absent(kit.rbac.read_cluster_role, f"{ns}-cr-grab")
    for release in ("image", "bind", "cr"):  # nothing deployed: at most failed records
        statuses = {r.metadata.labels["status"] for r in records(env, release)}
        assert statuses <= {"failed"}, (release, statuses)


def test_a_parameter_in_repo_url_is_refused_naming_the_field(env):
    kit = env["kit"]
    name = kit.name("tpl")
    body = template_body(name, {"repoUrl": "https://${{X}}/charts", "chart": "hello",
                                "version": "0.1.0"})
    body["spec"]["parameters"] = [{"name": "X", "value": "charts.example.com"}]
    with pytest.raises(ApiException) as e:
        kit.custom.create_cluster_custom_object(GROUP, VERSION, TPL, body)
        env["created"].append((TPL, name))
    assert e.value.status in (403, 422), e.value.body
    assert "spec.resources.helm.repoUrl" in e.value.body, e.value.body
    assert "${" in e.value.body, e.value.body
    assert absent(kit.custom.get_cluster_custom_object, GROUP, VERSION, TPL, name)


def forge(record, version, extra_manifest):
    """Helm's release record @record as revision @version, deployed, with @extra_manifest
    appended to its manifest: Secret data as Helm writes it (base64 of gzip of JSON)."""
    rel = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(
        record.data["release"]))))
    rel["version"] = version
    rel["info"]["status"] = "deployed"
    rel["manifest"] = rel["manifest"].rstrip("\n") + "\n---\n" + extra_manifest
    data = base64.b64encode(gzip.compress(json.dumps(rel).encode())).decode()
    return k8s.V1Secret(
        metadata=k8s.V1ObjectMeta(name=f"sh.helm.release.v1.{rel['name']}.v{version}",
                                  labels={**record.metadata.labels, "version": str(version)}),
        type=record.type, data={"release": base64.b64encode(data.encode()).decode()})


def test_a_forged_record_never_steers_the_owners_helm_into_deleting_a_rolebinding(env, tmp_path):
    """alice (the owner) instantiates a chart: it runs as ti.<ns>.owner, bound to admin. bob (an
    editor) may write Secrets but not RoleBindings: he forges the next revision of the release's
    record listing a RoleBinding, which Helm's next upgrade, acting as the owner account, would
    delete as no longer in the chart. The landlord-helm-records policy refuses his Secret; a
    forgery written anyway (by an identity the policy exempts) makes landlord see the records
    differ from its ledger and run no helm (ReleaseTampered): the RoleBinding stays, the release
    keeps its revision."""
    kit, ns = env["kit"], env["ns"]
    # a binding of the owner's (subjects outside the tenant would be removed by landlord)
    kit.rbac.create_namespaced_role_binding(ns, {
        "metadata": {"name": "keep-me"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "view"},
        "subjects": [{"kind": "User", "name": "alice"}]})
    assert kit.can_i("bob", "delete", "rolebindings", ns) is False
    assert kit.can_i("bob", "create", "secrets", ns) is True

    tmpl = template(env, {"path": str(CHARTS / "hello"), "releaseName": "steer",
                          "values": "greeting: one\n"})
    name = instance(env, "alice", tmpl)
    obj = wait_ti(env, name, deployed, "the owner's release deployed")
    assert obj["metadata"]["annotations"]["landlord.dev/last-writer"] == "owner"
    assert release_row(obj)["revision"] == 1
    led = ledger(env, "steer")
    assert led["account"] == f"ti.{ns}.owner", led
    [real] = records(env, "steer")

    binding = (f"# Source: hello/templates/rolebinding.yaml\n"
               f"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\n"
               f"metadata:\n  name: keep-me\n  namespace: {ns}\n"
               f"roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n"
               f"  name: view\nsubjects:\n- kind: User\n  name: alice\n")
    # the policy refuses bob's forgery at the door (deploy/policies/helm-records.yaml) ...
    with helm_records_policy(env, "bob", "steer"), pytest.raises(k8s.rest.ApiException) as e:
        k8s.CoreV1Api(kit.client("bob")).create_namespaced_secret(ns, forge(real, 2, binding))
    assert e.value.status == 403 and "landlord-helm-records" in e.value.body, e.value.body
    # ... and landlord's ledger stops one that got in anyway (written by someone it exempts)
    kit.core.create_namespaced_secret(ns, forge(real, 2, binding))
    # the forgery is what Helm would act on: its latest deployed revision lists the RoleBinding
    helm = Helm(tmp_path / "helm")
    shown = helm("get", "manifest", "steer", "-n", ns, "--kubeconfig",
                 kit.cluster.kubeconfig("admin")).stdout
    assert "name: keep-me" in shown, shown

    # the next upgrade (the platform changes the values) must not run on the forged records
    patch_template(env, tmpl, {"resources": {"helm": {"values": "greeting: two\n"}}})
    obj = wait_ti(env, name, failing("ReleaseTampered"), "ReleaseTampered")
    assert "revision 2" in failure(obj)["message"], obj["status"]
    time.sleep(3)  # time enough for a helm that should not run
    obj = get_ti(env, name)
    assert failing("ReleaseTampered")(obj), obj["status"]
    assert kit.rbac.read_namespaced_role_binding("keep-me", ns).subjects[0].name == "alice"
    assert greeting(env, "steer") == "one"
    recs = records(env, "steer")
    assert [r.metadata.name for r in recs] == ["sh.helm.release.v1.steer.v1",
                                              "sh.helm.release.v1.steer.v2"]
    assert recs[0].metadata.resource_version == real.metadata.resource_version
    after = ledger(env, "steer")
    assert (after["pending"], after["records"]) == ("", led["records"]), after

    # the threat was real: the same upgrade run by a Helm that trusts the records (here as the
    # cluster's admin) deletes the RoleBinding the forged revision lists
    env["tampered"] = True  # its instance stays until its namespace goes
    helm("upgrade", "steer", CHARTS / "hello", "-n", ns, "--set", "greeting=two",
         "--kubeconfig", kit.cluster.kubeconfig("admin"))
    assert absent(kit.rbac.read_namespaced_role_binding, "keep-me", ns)
