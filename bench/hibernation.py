#!/usr/bin/env python3
"""ResourceSupervisors against a bare client, and how late transitions fire (issue 15,
"Benchmark").

One private control plane (kube-controller-manager with the deployment and replicaset
controllers: pods are made and stay Pending), landlord's namespace, CRDs and RBAC.

(a) sleep and wake: N plain namespaces hb-<i> with D Deployments d0 .. d<D-1> at 1 replica
    each. `landlord controller --leader-elect false` (its defaults: 500 QPS, burst 1000) is given
    one ResourceSupervisor naming them all (no schedule: asleep at once); timed from its POST to
    a status that is `sleeping` with N x D workloads slept (polled every 50 ms); then its DELETE,
    timed to the supervisor being gone (its finalizer goes once everything is awake again).
    Floor: tests/tools/bare_sleep over the same shape of namespaces fb-<i>, landlord stopped:
    the same writes (a namespace mark, one guarded JSON patch per Deployment; back again), four
    namespaces at a time as landlord handles them (and, for reference, one at a time), at the
    same client-side rate, knowing the answer (no informers, queue or status).
(b) lateness: S supervisors, each over its own namespace lb-<i> with one Deployment, scheduled to
    sleep at the next whole minute (at least 20 s ahead, UTC) and to wake one minute later. A
    watch of the benchmark's own sees each Deployment's replicas reach 0, then 1 again; lateness
    is the event's arrival minus the scheduled instant.
"""

import argparse
import json
import math
import pathlib
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone

from common import BUILD, REPO, Cluster, record, save_json
from tenants import cpu_seconds

sys.path.insert(0, str(REPO / "tests" / "e2e"))
from procs import Proc  # noqa: E402

API = "/apis/landlord.dev/v1alpha1/resourcesupervisors"


def call(conn, method, path, body=None, ok=(200, 201)):
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    conn.request(method, path, json.dumps(body) if body is not None else None, headers)
    r = conn.getresponse()
    data = r.read()
    if r.status not in ok:
        raise RuntimeError(f"{method} {path}: {r.status} {data[:300]!r}")
    return json.loads(data) if data else None


def deployment(name, labels):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name,
                                                                        "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c",
                                                           "image": "registry.example/a:1"}]}}}}


def make_namespaces(cluster, prefix, n, d, labels=None):
    items = []
    for i in range(n):
        ns = f"{prefix}{i}"
        items.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for k in range(d):
            dep = deployment(f"d{k}", labels or {})
            dep["metadata"]["namespace"] = ns
            items.append(dep)
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                           "items": items}))


def install(cluster):
    cluster.kubectl("apply", *[a for f in ("namespace.yaml", "crds", "rbac.yaml")
                               for a in ("-f", REPO / "deploy" / f)])
    for _ in range(60):
        try:
            cluster.kubectl("wait", "--for", "condition=established",
                            "crd/resourcesupervisors.landlord.dev")
            break
        except subprocess.CalledProcessError:
            time.sleep(0.5)
    time.sleep(6)  # creates of a new CRD's objects are held a few seconds (kubernetes#99199)


def start_landlord(cluster, logs, name):
    p = Proc([str(BUILD / "landlord"), "controller", "--leader-elect", "false",
              "--kubeconfig", cluster.kubeconfig("landlord"), "--probe-addr", "127.0.0.1:0",
              "--enable-test-hooks"], logs / f"{name}.log")
    p.wait_probe()
    p.wait_record("informer caches synced")
    return p


def supervisor(name, namespaces, schedule=None):
    return {"apiVersion": "landlord.dev/v1alpha1", "kind": "ResourceSupervisor",
            "metadata": {"name": name},
            "spec": {"namespaces": {"names": namespaces}, "schedule": schedule or {}}}


def landlord_sleep_wake(cluster, args, logs):
    conn = cluster.connection()
    names = [f"hb{i}" for i in range(args.namespaces)]
    want = args.namespaces * args.deployments
    p = start_landlord(cluster, logs, "landlord-a")
    try:
        t0 = time.monotonic()
        call(conn, "POST", API, supervisor("bench", names))
        while True:
            st = (call(conn, "GET", f"{API}/bench") or {}).get("status") or {}
            if st.get("state") == "sleeping" and \
                    sum(n["slept"] for n in st.get("namespaces", [])) == want:
                break
            time.sleep(0.05)
        t1 = time.monotonic()
        call(conn, "DELETE", f"{API}/bench")
        while call(conn, "GET", f"{API}/bench", ok=(200, 404)).get("kind") != "Status":
            time.sleep(0.05)
        t2 = time.monotonic()
    finally:
        p.stop()
    return {"sleep_s": t1 - t0, "wake_s": t2 - t1}


PARALLEL = 4  # namespaces landlord's reconcile of one supervisor handles at once (NS_PARALLEL)


def floor_sleep_wake(cluster, args, parallel):
    out = subprocess.run([str(BUILD / "bare_sleep"), "--kubeconfig", cluster.kubeconfig("landlord"),
                          "--ns-prefix", "fb", "--namespaces", str(args.namespaces),
                          "--deployments", str(args.deployments), "--name", "bench",
                          "--qps", "500", "--burst", "1000", "--parallel", str(parallel)],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {"sleep_s": r["sleep_seconds"], "wake_s": r["wake_seconds"],
            "requests": r["requests"]}


class ReplicasWatch(threading.Thread):
    """Arrival time (wall clock) of each Deployment's replicas first reaching 0, then 1 again."""

    def __init__(self, cluster, selector):
        super().__init__(daemon=True)
        self.cluster, self.selector = cluster, selector
        self.slept, self.woken = {}, {}
        self.ready = threading.Event()

    def run(self):
        conn = self.cluster.connection()
        q = f"/apis/apps/v1/deployments?labelSelector={self.selector}"
        conn.request("GET", q + "&limit=1")
        rv = json.loads(conn.getresponse().read())["metadata"]["resourceVersion"]
        conn.request("GET", f"{q}&watch=1&resourceVersion={rv}&timeoutSeconds=3600")
        r = conn.getresponse()
        self.ready.set()
        while True:
            line = r.readline()
            if not line:
                return
            now = time.time()
            obj = json.loads(line)["object"]
            key = obj["metadata"]["namespace"]
            replicas = obj["spec"].get("replicas")
            if replicas == 0:
                self.slept.setdefault(key, now)
            elif replicas == 1 and key in self.slept:
                self.woken.setdefault(key, now)


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))]


def lateness(cluster, args, logs):
    conn = cluster.connection()
    p = start_landlord(cluster, logs, "landlord-b")
    w = ReplicasWatch(cluster, "bench=late")
    w.start()
    w.ready.wait(30)
    try:
        now = datetime.now(timezone.utc)
        at = (now + timedelta(seconds=80)).replace(second=0, microsecond=0)
        wake = at + timedelta(minutes=1)
        sched = {"sleepSchedule": f"{at.minute} {at.hour} * * *",
                 "wakeSchedule": f"{wake.minute} {wake.hour} * * *"}
        for i in range(args.supervisors):
            call(conn, "POST", API, supervisor(f"late{i}", [f"lb{i}"], sched))
        deadline = time.time() + 200
        while len(w.woken) < args.supervisors and time.time() < deadline:
            time.sleep(0.2)
        cpu = cpu_seconds(p.popen.pid)
    finally:
        p.stop()
    sleep_late = [t - at.timestamp() for t in w.slept.values()]
    wake_late = [t - wake.timestamp() for t in w.woken.values()]
    assert len(sleep_late) == len(wake_late) == args.supervisors, (len(w.slept), len(w.woken))
    return {"sleep_p50": pct(sleep_late, 0.5), "sleep_p99": pct(sleep_late, 0.99),
            "sleep_max": max(sleep_late), "wake_p50": pct(wake_late, 0.5),
            "wake_p99": pct(wake_late, 0.99), "wake_max": max(wake_late), "cpu_s": cpu}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--namespaces", type=int, default=100)
    ap.add_argument("--deployments", type=int, default=5)
    ap.add_argument("--supervisors", type=int, default=50)
    ap.add_argument("--state-dir", default=str(REPO / "build" / "bench-hibernation"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    logs = pathlib.Path(args.state_dir + "-logs")
    logs.mkdir(parents=True, exist_ok=True)
    with Cluster(args.state_dir) as cluster:
        install(cluster)
        make_namespaces(cluster, "hb", args.namespaces, args.deployments)
        make_namespaces(cluster, "fb", args.namespaces, args.deployments)
        make_namespaces(cluster, "lb", args.supervisors, 1, {"bench": "late"})
        time.sleep(10)  # the controllers make the pods; status settles
        res = {"landlord": landlord_sleep_wake(cluster, args, logs),
               "floor": floor_sleep_wake(cluster, args, PARALLEL),
               "floor_serial": floor_sleep_wake(cluster, args, 1),
               "lateness": lateness(cluster, args, logs)}
    ll, fl, la = res["landlord"], res["floor"], res["lateness"]
    f1 = res["floor_serial"]
    res["summary"] = s = {"sleep_ratio": ll["sleep_s"] / fl["sleep_s"],
                          "wake_ratio": ll["wake_s"] / fl["wake_s"], **la}
    print(json.dumps(res, indent=1))
    if args.no_record:
        return
    save_json("hibernation", {"args": vars(args), **res})
    ok = lambda good: "met" if good else "**missed**"  # noqa: E731
    n = args.namespaces * args.deployments
    record("Hibernation", f"""
`python3 bench/hibernation.py`: one private control plane (Kubernetes v1.33.13), landlord's CRDs
and RBAC, `landlord controller` under its least-privilege identity with its default client rate
(500 QPS, burst 1000). {args.namespaces} plain namespaces x {args.deployments} Deployments (1
replica each, pods Pending: no kubelet). Floor: `tests/tools/bare_sleep.c`, the same writes (a
namespace mark, then one guarded JSON patch per Deployment; back again) through the same client
library at the same rate, {PARALLEL} namespaces at a time as landlord's reconcile of one
supervisor handles them (each namespace's writes in order), knowing the answer. The same floor
one namespace at a time, for reference: sleep {f1['sleep_s']:.2f} s, wake {f1['wake_s']:.2f} s.

| measure | landlord | floor | ratio / target |
|---|---|---|---|
| sleep: POST to `sleeping` with {n} slept | {ll['sleep_s']:.2f} s | {fl['sleep_s']:.2f} s | \
**{s['sleep_ratio']:.2f}x** (<= 1.2x: {ok(s['sleep_ratio'] <= 1.2)}) |
| wake: DELETE to gone, all {n} back | {ll['wake_s']:.2f} s | {fl['wake_s']:.2f} s | \
**{s['wake_ratio']:.2f}x** (<= 1.2x: {ok(s['wake_ratio'] <= 1.2)}) |

Lateness, {args.supervisors} supervisors scheduled at the same minute (one namespace and one
Deployment each), from the scheduled instant to a watch's sight of replicas 0 (then 1 a minute
later): sleep p50 {la['sleep_p50']:.3f} s, p99 **{la['sleep_p99']:.3f} s**, max
{la['sleep_max']:.3f} s; wake p50 {la['wake_p50']:.3f} s, p99 **{la['wake_p99']:.3f} s**, max
{la['wake_max']:.3f} s (target p99 <= 1 s: {ok(max(la['sleep_p99'], la['wake_p99']) <= 1)}).
landlord's CPU for that part: {la['cpu_s']:.2f} s.
""")


if __name__ == "__main__":
    main()
