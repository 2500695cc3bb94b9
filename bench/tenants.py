#!/usr/bin/env python3
"""Tenant provisioning against the floor: time to Ready, peak memory, CPU and API writes.

Each run starts a private control plane, installs landlord's CRDs, RBAC and admission policies
and one Plan (resourceQuota.hard and a limitRange), then, in this order:
  landlord: `landlord run --leader-elect=false` under its least-privilege identity, caches synced;
            bare_tenants --mode apply POSTs N Tenants (3 withTenantPrefix namespaces and a
            sandbox each, one owner user "owner-<i>") and watches until every one has
            Ready=True. Measured: that time, landlord's VmHWM and CPU time (utime+stime from
            /proc), and its write requests (landlord_api_requests_total) per tenant.
            landlord is stopped before the floor starts.
  floor:    bare_tenants --mode floor, fresh Tenant names, as cluster admin: POSTs the same
            Tenants and everything docs/tenants.md says they become (Namespace with labels,
            ResourceQuota with the namespace's share, LimitRange, NetworkPolicy, RoleBinding
            once the quota's status.hard is filled in, ClusterRole and ClusterRoleBinding, the
            Tenant status), concurrently on T threads of the library's client, POSTs only.
Between the two, kube-controller-manager settles (every namespace has its default
ServiceAccount). Finally the end state of both is counted and checked.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

from common import BUILD, REPO, Cluster, install_landlord, median, proc_status_kib, record, save_json

sys.path.insert(0, str(REPO / "tests" / "e2e"))
from procs import Proc, parse_metrics  # noqa: E402

KINDS = ["dev", "stage", "prod"]
PLAN = "bench"
PLAN_HARD = {"pods": "40", "requests.cpu": "8", "requests.memory": "16Gi",
             "count/configmaps": "100", "count/secrets": "100"}
# The plan split evenly among a tenant's 4 namespaces (docs/quota.md), as the floor writes it.
NS_HARD = {"pods": "10", "requests.cpu": "2", "requests.memory": "4Gi",
           "count/configmaps": "25", "count/secrets": "25"}
LIMITS = [{"type": "Container",
           "default": {"cpu": "500m", "memory": "512Mi"},
           "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
           "max": {"cpu": "2", "memory": "4Gi"}}]
WRITE_VERBS = ("CREATE", "UPDATE", "PATCH", "APPLY", "DELETE")
TICK = os.sysconf("SC_CLK_TCK")
# landlord without its client-side rate limit getting in the way (the default is 50 QPS).
FAST = "--kube-api-qps 1000 --kube-api-burst 2000"


def bare_tenants(cluster, mode, prefix, args, user):
    argv = [BUILD / "bare_tenants", "--kubeconfig", cluster.kubeconfig(user), "--mode", mode,
            "--prefix", prefix, "--tenants", args.tenants, "--plan", PLAN,
            "--kinds", ",".join(KINDS), "--plan-hard", json.dumps(PLAN_HARD),
            "--ns-hard", json.dumps(NS_HARD), "--limits", json.dumps(LIMITS),
            "--threads", args.threads, "--timeout-seconds", args.timeout]
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise SystemExit(f"bare_tenants --mode {mode} failed ({p.returncode}):\n"
                         f"{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
    res = json.loads(lines[-1])
    res["ok"] = p.returncode == 0 and res["done"] == res["tenants"]
    if not res["ok"]:
        print(f"bare_tenants --mode {mode}: {res['done']} of {res['tenants']} done, "
              f"{res['failures']} failures\n{p.stderr[-2000:]}", flush=True)
    return res


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def api_counts(proc):
    """landlord_api_requests_total by verb (all clients, all codes)."""
    out = {}
    for (name, labels), v in proc.metrics().items():
        if name == "landlord_api_requests_total":
            verb = dict(labels)["verb"]
            out[verb] = out.get(verb, 0) + v
    return out


def metric_by(proc, name, label):
    out = {}
    for (n, labels), v in proc.metrics().items():
        if n == name:
            key = dict(labels).get(label, "")
            out[key] = out.get(key, 0) + v
    return out


class Sampler(threading.Thread):
    """VmRSS of a process every 0.5 s, to show where its peak comes from."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.samples, self.stop = pid, [], threading.Event()
        self.t0 = time.monotonic()

    def run(self):
        while not self.stop.wait(0.5):
            self.samples.append((round(time.monotonic() - self.t0, 1),
                                 proc_status_kib(self.pid, "VmRSS")))


def apiserver_writes(cluster):
    """The API server's own count of write requests, by verb, resource and subresource (every
    client: landlord, kube-controller-manager, the benchmark's client)."""
    conn = cluster.connection()
    conn.request("GET", "/metrics")
    r = conn.getresponse()
    text = r.read().decode()
    out = {}
    for (name, labels), v in parse_metrics(text).items():
        lab = dict(labels)
        if name == "apiserver_request_total" and lab.get("verb") in (
                "POST", "PUT", "PATCH", "APPLY", "DELETE"):
            key = " ".join(x for x in (lab["verb"], lab.get("resource", ""),
                                       lab.get("subresource", "")) if x)
            out[key] = out.get(key, 0) + v
    return out


def writes(counts):
    return sum(v for k, v in counts.items() if k in WRITE_VERBS)


def start_landlord(cluster, args, log):
    extra = args.landlord_args.split() if args.landlord_args else []
    env = dict(kv.split("=", 1) for kv in args.landlord_env)
    proc = Proc([BUILD / "landlord", "run", "--kubeconfig", cluster.kubeconfig("landlord"),
                 "--leader-elect", "false", "--probe-addr", "127.0.0.1:0",
                 "--webhook-addr", "127.0.0.1:0", *extra], log, env)
    proc.wait_probe()
    deadline = time.monotonic() + 120
    while proc.get("/readyz")[0] != 200:
        if time.monotonic() > deadline:
            raise SystemExit("landlord did not become ready")
        time.sleep(0.1)
    return proc


def restart_rss(cluster, args, tmp):
    """landlord started again over what it provisioned: caches hold the same objects, every
    Tenant is reconciled once with nothing to write. Separates the cache from the transient."""
    proc = start_landlord(cluster, args, os.path.join(tmp, "landlord-restart.log"))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if metric_by(proc, "landlord_workqueue_depth", "name").get("tenant", 1) == 0:
                break
            time.sleep(0.5)
        time.sleep(2)
        return {"rss_kib": proc_status_kib(proc.pid, "VmRSS"),
                "hwm_kib": proc_status_kib(proc.pid, "VmHWM"),
                "anon_kib": proc_status_kib(proc.pid, "RssAnon"),
                "writes": writes(api_counts(proc))}
    finally:
        proc.stop()


def landlord_run(cluster, args, tmp):
    extra = args.landlord_args.split() if args.landlord_args else []
    proc = start_landlord(cluster, args, os.path.join(tmp, "landlord.log"))
    try:
        before, cpu0 = api_counts(proc), cpu_seconds(proc.pid)
        rss0 = proc_status_kib(proc.pid, "VmRSS")
        hwm0 = proc_status_kib(proc.pid, "VmHWM")
        server0 = apiserver_writes(cluster)
        sampler = Sampler(proc.pid)
        sampler.start()
        res = bare_tenants(cluster, "apply", "lt", args, "admin")
        after, cpu1 = api_counts(proc), cpu_seconds(proc.pid)
        sampler.stop.set()
        server1 = apiserver_writes(cluster)
        hwm, rss = proc_status_kib(proc.pid, "VmHWM"), proc_status_kib(proc.pid, "VmRSS")
        time.sleep(args.linger)  # writes that follow Ready (events, plan status) count too
        late = api_counts(proc)
        res.update({
            "landlord_args": extra,
            "rss_before_kib": rss0, "hwm_before_kib": hwm0, "hwm_kib": hwm, "rss_kib": rss,
            "rss_samples": sampler.samples,
            "informer_objects": metric_by(proc, "landlord_informer_objects", "resource"),
            "reconciles": metric_by(proc, "landlord_reconcile_total", "result"),
            "workqueue_adds": metric_by(proc, "landlord_workqueue_adds_total", "name"),
            "workqueue_retries": metric_by(proc, "landlord_workqueue_retries_total", "name"),
            "reconcile_seconds": metric_by(proc, "landlord_reconcile_duration_seconds_sum",
                                           "controller"),
            "reconcile_count": metric_by(proc, "landlord_reconcile_duration_seconds_count",
                                         "controller"),
            "anon_kib": proc_status_kib(proc.pid, "RssAnon"),
            "landlord_cpu_seconds": cpu1 - cpu0,
            "landlord_cpu_total_seconds": cpu_seconds(proc.pid),
            "requests_by_verb": {k: late.get(k, 0) - before.get(k, 0) for k in late},
            "writes_to_ready": writes(after) - writes(before),
            "apiserver_writes_to_ready": {k: v - server0.get(k, 0) for k, v in server1.items()
                                          if v != server0.get(k, 0)},
            "writes_total": writes(late) - writes(before),
            "errors": [r for r in proc.records() if r.get("level") == "error"][:5],
        })
        return res
    finally:
        proc.stop()


def settle(cluster, timeout=600):
    """Wait until kube-controller-manager has given every namespace its default ServiceAccount
    and filled in every ResourceQuota's status."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ns = json.loads(cluster.kubectl("get", "namespaces", "-o", "json").stdout)["items"]
        sas = json.loads(cluster.kubectl("get", "serviceaccounts", "-A", "--field-selector",
                                         "metadata.name=default", "-o", "json").stdout)["items"]
        rqs = json.loads(cluster.kubectl("get", "resourcequotas", "-A", "-o", "json").stdout)
        pending = [q for q in rqs["items"]
                   if q.get("status", {}).get("hard") != q["spec"].get("hard")]
        if len(sas) >= len(ns) and not pending:
            return
        time.sleep(1)
    raise SystemExit("kube-controller-manager did not settle")


def end_state(cluster, prefix, tenants):
    """Counts of what exists for the Tenants named <prefix>-<i>, checked against the contract."""
    def items(*what):
        return json.loads(cluster.kubectl("get", *what, "-o", "json").stdout)["items"]

    mine = lambda o: (o["metadata"].get("labels") or {}).get(  # noqa: E731
        "landlord.dev/tenant", "").startswith(prefix + "-")
    count = {}
    for kind, what in (("namespaces", ("namespaces",)),
                       ("resourcequotas", ("resourcequotas", "-A")),
                       ("limitranges", ("limitranges", "-A")),
                       ("networkpolicies", ("networkpolicies", "-A")),
                       ("rolebindings", ("rolebindings", "-A")),
                       ("clusterroles", ("clusterroles",)),
                       ("clusterrolebindings", ("clusterrolebindings",))):
        objs = [o for o in items(*what) if mine(o)]
        count[kind] = len(objs)
        if kind == "resourcequotas":
            count["quotas_in_force"] = sum(1 for o in objs
                                           if o.get("status", {}).get("hard") == o["spec"]["hard"])
    ready = 0
    for t in items("tenants.landlord.dev"):
        if t["metadata"]["name"].startswith(prefix + "-"):
            conds = (t.get("status") or {}).get("conditions") or []
            ready += any(c["type"] == "Ready" and c["status"] == "True" for c in conds)
    count["tenants_ready"] = ready
    nns = len(KINDS) + 1
    want = {"namespaces": nns * tenants, "resourcequotas": nns * tenants,
            "quotas_in_force": nns * tenants, "limitranges": nns * tenants,
            "networkpolicies": nns * tenants, "rolebindings": nns * tenants,
            "clusterroles": tenants, "clusterrolebindings": tenants, "tenants_ready": tenants}
    count["matches_contract"] = all(count[k] == v for k, v in want.items())
    return count


class RetriedCluster(Cluster):
    """start.sh picks each port with a separate bind-and-close, so two of them can come out
    equal and a server then fails to listen; start.sh stops what it started, so try again."""

    def __enter__(self):
        for attempt in range(3):
            try:
                return super().__enter__()
            except subprocess.CalledProcessError as e:
                if attempt == 2:
                    raise
                print(f"start.sh failed ({e.stderr.strip()[-200:]}); trying again", flush=True)


def one_run(i, args, variant):
    state = f"{args.state_dir}-{i}"
    args.landlord_args = variant
    with RetriedCluster(state) as cluster:
        install_landlord(cluster)
        ll = landlord_run(cluster, args, state)
        ll["restart"] = restart_rss(cluster, args, state)
        settle(cluster)
        fl = bare_tenants(cluster, "floor", "ft", args, "admin")
        settle(cluster)
        ll["end_state"] = end_state(cluster, "lt", args.tenants)
        fl["end_state"] = end_state(cluster, "ft", args.tenants)
    ratio = ll["seconds"] / fl["seconds"] if ll["ok"] and fl["ok"] else float("nan")
    print(f"[{variant or 'default flags'}] run {i + 1}: landlord {ll['seconds']:.2f}s "
          f"({ll['done']} ready, HWM {ll['hwm_kib'] / 1024:.1f} MiB, restarted "
          f"{ll['restart']['rss_kib'] / 1024:.1f} MiB, CPU {ll['landlord_cpu_seconds']:.2f}s, "
          f"{ll['writes_total'] / args.tenants:.1f} writes/tenant) | floor {fl['seconds']:.2f}s "
          f"({(fl['writes'] - args.tenants) / args.tenants:.1f} writes/tenant, last quota in "
          f"force {fl['quota_seconds'] - fl['posted_seconds']:.2f}s after the last object) | "
          f"ratio {ratio:.2f}x | end state {ll['end_state']['matches_contract']}/"
          f"{fl['end_state']['matches_contract']}", flush=True)
    return ll, fl


def summarize(lls, fls, n):
    return {
        "median_landlord_s": median([r["seconds"] for r in lls]),
        "median_floor_s": median([r["seconds"] for r in fls]),
        "median_ratio": median([a["seconds"] / b["seconds"] for a, b in zip(lls, fls)]),
        "max_hwm_kib": max(r["hwm_kib"] for r in lls),
        "median_hwm_kib": median([r["hwm_kib"] for r in lls]),
        "median_rss_before_kib": median([r["rss_before_kib"] for r in lls]),
        "median_restart_rss_kib": median([r["restart"]["rss_kib"] for r in lls]),
        "median_landlord_cpu_s": median([r["landlord_cpu_seconds"] for r in lls]),
        "median_floor_cpu_s": median([r["cpu_seconds"] for r in fls]),
        "writes_per_tenant_to_ready": median([r["writes_to_ready"] for r in lls]) / n,
        "writes_per_tenant_total": median([r["writes_total"] for r in lls]) / n,
        "floor_writes_per_tenant": median([r["writes"] - n for r in fls]) / n,
        "floor_quota_lag_s": median([r["quota_seconds"] - r["posted_seconds"] for r in fls]),
        "tenant_reconcile_busy": median([r["reconcile_seconds"].get("tenant", 0) / r["seconds"]
                                         for r in lls]),
        "end_state_ok": all(r["end_state"]["matches_contract"] for r in lls + fls),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tenants", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4, help="floor (and apply) client threads")
    ap.add_argument("--timeout", type=int, default=900, help="seconds until Ready, per side")
    ap.add_argument("--linger", type=float, default=5.0,
                    help="seconds after Ready in which landlord's writes still count")
    ap.add_argument("--landlord-args", action="append", metavar="FLAGS",
                    help="a landlord configuration to measure (repeatable); default: landlord's "
                    f"defaults, then '{FAST}'")
    ap.add_argument("--landlord-env", action="append", default=[], metavar="K=V",
                    help="environment for landlord, e.g. MALLOC_ARENA_MAX=2 (repeatable)")
    ap.add_argument("--state-dir", default=str(REPO / "build" / "bench-tenants"))
    ap.add_argument("--no-record", action="store_true", help="do not write docs and results")
    args = ap.parse_args()
    variants = args.landlord_args or ["", FAST]

    n, results, failed = args.tenants, [], False
    for variant in variants:
        lls, fls = [], []
        for i in range(args.runs):
            ll, fl = one_run(i, args, variant)
            lls.append(ll)
            fls.append(fl)
        entry = {"landlord_args": variant, "landlord": lls, "floor": fls}
        if all(r["ok"] for r in lls + fls):
            entry.update(summarize(lls, fls, n))
        else:
            failed = True
        results.append(entry)
    result = {"tenants": n, "namespaces_per_tenant": len(KINDS) + 1, "runs": args.runs,
              "threads": args.threads, "landlord_env": args.landlord_env,
              "plan_hard": PLAN_HARD, "variants": results}
    with open(f"{args.state_dir}-result.json", "w") as f:
        json.dump(result, f, indent=2)
    for e in results:
        print(json.dumps({k: v for k, v in e.items() if k not in ("landlord", "floor")},
                         indent=1))
    if failed:
        sys.exit(f"some runs failed; nothing recorded (details: {args.state_dir}-result.json)")
    if args.no_record:
        return
    save_json("tenants", result)
    rows = []
    for e in results:
        flags = f"`{e['landlord_args']}`" if e["landlord_args"] else "default flags"
        rows.append(f"| {n} Tenants to Ready, {flags} | {e['median_landlord_s']:.1f} s | "
                    f"{e['median_floor_s']:.1f} s | **{e['median_ratio']:.2f}x** "
                    "(target <= 1.1x) |")
    d = results[0]
    cpu_ratio = d["median_landlord_cpu_s"] / d["median_floor_cpu_s"]
    rows += [
        f"| peak RSS (VmHWM, whole process life) | {d['max_hwm_kib'] / 1024:.1f} MiB | | "
        "target <= 24 MiB |",
        f"| RSS with caches synced, before the Tenants | {d['median_rss_before_kib'] / 1024:.1f}"
        " MiB | | |",
        f"| RSS after a restart over the provisioned state | "
        f"{d['median_restart_rss_kib'] / 1024:.1f} MiB | | what the caches hold |",
        f"| CPU time (utime+stime) while provisioning | {d['median_landlord_cpu_s']:.2f} s | "
        f"{d['median_floor_cpu_s']:.2f} s | {cpu_ratio:.2f}x |",
        f"| API writes per tenant, until Ready | {d['writes_per_tenant_to_ready']:.1f} | "
        f"{d['floor_writes_per_tenant']:.1f} | "
        f"{d['writes_per_tenant_to_ready'] / d['floor_writes_per_tenant']:.2f}x |",
        f"| API writes per tenant, including {args.linger:g} s after | "
        f"{d['writes_per_tenant_total']:.1f} | | |",
        f"| floor: last quota in force, after the last object was created | | "
        f"{max(d['floor_quota_lag_s'], 0):.2f} s | kube-controller-manager keeps up |",
        f"| landlord: Tenant reconcile time / wall time | {d['tenant_reconcile_busy']:.2f} | | "
        "16 workers |",
        f"| end state matches docs/tenants.md (counted) | "
        f"{'yes' if all(e['end_state_ok'] for e in results) else 'NO'} | yes | |",
    ]
    table = "\n".join(rows)
    record("Tenant provisioning", f"""
`python3 bench/tenants.py`: {n} Tenants on one Plan (5 quota resources, a LimitRange),
each with 3 `withTenantPrefix` namespaces and a sandbox for its one owner: {n * 4} namespaces,
each with a ResourceQuota, LimitRange, NetworkPolicy and RoleBinding, plus a ClusterRole and
ClusterRoleBinding per tenant. Every run has a private local control plane. landlord
(`landlord run --leader-elect=false`, least-privilege identity, caches synced before the clock
starts) goes first and is stopped; then the floor, with fresh names, once kube-controller-manager
has settled. Time runs from the first Tenant POST to the last Tenant with `Ready=True`; in both
cases the Tenants are POSTed by the same client (`tests/tools/bare_tenants.c`, {args.threads}
threads, HTTP/1.1 like landlord) and, for landlord, Ready is seen through one watch.

Floor: that C client on the library's client core (`lib/kube.c`), the fairest floor: no
informers or queues, it knows every answer. As cluster admin it POSTs each Tenant and every
object the Tenant becomes (Namespace with landlord's labels and annotations, ResourceQuota with
the namespace's share, LimitRange, NetworkPolicy, ClusterRole and ClusterRoleBinding), creates a
namespace's RoleBinding once kube-controller-manager has filled in its quota's `status.hard`
(seen through one ResourceQuota watch), and writes each Tenant's status with one merge patch.
kube-controller-manager runs with `--kube-api-qps=200 --kube-api-burst=400` (tests/cluster).
Medians of {args.runs} runs per configuration on 2 shared cores; each ratio is against the floor
measured in the same control plane.

| measure | landlord | floor | ratio / target |
|---|---|---|---|
{table}

Raw numbers (per run: requests by verb, reconciles, informer objects, RSS every 0.5 s):
`bench/results/tenants.json`.
""")


if __name__ == "__main__":
    main()
