#!/usr/bin/env python3
"""A TemplateGroupInstance over 500 namespaces against bare clients (issue 13, "Benchmark").

One private control plane: landlord's namespace, CRDs, RBAC (landlord-templates included) and
admission policies; 3 x N plain namespaces (not tenants, so no quota gate), created by admin:
tb-<i> labelled landlord-bench=tgi (the TGI's selector), fb-<i> and fp-<i> (the floors'). One
Template of K ConfigMaps of ~B bytes of data each (a value with ${namespace} in it).

(a) apply: `landlord run` (landlord's identity, caches synced) is given one TemplateGroupInstance
    over the tb- namespaces; timed from its POST to status.namespaces.ready == N (polled every
    0.1 s with GET). Floor, after landlord is stopped: tests/tools/bare_apply --mode floor as
    landlord's identity over the fb- namespaces, the same dry runs and applies per namespace
    (dry run of each object, then apply of each), one namespace at a time as landlord's one
    worker per TGI does; and again over the fp- namespaces with --prune (the metadata LIST per
    kind landlord's prune sends after each namespace's applies).
(b) drift: D deletes of one applied object each (random namespace and object, as admin), G
    seconds apart; each timed from the DELETED event to the ADDED event of the same object, both
    seen by one watch of the benchmark's own (ConfigMaps by the TGI's label). landlord does the
    reverting; then, landlord stopped, bare_apply --mode drift (a watch per kind, each delete
    answered with that object's apply) over the fb- namespaces, timed the same way.
(c) memory: landlord_informer_bytes / landlord_informer_objects of the informer of the rendered
    kind (ConfigMaps by label landlord.dev/tgi), after (a) and (b); and of the roll-up's pods
    (resource ti-pods: the pod store, src/templates/podstore.c, fed by a store-less informer): P
    Pods (Pending, no kubelet) created directly in the tb- namespaces, then a fresh landlord
    started (--pod-landlord: a build with the instances' roll-up) and read once synced.
    --pods-only runs this part alone (printed, not recorded).
(d) status writes: the API server's count of PATCH/APPLY/PUT on templategroupinstances/status
    during (a), and in I seconds idle after it.
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import threading
import time

from common import BUILD, REPO, record, save_json
from tenants import RetriedCluster, api_counts, apiserver_writes, cpu_seconds, metric_by

sys.path.insert(0, str(REPO / "tests" / "e2e"))
from procs import Proc  # noqa: E402

GROUP = "/apis/landlord.dev/v1alpha1"
SELECTOR_KEY = "landlord-bench"
FAST = "--kube-api-qps 1000 --kube-api-burst 2000"


class Api:
    """Bare keep-alive HTTPS requests as admin, one connection per thread, retried on 429, 5xx
    and broken connections."""

    def __init__(self, cluster):
        self.cluster, self.local = cluster, threading.local()

    def call(self, method, path, body=None, ok=(200, 201)):
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(20):
            try:
                if getattr(self.local, "conn", None) is None:
                    self.local.conn = self.cluster.connection()
                self.local.conn.request(method, path, body=data, headers=headers)
                r = self.local.conn.getresponse()
                out = r.read()
            except (http.client.HTTPException, OSError):
                self.local.conn = None
                time.sleep(0.1)
                continue
            if r.status == 429 or r.status >= 500:
                time.sleep(0.2 * (attempt + 1))
                continue
            if ok and r.status not in ok:
                raise RuntimeError(f"{method} {path}: {r.status} {out[:400]!r}")
            return r.status, json.loads(out) if out else None
        raise RuntimeError(f"{method} {path}: no answer after retries")


def configmaps(k, size):
    pad = "x" * max(0, size - 40)
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"bench-cm-{i}"},
             "data": {"namespace": "${namespace}", "payload": f"{i}:{pad}"}} for i in range(k)]


def rendered(objs):
    """What bare_apply applies: the manifests with ${namespace} left literal (same size)."""
    return json.loads(json.dumps(objs))


def install(cluster, deploy):
    """landlord's namespace, CRDs, RBAC and policies from @deploy (the measured build's)."""
    cluster.kubectl("apply", *[a for f in ("namespace.yaml", "crds", "rbac.yaml", "policies")
                               for a in ("-f", pathlib.Path(deploy) / f)])
    wait_crds(cluster)
    time.sleep(6)  # creates of a new CRD's objects are held a few seconds (kubernetes#99199)


def wait_crds(cluster):
    for _ in range(60):
        try:
            for crd in ("tenants", "templates", "templategroupinstances"):
                cluster.kubectl("wait", "--for", "condition=established",
                                f"crd/{crd}.landlord.dev")
            return
        except subprocess.CalledProcessError:
            time.sleep(1)


def make_namespaces(cluster, args):
    api = Api(cluster)
    bodies = [{"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": f"{p}-{i}", "labels": {SELECTOR_KEY: p}}}
              for p in ("tb", "fb", "fp") for i in range(args.namespaces)]
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda b: api.call("POST", "/api/v1/namespaces", b), bodies))
    print(f"created {len(bodies)} namespaces in {time.monotonic() - t0:.1f} s", flush=True)


def start(binary, cluster, log, extra):
    proc = Proc([binary, "run", "--kubeconfig", cluster.kubeconfig("landlord"),
                 "--leader-elect", "false", "--probe-addr", "127.0.0.1:0",
                 "--webhook-addr", "127.0.0.1:0", *extra.split()], log)
    proc.wait_probe()
    deadline = time.monotonic() + 120
    while proc.get("/readyz")[0] != 200:
        if time.monotonic() > deadline:
            raise SystemExit("landlord did not become ready")
        time.sleep(0.1)
    return proc


def tgi_writes(counts):
    """Writes of TGI status (the API server's counts by verb, resource, subresource)."""
    return sum(v for k, v in counts.items() if k.startswith(("PATCH", "APPLY", "PUT")) and
               k.endswith("templategroupinstances status"))


def status_writes(before, after):
    return {k: v - before.get(k, 0) for k, v in after.items()
            if "templategroupinstances" in k and v != before.get(k, 0)}


def landlord_apply(cluster, args, api, proc):
    """(a): the TGI's POST to status.namespaces.ready == N; returns the measures."""
    api.call("POST", f"{GROUP}/templates", {
        "apiVersion": "landlord.dev/v1alpha1", "kind": "Template",
        "metadata": {"name": "bench"},
        "spec": {"resources": {"manifests": configmaps(args.objects, args.object_bytes)}}})
    time.sleep(1)  # the Template in landlord's cache before the instance
    w = Watch(cluster, "landlord.dev/tgi=bench")  # when the objects appear
    w.start()
    w.ready.wait(30)
    counts0, server0, cpu0 = api_counts(proc), apiserver_writes(cluster), cpu_seconds(proc.pid)
    t0 = time.monotonic()
    api.call("POST", f"{GROUP}/templategroupinstances", {
        "apiVersion": "landlord.dev/v1alpha1", "kind": "TemplateGroupInstance",
        "metadata": {"name": "bench"},
        "spec": {"template": "bench", "sync": True,
                 "selector": {"matchLabels": {SELECTOR_KEY: "tb"}}}})
    deadline, seen = t0 + args.timeout, None
    while time.monotonic() < deadline:
        st = (api.call("GET", f"{GROUP}/templategroupinstances/bench")[1].get("status") or {})
        seen = st.get("namespaces", {})
        if seen.get("ready") == args.namespaces:
            break
        time.sleep(0.1)
    else:
        raise SystemExit(f"the TGI did not get ready: {seen}")
    seconds = time.monotonic() - t0
    with w.cv:
        added = sorted(w.added.values())
    server1, counts1, cpu1 = apiserver_writes(cluster), api_counts(proc), cpu_seconds(proc.pid)
    time.sleep(args.idle)
    server2 = apiserver_writes(cluster)
    return {"seconds": seconds, "landlord_cpu_s": cpu1 - cpu0, "objects_seen": len(added),
            "first_object_s": added[0] - t0, "last_object_s": added[-1] - t0,
            "requests_by_verb": {k: v - counts0.get(k, 0) for k, v in counts1.items()
                                 if v != counts0.get(k, 0)},
            "status_writes_apply": status_writes(server0, server1),
            "status_writes_idle": status_writes(server1, server2), "idle_s": args.idle,
            "apiserver_writes_apply": {k: v - server0.get(k, 0) for k, v in server1.items()
                                       if v != server0.get(k, 0)}}


class Watch(threading.Thread):
    """ConfigMaps by @selector across namespaces: when each (ns, name) was last deleted and
    added, on the monotonic clock."""

    def __init__(self, cluster, selector):
        super().__init__(daemon=True)
        self.cluster, self.selector = cluster, selector
        self.deleted, self.added, self.cv = {}, {}, threading.Condition()
        self.ready = threading.Event()

    def run(self):
        conn = self.cluster.connection()
        q = f"/api/v1/configmaps?labelSelector={self.selector}"
        conn.request("GET", q + "&limit=1")
        rv = json.loads(conn.getresponse().read())["metadata"]["resourceVersion"]
        conn.request("GET", f"{q}&watch=1&resourceVersion={rv}&timeoutSeconds=3600")
        r = conn.getresponse()
        self.ready.set()
        while True:
            line = r.readline()
            if not line:
                return
            ev = json.loads(line)
            now = time.monotonic()
            meta = ev["object"].get("metadata", {})
            key = (meta.get("namespace"), meta.get("name"))
            with self.cv:
                if ev["type"] == "DELETED":
                    self.deleted[key] = now
                elif ev["type"] == "ADDED":
                    self.added[key] = now
                self.cv.notify_all()


def drift(cluster, args, prefix, selector):
    """(b): D deletes, each timed from its DELETED event to its ADDED event (ms)."""
    w = Watch(cluster, selector)
    w.start()
    w.ready.wait(30)
    api, rng, lat, lost = Api(cluster), random.Random(1), [], 0
    for _ in range(args.deletes):
        key = (f"{prefix}-{rng.randrange(args.namespaces)}",
               f"bench-cm-{rng.randrange(args.objects)}")
        with w.cv:
            w.added.pop(key, None)
        api.call("DELETE", f"/api/v1/namespaces/{key[0]}/configmaps/{key[1]}")
        with w.cv:
            if not w.cv.wait_for(lambda: key in w.added, timeout=10):
                lost += 1
            else:
                lat.append((w.added[key] - w.deleted[key]) * 1000)
        time.sleep(args.gap)
    return {"latency_ms": lat, "not_restored": lost}


def reconciles(proc):
    return (metric_by(proc, "landlord_reconcile_duration_seconds_sum", "controller"),
            metric_by(proc, "landlord_reconcile_duration_seconds_count", "controller"))


def landlord_drift(cluster, args, proc):
    """(b) for landlord, with its requests and TGI reconciles (count, seconds) meanwhile."""
    (s0, n0), c0 = reconciles(proc), api_counts(proc)
    res = drift(cluster, args, "tb", "landlord.dev/tgi=bench")
    (s1, n1), c1 = reconciles(proc), api_counts(proc)
    key = "templategroupinstance"
    res["reconciles"] = n1.get(key, 0) - n0.get(key, 0)
    res["reconcile_seconds"] = s1.get(key, 0) - s0.get(key, 0)
    res["requests_by_verb"] = {k: v - c0.get(k, 0) for k, v in c1.items() if v != c0.get(k, 0)}
    return res


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))] if xs else float("nan")


def bare_apply(cluster, args, *extra):
    argv = [BUILD / "bare_apply", "--kubeconfig", cluster.kubeconfig("landlord"), "--objects",
            args.objects_file, *extra]
    return subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, text=True)


def floor_apply(cluster, args, prefix, prune):
    p = bare_apply(cluster, args, "--mode", "floor", "--name", f"floor-{prefix}", "--ns-prefix",
                   f"{prefix}-", "--namespaces", args.namespaces, *(["--prune"] if prune else []))
    out = p.communicate()[0].strip().splitlines()
    res = json.loads(out[-1])
    if p.returncode != 0 or res["failures"]:
        raise SystemExit(f"bare_apply --mode floor failed: {res}")
    return res


def floor_drift(cluster, args):
    p = bare_apply(cluster, args, "--mode", "drift", "--name", "floor-fb", "--reverts",
                   args.deletes, "--timeout-seconds", int(args.deletes * (args.gap + 10)) + 60)
    json.loads(p.stdout.readline())  # watching
    time.sleep(1)
    res = drift(cluster, args, "fb", "landlord.dev/tgi=floor-fb")
    tool = json.loads(p.communicate(timeout=60)[0].strip().splitlines()[-1])
    res["tool_latency_ms"] = [x / 1000 for x in tool["latency_us"]]
    return res


def informer_bytes(proc, want):
    objs = metric_by(proc, "landlord_informer_objects", "resource")
    nbytes = metric_by(proc, "landlord_informer_bytes", "resource")
    out = {k: {"objects": objs[k], "bytes": nbytes.get(k, 0)} for k in objs}
    mine = {k: v for k, v in out.items() if want(k.lower())}
    return out, mine


def pods_memory(cluster, args, tmp):
    """(c), pods: P Pending pods in the tb- namespaces, then a fresh landlord's pod informer."""
    api = Api(cluster)
    body = lambda i: {  # noqa: E731
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"bench-{i}", "labels": {"app": "bench", "tier": "web",
                                                      "pod-template-hash": "5d8f7c9b6"}},
        "spec": {"automountServiceAccountToken": False,
                 "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": "10m"}}}]}}
    jobs = [(f"/api/v1/namespaces/tb-{i % args.namespaces}/pods", body(i))
            for i in range(args.pods)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda j: api.call("POST", *j), jobs))
    cluster.kubectl("apply", "-f", REPO / "deploy" / "rbac.yaml")  # the roll-up reads pods
    proc = start(args.pod_landlord, cluster, tmp / "landlord-pods.log", args.landlord_args)
    try:
        time.sleep(args.idle)
        return informer_bytes(proc, lambda k: "pod" in k)
    finally:
        proc.stop()


def run_pods_only(args, tmp):
    with RetriedCluster(args.state_dir) as cluster:
        install(cluster, args.deploy)
        make_namespaces(cluster, args)
        _, pods = pods_memory(cluster, args, tmp)
    per = sum(v["bytes"] for v in pods.values()) / max(
        1, sum(v["objects"] for v in pods.values()))
    print(json.dumps({"pod_informers": pods, "pod_bytes_per_object": per}, indent=1))


def run(args, tmp):
    res = {}
    with RetriedCluster(args.state_dir) as cluster:
        install(cluster, args.deploy)
        make_namespaces(cluster, args)
        api = Api(cluster)
        proc = start(args.landlord, cluster, tmp / "landlord.log", args.landlord_args)
        try:
            res["landlord"] = landlord_apply(cluster, args, api, proc)
            print(f"landlord: {args.namespaces} namespaces ready in "
                  f"{res['landlord']['seconds']:.2f} s", flush=True)
            res["landlord_drift"] = landlord_drift(cluster, args, proc)
            print(f"landlord drift p50 {pct(res['landlord_drift']['latency_ms'], 50):.1f} ms",
                  flush=True)
            res["informers"], res["rendered_informer"] = informer_bytes(
                proc, lambda k: "configmap" in k and "tgi" in k)
            res["errors"] = [r for r in proc.records() if r.get("level") == "error"][:5]
        finally:
            proc.stop()
        res["floor"] = floor_apply(cluster, args, "fb", False)
        res["floor_prune"] = floor_apply(cluster, args, "fp", True)
        print(f"floor: {res['floor']['seconds']:.2f} s, with prune lists "
              f"{res['floor_prune']['seconds']:.2f} s", flush=True)
        res["floor_drift"] = floor_drift(cluster, args)
        res["pod_informers"], res["pod_informer"] = pods_memory(cluster, args, tmp)
    return res


def summarize(res, args):
    ll, fl, fp = res["landlord"], res["floor"], res["floor_prune"]
    ld, fd = res["landlord_drift"]["latency_ms"], res["floor_drift"]["latency_ms"]
    per = lambda d: sum(v["bytes"] for v in d.values()) / max(1, sum(  # noqa: E731
        v["objects"] for v in d.values()))
    return {
        "landlord_s": ll["seconds"], "floor_s": fl["seconds"], "floor_prune_s": fp["seconds"],
        "ratio": ll["seconds"] / fl["seconds"], "ratio_prune": ll["seconds"] / fp["seconds"],
        "drift_p50_ms": pct(ld, 50), "drift_p99_ms": pct(ld, 99),
        "floor_drift_p50_ms": pct(fd, 50), "floor_drift_p99_ms": pct(fd, 99),
        "drift_ratio_p50": pct(ld, 50) / pct(fd, 50), "drift_ratio_p99": pct(ld, 99) / pct(fd, 99),
        "not_restored": res["landlord_drift"]["not_restored"],
        "floor_not_restored": res["floor_drift"]["not_restored"],
        "drift_reconciles": res["landlord_drift"]["reconciles"],
        "drift_reconcile_ms": 1000 * res["landlord_drift"]["reconcile_seconds"] / max(
            1, res["landlord_drift"]["reconciles"]),
        "drift_requests_per_revert": {k: v / max(1, len(ld)) for k, v in
                                      res["landlord_drift"]["requests_by_verb"].items()},
        "configmap_bytes_per_object": per(res["rendered_informer"]),
        "pod_bytes_per_object": per(res["pod_informer"]),
        "status_writes_apply": tgi_writes(ll["status_writes_apply"]),
        "status_writes_per_s_apply": tgi_writes(ll["status_writes_apply"]) / ll["seconds"],
        "status_writes_per_s_idle": tgi_writes(ll["status_writes_idle"]) / ll["idle_s"],
    }


def versions(args):
    def first_line(*cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            return "?"
    return {"landlord": first_line(str(args.landlord), "version") + ", commit " +
            first_line("git", "-C", str(REPO), "rev-parse", "--short", "HEAD"),
            "cpu": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                         if ln.startswith("model name")), "?"),
            "cores": os.cpu_count()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--namespaces", type=int, default=500)
    ap.add_argument("--objects", type=int, default=5)
    ap.add_argument("--object-bytes", type=int, default=1024)
    ap.add_argument("--deletes", type=int, default=100)
    ap.add_argument("--gap", type=float, default=0.3, help="seconds between deletes")
    ap.add_argument("--pods", type=int, default=500)
    ap.add_argument("--idle", type=float, default=10.0)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--landlord", default=str(BUILD / "landlord"),
                    help="the landlord measured (a build with the TGI controller)")
    ap.add_argument("--pod-landlord", default=str(BUILD / "landlord"),
                    help="the landlord whose pod informer is measured (the roll-up's)")
    ap.add_argument("--deploy", default=str(REPO / "deploy"),
                    help="CRDs, RBAC and policies installed (the measured build's deploy/)")
    ap.add_argument("--landlord-args", default=FAST)
    ap.add_argument("--state-dir", default=str(REPO / "build" / "bench-templates"))
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--pods-only", action="store_true",
                    help="only (c)'s pods: the roll-up's cache per pod (printed, not recorded)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # the cluster is stopped
    tmp = pathlib.Path(args.state_dir + "-logs")
    tmp.mkdir(parents=True, exist_ok=True)
    if args.pods_only:
        return run_pods_only(args, tmp)
    args.objects_file = str(tmp / "objects.json")
    pathlib.Path(args.objects_file).write_text(json.dumps(
        rendered(configmaps(args.objects, args.object_bytes))))
    res = run(args, tmp)
    res["summary"] = s = summarize(res, args)
    res["versions"] = versions(args)
    print(json.dumps(s, indent=1))
    if args.no_record:
        return
    save_json("templates", {"args": {k: v for k, v in vars(args).items()}, **res})
    record_doc(args, res)


def record_doc(args, res):
    s, ll, v = res["summary"], res["landlord"], res["versions"]
    verbs = ", ".join(f"{k} {n:.0f}" for k, n in sorted(ll["requests_by_verb"].items()))
    drift_verbs = ", ".join(f"{n:.1f} {k}" for k, n in sorted(
        s["drift_requests_per_revert"].items()))
    ok = lambda good: "met" if good else "**missed**"  # noqa: E731
    record("Templates", f"""
`python3 bench/templates.py`: one private control plane (Kubernetes v1.33.13, landlord
`{v['landlord']}`, {v['cores']} shared cores, {v['cpu']}), landlord's CRDs, RBAC and admission
policies; {3 * args.namespaces} plain labelled namespaces (not tenants: no quota gate), a third
each for landlord and for the two floors. One Template of {args.objects} ConfigMaps of about
{args.object_bytes} B of data each; one TemplateGroupInstance selecting {args.namespaces}
namespaces. landlord is `landlord run {args.landlord_args}` under its least-privilege identity.
Floors: `tests/tools/bare_apply.c` on the library's client core, as landlord's identity, with
landlord's field manager and labels (`landlord/tgi/<name>`), one namespace at a time as
landlord's one worker per TGI does; it knows the answer (no informers, queue, render or status).

| measure | landlord | floor | ratio / target |
|---|---|---|---|
| TGI POST to `status.namespaces.ready` = {args.namespaces} | {s['landlord_s']:.2f} s | \
{s['floor_s']:.2f} s (dry runs, applies) | **{s['ratio']:.2f}x** (target <= 1.2x: \
{ok(s['ratio'] <= 1.2)}) |
| the same, floor also sending landlord's prune LISTs | | {s['floor_prune_s']:.2f} s | \
{s['ratio_prune']:.2f}x |
| landlord: TGI POST to its first, last object (ADDED events) | {ll['first_object_s']:.2f} s, \
{ll['last_object_s']:.2f} s | | last object {ll['last_object_s'] / s['floor_s']:.2f}x the floor |
| landlord CPU time (utime+stime) during the apply | {ll['landlord_cpu_s']:.2f} s | | |
| drift revert p50, DELETED to ADDED event ({args.deletes} deletes) | \
{s['drift_p50_ms']:.1f} ms | {s['floor_drift_p50_ms']:.1f} ms | {s['drift_ratio_p50']:.2f}x |
| drift revert p99 | {s['drift_p99_ms']:.1f} ms | {s['floor_drift_p99_ms']:.1f} ms | \
**{s['drift_ratio_p99']:.2f}x** (targets <= 100 ms: {ok(s['drift_p99_ms'] <= 100)}; \
<= 1.5x: {ok(s['drift_ratio_p99'] <= 1.5)}) |
| objects not restored within 10 s | {s['not_restored']} | {s['floor_not_restored']} | |
| TGI reconciles during the deletes, mean time each | {s['drift_reconciles']:.0f}, \
{s['drift_reconcile_ms']:.0f} ms | | {args.gap:g} s between deletes |
| requests per revert | {drift_verbs} | 1 APPLY | |
| cache per rendered {args.object_bytes} B ConfigMap (its informer) | \
{s['configmap_bytes_per_object']:.0f} B | {args.object_bytes} B of data | \
{s['configmap_bytes_per_object'] / args.object_bytes:.2f}x the data (target <= 1.5 KiB: \
{ok(s['configmap_bytes_per_object'] <= 1536)}) |
| cache per pod ({args.pods} Pending pods, the roll-up's pod store) | \
{s['pod_bytes_per_object']:.0f} B | | target <= 200 B: {ok(s['pod_bytes_per_object'] <= 200)} |
| TGI status writes during the apply | {s['status_writes_apply']:.0f} \
({s['status_writes_per_s_apply']:.2f}/s) | | at most 1/s |
| TGI status writes per second, idle after | {s['status_writes_per_s_idle']:.2f} | | 0 |

landlord's requests during the apply, by verb: {verbs} (REVIEW: dry runs). The floor without
prune sends {res['floor']['requests']} requests, with them {res['floor_prune']['requests']}.
Raw numbers: `bench/results/templates.json`.
""")


if __name__ == "__main__":
    main()
