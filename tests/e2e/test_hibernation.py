"""ResourceSupervisors (issue 15; docs/hibernation.md) on the real control plane, with
kube-controller-manager's deployment, replicaset, statefulset, job, cronjob and HPA controllers
(no kubelet: pods stay Pending). landlord runs under its own least-privilege identity with the
admission policies applied, so the namespace marks pass landlord-self-limits on a namespace that
is no tenant's. landlord's clock is moved through its test hook (/debug/clock): no test waits
for a schedule.

- sleep now (no schedule): Deployments, StatefulSets and ownerless ReplicaSets at 0, CronJobs
  and unfinished Jobs suspended, each with the saved value, the namespace labelled and
  reserved; a StatefulSet whose volumes go with its replicas skipped and reported; a
  Deployment already at 0 untouched; deleting the supervisor restores every value exactly;
- scheduled sleep and wake in a zone, by the clock;
- each override: sleep, wake, sleep-until, wake-until, skip-next-sleep, and their removal once
  spent;
- a workload created while asleep sleeps too; one scaled up while asleep is kept and reported;
  the exclusion label, honoured only where the supervisor allows it;
- an HPA whose target sleeps reports ScalingActive=False, ScalingDisabled;
- bad input: a cron field and a zone named in InvalidSchedule, nothing touched; a saved value
  landlord cannot read, reported and left alone.
"""

import json
import time
from datetime import datetime, timedelta, timezone

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from kube import GROUP, VERSION, refusal_message

RS = "resourcesupervisors"
SAVED = "landlord.dev/sleep-saved"
OVERRIDE = "landlord.dev/hibernation"
TIMEOUT = 60


def labels(name):
    return {"app": name}


def pod_template(name):
    """Admitted at the restricted Pod Security level (tenant namespaces enforce it)."""
    return {"metadata": {"labels": labels(name)},
            "spec": {"securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                         "seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": [{"name": "c", "image": "registry.example/app:1",
                                     "securityContext": {"allowPrivilegeEscalation": False,
                                                         "capabilities": {"drop": ["ALL"]}}}]}}


def deployment(name, replicas, extra_labels=None):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": extra_labels or {}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels(name)},
                     "template": pod_template(name)}}


def statefulset(name, replicas, when_scaled="Retain"):
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name,
                     "podManagementPolicy": "Parallel",
                     "persistentVolumeClaimRetentionPolicy": {"whenScaled": when_scaled,
                                                              "whenDeleted": "Retain"},
                     "selector": {"matchLabels": labels(name)}, "template": pod_template(name)}}


def replicaset(name, replicas):
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels(name)},
                     "template": pod_template(name)}}


def job_spec(name):
    tpl = pod_template(name)
    tpl["spec"]["restartPolicy"] = "Never"
    return {"template": tpl, "backoffLimit": 0}


def cronjob(name):
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": "*/5 * * * *", "suspend": False,
                     "jobTemplate": {"spec": job_spec(name)}}}


def job(name):
    spec = job_spec(name)
    spec["template"]["metadata"]["labels"] = {}  # the job controller adds its own
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {**spec, "suspend": False}}


pytestmark = pytest.mark.usefixtures("module_policies")


class Env:
    """One test's landlord (Kit), its namespaces and supervisors, and the workload APIs."""

    def __init__(self, kit):
        self.kit = kit
        self.apps = k8s.AppsV1Api(kit.admin)
        self.batch = k8s.BatchV1Api(kit.admin)
        self.autoscaling = k8s.AutoscalingV2Api(kit.admin)
        self.supervisors = []

    # ---- landlord's clock ----

    def now(self):
        status, body = self.kit.landlord.get("/debug/clock")
        assert status == 200, body
        return datetime.fromisoformat(body.strip().replace("Z", "+00:00"))

    def shift_to(self, when):
        """Move landlord's clock to just after @when (an aware datetime)."""
        seconds = int((when - self.now()).total_seconds()) + 2
        status, body = self.kit.landlord.get(f"/debug/clock?shift={seconds}")
        assert status == 200, body

    # ---- supervisors ----

    def supervisor(self, namespaces, schedule=None, annotations=None, **spec):
        name = self.kit.name("rs")
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceSupervisor",
                "metadata": {"name": name, "annotations": annotations or {}},
                "spec": {"namespaces": {"names": namespaces}, "schedule": schedule or {},
                         **spec}}
        self.kit.custom.create_cluster_custom_object(GROUP, VERSION, RS, body)
        self.supervisors.append(name)
        return name

    def get(self, name):
        try:
            return self.kit.custom.get_cluster_custom_object(GROUP, VERSION, RS, name)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def status(self, name):
        return (self.get(name) or {}).get("status") or {}

    def annotate(self, name, value):
        self.kit.custom.patch_cluster_custom_object(
            GROUP, VERSION, RS, name, {"metadata": {"annotations": {OVERRIDE: value}}})

    def override(self, name):
        return ((self.get(name) or {}).get("metadata", {}).get("annotations") or {}).get(OVERRIDE)

    def wait_state(self, name, state):
        def reached():
            st = self.status(name)
            return st if st.get("state") == state else None
        return self.kit.cluster.wait_for(reached, TIMEOUT, what=f"{name} {state}")

    def delete(self, name):
        self.kit.custom.delete_cluster_custom_object(GROUP, VERSION, RS, name)
        self.kit.cluster.wait_for(lambda: self.get(name) is None, TIMEOUT,
                                  what=f"{name} gone (its finalizer removed)")

    def cleanup(self):
        for name in self.supervisors:
            try:
                self.kit.custom.delete_cluster_custom_object(GROUP, VERSION, RS, name)
            except ApiException:
                pass
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(self.get(n) for n in self.supervisors):
            time.sleep(0.2)
        for name in self.supervisors:  # landlord did not get to it: by hand
            if self.get(name):
                self.kit.custom.patch_cluster_custom_object(
                    GROUP, VERSION, RS, name, {"metadata": {"finalizers": None}})

    # ---- workloads ----

    def create(self, ns, obj):
        kind = obj["kind"]
        fn = {"Deployment": self.apps.create_namespaced_deployment,
              "StatefulSet": self.apps.create_namespaced_stateful_set,
              "ReplicaSet": self.apps.create_namespaced_replica_set,
              "Job": self.batch.create_namespaced_job,
              "CronJob": self.batch.create_namespaced_cron_job}[kind]
        fn(ns, obj)
        return (kind, obj["metadata"]["name"])

    def read(self, ns, kind, name):
        fn = {"Deployment": self.apps.read_namespaced_deployment,
              "StatefulSet": self.apps.read_namespaced_stateful_set,
              "ReplicaSet": self.apps.read_namespaced_replica_set,
              "Job": self.batch.read_namespaced_job,
              "CronJob": self.batch.read_namespaced_cron_job}[kind]
        return self.kit.admin.sanitize_for_serialization(fn(name, ns))

    def value(self, ns, kind, name):
        spec = self.read(ns, kind, name)["spec"]
        return spec.get("suspend") if kind in ("Job", "CronJob") else spec.get("replicas")

    def saved(self, ns, kind, name):
        text = (self.read(ns, kind, name)["metadata"].get("annotations") or {}).get(SAVED)
        return json.loads(text) if text else None

    def ns_labels(self, ns):
        return self.kit.core.read_namespace(ns).metadata.labels or {}

    def ns_annotations(self, ns):
        return self.kit.core.read_namespace(ns).metadata.annotations or {}

    def wait_values(self, ns, want, what):
        """Every (kind, name) in @want at its value."""
        def reached():
            return all(self.value(ns, k, n) == v for (k, n), v in want.items())
        self.kit.cluster.wait_for(reached, TIMEOUT, what=what)


@pytest.fixture
def env(kit):
    e = Env(kit)
    kit.start()
    yield e
    e.cleanup()


ASLEEP = {"Deployment": 0, "StatefulSet": 0, "ReplicaSet": 0, "Job": True, "CronJob": True}


def a_namespace_of_every_kind(env):
    """A plain namespace (no tenant's) with one workload of each kind, and what each runs at."""
    ns = env.kit.namespace()
    awake = {env.create(ns, deployment("web", 3)): 3,
             env.create(ns, statefulset("db", 2)): 2,
             env.create(ns, replicaset("bare", 2)): 2,
             env.create(ns, cronjob("nightly")): False,
             env.create(ns, job("once")): False}
    return ns, awake


def test_sleep_now_then_deleting_the_supervisor_restores_every_value(env):
    ns, awake = a_namespace_of_every_kind(env)
    idle = env.create(ns, deployment("idle", 0))
    volatile = env.create(ns, statefulset("cache", 2, when_scaled="Delete"))
    name = env.supervisor([ns])

    st = env.wait_state(name, "sleeping")
    env.wait_values(ns, {key: ASLEEP[key[0]] for key in awake}, "every workload asleep")
    for (kind, wl), value in awake.items():
        assert env.saved(ns, kind, wl) == {
            "supervisor": name, "field": "suspend" if kind in ("Job", "CronJob") else "replicas",
            "value": value}, (kind, wl)
    assert env.ns_labels(ns)["landlord.dev/sleeping"] == "advisory"
    assert json.loads(env.ns_annotations(ns)["landlord.dev/sleep-reserved"]) == {
        "supervisor": name, "used": {}}
    # Skipped and reported: at 0 its volumes would go. Untouched: already at 0.
    assert env.value(ns, *volatile) == 2 and env.saved(ns, *volatile) is None
    assert env.value(ns, *idle) == 0 and env.saved(ns, *idle) is None
    st = env.wait_state(name, "sleeping")
    reported = {(w["kind"], w["name"]): w for w in st.get("workloads", [])}
    assert reported[volatile]["reason"] == "VolumesDeletedWhenScaled", st
    row = next(r for r in st["namespaces"] if r["name"] == ns)
    assert row["slept"] == 5 and row["skipped"] == 1 and row["failed"] == 0, st
    ready = next(c for c in st["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "Asleep"), st
    assert all(w["outcome"] != "failed" for w in st["workloads"]), st
    assert "nextTransition" not in st  # asleep until deleted
    assert st["transitions"][0]["state"] == "sleeping"

    env.delete(name)
    env.wait_values(ns, awake, "every workload restored")
    for kind, wl in awake:
        assert env.saved(ns, kind, wl) is None
    assert "landlord.dev/sleeping" not in env.ns_labels(ns)
    assert "landlord.dev/sleep-reserved" not in env.ns_annotations(ns)
    assert env.value(ns, *idle) == 0


def next_local(now, tz, hour):
    """The next instant after @now when the wall clock in @tz shows @hour:00."""
    local = now.astimezone(tz)
    at = local.replace(hour=hour, minute=0, second=0, microsecond=0)
    if at <= local:
        at += timedelta(days=1)
    return at.astimezone(timezone.utc)


def test_a_schedule_in_a_zone_sleeps_and_wakes_by_the_clock(env):
    from zoneinfo import ZoneInfo
    berlin = ZoneInfo("Europe/Berlin")
    ns = env.kit.namespace()
    web = env.create(ns, deployment("web", 2))
    now = env.now()
    # Awake now: sleep two hours ahead (local), wake four hours ahead.
    sleep_hour = (now.astimezone(berlin).hour + 2) % 24
    wake_hour = (sleep_hour + 2) % 24
    name = env.supervisor([ns], {"sleepSchedule": f"0 {sleep_hour} * * *",
                                 "wakeSchedule": f"0 {wake_hour} * * *",
                                 "timezone": "Europe/Berlin"})
    sleep_at = next_local(now, berlin, sleep_hour)
    st = env.wait_state(name, "running")
    assert st["nextTransition"] == sleep_at.strftime("%Y-%m-%dT%H:%M:%SZ"), st
    assert st["nextState"] == "sleeping"
    assert env.value(ns, *web) == 2

    env.shift_to(sleep_at)
    env.wait_state(name, "sleeping")
    env.wait_values(ns, {web: 0}, "asleep at the sleep schedule")
    wake_at = next_local(sleep_at, berlin, wake_hour)
    st = env.status(name)
    assert st["nextTransition"] == wake_at.strftime("%Y-%m-%dT%H:%M:%SZ"), st

    env.shift_to(wake_at)
    env.wait_state(name, "running")
    env.wait_values(ns, {web: 2}, "awake at the wake schedule")
    causes = [t["cause"] for t in env.status(name)["transitions"]]
    assert causes[:2] == ["schedule", "schedule"], causes

    # each transition is an Event on the supervisor and counted; the gauges follow
    def events():
        found = env.kit.core.list_namespaced_event(
            "default", field_selector=f"involvedObject.name={name}").items
        return sorted(e.reason for e in found if e.involved_object.kind == "ResourceSupervisor")
    env.kit.cluster.wait_for(lambda: events() == ["Sleeping", "Waking"], TIMEOUT,
                             what="a Sleeping and a Waking Event")
    metric = env.kit.landlord.metric
    total = "landlord_hibernation_transitions_total"
    assert metric(total, supervisor=name, state="sleeping") == 1
    assert metric(total, supervisor=name, state="running") == 2  # created, then woken
    assert metric("landlord_hibernation_namespaces_asleep", supervisor=name) == 0
    assert metric("landlord_hibernation_workloads", supervisor=name, outcome="slept") == 0


def awake_schedule(env):
    """A UTC schedule whose sleep is two hours ahead of landlord's clock and wake four."""
    now = env.now()
    sleep_hour, wake_hour = (now.hour + 2) % 24, (now.hour + 4) % 24
    sched = {"sleepSchedule": f"0 {sleep_hour} * * *", "wakeSchedule": f"0 {wake_hour} * * *"}
    return sched, next_local(now, timezone.utc, sleep_hour), None


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_overrides_sleep_and_wake_hold_until_the_next_transition(env):
    ns = env.kit.namespace()
    web = env.create(ns, deployment("web", 2))
    sched, sleep_at, _ = awake_schedule(env)
    name = env.supervisor([ns], sched)
    env.wait_state(name, "running")

    env.annotate(name, "sleep")  # asleep now, until the scheduled sleep (then asleep anyway)
    env.wait_values(ns, {web: 0}, "asleep by the override")
    env.kit.cluster.wait_for(lambda: env.override(name) == f"sleep-until={iso(sleep_at)}",
                             TIMEOUT, what="sleep rewritten to sleep-until")
    st = env.wait_state(name, "sleeping")
    assert st["transitions"][0]["cause"] == "override"

    env.shift_to(sleep_at)  # spent: removed; the schedule has it asleep now
    env.kit.cluster.wait_for(lambda: env.override(name) is None, TIMEOUT,
                             what="the spent override removed")
    assert env.status(name)["state"] == "sleeping" and env.value(ns, *web) == 0

    env.annotate(name, "wake")  # awake now, until the scheduled wake
    env.wait_values(ns, {web: 2}, "awake by the override")
    env.kit.cluster.wait_for(lambda: (env.override(name) or "").startswith("wake-until="),
                             TIMEOUT, what="wake rewritten to wake-until")


def test_overrides_until_and_skip_next_sleep(env):
    ns = env.kit.namespace()
    web = env.create(ns, deployment("web", 2))
    sched, sleep_at, _ = awake_schedule(env)
    name = env.supervisor([ns], sched)
    env.wait_state(name, "running")

    until = env.now() + timedelta(minutes=30)
    env.annotate(name, f"sleep-until={iso(until)}")
    env.wait_values(ns, {web: 0}, "asleep until the given time")
    assert env.wait_state(name, "sleeping")["nextTransition"] == iso(until)
    env.shift_to(until)
    env.wait_values(ns, {web: 2}, "awake again once it is spent")
    env.kit.cluster.wait_for(lambda: env.override(name) is None, TIMEOUT,
                             what="the spent override removed")

    env.annotate(name, "skip-next-sleep")
    wake_after = sleep_at + timedelta(hours=2)
    env.kit.cluster.wait_for(lambda: env.override(name) == f"wake-until={iso(wake_after)}",
                             TIMEOUT, what="skip-next-sleep rewritten to wake-until")
    env.shift_to(sleep_at)  # the scheduled sleep passes: still awake
    env.wait_state(name, "running")
    assert env.value(ns, *web) == 2 and env.saved(ns, *web) is None
    env.shift_to(wake_after)
    env.kit.cluster.wait_for(lambda: env.override(name) is None, TIMEOUT,
                             what="skip-next-sleep spent")


def test_workloads_created_scaled_or_excluded_while_asleep(env):
    ns = env.kit.namespace()
    web = env.create(ns, deployment("web", 2))
    kept = env.create(ns, deployment("kept", 1))
    opted = env.create(ns, deployment("opted", 1, {"landlord.dev/hibernation-exclude": "true"}))
    name = env.supervisor([ns])  # exclusion not allowed: the label is ignored
    env.wait_values(ns, {web: 0, kept: 0, opted: 0}, "all asleep, the label ignored")

    late = env.create(ns, deployment("late", 3))
    env.wait_values(ns, {late: 0}, "a workload created while asleep sleeps too")
    assert env.saved(ns, *late)["value"] == 3

    env.apps.patch_namespaced_deployment_scale("kept", ns, {"spec": {"replicas": 4}})

    def reported():
        st = env.status(name)
        return any(w["name"] == "kept" and w["outcome"] == "kept" for w in st.get("workloads", []))
    env.kit.cluster.wait_for(reported, TIMEOUT, what="the scale-up reported")
    assert env.value(ns, *kept) == 4  # advisory: left alone

    env.delete(name)
    env.wait_values(ns, {web: 2, late: 3, opted: 1, kept: 4}, "woken; the scaled one kept")
    assert env.saved(ns, *kept) is None

    name = env.supervisor([ns], allowWorkloadExclusion=True)
    env.wait_values(ns, {web: 0}, "asleep again")
    st = env.wait_state(name, "sleeping")
    assert env.value(ns, *opted) == 1
    assert any(w["name"] == "opted" and w["reason"] == "Excluded" for w in st["workloads"]), st


def test_an_hpa_whose_target_sleeps_reports_scaling_disabled(env):
    ns = env.kit.namespace()
    env.create(ns, deployment("web", 2))
    env.autoscaling.create_namespaced_horizontal_pod_autoscaler(ns, {
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 5,
                 "metrics": [{"type": "Resource", "resource": {
                     "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}})
    env.supervisor([ns])
    env.wait_values(ns, {("Deployment", "web"): 0}, "the target asleep")

    def disabled():
        hpa = env.autoscaling.read_namespaced_horizontal_pod_autoscaler("web", ns)
        return any(c.type == "ScalingActive" and c.status == "False" and
                   c.reason == "ScalingDisabled" for c in (hpa.status.conditions or []))
    env.kit.cluster.wait_for(disabled, TIMEOUT, what="ScalingActive=False, ScalingDisabled")
    assert env.value(ns, "Deployment", "web") == 0  # the HPA left it there


@pytest.mark.parametrize("schedule,field,words", [
    ({"sleepSchedule": "0 20 * * 8"}, "spec.schedule.sleepSchedule",
     "day-of-week 8 is out of range 0-7"),
    ({"sleepSchedule": "0 20 * * *", "wakeSchedule": "61 7 * * *"},
     "spec.schedule.wakeSchedule", "minute 61 is out of range 0-59"),
    ({"sleepSchedule": "0 20 * * *", "timezone": "Mars/Olympus_Mons"},
     "spec.schedule.timezone", 'time zone "Mars/Olympus_Mons" is unknown'),
])
def test_a_bad_schedule_is_named_and_nothing_moves(env, schedule, field, words):
    ns = env.kit.namespace()
    web = env.create(ns, deployment("web", 2))
    name = env.supervisor([ns], schedule)
    st = env.wait_state(name, "error")
    cond = next(c for c in st["conditions"] if c["type"] == "InvalidSchedule")
    assert cond["status"] == "True" and cond["message"].startswith(field + ": "), cond
    assert words in cond["message"], cond
    assert env.value(ns, *web) == 2 and env.saved(ns, *web) is None
    assert "landlord.dev/sleeping" not in env.ns_labels(ns)


def test_a_saved_value_landlord_cannot_read_is_reported_and_left_alone(env):
    ns = env.kit.namespace()
    body = deployment("odd", 0)
    body["metadata"]["annotations"] = {SAVED: "{not json"}
    odd = env.create(ns, body)
    web = env.create(ns, deployment("web", 2))
    name = env.supervisor([ns])
    env.wait_values(ns, {web: 0}, "the others asleep")

    def reported():
        return any(w["name"] == "odd" and w["reason"] == "InvalidSavedValue"
                   for w in env.status(name).get("workloads", []))
    env.kit.cluster.wait_for(reported, TIMEOUT, what="the odd one reported")
    env.delete(name)
    env.wait_values(ns, {web: 2}, "woken")
    assert env.value(ns, *odd) == 0
    assert env.read(ns, *odd)["metadata"]["annotations"][SAVED] == "{not json"


def test_the_policy_names_a_bad_override_and_keeps_tenants_supervisors_theirs(env):
    """deploy/policies/hibernation.yaml: an unparsable override is refused for everyone,
    naming the annotation; on a supervisor labelled for a tenant, someone who may update it by
    name (a tenant owner) changes the override and nothing else."""
    ns = env.kit.namespace()
    name = env.supervisor([ns], {"sleepSchedule": "0 20 * * *", "wakeSchedule": "0 8 * * *"})
    # (a policy just applied takes a moment to be in force)
    msg = env.kit.cluster.wait_for(
        lambda: refusal_message(lambda: env.annotate(name, "slep")), TIMEOUT, interval=0.3,
        what="the policy in force")
    assert 'annotation landlord.dev/hibernation: "slep" is not one of sleep, wake' in msg, msg
    msg = refusal_message(lambda: env.annotate(name, "sleep-until=2026-13-01T00:00:00Z"))
    assert msg and "landlord.dev/hibernation" in msg, msg
    assert refusal_message(
        lambda: env.annotate(name, "sleep-until=2026-12-24T08:00:00+01:00")) is None

    env.kit.custom.patch_cluster_custom_object(GROUP, VERSION, RS, name, {
        "metadata": {"labels": {"landlord.dev/tenant": "acme"}}})  # as landlord would make it
    env.kit.grant([{"apiGroups": [GROUP], "resources": [RS], "resourceNames": [name],
                    "verbs": ["get", "patch", "update"]}],
                  [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}])
    bob = k8s.CustomObjectsApi(env.kit.client("bob"))

    def bob_patches(body):
        return refusal_message(
            lambda: bob.patch_cluster_custom_object(GROUP, VERSION, RS, name, body))
    env.kit.cluster.wait_for(
        lambda: bob_patches({"metadata": {"annotations": {OVERRIDE: "wake"}}}) is None,
        TIMEOUT, interval=0.3, what="bob may change the override")
    msg = bob_patches({"spec": {"enforce": True}})
    assert msg and f"ResourceSupervisor {name} belongs to tenant acme" in msg, msg
    msg = bob_patches({"metadata": {"annotations": {"other": "x"}}})
    assert msg and "only the annotation landlord.dev/hibernation may be changed" in msg, msg


def test_an_enforced_sleep_refuses_a_hand_made_wake(env):
    """enforce: true labels the namespace landlord.dev/sleeping=enforced, and the webhook
    (sleep.landlord.dev, /sleep) refuses an editor raising replicas, through /scale too, or
    clearing suspend, naming the supervisor and the override that wakes it; other changes, and
    lowering, pass."""
    ns = env.kit.namespace()
    web = env.create(ns, deployment("web", 2))
    nightly = env.create(ns, cronjob("nightly"))
    env.kit.rbac.create_namespaced_role_binding(ns, {
        "metadata": {"name": "bob-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]})
    name = env.supervisor([ns], enforce=True)
    env.wait_values(ns, {web: 0, nightly: True}, "asleep")
    assert env.ns_labels(ns)["landlord.dev/sleeping"] == "enforced"
    apps, batch = k8s.AppsV1Api(env.kit.client("bob")), k8s.BatchV1Api(env.kit.client("bob"))

    def scale_up():
        return refusal_message(lambda: apps.patch_namespaced_deployment_scale(
            "web", ns, {"spec": {"replicas": 3}}))
    msg = env.kit.cluster.wait_for(scale_up, TIMEOUT, interval=0.3, what="the scale refused")
    assert f"Deployment {ns}/web is asleep under ResourceSupervisor {name}" in msg, msg
    assert f"kubectl annotate resourcesupervisor {name} landlord.dev/hibernation=wake" in msg
    msg = refusal_message(
        lambda: apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 1}}))
    assert msg and "which enforces its sleep" in msg, msg
    msg = refusal_message(lambda: batch.patch_namespaced_cron_job(
        "nightly", ns, {"spec": {"suspend": False}}))
    assert msg and f"CronJob {ns}/nightly" in msg and "its suspend stays" in msg, msg
    assert refusal_message(lambda: apps.patch_namespaced_deployment(
        "web", ns, {"metadata": {"labels": {"team": "a"}}})) is None
    assert env.value(ns, *web) == 0 and env.value(ns, *nightly) is True

    env.annotate(name, "wake")  # the way the message gives
    env.wait_values(ns, {web: 2, nightly: False}, "woken by the override")
    assert refusal_message(lambda: apps.patch_namespaced_deployment_scale(
        "web", ns, {"spec": {"replicas": 3}})) is None


def pods(env, ns, kind_name):
    return env.read(ns, *kind_name).get("status", {}).get("replicas") or 0


def test_a_sleeping_namespace_keeps_its_quota_share(env):
    """docs/quota.md with hibernation: while a namespace sleeps its reservation counts as its
    usage, so a sibling filling up cannot take its share, and its workloads all come back; once
    the Plan is lowered below what is reserved, the reservation no longer holds, and the
    workload that cannot come back is reported QuotaExceeded while the rest wake."""
    kit = env.kit
    plan = kit.plan(hard={"pods": "6"})
    t = kit.tenant(plan=plan, owners={"users": ["alice"]}, prefixed=["a", "b"])
    a, b = kit.expect_namespace(f"{t}-a"), kit.expect_namespace(f"{t}-b")
    kit.wait_ready(t, [a, b])
    for ns in (a, b):
        kit.wait_provisioned(ns, t)
    web = env.create(a, deployment("web", 3))
    nightly = env.create(a, cronjob("nightly"))
    kit.cluster.wait_for(lambda: pods(env, a, web) == 3, TIMEOUT, what="a's 3 pods")
    name = env.supervisor([a])
    env.wait_values(a, {web: 0, nightly: True}, "a asleep")
    reserved = json.loads(env.ns_annotations(a)["landlord.dev/sleep-reserved"])
    assert reserved["supervisor"] == name and reserved["used"]["pods"] == "3", reserved

    fill = env.create(b, deployment("fill", 6))  # wants everything: gets the headroom only
    kit.cluster.wait_for(lambda: pods(env, b, fill) >= 2, TIMEOUT, what="b given headroom")
    env.annotate(name, "wake")
    kit.cluster.wait_for(lambda: pods(env, a, web) == 3, TIMEOUT, what="a's pods all back")
    kit.cluster.wait_for(
        lambda: "landlord.dev/sleep-reserved" not in env.ns_annotations(a), TIMEOUT,
        what="the reservation released once the pods are back")
    assert pods(env, b, fill) <= 3  # never a's share

    env.annotate(name, "sleep")
    env.wait_values(a, {web: 0}, "a asleep again")
    kit.cluster.wait_for(lambda: pods(env, a, web) == 0, TIMEOUT, what="a's pods gone")
    kit.patch_plan(plan, {"resourceQuota": {"hard": {"pods": "4"}}})
    env.annotate(name, "wake")
    env.wait_values(a, {web: 3, nightly: False}, "restored; the CronJob wakes")

    def reported():
        return next((w for w in env.status(name).get("workloads", [])
                     if w["name"] == "web" and w["reason"] == "QuotaExceeded"), None)
    w = kit.cluster.wait_for(reported, TIMEOUT, what="web reported QuotaExceeded")
    assert "exceeded quota" in w["message"] and "pods" in w["message"], w


KEDA, ARGO = "keda.sh", "argoproj.io"


def scaled_object(name, annotations):
    return {"apiVersion": f"{KEDA}/v1alpha1", "kind": "ScaledObject",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"scaleTargetRef": {"name": name}, "minReplicaCount": 0, "maxReplicaCount": 4,
                     "triggers": [{"type": "cron", "metadata": {
                         "timezone": "UTC", "start": "0 8 * * *", "end": "0 18 * * *",
                         "desiredReplicas": "2"}}]}}


def scaled_job(name):
    return {"apiVersion": f"{KEDA}/v1alpha1", "kind": "ScaledJob", "metadata": {"name": name},
            "spec": {"jobTargetRef": job_spec(name), "triggers": [{"type": "cron", "metadata": {
                "timezone": "UTC", "start": "0 8 * * *", "end": "0 18 * * *",
                "desiredReplicas": "1"}}]}}


def rollout(name, replicas):
    return {"apiVersion": f"{ARGO}/v1alpha1", "kind": "Rollout", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels(name)},
                     "template": pod_template(name),
                     "strategy": {"canary": {"steps": [{"setWeight": 50}]}}}}


def test_keda_and_argo_rollouts_sleep_and_come_back_as_they_were(env):
    """With the pinned KEDA and Argo Rollouts CRDs installed after landlord started (it finds
    them by discovery): ScaledObjects get paused-replicas "0" and ScaledJobs paused "true",
    a value the user had set saved and restored, one that was absent removed again; a Rollout
    goes to 0 replicas and back."""
    from ecosystem import install_ecosystem_crds
    install_ecosystem_crds(env.kit.cluster, "keda", "rollouts")
    api = env.kit.custom
    ns = env.kit.namespace()
    for plural, body in (("scaledobjects", scaled_object("mine", {KEDA_PR: "2"})),
                         ("scaledobjects", scaled_object("plain", {})),
                         ("scaledjobs", scaled_job("batch")),
                         ("rollouts", rollout("canary", 3))):
        api.create_namespaced_custom_object(body["apiVersion"].split("/")[0], "v1alpha1", ns,
                                            plural, body)

    def get(group, plural, name):
        return api.get_namespaced_custom_object(group, "v1alpha1", ns, plural, name)

    def ann(group, plural, name):
        return get(group, plural, name)["metadata"].get("annotations") or {}
    name = env.supervisor([ns])

    def asleep():
        return (ann(KEDA, "scaledobjects", "mine").get(KEDA_PR) == "0" and
                ann(KEDA, "scaledobjects", "plain").get(KEDA_PR) == "0" and
                ann(KEDA, "scaledjobs", "batch").get("autoscaling.keda.sh/paused") == "true" and
                get(ARGO, "rollouts", "canary")["spec"]["replicas"] == 0)
    env.kit.cluster.wait_for(asleep, 90, what="KEDA paused and the Rollout at 0")
    assert json.loads(ann(KEDA, "scaledobjects", "mine")[SAVED]) == {
        "supervisor": name, "field": "paused-replicas", "value": "2"}
    assert json.loads(ann(KEDA, "scaledobjects", "plain")[SAVED])["value"] is None
    assert json.loads(ann(ARGO, "rollouts", "canary")[SAVED])["value"] == 3

    env.delete(name)
    assert ann(KEDA, "scaledobjects", "mine").get(KEDA_PR) == "2"
    assert KEDA_PR not in ann(KEDA, "scaledobjects", "plain")
    assert "autoscaling.keda.sh/paused" not in ann(KEDA, "scaledjobs", "batch")
    assert get(ARGO, "rollouts", "canary")["spec"]["replicas"] == 3
    assert SAVED not in ann(ARGO, "rollouts", "canary")


KEDA_PR = "autoscaling.keda.sh/paused-replicas"
WINDOW = {"kind": "deny", "schedule": "* * * * *", "duration": "1h", "applications": ["*"],
          "namespaces": ["*"], "clusters": ["*"], "manualSync": False}
HOLDERS = "landlord.dev/sleep-window"


def app_project(name, windows=None):
    spec = {"sourceRepos": ["*"], "destinations": []}
    if windows is not None:
        spec["syncWindows"] = windows
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
            "metadata": {"name": name}, "spec": spec}


def test_an_argo_cd_deny_window_is_held_while_asleep(env):
    """With the pinned Argo CD CRDs installed after landlord started: the exact deny window is
    added to each AppProject of spec.argocd.appProjects before anything sleeps (the annotation
    names its holders), kept beside a window of the user's, shared by two supervisors (the last
    to wake removes it), and not added where the same window was already there (which stays).
    A missing AppProject is reported; the workloads sleep anyway."""
    from ecosystem import install_ecosystem_crds
    install_ecosystem_crds(env.kit.cluster, "argocd", only=["appproject"])
    api, argo = env.kit.custom, env.kit.namespace()
    allow = {**WINDOW, "kind": "allow", "schedule": "0 8 * * *"}
    for body in (app_project("plain"), app_project("theirs", [dict(WINDOW)]),
                 app_project("mixed", [allow])):
        api.create_namespaced_custom_object("argoproj.io", "v1alpha1", argo, "appprojects", body)

    def project(name):
        p = api.get_namespaced_custom_object("argoproj.io", "v1alpha1", argo, "appprojects", name)
        return p["spec"].get("syncWindows") or [], (p["metadata"].get("annotations") or {})
    ns_a, ns_b = env.kit.namespace(), env.kit.namespace()
    env.create(ns_a, deployment("web", 2))
    env.create(ns_b, deployment("web", 2))
    spec = {"namespace": argo, "appProjects": ["plain", "theirs", "mixed", "missing"]}
    first = env.supervisor([ns_a], argocd=spec)
    env.wait_values(ns_a, {("Deployment", "web"): 0}, "the first supervisor's sleep")
    assert project("plain") == ([WINDOW], {HOLDERS: first})
    assert project("mixed") == ([allow, WINDOW], {HOLDERS: first})
    assert project("theirs") == ([WINDOW], {}), "a window already there is left alone"
    missing = [w for w in env.wait_state(first, "sleeping").get("workloads", [])
               if w["kind"] == "AppProject"]
    assert [(w["name"], w["reason"]) for w in missing] == [("missing", "AppProjectNotFound")]

    second = env.supervisor([ns_b], argocd={"namespace": argo, "appProjects": ["plain"]})
    env.wait_values(ns_b, {("Deployment", "web"): 0}, "the second supervisor's sleep")
    assert project("plain") == ([WINDOW], {HOLDERS: ",".join(sorted([first, second]))})

    env.delete(first)
    assert env.value(ns_a, "Deployment", "web") == 2
    assert project("plain") == ([WINDOW], {HOLDERS: second}), "still held by the second"
    assert project("mixed") == ([allow], {}), "the last holder removed it, the user's stays"
    assert project("theirs") == ([WINDOW], {})
    env.delete(second)
    assert project("plain") == ([], {})


def test_status_names_at_most_twenty_workloads_and_counts_the_rest(env):
    ns = env.kit.namespace()
    for i in range(22):  # each skipped and reported: at 0 they would lose their volumes
        env.create(ns, statefulset(f"db{i}", 1, when_scaled="Delete"))
    name = env.supervisor([ns])

    def reported():
        st = env.status(name)
        return st if st.get("workloadsNotListed") == 2 else None
    st = env.kit.cluster.wait_for(reported, TIMEOUT, what="20 listed, 2 counted")
    assert len(st["workloads"]) == 20
    assert next(r for r in st["namespaces"] if r["name"] == ns)["skipped"] == 22
