#!/usr/bin/env python3
"""A restart over 1,000 provisioned tenants: memory once synced, writes, bytes per cached object.

One private control plane. landlord provisions N Tenants (bench/tenants.py's Plan and shape: 3
withTenantPrefix namespaces and a sandbox each, so 4N namespaces, each with a ResourceQuota,
LimitRange, NetworkPolicy and RoleBinding, plus a ClusterRole and binding per tenant), posted by
tests/tools/bare_tenants until every one is Ready; kube-controller-manager settles; landlord is
stopped. Then R times: a fresh `landlord run` over that state, until its caches are synced and
its Tenant queue has drained once, then idle for a moment; measured: VmRSS, RssAnon and PSS
(/proc/PID/smaps_rollup), its API writes (landlord_api_requests_total; a restart must write
nothing), and per informer the cached objects and bytes (landlord_informer_objects,
landlord_informer_bytes). Medians of the R restarts.
"""

import argparse
import os
import sys
import time

from common import REPO, median, record, save_json
from tenants import (RetriedCluster, api_counts, bare_tenants, end_state, install, metric_by,
                     settle, start_landlord, writes)


def smaps_rollup_kib(pid):
    out = {}
    for line in open(f"/proc/{pid}/smaps_rollup"):
        parts = line.split()
        if len(parts) == 3 and parts[2] == "kB":
            out[parts[0].rstrip(":")] = int(parts[1])
    return out


def wait_drained(proc, timeout=600):
    """The Tenant queue is empty and every Tenant has been reconciled at least once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        depth = metric_by(proc, "landlord_workqueue_depth", "name").get("tenant", 1)
        done = sum(metric_by(proc, "landlord_reconcile_total", "controller").values())
        if depth == 0 and done > 0:
            return
        time.sleep(0.5)
    raise SystemExit("landlord's Tenant queue did not drain after the restart")


def one_restart(cluster, args, i):
    proc = start_landlord(cluster, args, os.path.join(args.state_dir, f"restart-{i}.log"))
    try:
        wait_drained(proc)
        time.sleep(args.settle)
        roll = smaps_rollup_kib(proc.pid)
        objects = metric_by(proc, "landlord_informer_objects", "resource")
        nbytes = metric_by(proc, "landlord_informer_bytes", "resource")
        return {"rss_kib": roll["Rss"], "pss_kib": roll["Pss"],
                "anon_kib": roll["Anonymous"], "writes": writes(api_counts(proc)),
                "objects": objects, "bytes": nbytes,
                "errors": [r for r in proc.records() if r.get("level") == "error"][:5]}
    finally:
        proc.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tenants", type=int, default=1000)
    ap.add_argument("--restarts", type=int, default=5)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--state-dir", default=str(REPO / "build" / "bench-restart"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    args.landlord_args, args.landlord_env = "", []
    os.makedirs(args.state_dir, exist_ok=True)
    with RetriedCluster(args.state_dir + "-cluster") as cluster:
        install(cluster)
        first = start_landlord(cluster, args, os.path.join(args.state_dir, "provision.log"))
        try:
            res = bare_tenants(cluster, "apply", "lt", args, "admin")
        finally:
            first.stop()
        if not res["ok"]:
            sys.exit(f"provisioning failed: {res}")
        settle(cluster)
        state = end_state(cluster, "lt", args.tenants)
        print(f"provisioned {args.tenants} tenants in {res['seconds']:.1f}s: {state}", flush=True)
        runs = []
        for i in range(args.restarts):
            r = one_restart(cluster, args, i)
            runs.append(r)
            print(f"restart {i + 1}: RSS {r['rss_kib'] / 1024:.1f} MiB, anon "
                  f"{r['anon_kib'] / 1024:.1f}, PSS {r['pss_kib'] / 1024:.1f}, "
                  f"{r['writes']} writes", flush=True)
    kinds = sorted(runs[0]["objects"])
    per_kind = {k: {"objects": median([r["objects"].get(k, 0) for r in runs]),
                    "bytes": median([r["bytes"].get(k, 0) for r in runs])} for k in kinds}
    summary = {"tenants": args.tenants, "restarts": args.restarts, "end_state": state,
               "rss_kib": median([r["rss_kib"] for r in runs]),
               "anon_kib": median([r["anon_kib"] for r in runs]),
               "pss_kib": median([r["pss_kib"] for r in runs]),
               "max_writes": max(r["writes"] for r in runs), "per_kind": per_kind}
    print(summary)
    if args.no_record:
        return
    save_json("restart", {"summary": summary, "runs": runs})
    objs = sum(v["objects"] for v in per_kind.values())
    cached = sum(v["bytes"] for v in per_kind.values())
    rows = "\n".join(
        f"| {k} | {v['objects']:.0f} | {v['bytes'] / 1024:.0f} KiB | "
        f"{v['bytes'] / v['objects'] if v['objects'] else 0:.0f} B |"
        for k, v in per_kind.items())
    record("Restart over 1,000 tenants", f"""
`python3 bench/restart.py`: landlord provisions {args.tenants} Tenants (the shape of the tenant
benchmark: {args.tenants * 4} namespaces, each with a ResourceQuota, LimitRange, NetworkPolicy and
RoleBinding; a ClusterRole and binding per tenant) in a private control plane and is stopped; then
it is started {args.restarts} times over that state and measured once its caches are synced and
every Tenant has been reconciled. Medians of the {args.restarts} restarts.

| measure | landlord | target |
|---|---|---|
| RSS once synced | {summary['rss_kib'] / 1024:.1f} MiB | <= 48 MiB |
| private (RssAnon) | {summary['anon_kib'] / 1024:.1f} MiB | |
| PSS | {summary['pss_kib'] / 1024:.1f} MiB | |
| API writes by a restart (most of any run) | {summary['max_writes']:.0f} | 0 |
| cached objects, bytes | {objs:.0f}, {cached / 1048576:.1f} MiB | {cached / objs if objs else 0:.0f} B per object |

Bytes per cached object, per informer (`landlord_informer_bytes`: documents and the cache's own
slots and indexes):

| informer | objects | bytes | per object |
|---|---|---|---|
{rows}

Raw numbers: `bench/results/restart.json`.
""")


if __name__ == "__main__":
    main()
