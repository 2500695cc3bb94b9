#!/usr/bin/env python3
"""What does a Plan update cost the Tenant controller? A diagnosis (not part of `make bench`).

A private control plane with landlord's CRDs, RBAC and policies, `landlord run` under its own
identity, and N Tenants on one Plan (bench/quota_window.py's Plan and Tenants), provisioned and
quiet. Then, each step counted over the seconds after it from landlord's own metrics
(landlord_reconcile_total{controller="tenant"}, landlord_reconcile_duration_seconds, write
requests) and its CPU time:

  idle           nothing happens;
  usage change   one ConfigMap in one tenant namespace: that Tenant's status.quota.used and the
                 Plan's status (its totals) change, one write each;
  plan metadata  an annotation on the Plan: its generation and spec are unchanged, nothing a
                 Tenant is built from changes;
  churn          a ConfigMap every 0.1 s into the tenants' namespaces in turn, for 10 s: usage
                 changing the way a busy cluster's does; the Plan's status is written at most
                 once a second.

A Tenant reconcile is needed only by the Tenant whose usage changed (and by every Tenant of a
Plan whose spec changed). Results: bench/results/plan_requeue.json.
"""

import argparse
import json
import os
import threading
import time

import quota_window as qw
import tenants as tb
from common import REPO, save_json


def counts(proc):
    m = proc.metrics()

    def total(name, **want):
        return sum(v for (n, labels), v in m.items()
                   if n == name and all(dict(labels).get(k) == x for k, x in want.items()))
    writes = sum(total("landlord_api_requests_total", verb=v)
                 for v in ("CREATE", "UPDATE", "PATCH", "APPLY", "DELETE"))
    return {"tenant_reconciles": total("landlord_reconcile_total", controller="tenant"),
            "tenant_reconcile_seconds": total("landlord_reconcile_duration_seconds_sum",
                                              controller="tenant"),
            "writes": writes, "cpu_seconds": tb.cpu_seconds(proc.pid), "t": time.monotonic()}


def delta(a, b):
    return {k: round(b[k] - a[k], 3) for k in a}


def step(proc, what, action, seconds=8):
    before = counts(proc)
    action()
    time.sleep(seconds)
    d = delta(before, counts(proc))
    print(f"{what}: {d}", flush=True)
    return d


def churn(cluster, n, seconds):
    """A ConfigMap every 0.1 s into tenant namespaces in turn; returns how many were made."""
    made, stop = [0], threading.Event()

    def run():
        i = 0
        while not stop.is_set():
            cluster.kubectl("create", "configmap", f"churn-{i}", "-n", f"pr-{i % n}-dev")
            made[0] = i = i + 1
            time.sleep(0.1)
    th = threading.Thread(target=run)
    th.start()
    time.sleep(seconds)
    stop.set()
    th.join()
    return made[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tenants", type=int, default=1000)
    ap.add_argument("--state-dir", default=str(REPO / "build" / "bench-plan-requeue"))
    args = ap.parse_args()
    args.threads, args.floor_threads, args.timeout = 4, 16, 1200
    args.landlord_args, args.landlord_env = "", []
    n, out = args.tenants, {"tenants": args.tenants}
    with tb.RetriedCluster(args.state_dir) as cluster:
        qw.install(cluster)
        qw.create_plan(cluster, qw.PLAN)
        proc = tb.start_landlord(cluster, args, os.path.join(args.state_dir, "landlord.log"))
        try:
            res = qw.bare_tenants(cluster, "apply", "pr", args)
            out["provisioned_seconds"] = res["seconds"]
            qw.settle(cluster)
            qw.wait_quiet(cluster)
            time.sleep(5)
            out["idle"] = step(proc, "idle", lambda: None)
            out["usage_change"] = step(proc, "one usage change", lambda: cluster.kubectl(
                "create", "configmap", "one", "-n", "pr-7-dev"))
            out["plan_metadata"] = step(proc, "plan metadata", lambda: cluster.kubectl(
                "annotate", "plan", qw.PLAN, "bench.landlord.dev/touched=1"))
            before = counts(proc)
            made = churn(cluster, n, 10)
            d = delta(before, counts(proc))
            out["churn"] = {"usage_changes_per_s": made / d["t"],
                            **{f"{k}_per_s": v / d["t"] for k, v in d.items() if k != "t"}}
            print(f"churn: {out['churn']}", flush=True)
        finally:
            proc.stop()
    save_json("plan_requeue", out)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
