"""landlord's CRDs against the real API server: they install, the samples are valid, what is
accepted is stored as given with the schema's defaults (read back from the server), the status
subresource is separate from the object, and the schemas (enums, patterns, limits, CEL rules)
reject mistakes with 422 and a message naming the field."""

import copy

import pytest
import yaml
from kubernetes import client as k8s

from kube import GROUP, VERSION, custom, ignore_404, invalid, uniq
from procs import REPO

CRDS = ("tenants.landlord.dev", "plans.landlord.dev", "landlordconfigs.landlord.dev")


@pytest.fixture
def crds(installed):
    return installed


@pytest.fixture
def api(crds):
    return custom(crds)


@pytest.fixture
def config_slot(api):
    """The singleton LandlordConfig "landlord" free for this test to create (and `created` to
    delete); one that existed before is put back afterwards (its spec and metadata)."""
    saved = ignore_404(api.get_cluster_custom_object, GROUP, VERSION, "landlordconfigs",
                       "landlord")
    if saved:
        api.delete_cluster_custom_object(GROUP, VERSION, "landlordconfigs", "landlord")
    yield
    if saved:
        ignore_404(api.delete_cluster_custom_object, GROUP, VERSION, "landlordconfigs",
                   "landlord")
        meta = {k: saved["metadata"][k] for k in ("name", "labels", "annotations")
                if k in saved["metadata"]}
        api.create_cluster_custom_object(GROUP, VERSION, "landlordconfigs", {
            "apiVersion": saved["apiVersion"], "kind": saved["kind"], "metadata": meta,
            "spec": saved.get("spec") or {}})


def tenant(name=None, **spec):
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Tenant",
            "metadata": {"name": name or uniq("crd")}, "spec": {"plan": "gold"}}
    body["spec"].update(spec)
    return body


def plan(name=None, **spec):
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Plan",
            "metadata": {"name": name or uniq("crd")}, "spec": {"maxNamespaces": 3}}
    body["spec"].update(spec)
    return body


def config(name="landlord", **spec):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LandlordConfig",
            "metadata": {"name": name}, "spec": spec}


PLURALS = {"Tenant": "tenants", "Plan": "plans", "LandlordConfig": "landlordconfigs"}


def create(api, body, dry_run=True):
    kw = {"dry_run": "All"} if dry_run else {}
    return api.create_cluster_custom_object(GROUP, VERSION, PLURALS[body["kind"]], body, **kw)


def stored(api, created, body):
    """Create body for real (deleted after the test) and return the object as the API server
    then serves it."""
    plural = PLURALS[body["kind"]]
    create(api, body, dry_run=False)
    created.append((plural, body["metadata"]["name"]))
    return api.get_cluster_custom_object(GROUP, VERSION, plural, body["metadata"]["name"])


def kept(given, got, path="spec"):
    """Every field of given is in got with the same value (got may have more: defaults).
    Returns the paths that differ."""
    if isinstance(given, dict):
        if not isinstance(got, dict):
            return [path]
        return [p for k, v in given.items()
                for p in (kept(v, got[k], f"{path}.{k}") if k in got else [f"{path}.{k}"])]
    if isinstance(given, list):
        if not isinstance(got, list) or len(got) != len(given):
            return [path]
        return [p for i, (a, b) in enumerate(zip(given, got)) for p in kept(a, b, f"{path}[{i}]")]
    return [] if given == got else [path]


def rejection(api, body):
    """Create body (server-side dry run) and return the API server's rejection message (it must
    be 422 Invalid)."""
    return invalid(create, api, body)


def load_samples(name):
    return [d for d in yaml.safe_load_all((REPO / "samples" / name).read_text()) if d]


def test_crds_are_established_and_labelled(crds):
    ext = k8s.ApiextensionsV1Api(crds.client("admin"))
    for name in CRDS:
        crd = ext.read_custom_resource_definition(name)
        conds = {c.type: c.status for c in crd.status.conditions}
        assert conds.get("Established") == "True", (name, conds)
        assert conds.get("NamesAccepted") == "True", (name, conds)
        assert "NonStructuralSchema" not in conds, (name, conds)
        assert crd.metadata.labels.get("app.kubernetes.io/managed-by") == "landlord"
        assert crd.spec.scope == "Cluster"
        assert crd.spec.versions[0].subresources.status is not None


@pytest.mark.parametrize("sample", ["plans.yaml", "landlordconfig.yaml", "tenants.yaml"])
def test_samples_pass_server_side_validation(crds, sample):
    r = crds.kubectl("admin", "apply", "--dry-run=server", "-f", REPO / "samples" / sample)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("created (server dry run)") == len(load_samples(sample)), r.stdout


def test_sample_plans_and_tenants_create_for_real(api, created):
    for body in load_samples("plans.yaml") + load_samples("tenants.yaml"):
        body = copy.deepcopy(body)
        body["metadata"]["name"] = uniq(body["metadata"]["name"])
        obj = stored(api, created, body)
        assert obj["metadata"]["name"] == body["metadata"]["name"]
        assert obj["metadata"]["generation"] == 1
        assert "status" not in obj, obj["status"]
        assert not kept(body["spec"], obj["spec"]), (body["kind"], kept(body["spec"],
                                                                        obj["spec"]), obj)


def test_landlordconfig_defaults(api, created, config_slot):
    dry = create(api, config())
    got = stored(api, created, config())
    spec = got["spec"]
    assert spec["tenantRoles"]["default"] == {"owner": "admin", "editor": "edit",
                                              "viewer": "view"}
    assert spec["defaults"] == {"podSecurity": "restricted", "networkIsolation": True}
    # the dry run answered what was then stored
    assert dry["spec"] == spec


def test_landlordconfig_empty_role_means_default_and_is_accepted(api, created, config_slot):
    roles = {"default": {"owner": ""}, "custom": [
        {"labelSelector": {"matchLabels": {"landlord.dev/kind": "prod"}}, "owner": ""}]}
    got = stored(api, created, config(tenantRoles=copy.deepcopy(roles)))
    # "" is kept (landlord reads it as the default); unset roles get the schema's defaults
    assert got["spec"]["tenantRoles"]["default"] == {"owner": "", "editor": "edit",
                                                     "viewer": "view"}
    assert got["spec"]["tenantRoles"]["custom"] == roles["custom"]


def test_tenant_defaults_leave_network_isolation_unset(api, created):
    got = stored(api, created, tenant(namespaces={"sandboxes": {}}))
    ns = got["spec"]["namespaces"]
    assert ns["sandboxes"] == {"enabled": False, "private": False}
    assert ns["onDeletePurge"] is False
    assert "networkIsolation" not in got["spec"]
    assert "podSecurity" not in got["spec"]
    assert got["spec"]["plan"] == "gold"


def test_tenant_templates_and_prefixed_names_that_fit_are_accepted(api, created):
    meta = {"common": {"labels": {"team": "{{ TENANT.NAME }}", "notlandlord.dev/x": "y"},
                       "annotations": {"owner": "x-{{ TENANT.NAME }}-{{ TENANT.USERNAME }}"}},
            "sandbox": {"labels": {"user": "{{ TENANT.USERNAME }}"}}}
    hibernation = {"sleepSchedule": "0 20 * * 1-5", "wakeSchedule": "0 7 * * 1-5",
                   "timezone": "Europe/Berlin"}
    name = "t" * 40
    body = tenant(name, namespaces={"withTenantPrefix": ["p" * 22], "metadata": meta},
                  hibernation=hibernation)
    got = stored(api, created, copy.deepcopy(body))
    assert got["metadata"]["name"] == name
    # the templates are stored verbatim: landlord, not the API server, expands them
    assert got["spec"]["namespaces"]["metadata"] == meta
    assert got["spec"]["namespaces"]["withTenantPrefix"] == ["p" * 22]
    assert got["spec"]["hibernation"] == hibernation


def test_status_subresource_accepts_everything_the_controller_reports(api, created):
    body = tenant()
    body["status"] = {"observedGeneration": 7, "namespaceCount": 9}
    got = stored(api, created, body)
    name = got["metadata"]["name"]
    # status sent with the object is dropped: only the status subresource writes it
    assert "status" not in got, got["status"]
    status = {"observedGeneration": 1, "namespaceCount": 2,
              "namespaces": [f"{name}-dev", f"{name}-alice-sandbox"],
              "sandboxes": {"alice": f"{name}-alice-sandbox"},
              "released": ["old-ns"],
              "collisions": [{"name": "taken", "reason": "namespace exists and is not ours"}],
              "quota": {"hard": {"requests.cpu": "4", "pods": "20"},
                        "used": {"requests.cpu": "500m", "pods": "3"}},
              "conditions": [{"type": "Ready", "status": "True", "reason": "Provisioned",
                              "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z",
                              "observedGeneration": 1}]}
    api.patch_cluster_custom_object_status(GROUP, VERSION, "tenants", name, {"status": status})
    got = api.get_cluster_custom_object(GROUP, VERSION, "tenants", name)
    assert got["status"] == status
    assert got["metadata"]["generation"] == 1

    # the subresource ignores spec, and the object ignores status
    api.patch_cluster_custom_object_status(GROUP, VERSION, "tenants", name, {
        "spec": {"plan": "silver"}, "status": {"namespaceCount": 3}})
    got = api.get_cluster_custom_object(GROUP, VERSION, "tenants", name)
    assert (got["spec"]["plan"], got["status"]["namespaceCount"]) == ("gold", 3)
    assert got["metadata"]["generation"] == 1
    api.patch_cluster_custom_object(GROUP, VERSION, "tenants", name, {
        "spec": {"plan": "silver"}, "status": {"namespaceCount": 4}})
    got = api.get_cluster_custom_object(GROUP, VERSION, "tenants", name)
    assert (got["spec"]["plan"], got["status"]["namespaceCount"]) == ("silver", 3)
    assert got["metadata"]["generation"] == 2


def near_limit(i):
    return {"name": f"t{i:02d}", "namespaces": 2, "resource": "requests.cpu", "used": "1500m",
            "hard": "1", "usedPerMille": 1500}


def test_plan_status_subresource_accepts_what_the_controller_reports(api, created):
    name = stored(api, created, plan())["metadata"]["name"]
    status = {"observedGeneration": 1, "tenants": 1000, "namespaces": 3000,
              "quota": {"hard": {"requests.cpu": "4k", "pods": "20k"},
                        "used": {"requests.cpu": "1500m", "pods": "3"}},
              "tenantsNearLimit": [near_limit(i) for i in range(20)],
              "conditions": [{"type": "WithinLimits", "status": "False",
                              "reason": "TooManyNamespaces",
                              "message": "2 tenants have more namespaces than maxNamespaces (3): "
                                         "t00 (5), t01 (4)",
                              "lastTransitionTime": "2026-01-01T00:00:00Z",
                              "observedGeneration": 1}]}
    api.patch_cluster_custom_object_status(GROUP, VERSION, "plans", name, {"status": status})
    got = api.get_cluster_custom_object(GROUP, VERSION, "plans", name)
    assert got["status"] == status
    # the list is bounded: 21 tenants are refused
    too_many = copy.deepcopy(status)
    too_many["tenantsNearLimit"].append(near_limit(20))
    msg = invalid(api.patch_cluster_custom_object_status, GROUP, VERSION, "plans", name,
                  {"status": too_many})
    assert "status.tenantsNearLimit" in msg and "20" in msg, msg


def test_kubectl_short_name_and_printer_columns(crds, api, created):
    p = stored(api, created, plan())["metadata"]["name"]
    t = stored(api, created, tenant(plan=p))["metadata"]["name"]
    # the columns read status, so give them some
    api.patch_cluster_custom_object_status(GROUP, VERSION, "tenants", t, {"status": {
        "namespaceCount": 2, "conditions": [
            {"type": "NamespacesReady", "status": "True", "reason": "Provisioned",
             "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Ready", "status": "False", "reason": "WaitingForQuota",
             "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    api.patch_cluster_custom_object_status(GROUP, VERSION, "plans", p,
                                           {"status": {"tenants": 5, "namespaces": 12}})
    r = crds.kubectl("admin", "get", "tnt", t)
    assert r.returncode == 0, r.stderr
    header, row = r.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "PLAN", "NAMESPACES", "READY", "AGE"]
    assert row.split()[:4] == [t, p, "2", "False"]
    r = crds.kubectl("admin", "get", "pl", p)
    assert r.returncode == 0, r.stderr
    header, row = r.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "MAX", "NAMESPACES", "TENANTS", "NAMESPACES", "AGE"]
    assert row.split()[:4] == [p, "3", "5", "12"]


LONG = "x" * 41

TENANT_REJECTS = {
    "duplicate withTenantPrefix": (
        dict(namespaces={"withTenantPrefix": ["dev", "dev"]}),
        ["spec.namespaces.withTenantPrefix[1]", "Duplicate value"]),
    "duplicate withoutTenantPrefix": (
        dict(namespaces={"withoutTenantPrefix": ["shared-a", "shared-a"]}),
        ["spec.namespaces.withoutTenantPrefix[1]", "Duplicate value"]),
    "duplicate owner users": (
        dict(accessControl={"owners": {"users": ["alice", "alice"]}}),
        ["spec.accessControl.owners.users[1]", "Duplicate value"]),
    "duplicate viewer groups": (
        dict(accessControl={"viewers": {"groups": ["g", "g"]}}),
        ["spec.accessControl.viewers.groups[1]", "Duplicate value"]),
    "namespace name not a DNS label": (
        dict(namespaces={"withTenantPrefix": ["Dev_1"]}),
        ["spec.namespaces.withTenantPrefix[0]", "should match"]),
    "withoutTenantPrefix kube-": (
        dict(namespaces={"withoutTenantPrefix": ["kube-tools"]}),
        ["spec.namespaces.withoutTenantPrefix[0]", "kube-"]),
    "withoutTenantPrefix default": (
        dict(namespaces={"withoutTenantPrefix": ["default"]}),
        ["spec.namespaces.withoutTenantPrefix[0]", "default"]),
    "empty hosts regex": (
        dict(allowed={"hosts": {"regex": ""}}),
        ["spec.allowed.hosts.regex", "must not be empty"]),
    "wildcard in the middle of a host": (
        dict(allowed={"hosts": {"names": ["a.*.example.com"]}}),
        ["spec.allowed.hosts.names[0]", "should match"]),
    "sleep without wake": (
        dict(hibernation={"sleepSchedule": "0 20 * * *"}),
        ["spec.hibernation", "sleepSchedule and wakeSchedule must be set together"]),
    "wake without sleep": (
        dict(hibernation={"wakeSchedule": "0 7 * * *"}),
        ["spec.hibernation", "sleepSchedule and wakeSchedule must be set together"]),
    "schedule not cron": (
        dict(hibernation={"sleepSchedule": "at night", "wakeSchedule": "0 7 * * *"}),
        ["spec.hibernation.sleepSchedule", "should match"]),
    "reserved label key in common": (
        dict(namespaces={"metadata": {"common": {"labels": {"landlord.dev/tenant": "x"}}}}),
        ["spec.namespaces.metadata.common.labels", "landlord.dev/ prefix are reserved"]),
    "reserved label key in a landlord.dev subdomain": (
        dict(namespaces={"metadata": {"sandbox": {"labels": {"a.landlord.dev/b": "x"}}}}),
        ["spec.namespaces.metadata.sandbox.labels", "landlord.dev/ prefix are reserved"]),
    "reserved label key in specific": (
        dict(namespaces={"metadata": {"specific": [
            {"namespaces": ["a"], "labels": {"landlord.dev/kind": "x"}}]}}),
        ["spec.namespaces.metadata.specific[0].labels", "landlord.dev/ prefix are reserved"]),
    "unknown template": (
        dict(namespaces={"metadata": {"sandbox": {"labels": {"u": "{{ TENANT.ID }}"}}}}),
        ["spec.namespaces.metadata.sandbox.labels", "TENANT.NAME"]),
    "unknown template in annotation": (
        dict(namespaces={"metadata": {"common": {"annotations": {"a": "{{TENANT.NAME}}"}}}}),
        ["spec.namespaces.metadata.common.annotations", "TENANT.USERNAME"]),
    "bad podSecurity": (
        dict(podSecurity="strict"),
        ["spec.podSecurity", "Unsupported value", "restricted"]),
    "plan not a name": (
        dict(plan="Gold Plan"),
        ["spec.plan", "should match"]),
    "too many namespaces listed": (
        dict(namespaces={"withTenantPrefix": [f"n{i}" for i in range(65)]}),
        ["spec.namespaces.withTenantPrefix", "must have at most 64 items"]),
    "bad service account namespace": (
        dict(accessControl={"editors": {"serviceAccounts": [{"namespace": "A", "name": "b"}]}}),
        ["spec.accessControl.editors.serviceAccounts[0].namespace", "should match"]),
}


@pytest.mark.parametrize("case", sorted(TENANT_REJECTS))
def test_tenant_rejects(api, case):
    spec, wanted = TENANT_REJECTS[case]
    msg = rejection(api, tenant(**spec))
    for w in wanted:
        assert w in msg, msg


def test_tenant_name_longer_than_40_is_rejected(api):
    msg = rejection(api, tenant(LONG))
    assert "metadata.name" in msg and "40" in msg, msg


def test_tenant_without_plan_is_rejected(api):
    body = tenant()
    del body["spec"]["plan"]
    msg = rejection(api, body)
    assert "spec.plan" in msg and "Required value" in msg, msg


def test_prefixed_name_longer_than_63_is_rejected(api):
    msg = rejection(api, tenant("t" * 40, namespaces={"withTenantPrefix": ["p" * 23]}))
    assert "spec.namespaces.withTenantPrefix" in msg and "at most 63" in msg, msg


PLAN_REJECTS = {
    "maxNamespaces 0": (
        dict(maxNamespaces=0),
        ["spec.maxNamespaces", "greater than or equal to 1"]),
    "bad quantity": (
        dict(resourceQuota={"hard": {"requests.cpu": "lots"}}),
        ["spec.resourceQuota.hard", "requests.cpu", "should match"]),
    "negative quantity": (
        dict(resourceQuota={"hard": {"pods": -1}}),
        ["spec.resourceQuota.hard", "pods", "greater than or equal to 0"]),
    "bad resource name": (
        dict(resourceQuota={"hard": {"cpu please": "1"}}),
        ["spec.resourceQuota.hard", "resource names"]),
    "bad scope": (
        dict(resourceQuota={"scopes": ["Cheap"]}),
        ["spec.resourceQuota.scopes[0]", "Unsupported value"]),
    "scope In without values": (
        dict(resourceQuota={"scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In"}]}}),
        ["spec.resourceQuota.scopeSelector.matchExpressions[0]", "values must be set"]),
    "bad limit type": (
        dict(limitRange={"limits": [{"type": "Node"}]}),
        ["spec.limitRange.limits[0].type", "Unsupported value", "Container"]),
    "limit without type": (
        dict(limitRange={"limits": [{"max": {"cpu": "1"}}]}),
        ["spec.limitRange.limits[0].type", "Required value"]),
    "bad limit quantity": (
        dict(limitRange={"limits": [{"type": "Container", "max": {"memory": "1 GB"}}]}),
        ["spec.limitRange.limits[0].max", "memory", "should match"]),
    "default on a Pod limit": (
        dict(limitRange={"limits": [{"type": "Pod", "default": {"cpu": "1"}}]}),
        ["spec.limitRange.limits[0]", "not allowed for type Pod"]),
}


@pytest.mark.parametrize("case", sorted(PLAN_REJECTS))
def test_plan_rejects(api, case):
    spec, wanted = PLAN_REJECTS[case]
    msg = rejection(api, plan(**spec))
    for w in wanted:
        assert w in msg, msg


CONFIG_REJECTS = {
    "bad podSecurity": (
        dict(defaults={"podSecurity": "none"}),
        ["spec.defaults.podSecurity", "Unsupported value"]),
    "networkIsolation not a bool": (
        dict(defaults={"networkIsolation": "yes"}),
        ["spec.defaults.networkIsolation", "boolean"]),
    "privileged regex too long": (
        dict(privileged={"namespaces": ["^" + "a" * 300 + "$"]}),
        ["spec.privileged.namespaces[0]", "256"]),
    "duplicate privileged user": (
        dict(privileged={"users": ["^ops$", "^ops$"]}),
        ["spec.privileged.users[1]", "Duplicate value"]),
    "role with a slash": (
        dict(tenantRoles={"default": {"owner": "a/b"}}),
        ["spec.tenantRoles.default.owner", "should match"]),
    "custom role without selector": (
        dict(tenantRoles={"custom": [{"owner": "edit"}]}),
        ["spec.tenantRoles.custom[0].labelSelector", "Required value"]),
    "bad selector operator": (
        dict(tenantRoles={"custom": [{"labelSelector": {"matchExpressions": [
            {"key": "k", "operator": "Near"}]}}]}),
        ["spec.tenantRoles.custom[0].labelSelector.matchExpressions[0].operator",
         "Unsupported value"]),
    "reserved namespace label": (
        dict(namespaceMetadata={"labels": {"landlord.dev/plan": "x"}}),
        ["spec.namespaceMetadata.labels", "reserved"]),
    "reserved namespace annotation in a subdomain": (
        dict(namespaceMetadata={"annotations": {"x.landlord.dev/a": "x"}}),
        ["spec.namespaceMetadata.annotations", "reserved"]),
    "argocd without namespace": (
        dict(integrations={"argocd": {"clusterResourceWhitelist": [{"kind": "Namespace"}]}}),
        ["spec.integrations.argocd.namespace", "Required value"]),
    "bad price": (
        dict(showback={"cpuCoreHour": "3 cents"}),
        ["spec.showback.cpuCoreHour", "should match"]),
    "price with more than 6 decimals": (
        dict(showback={"storageGiBMonth": "0.0000001"}),
        ["spec.showback.storageGiBMonth", "should match"]),
    "bad currency": (
        dict(showback={"currency": "euro"}),
        ["spec.showback.currency", "should match"]),
    "role named dot-dot": (
        dict(tenantRoles={"custom": [{"labelSelector": {}, "viewer": ".."}]}),
        ["spec.tenantRoles.custom[0].viewer", "must not be"]),
}


@pytest.mark.parametrize("case", sorted(CONFIG_REJECTS))
def test_landlordconfig_rejects(api, case):
    spec, wanted = CONFIG_REJECTS[case]
    msg = rejection(api, config(**spec))
    for w in wanted:
        assert w in msg, msg


def test_landlordconfig_must_be_named_landlord(api):
    msg = rejection(api, config(uniq("landlord")))
    assert 'must be named "landlord"' in msg, msg
