"""A ResourceSupervisor's sleep and wake, with landlord killed right after its Nth API write, for
every N, still reach the end state of an uninterrupted run (issue 15, point 10).

Two namespaces, each with a Deployment and a CronJob, and an Argo CD AppProject that gets the
deny sync window. For N = 1, 2, ... a landlord started with --test-crash-after-writes N (it
exits with status 86 just after its Nth successful write, before it sees the answer) puts them
to sleep; then, whatever it left, the order holds: no workload carries landlord's saved value
in a namespace without the sleep label, nor while the AppProject lacks the window. A normal
landlord then finishes: every workload asleep with its value saved. The same for the wake (the
override "wake"): wherever the crash left it, no namespace has lost its label, and the window
is not gone, while a workload in it is still asleep; a normal landlord restores every value
exactly and removes the window. N grows until a crashing landlord finishes both before its Nth
write.
"""

import json

from kubernetes import client as k8s

from ecosystem import install_ecosystem_crds
from kube import GROUP, VERSION
from procs import start_controllers, start_landlord
from test_hibernation import HOLDERS, WINDOW, app_project, cronjob, deployment

CRASH_EXIT = 86
MAX_WRITES = 24  # one sleep and one wake of these namespaces take about 17
SAVED = "landlord.dev/sleep-saved"
RS = "resourcesupervisors"
AWAKE = {("Deployment", "web"): 2, ("CronJob", "nightly"): False}


class World:
    def __init__(self, kit):
        self.kit = kit
        self.apps, self.batch = k8s.AppsV1Api(kit.admin), k8s.BatchV1Api(kit.admin)
        self.nss = [kit.namespace(), kit.namespace()]
        for ns in self.nss:
            self.apps.create_namespaced_deployment(ns, deployment("web", 2))
            self.batch.create_namespaced_cron_job(ns, cronjob("nightly"))
        install_ecosystem_crds(kit.cluster, "argocd", only=["appproject"])
        self.argo = kit.namespace()
        kit.custom.create_namespaced_custom_object("argoproj.io", "v1alpha1", self.argo,
                                                   "appprojects", app_project("proj"))
        self.name = kit.name("rs")
        kit.custom.create_cluster_custom_object(GROUP, VERSION, RS, {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceSupervisor",
            "metadata": {"name": self.name},
            "spec": {"namespaces": {"names": self.nss}, "schedule": {},
                     "argocd": {"namespace": self.argo, "appProjects": ["proj"]}}})

    def workloads(self, ns):
        """(kind, name) -> (value, saved) of the namespace's workloads."""
        d = self.apps.read_namespaced_deployment("web", ns)
        c = self.batch.read_namespaced_cron_job("nightly", ns)
        return {("Deployment", "web"): (d.spec.replicas, (d.metadata.annotations or {}).get(SAVED)),
                ("CronJob", "nightly"): (c.spec.suspend,
                                         (c.metadata.annotations or {}).get(SAVED))}

    def labelled(self, ns):
        labels = self.kit.core.read_namespace(ns).metadata.labels or {}
        return "landlord.dev/sleeping" in labels

    def window(self):
        """Does the AppProject hold the deny window, with this supervisor its holder?"""
        p = self.kit.custom.get_namespaced_custom_object("argoproj.io", "v1alpha1", self.argo,
                                                         "appprojects", "proj")
        windows = p["spec"].get("syncWindows") or []
        holders = (p["metadata"].get("annotations") or {}).get(HOLDERS)
        assert (WINDOW in windows) == (holders == self.name), f"{windows} held by {holders}"
        return WINDOW in windows

    def check_order(self, when):
        """What a crash may leave: a workload holding landlord's saved value is always in a
        namespace still labelled asleep, and the AppProject has the window meanwhile."""
        window = self.window()
        for ns in self.nss:
            held = [k for k, (_, saved) in self.workloads(ns).items() if saved]
            assert not held or self.labelled(ns), f"{when}: {held} asleep in {ns} without the label"
            assert not held or window, f"{when}: {held} asleep in {ns} without the sync window"
            assert not self.labelled(ns) or window, f"{when}: {ns} asleep without the window"

    def asleep(self):
        if not self.window():
            return False
        for ns in self.nss:
            if not self.labelled(ns):
                return False
            for key, (value, saved) in self.workloads(ns).items():
                want = 0 if key[0] == "Deployment" else True
                if value != want or not saved or json.loads(saved)["value"] != AWAKE[key]:
                    return False
        return True

    def awake(self):
        return not self.window() and all(not self.labelled(ns) and
                   all(v == (AWAKE[k], None) for k, v in self.workloads(ns).items())
                   for ns in self.nss)

    def override(self, value):
        self.kit.custom.patch_cluster_custom_object(GROUP, VERSION, RS, self.name, {
            "metadata": {"annotations": {"landlord.dev/hibernation": value}}})

    def run(self, n, done, what):
        """A landlord that dies after its Nth write; True when it got to the end first."""
        p = start_controllers(self.kit.cluster, self.kit.tmp_path, "--no-webhook-url",
                              "--test-crash-after-writes", str(n), name=f"crash-{what}-{n}",
                              wait=False)  # it may die before its probe listens
        self.kit.cluster.wait_for(lambda: p.popen.poll() is not None or done(), 60,
                                  what=f"{what}: the crash after write {n}, or the end")
        if p.popen.poll() is None:  # at the end; its last writes (status) may still crash it
            code = p.stop()
            assert code in (0, CRASH_EXIT), f"landlord exited {code}"
            return code == 0
        assert p.popen.returncode == CRASH_EXIT, \
            f"landlord exited {p.popen.returncode}:\n{p.log_path.read_text()[-3000:]}"
        return False

    def finish(self, done, what):
        p = start_controllers(self.kit.cluster, self.kit.tmp_path, name=f"finish-{what}")
        try:
            self.kit.cluster.wait_for(done, 60, what=f"{what} finished after the crash")
        finally:
            assert p.stop() == 0


def test_sleep_and_wake_converge_after_a_crash_after_every_write(kit):
    world = World(kit)
    try:
        crash_points(world)
        kit.custom.delete_cluster_custom_object(GROUP, VERSION, RS, world.name)
        kit.start()
        kit.cluster.wait_for(world.awake, 60, what="the supervisor's deletion wakes all")
    finally:  # never leave a finalizer behind for the session
        try:
            kit.custom.patch_cluster_custom_object(GROUP, VERSION, RS, world.name,
                                                   {"metadata": {"finalizers": None}})
            kit.custom.delete_cluster_custom_object(GROUP, VERSION, RS, world.name)
        except k8s.rest.ApiException:
            pass


def crash_points(world):
    sleep_done = wake_done = False
    n = 0
    while not (sleep_done and wake_done):
        n += 1
        assert n <= MAX_WRITES, f"not converged within {MAX_WRITES} writes"
        if not sleep_done:
            sleep_done = world.run(n, world.asleep, "sleep")
            world.check_order(f"sleep, crash after write {n}")
        world.finish(world.asleep, "sleep")
        world.override("wake")
        if not wake_done:
            wake_done = world.run(n, world.awake, "wake")
            world.check_order(f"wake, crash after write {n}")
        world.finish(world.awake, "wake")
        world.kit.custom.patch_cluster_custom_object(GROUP, VERSION, RS, world.name, {
            "metadata": {"annotations": {"landlord.dev/hibernation": None}}})
    assert n > 4, "the crash points did not cover the sleep and the wake"


def test_a_second_replica_finishes_a_sleep_its_leader_died_in(kit):
    """Two `landlord controller` replicas under leader election; the leader is killed in the
    middle of a sleep (its API rate kept low, 20 requests a second, so that twenty Deployments take it about a second); the
    follower takes the Lease and finishes: every workload asleep, saved, and the order kept."""
    from test_landlord import delete_lease
    delete_lease(kit.cluster)
    apps = k8s.AppsV1Api(kit.admin)
    nss = [kit.namespace(), kit.namespace()]
    for ns in nss:
        for i in range(10):
            apps.create_namespaced_deployment(ns, deployment(f"web{i}", 2))
    timing = ["--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "500ms",
              "--kube-api-qps", "20", "--kube-api-burst", "1"]
    leader = start_landlord(kit.cluster, kit.tmp_path, "controller", *timing, name="leader")
    leader.wait_probe()
    kit.cluster.wait_for(lambda: leader.metric("landlord_leader") == 1.0, 30, what="a leader")
    follower = start_landlord(kit.cluster, kit.tmp_path, "controller", *timing, name="follower")
    name = kit.name("rs")
    try:
        follower.wait_probe()
        kit.custom.create_cluster_custom_object(GROUP, VERSION, RS, {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceSupervisor",
            "metadata": {"name": name}, "spec": {"namespaces": {"names": nss}}})

        def saved():
            return [(ns, d.metadata.name) for ns in nss
                    for d in apps.list_namespaced_deployment(ns).items
                    if SAVED in (d.metadata.annotations or {})]
        kit.cluster.wait_for(saved, 60, interval=0.05, what="the sleep begun")
        leader.kill()
        mid = saved()
        assert 0 < len(mid) < 20, f"not killed mid-sleep: {len(mid)} of 20 asleep"
        kit.cluster.wait_for(lambda: len(saved()) == 20, 60, what="the follower finishing")
        assert follower.metric("landlord_leader") == 1.0
        for ns in nss:
            assert "landlord.dev/sleeping" in (kit.core.read_namespace(ns).metadata.labels or {})
            assert all(d.spec.replicas == 0 and
                       json.loads(d.metadata.annotations[SAVED])["value"] == 2
                       for d in apps.list_namespaced_deployment(ns).items)
        kit.custom.delete_cluster_custom_object(GROUP, VERSION, RS, name)
        kit.cluster.wait_for(
            lambda: all(d.spec.replicas == 2 for ns in nss
                        for d in apps.list_namespaced_deployment(ns).items), 60,
            what="woken by the follower at the deletion")
    finally:
        follower.stop()
        try:
            kit.custom.patch_cluster_custom_object(GROUP, VERSION, RS, name,
                                                   {"metadata": {"finalizers": None}})
            kit.custom.delete_cluster_custom_object(GROUP, VERSION, RS, name)
        except k8s.rest.ApiException:
            pass
