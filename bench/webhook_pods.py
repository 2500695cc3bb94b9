#!/usr/bin/env python3
"""Pod creates through the real API server with and without landlord's webhook, and the
webhook's memory under that load (issue 12: added p50 <= 1 ms, RSS <= 20 MiB).

One private control plane per run. landlord's CRDs, RBAC and namespace are installed (not the
admission policies: they run in the API server in both phases alike, and their quota policy
needs landlord's controllers). kube-controller-manager is stopped once it has aggregated the
built-in ClusterRoles, so that it does not write 20,000 ServiceAccounts and ConfigMaps into the
run. Then, as cluster admin, with no landlord controller running (the webhook's view needs only
the objects): T Tenants (the shape of bench/cacheview_memory.c: owners, editors, registries,
classes, a host policy of names and a regex, N/T withTenantPrefix namespaces), their N
Namespaces labelled as landlord labels them (landlord.dev/tenant, kind, managed-by, Pod
Security `restricted`), two Ingresses per tenant (a host and a wildcard). The first C tenants'
namespace <tenant>-ns0 gets a default ServiceAccount and a RoleBinding of `edit` for the token
user alice, an editor of those tenants; C is the number of clients.

`landlord webhook` (compact cache, landlord's least-privilege identity) then starts and
registers its configurations with --webhook-url on a loopback port. Rounds alternate (ABBA)
between the webhook registered and its ValidatingWebhookConfiguration deleted (the floor: the
same control plane, the same namespaces, no webhook); each round, C client processes, one per
namespace, each on one keep-alive HTTPS connection with alice's bearer token, POST P restricted
Pods each (image from the tenant's allowed registry, so every pod is admitted), one at a time,
timed from the request to the last byte of the 201. The pods stay Pending (no kubelet) and are
deleted by collection after the round. Per request p50 and p99 of each phase pooled over its
rounds, and the added p50 (webhook - floor). The webhook's VmRSS is sampled every 0.2 s; VmHWM,
VmRSS and smaps_rollup are read once the load is over.
"""

import argparse
import concurrent.futures
import http.client
import json
import multiprocessing
import os
import pathlib
import ssl
import subprocess
import sys
import threading
import time

from common import (BUILD, CLUSTER, REPO, Cluster, install_landlord, median, proc_status_kib,
                    record, save_json)

sys.path.insert(0, str(REPO / "tests" / "e2e"))
from procs import Proc  # noqa: E402
from tenants import restricted_pod  # noqa: E402

USER, TOKEN = "alice", "alice-token-0123456789"
VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


def build():
    subprocess.run(["cmake", "--preset", "release"], cwd=REPO, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", "--preset", "release", "--target", "landlord"],
                   cwd=REPO, check=True, capture_output=True)


class Api:
    """Bare keep-alive HTTPS requests to the API server, one connection per thread."""

    def __init__(self, cluster, user="admin", token=None):
        self.cluster, self.user, self.token = cluster, user, token
        self.local = threading.local()

    def conn(self):
        c = getattr(self.local, "conn", None)
        if c is None:
            if self.token:
                ctx = ssl.create_default_context(cafile=self.cluster.env["CA"])
                c = http.client.HTTPSConnection("127.0.0.1", int(self.cluster.env["API_PORT"]),
                                                context=ctx)
            else:
                c = self.cluster.connection(self.user)
            self.local.conn = c
        return c

    def call(self, method, path, body=None, ok=(200, 201)):
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in range(20):
            try:
                c = self.conn()
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
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


def tenant_body(t, per):
    n = f"t{t:04d}"
    return {
        "apiVersion": "landlord.dev/v1alpha1", "kind": "Tenant", "metadata": {"name": n},
        "spec": {
            "plan": "gold",
            "accessControl": {"owners": {"users": [f"{n}-owner", f"{n}-ops"],
                                         "groups": [f"{n}-devs"]},
                              "editors": {"users": [f"{n}-dev", USER]}},
            "namespaces": {"withTenantPrefix": [f"ns{i}" for i in range(per)]},
            "allowed": {"registries": [f"ghcr.io/{n}", "docker.io/library"],
                        "storageClasses": ["fast"], "ingressClasses": ["nginx"],
                        "hosts": {"names": [f"app.{n}.example.com", f"*.apps.{n}.example.com"],
                                  "regex": f"([a-z0-9-]+|\\*)\\.{n}\\.example\\.com"}},
            "denied": {"serviceAccounts": ["builder"]},
            "services": {"nodePort": False}}}


def namespace_body(t, i):
    n = f"t{t:04d}"
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": f"{n}-ns{i}",
                         "labels": {"landlord.dev/tenant": n, "landlord.dev/kind": f"ns{i}",
                                    "landlord.dev/managed-by": "landlord",
                                    "pod-security.kubernetes.io/enforce": "restricted"},
                         "annotations": {"landlord.dev/managed-keys": "team"}}}


def ingress_body(t, i):
    n = f"t{t:04d}"
    host = f"{'*.apps.' if i else 'app.'}{n}.example.com"
    path = {"path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": f"web{i}"},
            "spec": {"ingressClassName": "nginx",
                     "rules": [{"host": host, "http": {"paths": [path]}}],
                     "tls": [{"hosts": [host], "secretName": "web-tls"}]}}


def install(cluster):
    install_landlord(cluster, policies=False)
    subprocess.run([CLUSTER / "kcm.sh", cluster.dir, "stop"], check=True)


def populate(cluster, args):
    """Tenants, Namespaces, Ingresses as admin on W threads; returns seconds per kind."""
    api, per, out = Api(cluster), args.namespaces // args.tenants, {}
    api.call("POST", "/apis/landlord.dev/v1alpha1/plans",
             {"apiVersion": "landlord.dev/v1alpha1", "kind": "Plan",
              "metadata": {"name": "gold"}, "spec": {"maxNamespaces": 20}})
    jobs = {
        "tenants": [("/apis/landlord.dev/v1alpha1/tenants", tenant_body(t, per))
                    for t in range(args.tenants)],
        "namespaces": [("/api/v1/namespaces", namespace_body(t, i))
                       for t in range(args.tenants) for i in range(per)],
        "ingresses": [(f"/apis/networking.k8s.io/v1/namespaces/t{t:04d}-ns0/ingresses",
                       ingress_body(t, i)) for t in range(args.tenants) for i in range(2)],
    }
    with concurrent.futures.ThreadPoolExecutor(args.populate_threads) as pool:
        for kind, items in jobs.items():
            t0 = time.monotonic()
            list(pool.map(lambda j: api.call("POST", *j), items))
            out[kind] = {"objects": len(items), "seconds": round(time.monotonic() - t0, 2)}
            print(f"created {len(items)} {kind} in {out[kind]['seconds']} s "
                  f"({len(items) / out[kind]['seconds']:.0f}/s, {args.populate_threads} "
                  "threads)", flush=True)
    for c in range(args.clients):
        ns = f"t{c:04d}-ns0"
        api.call("POST", f"/api/v1/namespaces/{ns}/serviceaccounts",
                 {"metadata": {"name": "default"}})
        api.call("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
                 {"metadata": {"name": "alice-edit"},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                              "name": "edit"},
                  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                "name": USER}]})
    return out


def pod_body(name, c, image=None):
    body = restricted_pod(name)
    body["spec"]["containers"][0]["image"] = image or f"ghcr.io/t{c:04d}/app:1"
    return body


def webhook_refuses(cluster):
    """A dry-run Pod from a registry the tenant does not allow: refused by the webhook?"""
    st, body = Api(cluster, token=TOKEN).call(
        "POST", "/api/v1/namespaces/t0000-ns0/pods?dryRun=All",
        pod_body("probe", 0, image="quay.io/x/y:1"), ok=None)
    if st == 403 and "landlord.dev" in (body or {}).get("message", ""):
        return True
    if st == 201:
        return False
    raise RuntimeError(f"unexpected answer to the probe pod: {st} {body}")


def wait_until(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.1)
    raise SystemExit(f"timed out waiting for {what}")


def client_main(env, c, prefix, n, barrier, q):
    """One client: P pod creates in its namespace, one at a time; latencies in ns to @q."""
    ctx = ssl.create_default_context(cafile=env["CA"])
    conn = http.client.HTTPSConnection("127.0.0.1", int(env["API_PORT"]), context=ctx)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
               "Accept": "application/json"}
    path = f"/api/v1/namespaces/t{c:04d}-ns0/pods"
    bodies = [json.dumps(pod_body(f"{prefix}-{c}-{i}", c)).encode() for i in range(n)]
    conn.request("GET", path + "?limit=1", headers=headers)  # the handshake, untimed
    conn.getresponse().read()
    lat, errors = [], 0
    barrier.wait()
    for b in bodies:
        t0 = time.perf_counter_ns()
        conn.request("POST", path, body=b, headers=headers)
        r = conn.getresponse()
        r.read()
        t1 = time.perf_counter_ns()
        if r.status == 201:
            lat.append(t1 - t0)
        else:
            errors += 1
    q.put((c, lat, errors))


TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """utime + stime of @pid in seconds (0 when it is gone)."""
    try:
        f = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[11]) + int(f[12])) / TICK


def busy_s():
    """CPU seconds the whole machine spent (all cores) so far."""
    f = pathlib.Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    return (sum(int(x) for x in f) - int(f[3]) - int(f[4])) / TICK


def run_round(cluster, args, prefix, pids=None):
    """One round; @pids {name: pid}: CPU seconds each spent in the creates, in the result."""
    ctx = multiprocessing.get_context("fork")
    barrier, q = ctx.Barrier(args.clients), ctx.Queue()
    procs = [ctx.Process(target=client_main,
                         args=(cluster.env, c, prefix, args.pods, barrier, q))
             for c in range(args.clients)]
    pids = pids or {}
    cpu0 = {k: cpu_s(v) for k, v in pids.items()}
    machine0 = busy_s()
    t0 = time.monotonic()
    for p in procs:
        p.start()
    res = [q.get() for _ in procs]
    wall = time.monotonic() - t0
    cpu = {k: cpu_s(v) - cpu0[k] for k, v in pids.items()}
    cpu["machine"] = busy_s() - machine0
    for p in procs:
        p.join()
    lat = sorted(x for _, lats, _ in res for x in lats)
    errors = sum(e for _, _, e in res)
    api = Api(cluster)
    for c in range(args.clients):  # unscheduled pods go at once
        api.call("DELETE", f"/api/v1/namespaces/t{c:04d}-ns0/pods")
    for c in range(args.clients):
        wait_until(lambda: not api.call("GET", f"/api/v1/namespaces/t{c:04d}-ns0/pods?limit=1")
                   [1]["items"], 60, "pods deleted")
    return lat, errors, wall, cpu


def pct(xs, p):
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))] / 1e6 if xs else float("nan")


def set_webhook(cluster, saved, on):
    api = Api(cluster)
    if on:
        api.call("POST", VWC, saved)
    else:
        api.call("DELETE", f"{VWC}/landlord")
    wait_until(lambda: webhook_refuses(cluster) == on, 30,
               f"the API server to {'call' if on else 'stop calling'} the webhook")


class RssSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.samples, self.stop = pid, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.samples.append(proc_status_kib(self.pid, "VmRSS"))
            time.sleep(0.2)


def memory(pid):
    m = {f: proc_status_kib(pid, f) for f in ("VmHWM", "VmRSS", "RssAnon", "RssFile",
                                               "Threads")}
    m["Threads"] = int(pathlib.Path(f"/proc/{pid}/status").read_text()
                       .split("Threads:")[1].split()[0])
    rollup = pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]
    m["smaps_rollup_kib"] = {ln.split(":")[0]: int(ln.split()[1]) for ln in rollup
                             if ln.endswith("kB")}
    return m


def start_webhook(cluster, tmp):
    wh = Proc([BUILD / "landlord", "webhook", "--kubeconfig", cluster.kubeconfig("landlord"),
               "--webhook-addr", "127.0.0.1:0", "--webhook-url", "https://127.0.0.1:0",
               "--probe-addr", "127.0.0.1:0"], tmp / "webhook.log")
    wh.wait_probe()
    wh.wait_record("webhook listening")
    t0 = time.monotonic()
    wait_until(lambda: webhook_refuses(cluster), 120, "the webhook's caches synced")
    return wh, time.monotonic() - t0


def measure(cluster, args, tmp):
    wh, sync_s = start_webhook(cluster, tmp)
    res = {"synced_s": round(sync_s, 2), "memory_synced": memory(wh.pid)}
    saved = Api(cluster).call("GET", f"{VWC}/landlord")[1]
    saved["metadata"] = {k: saved["metadata"][k] for k in ("name", "labels")}
    sampler = RssSampler(wh.pid)
    sampler.start()
    pids = {"kube-apiserver": int(cluster.env["APISERVER_PID"]),
            "etcd": int(cluster.env["ETCD_PID"]), "webhook": wh.pid}
    run_round(cluster, args, "warm")  # connections, caches, the API server's webhook client
    rounds, order = [], [True, False, False, True] * ((args.rounds + 1) // 2)
    on = True
    for i, want in enumerate(order[:2 * args.rounds]):
        if want != on:
            set_webhook(cluster, saved, want)
            on = want
        lat, errors, wall, cpu = run_round(cluster, args, f"r{i}", pids)
        r = {"webhook": on, "n": len(lat), "errors": errors, "wall_s": round(wall, 2),
             "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "lat": lat,
             "cpu_ms_per_pod": {k: round(v * 1000 / max(1, len(lat)), 3)
                                for k, v in cpu.items()}}
        rounds.append(r)
        print(f"round {i} webhook={'on ' if on else 'off'}: {len(lat)} pods in {wall:.1f} s, "
              f"p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms, errors {errors}, CPU ms "
              f"per pod {r['cpu_ms_per_pod']}, "
              f"webhook VmRSS {proc_status_kib(wh.pid, 'VmRSS') / 1024:.1f} MiB", flush=True)
    sampler.stop.set()
    sampler.join()
    res["memory_after_load"] = memory(wh.pid)
    res["rss_max_during_load_kib"] = max(sampler.samples)
    res["admission_requests"] = wh.metric("landlord_admission_requests_total")
    if on:
        set_webhook(cluster, saved, False)  # landlord removes only what it registered itself
    wh.stop()
    Api(cluster).call("DELETE", "/apis/admissionregistration.k8s.io/v1/"
                      "mutatingwebhookconfigurations/landlord", ok=(200, 404))
    res["rounds"] = rounds
    return res


def summarize(res):
    s = {}
    for side, on in (("webhook", True), ("floor", False)):
        lat = sorted(x for r in res["rounds"] if r["webhook"] == on for x in r["lat"])
        mine = [r for r in res["rounds"] if r["webhook"] == on]
        s[side] = {"n": len(lat), "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99),
                   "round_p50s": [r["p50_ms"] for r in mine],
                   "pods_per_s": median([r["n"] / r["wall_s"] for r in mine]),
                   "cpu_ms_per_pod": {k: median([r["cpu_ms_per_pod"][k] for r in mine])
                                      for k in mine[0]["cpu_ms_per_pod"]}}
    s["added_p50_ms"] = s["webhook"]["p50_ms"] - s["floor"]["p50_ms"]
    s["added_p99_ms"] = s["webhook"]["p99_ms"] - s["floor"]["p99_ms"]
    ons = [r["p50_ms"] for r in res["rounds"] if r["webhook"]]
    offs = [r["p50_ms"] for r in res["rounds"] if not r["webhook"]]
    s["added_p50_pairs_ms"] = [a - b for a, b in zip(ons, offs)]
    for r in res["rounds"]:
        del r["lat"]
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tenants", type=int, default=1000)
    ap.add_argument("--namespaces", type=int, default=10000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--pods", type=int, default=250, help="per client and round")
    ap.add_argument("--rounds", type=int, default=6, help="rounds per phase")
    ap.add_argument("--populate-threads", type=int, default=16)
    ap.add_argument("--state-dir", default="/tmp/landlord-bench-webhook-pods")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    build()
    tmp = pathlib.Path(args.state_dir + "-logs")
    tmp.mkdir(parents=True, exist_ok=True)
    with Cluster(args.state_dir) as cluster:
        install(cluster)
        created = populate(cluster, args)
        res = measure(cluster, args, tmp)
    res["populate"] = created
    res["summary"] = s = summarize(res)
    mem = res["memory_after_load"]
    print(json.dumps({k: v for k, v in res.items() if k != "rounds"}, indent=1))
    print(f"webhook p50 {s['webhook']['p50_ms']:.2f} p99 {s['webhook']['p99_ms']:.2f} | floor "
          f"p50 {s['floor']['p50_ms']:.2f} p99 {s['floor']['p99_ms']:.2f} | added p50 "
          f"{s['added_p50_ms']:.3f} ms | VmHWM {mem['VmHWM'] / 1024:.1f} MiB VmRSS "
          f"{mem['VmRSS'] / 1024:.1f} MiB")
    if args.no_record:
        return
    save_json("webhook_pods", {"args": vars(args), **res})
    record_doc(args, res)


def record_doc(args, res):
    s, m0, m1 = res["summary"], res["memory_synced"], res["memory_after_load"]
    w, f = s["webhook"], s["floor"]
    mib = lambda kib: f"{kib / 1024:.1f} MiB"  # noqa: E731
    ru = m1["smaps_rollup_kib"]

    def cpu(side):
        c = side["cpu_ms_per_pod"]
        return f"{c['kube-apiserver']:.2f}, {c['etcd']:.2f}, {c['webhook']:.2f} ms"
    record("Pod creates through the API server with the webhook", f"""
`bench/webhook_pods.py`: {args.clients} clients, each a process on one keep-alive HTTPS
connection as the token user `alice` (an editor of the tenant, not an administrator: the
webhook's match conditions exempt those), POST restricted Pods one at a time into a namespace of
its own tenant (registry allowed, so each pod is admitted and stays Pending: no kubelet); the
pods are deleted after each round. {args.rounds} rounds of {args.pods} pods per client with the
webhook registered and {args.rounds} with its ValidatingWebhookConfiguration deleted (the floor:
the same control plane without the webhook), alternating ABBA, after a warm-up round. The
webhook is `landlord webhook` (compact cache, landlord's identity), its cache loaded with
{args.tenants:,} Tenants, {args.namespaces:,} labelled Namespaces and {2 * args.tenants:,}
Ingresses created through the API server by admin with no landlord controller running
(kube-controller-manager stopped, admission policies not installed: both would act in both
phases alike). Per request percentiles of each phase, pooled over its rounds; 2 shared cores.

| measure | with webhook | floor (no webhook) | added / target |
|---|---|---|---|
| pod create p50 | {w['p50_ms']:.2f} ms | {f['p50_ms']:.2f} ms | **{s['added_p50_ms']:+.2f} ms** \
(target <= 1 ms; ratio {w['p50_ms'] / f['p50_ms']:.2f}x) |
| pod create p99 | {w['p99_ms']:.2f} ms | {f['p99_ms']:.2f} ms | {s['added_p99_ms']:+.2f} ms |
| p50 by round | {', '.join(f'{x:.2f}' for x in w['round_p50s'])} | \
{', '.join(f'{x:.2f}' for x in f['round_p50s'])} | pairs: \
{', '.join(f'{x:+.2f}' for x in s['added_p50_pairs_ms'])} ms (median \
{median(s['added_p50_pairs_ms']):+.2f}) |
| pods created per second (8 clients) | {w['pods_per_s']:.0f} | {f['pods_per_s']:.0f} | \
{f['pods_per_s'] / w['pods_per_s']:.2f}x the time per pod |
| CPU per pod: kube-apiserver, etcd, webhook | {cpu(w)} | {cpu(f)} | |
| CPU per pod, the whole machine (2 cores, other work included) | {w['cpu_ms_per_pod']['machine']:.2f} ms | \
{f['cpu_ms_per_pod']['machine']:.2f} ms | \
{w['cpu_ms_per_pod']['machine'] - f['cpu_ms_per_pod']['machine']:+.2f} ms |
| `landlord webhook` peak RSS (VmHWM) | {mib(m1['VmHWM'])} | | target <= 20 MiB |
| its RSS after the load (VmRSS) / private (RssAnon) | {mib(m1['VmRSS'])} / \
{mib(m1['RssAnon'])} | | |
| its RSS once synced, before the load | {mib(m0['VmRSS'])} | | |
| its PSS after the load (smaps_rollup) | {mib(ru.get('Pss', 0))} | | |

Populating the control plane (admin, {args.populate_threads} threads, bare HTTPS):
{', '.join(f"{v['objects']:,} {k} in {v['seconds']} s" for k, v in res['populate'].items())};
the webhook's caches synced {res['synced_s']} s after it listened. Raw numbers:
`bench/results/webhook_pods.json`.
""")


if __name__ == "__main__":
    main()
