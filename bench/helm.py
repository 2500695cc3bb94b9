#!/usr/bin/env python3
"""Helm charts per tenant namespace against a loop of `helm upgrade --install` (issue 14,
"Benchmark").

One private control plane: landlord's namespace, CRDs, RBAC (landlord-templates included) and
admission policies; 4 x N plain namespaces created by admin: hb-<i> labelled landlord-bench=helm
(the TemplateGroupInstance's selector), and hf-<i>, hs-<i>, hg-<i> (the floors'). The chart is
tests/e2e/charts/hello (one ConfigMap from a value) from a `path`, with `values` holding
${namespace}; helm is the pinned one (HELM_VERSION, tests/cluster/build-helm.sh).

(a) floor, landlord not running: P threads run the pinned helm as admin (its kubeconfig), and
    once more as a ServiceAccount bound in each namespace to landlord-templates (a token, as
    landlord's tgi.<ns> accounts: the like-for-like floor of the target), and once more so
    with helm's collector set as landlord sets it (GOGC=off GOMEMLIMIT=128MiB), each
    `helm upgrade --install hello <chart> -n hf-<i> -f <values> --timeout .. --history-max 10
    --labels landlord.dev/digest=..` (landlord's own arguments), N namespaces, P at once; timed
    from the first start to the last exit. Run twice, before landlord starts and after it stops;
    the faster is the floor.
(b) landlord: `landlord run --helm-binary <pinned> --helm-concurrency P`; one Template with the
    chart and one TemplateGroupInstance over the hb- namespaces; timed from the TGI's POST to the
    last release record (Secret owner=helm) with status=deployed (seen by a watch of the
    benchmark's own) and to status rows all `deployed` and ready (GET every 0.1 s).
(c) memory: landlord's VmRSS after (b); and, sampled every 50 ms during (a) and (b), the total
    VmRSS of the helm processes running (children of landlord, or of this script, whose exe is
    the pinned helm): its peak, and how many ran then.
(d) resync: landlord stopped by PID (SIGTERM) and started again; timed from the start to its
    helmrelease controller having reconciled every release and the TGI's rows all deployed;
    landlord_helm_runs_total of the new process must stay 0 (no helm started), also S seconds
    later; the records (Secrets owner=helm) unchanged.
"""

import argparse
import concurrent.futures
import http.client
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

from common import BUILD, REPO, proc_status_kib, read_env, record, save_json
from templates import FAST, GROUP, Api, install, start, versions
from tenants import RetriedCluster, cpu_seconds, metric_by

SELECTOR_KEY = "landlord-bench"
CHART = REPO / "tests" / "e2e" / "charts" / "hello"
RELEASE = "hello"
VALUES = "greeting: hello from ${namespace}\n"
TIMEOUT_MS = 5 * 60 * 1000 - 10 * 1000  # landlord's default --helm-timeout less its margin
COLLECTOR = {"GOGC": "off", "GOMEMLIMIT": "128MiB"}  # landlord's helm environment (helm_run.h)


def pinned_helm():
    """The pinned helm (built by tests/cluster/build-helm.sh when not cached)."""
    subprocess.run([REPO / "tests" / "cluster" / "build-helm.sh"], check=True,
                   capture_output=True)
    v = read_env(REPO / "tests" / "cluster" / "versions.env")["HELM_VERSION"]
    base = os.environ.get("LANDLORD_HELM_BIN", os.path.expanduser(f"~/.cache/landlord/helm/{v}"))
    return pathlib.Path(base).resolve() / "helm"


def make_namespaces(api, n):
    """hb-<i> (landlord's) carry a landlord.dev/ annotation: only in such namespaces may landlord
    bind the tgi.<ns> account (the landlord-self-limits policy)."""
    bodies = [{"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": f"{p}-{i}", "labels": {SELECTOR_KEY: p},
                            **({"annotations": {"landlord.dev/bench": "helm"}} if p == "hb"
                               else {})}}
              for p in ("hb", "hf", "hs", "hg") for i in range(n)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda b: api.call("POST", "/api/v1/namespaces", b), bodies))


class HelmSampler(threading.Thread):
    """Every @period s: the helm processes (exe @helm) whose parent is one of @parents, their
    count and total VmRSS (KiB). Keeps the peak total, the count then, and the peak count."""

    def __init__(self, helm, parents, period=0.05):
        super().__init__(daemon=True)
        self.helm, self.parents, self.period = str(helm), set(parents), period
        self.stop, self.samples = threading.Event(), 0
        self.peak_kib, self.peak_n, self.max_n, self.max_one_kib = 0, 0, 0, 0
        self.by_verb = {}  # helm's first argument: samples seen running
        self.first, self.last = None, None  # samples with any helm running

    def scan(self):
        total, n = 0, 0
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{d}/exe") != self.helm:
                    continue
                status = pathlib.Path(f"/proc/{d}/status").read_text().splitlines()
            except OSError:
                continue
            f = {ln.split(":", 1)[0]: ln.split(":", 1)[1].split() for ln in status if ":" in ln}
            if int(f.get("PPid", ["0"])[0]) not in self.parents or "VmRSS" not in f:
                continue
            rss = int(f["VmRSS"][0])
            total, n = total + rss, n + 1
            try:
                verb = pathlib.Path(f"/proc/{d}/cmdline").read_bytes().split(b"\0")[1].decode()
            except (OSError, IndexError):
                verb = "?"
            self.by_verb[verb] = self.by_verb.get(verb, 0) + 1
            self.max_one_kib = max(self.max_one_kib, rss)
        return total, n

    def run(self):
        while not self.stop.is_set():
            total, n = self.scan()
            self.samples += 1
            if n:
                self.first = self.samples if self.first is None else self.first
                self.last = self.samples
            if total > self.peak_kib:
                self.peak_kib, self.peak_n = total, n
            self.max_n = max(self.max_n, n)
            self.stop.wait(self.period)

    def result(self):
        self.stop.set()
        self.join()
        return {"peak_total_kib": self.peak_kib, "processes_at_peak": self.peak_n,
                "max_processes": self.max_n, "max_one_kib": self.max_one_kib,
                "samples": self.samples,
                # mean helm processes running, by verb, from the first sample with one running
                # to the last: how busy the P slots were
                "mean_running": {v: n / max(1, (self.last or 0) - (self.first or 0) + 1)
                                 for v, n in self.by_verb.items()}}


class Records(threading.Thread):
    """Helm's release records (Secrets owner=helm, name=<release>) across namespaces: when each
    namespace's record with status=deployed was last ADDED or MODIFIED (monotonic clock)."""

    def __init__(self, cluster, prefix):
        super().__init__(daemon=True)
        self.cluster, self.prefix = cluster, prefix
        self.deployed, self.cv, self.ready = {}, threading.Condition(), threading.Event()

    def run(self):
        conn = self.cluster.connection()
        q = f"/api/v1/secrets?labelSelector=owner%3Dhelm%2Cname%3D{RELEASE}"
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
            now, meta = time.monotonic(), ev["object"].get("metadata", {})
            ns = meta.get("namespace", "")
            if (ev["type"] in ("ADDED", "MODIFIED") and ns.startswith(self.prefix + "-") and
                    meta.get("labels", {}).get("status") == "deployed"):
                with self.cv:
                    self.deployed[ns] = now
                    self.cv.notify_all()


class Profile(threading.Thread):
    """A CPU profile of kube-apiserver (/debug/pprof/profile) over @seconds, into @path; with
    --pprof only, to see what the control plane's CPU is spent on."""
    def __init__(self, cluster, path, seconds):
        super().__init__(daemon=True)
        self.cluster, self.path, self.seconds = cluster, path, seconds

    def run(self):
        with open(self.path, "wb") as out:
            subprocess.run([self.cluster.env["BIN_DIR"] + "/kubectl", "--kubeconfig",
                            self.cluster.kubeconfig("admin"), "get", "--raw",
                            f"/debug/pprof/profile?seconds={self.seconds}"], stdout=out,
                           check=False)


def profiled(cluster, args, name):
    """Starts a profile named @name when --pprof is given; returns it (or None)."""
    if not args.pprof:
        return None
    p = Profile(cluster, pathlib.Path(args.pprof) / f"{name}.pprof", args.pprof_seconds)
    p.start()
    return p


def digest_label():
    return "landlord.dev/digest=" + "0" * 60


def plane_cpu_by(cluster):
    """CPU time (utime+stime) of each process of the control plane so far: kube-apiserver,
    etcd and kube-controller-manager (their PIDs in the cluster's env)."""
    out = {}
    for key in ("APISERVER_PID", "ETCD_PID", "KCM_PID"):
        fields = open(f"/proc/{cluster.env[key]}/stat").read().rsplit(")", 1)[1].split()
        out[key[:-4].lower()] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def plane_cpu_seconds(cluster):
    """CPU time of the whole control plane so far (plane_cpu_by)."""
    return sum(plane_cpu_by(cluster).values())


def api_requests(cluster):
    """kube-apiserver's requests so far by "VERB resource[/subresource]": (count, seconds),
    from its /metrics (apiserver_request_total, apiserver_request_duration_seconds_sum), and
    its watch cache's reads by "cache wait <resource>": (count, seconds waited to be fresh)."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    out = {}
    for line in text.splitlines():
        # reads from the watch cache waiting for it to be fresh enough (seconds), and how many
        for metric, slot in (("apiserver_watch_cache_read_wait_seconds_count{", 0),
                             ("apiserver_watch_cache_read_wait_seconds_sum{", 1)):
            if line.startswith(metric):
                key = "cache wait " + line.split('resource="', 1)[1].split('"', 1)[0]
                out.setdefault(key, [0.0, 0.0])[slot] += float(line.rsplit(" ", 1)[1])
        for metric, slot in (("apiserver_request_total{", 0),
                             ("apiserver_request_duration_seconds_sum{", 1)):
            if not line.startswith(metric):
                continue
            labels = dict(kv.split("=", 1) for kv in
                          line[len(metric):line.rindex("}")].replace('"', "").split(","))
            if labels.get("verb") == "WATCH":
                continue
            key = f"{labels.get('verb')} {labels.get('resource')}" + (
                f"/{labels['subresource']}" if labels.get("subresource") else "")
            cur = out.setdefault(key, [0.0, 0.0])
            cur[slot] += float(line.rsplit(" ", 1)[1])
    return out


def api_requests_since(cluster, before):
    """What api_requests() counted since @before, busiest first."""
    now = api_requests(cluster)
    diff = {k: [round(v[0] - before.get(k, [0, 0])[0]), round(v[1] - before.get(k, [0, 0])[1], 3)]
            for k, v in now.items()}
    return dict(sorted(((k, v) for k, v in diff.items() if v[0] > 0), key=lambda kv: -kv[1][0]))


def children_cpu_seconds(pid):
    """CPU time (utime+stime) of @pid's children it waited for: its helm processes."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime, cstime


def account_kubeconfig(cluster, home, prefix, n):
    """A kubeconfig whose only credential is a token of the ServiceAccount floor (in
    <prefix>-0), bound in each <prefix>-<i> to landlord-templates: helm judged by RBAC as
    landlord's tgi.<ns> accounts are (admin, in system:masters, skips authorization)."""
    ns0 = f"{prefix}-0"
    cluster.kubectl("create", "serviceaccount", "floor", "-n", ns0)
    for i in range(n):
        cluster.kubectl("create", "rolebinding", "floor", "-n", f"{prefix}-{i}",
                        "--clusterrole", "landlord-templates", "--serviceaccount",
                        f"{ns0}:floor")
    token = cluster.kubectl("create", "token", "floor", "-n", ns0, "--duration",
                            "3600s").stdout.strip()
    cfg = json.loads(cluster.kubectl("config", "view", "--raw", "--minify", "-o",
                                     "json").stdout)
    cfg["users"] = [{"name": "floor", "user": {"token": token}}]
    cfg["contexts"][0]["context"]["user"] = "floor"
    path = home / "floor.kubeconfig"
    path.write_text(json.dumps(cfg))
    path.chmod(0o600)
    time.sleep(1)  # the bindings in force
    return str(path)


def floor(cluster, args, helm, tmp, run, prefix="hf", account=False, collector=False):
    """(a): N `helm upgrade --install` as admin (or, with @account, as a ServiceAccount under
    RBAC), P at once; with @collector, helm's collector set as landlord sets it; returns the
    measures."""
    home = pathlib.Path(tempfile.mkdtemp(prefix="helm-floor-", dir=tmp))
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": str(home / "cache"),
           "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data"),
           **(COLLECTOR if collector else {})}
    values = home / "values"
    values.mkdir()
    for i in range(args.namespaces):  # the rendered values, one file per namespace
        (values / f"{prefix}-{i}.yaml").write_text(
            VALUES.replace("${namespace}", f"{prefix}-{i}"))
    if run > 0:  # the second floor run: a fresh set of releases
        for i in range(args.namespaces):
            cluster.kubectl("delete", "secret", "-n", f"{prefix}-{i}", "-l", "owner=helm",
                            "--wait=true")
            cluster.kubectl("delete", "configmap", "-n", f"{prefix}-{i}", f"{RELEASE}-hello",
                            "--ignore-not-found")
    failures = []
    kubeconfig = (account_kubeconfig(cluster, home, prefix, args.namespaces) if account
                  else cluster.kubeconfig("admin"))

    def one(i):
        ns = f"{prefix}-{i}"
        kc = ["-n", ns, "--kubeconfig", kubeconfig]
        p = subprocess.run([str(helm), "upgrade", "--install", RELEASE, str(CHART), "-f",
                            str(values / f"{ns}.yaml"), "--timeout", f"{TIMEOUT_MS}ms",
                            "--history-max", "10", "--labels", digest_label(), *kc],
                           env=env, capture_output=True, text=True, cwd=home)
        if p.returncode != 0:
            failures.append((ns, p.stderr[-300:]))

    sampler = HelmSampler(helm, {os.getpid()}, args.sample_ms / 1000)
    sampler.start()
    prof = profiled(cluster, args, f"floor-{prefix}-{run}")
    reqs0, by0 = api_requests(cluster), plane_cpu_by(cluster)
    cpu0, plane0, t0 = children_cpu_seconds("self"), plane_cpu_seconds(cluster), time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
        list(pool.map(one, range(args.namespaces)))
    seconds = time.monotonic() - t0
    if prof:
        prof.join()
    res = {"seconds": seconds, "failures": failures, "helm_rss": sampler.result(),
           "helm_cpu_s": children_cpu_seconds("self") - cpu0,
           "plane_cpu_s": plane_cpu_seconds(cluster) - plane0,
           "plane_cpu_by_s": {k: round(v - by0[k], 2) for k, v in plane_cpu_by(cluster).items()},
           "requests": api_requests_since(cluster, reqs0)}
    if failures:
        raise SystemExit(f"the floor's helm failed: {failures[:3]}")
    return res


def helm_runs(proc):
    """landlord_helm_runs_total by verb/outcome, and their sum."""
    out = {}
    for (n, labels), v in proc.metrics().items():
        if n == "landlord_helm_runs_total":
            lab = dict(labels)
            out[f"{lab.get('verb')}/{lab.get('outcome')}"] = v
    return out


def reconciles(proc, controller):
    return metric_by(proc, "landlord_reconcile_duration_seconds_count", "controller").get(
        controller, 0), metric_by(proc, "landlord_reconcile_duration_seconds_sum",
                                  "controller").get(controller, 0)


def rows_deployed(api, n):
    st = api.call("GET", f"{GROUP}/templategroupinstances/bench")[1].get("status") or {}
    rows = st.get("rows") or []
    ok = sum(1 for r in rows if r.get("ready") and
             (r.get("release") or {}).get("status") == "deployed")
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in st.get("conditions") or [])
    return ok, ready, st


def wait_rows(api, n, deadline, need_ready=True):
    st = None
    while time.monotonic() < deadline:
        ok, ready, st = rows_deployed(api, n)
        if ok == n and (ready or not need_ready):
            return time.monotonic()
        time.sleep(0.1)
    raise SystemExit(f"the TGI's rows did not all get deployed: "
                     f"{json.dumps(st)[:1500] if st else None}")


def start_landlord(args, cluster, helm, log):
    return start(args.landlord, cluster, log, f"{args.landlord_args} --helm-binary {helm} "
                 f"--helm-concurrency {args.concurrency}")


def landlord_install(cluster, args, api, proc, helm):
    """(b): the TGI's POST to every release deployed; returns the measures."""
    def create_template():
        for _ in range(300):  # the webhook answers 503 while landlord's caches load
            status, _ = api.call("POST", f"{GROUP}/templates", {
                "apiVersion": "landlord.dev/v1alpha1", "kind": "Template",
                "metadata": {"name": "bench"},
                "spec": {"resources": {"helm": {"path": str(CHART), "releaseName": RELEASE,
                                                "values": VALUES}}}}, ok=None)
            if status in (200, 201):
                return
            time.sleep(0.2)
        raise SystemExit("the Template was not admitted")
    create_template()
    time.sleep(1)  # the Template in landlord's cache before the instance
    w = Records(cluster, "hb")
    w.start()
    w.ready.wait(30)
    runs0, cpu0 = helm_runs(proc), cpu_seconds(proc.pid)
    hcpu0, plane0 = children_cpu_seconds(proc.pid), plane_cpu_seconds(cluster)
    reqs0, by0 = api_requests(cluster), plane_cpu_by(cluster)
    sampler = HelmSampler(helm, {proc.pid}, args.sample_ms / 1000)
    sampler.start()
    prof = profiled(cluster, args, "landlord")
    perf = (subprocess.Popen(["perf", "record", "-a", "-g", "-q", "-o",
                              str(pathlib.Path(args.pprof) / "landlord.perf")])
            if args.pprof and args.perf else None)
    t0 = time.monotonic()
    api.call("POST", f"{GROUP}/templategroupinstances", {
        "apiVersion": "landlord.dev/v1alpha1", "kind": "TemplateGroupInstance",
        "metadata": {"name": "bench"},
        "spec": {"template": "bench", "sync": True,
                 "selector": {"matchLabels": {SELECTOR_KEY: "hb"}}}})
    deadline, failing_since = t0 + args.timeout, None
    while True:
        with w.cv:
            if w.cv.wait_for(lambda: len(w.deployed) == args.namespaces, timeout=1):
                records = sorted(w.deployed.values())
                break
        st = api.call("GET", f"{GROUP}/templategroupinstances/bench")[1].get("status") or {}
        failing = [f for f in st.get("failing") or [] if f.get("reason") != "Pending"]
        failing_since = (failing_since or time.monotonic()) if failing else None
        if time.monotonic() > deadline or (failing_since and
                                           time.monotonic() - failing_since > 30):
            raise SystemExit(f"{len(w.deployed)} releases deployed; status: "
                             f"{json.dumps(st)[:1500]}")
    t_rows = wait_rows(api, args.namespaces, deadline)
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait()
    if prof:
        prof.join()
    helm_rss = sampler.result()
    runs1, cpu1 = helm_runs(proc), cpu_seconds(proc.pid)
    hcpu1, plane1 = children_cpu_seconds(proc.pid), plane_cpu_seconds(cluster)
    by1, reqs = plane_cpu_by(cluster), api_requests_since(cluster, reqs0)
    return {"helm_cpu_s": hcpu1 - hcpu0, "records_s": records[-1] - t0,
            "plane_cpu_s": plane1 - plane0,
            "plane_cpu_by_s": {k: round(v - by0[k], 2) for k, v in by1.items()},
            "requests": reqs,
            "first_record_s": records[0] - t0,
            "rows_s": t_rows - t0, "landlord_cpu_s": cpu1 - cpu0, "helm_rss": helm_rss,
            "helm_runs": {k: v - runs0.get(k, 0) for k, v in runs1.items()
                          if v != runs0.get(k, 0)},
            "helm_processes_peak": proc.metric("landlord_helm_processes_peak"),
            "record_times_s": [round(t - t0, 3) for t in records],
            "reconciles": {c: reconciles(proc, c) for c in ("templategroupinstance",
                                                           "helmrelease")}}


def record_versions(cluster):
    out = cluster.kubectl("get", "secrets", "-A", "-l", f"owner=helm,name={RELEASE}", "-o",
                          "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}="
                          "{.metadata.resourceVersion}{'\\n'}{end}").stdout
    return sorted(ln for ln in out.splitlines() if ln.startswith("hb-"))


def activity(proc):
    """(reconciles of helmrelease, of templategroupinstance, their queues' depth)."""
    m = proc.metrics()
    get = lambda n, c: sum(v for (name, lab), v in m.items()  # noqa: E731
                           if name == n and dict(lab).get("controller", dict(lab).get("name"))
                           == c)
    return (get("landlord_reconcile_duration_seconds_count", "helmrelease"),
            get("landlord_reconcile_duration_seconds_count", "templategroupinstance"),
            get("landlord_workqueue_depth", "helmrelease") +
            get("landlord_workqueue_depth", "templategroupinstance"))


def lost_rows(api, proc):
    """What a resync that did not settle left: the rows not deployed, and the release queue's
    adds (a key never added is a wish never reconciled)."""
    st = rows_deployed(api, 0)[2]
    return {"rows_not_deployed": [r["namespace"] for r in st.get("rows") or []
                                  if not r.get("ready")],
            "conditions": st.get("conditions"),
            "helmrelease_adds": metric_by(proc, "landlord_workqueue_adds_total", "name").get(
                "helmrelease")}


def resync(cluster, args, api, procs, helm, log):
    """(d): landlord restarted; to quiescence (both controllers have reconciled, their queues
    are empty and no reconcile ran for --quiet seconds, the rows all deployed), and no helm
    run. A restarted landlord's rows were already `deployed` (written by the one before): the
    measure is when its controllers stopped working."""
    before = record_versions(cluster)
    procs[-1].stop()
    t0 = time.monotonic()
    proc = start_landlord(args, cluster, helm, log)
    procs.append(proc)
    t_ready = time.monotonic()
    deadline, last, t_last = t0 + args.timeout, None, t_ready
    while True:
        now, a = time.monotonic(), activity(proc)
        if a != last:
            last, t_last = a, now
        elif a[0] >= 1 and a[1] >= 1 and a[2] == 0 and now - t_last >= args.quiet:
            if rows_deployed(api, args.namespaces)[0] == args.namespaces:
                break
            if now - t_last >= 30:  # idle with rows left behind: they stay so
                raise SystemExit(f"landlord settled after the restart with rows not deployed "
                                 f"(reconciles {a[:2]}): {json.dumps(lost_rows(api, proc))}")
        if now > deadline:
            raise SystemExit(f"landlord did not settle after the restart: {a}")
        time.sleep(0.05)
    runs_at = helm_runs(proc)
    time.sleep(args.settle)
    runs_after = helm_runs(proc)
    after = record_versions(cluster)
    return {"ready_s": t_ready - t0, "settled_s": t_last - t0,
                  "helm_runs": runs_at, "helm_runs_later": runs_after,
                  "helm_runs_total": sum(runs_after.values()), "settle_s": args.settle,
                  "helm_processes_peak": proc.metric("landlord_helm_processes_peak"),
                  "reconciles": {"helmrelease": last[0], "templategroupinstance": last[1]},
                  "records": len(after), "records_unchanged": before == after}


def run(args, tmp):
    helm = pinned_helm()
    res = {"helm": str(helm)}
    with RetriedCluster(args.state_dir) as cluster:
        install(cluster, args.deploy)
        api = Api(cluster)
        make_namespaces(api, args.namespaces)
        res["floor_before"] = floor(cluster, args, helm, tmp, 0)
        print(f"floor: {args.namespaces} releases in {res['floor_before']['seconds']:.2f} s",
              flush=True)
        proc = start_landlord(args, cluster, helm, tmp / "landlord.log")
        procs = [proc]
        try:
            res["landlord"] = landlord_install(cluster, args, api, proc, helm)
            res["landlord_rss_kib"] = proc_status_kib(proc.pid, "VmRSS")
            print(f"landlord: {args.namespaces} releases deployed in "
                  f"{res['landlord']['records_s']:.2f} s (records), "
                  f"{res['landlord']['rows_s']:.2f} s (status rows)", flush=True)
            res["resync"] = resync(cluster, args, api, procs, helm,
                                   tmp / "landlord-resync.log")
            proc = procs[-1]
            res["landlord_rss_kib_resync"] = proc_status_kib(proc.pid, "VmRSS")
            print(f"resync: {res['resync']['settled_s']:.2f} s, helm runs "
                  f"{res['resync']['helm_runs_total']:.0f}", flush=True)
            res["errors"] = [r for r in proc.records() if r.get("level") == "error"][:5]
        finally:
            for p in procs:
                p.stop()
        res["floor_after"] = floor(cluster, args, helm, tmp, 1)
        print(f"floor again: {res['floor_after']['seconds']:.2f} s", flush=True)
        res["floor_account"] = floor(cluster, args, helm, tmp, 0, "hs", account=True)
        print(f"floor as a ServiceAccount under RBAC: "
              f"{res['floor_account']['seconds']:.2f} s", flush=True)
        res["floor_collector"] = floor(cluster, args, helm, tmp, 0, "hg", account=True,
                                       collector=True)
        print(f"the same with landlord's helm environment: "
              f"{res['floor_collector']['seconds']:.2f} s", flush=True)
    return res


def summarize(res, args):
    ll, fb, fa = res["landlord"], res["floor_before"], res["floor_after"]
    fl = min(fb["seconds"], fa["seconds"])
    counted = fb if fb["seconds"] <= fa["seconds"] else fa
    runs = ll["helm_runs"]
    return {
        "landlord_records_s": ll["records_s"], "landlord_rows_s": ll["rows_s"],
        "floor_s": fl, "floor_before_s": fb["seconds"], "floor_after_s": fa["seconds"],
        "ratio": ll["records_s"] / fl, "ratio_rows": ll["rows_s"] / fl,
        "helm_runs": runs,
        "floor_account_s": res["floor_account"]["seconds"],
        "ratio_account": ll["records_s"] / res["floor_account"]["seconds"],
        "floor_collector_s": res["floor_collector"]["seconds"],
        "ratio_collector": ll["records_s"] / res["floor_collector"]["seconds"],
        "floor_collector_helm_cpu_s": res["floor_collector"]["helm_cpu_s"],
        "floor_collector_plane_cpu_s": res["floor_collector"]["plane_cpu_s"],
        "floor_collector_helm_peak_total_kib": res["floor_collector"]["helm_rss"][
            "peak_total_kib"],
        "first_record_s": ll["first_record_s"],
        "helm_cpu_s": ll["helm_cpu_s"], "landlord_cpu_s": ll["landlord_cpu_s"],
        "plane_cpu_s": ll["plane_cpu_s"],
        "floor_account_plane_cpu_s": res["floor_account"]["plane_cpu_s"],
        "floor_helm_cpu_s": counted["helm_cpu_s"],
        "floor_account_helm_cpu_s": res["floor_account"]["helm_cpu_s"],
        "mean_running": ll["helm_rss"]["mean_running"],
        "floor_mean_running": counted["helm_rss"]["mean_running"],
        "landlord_rss_kib": res["landlord_rss_kib"],
        "helm_peak_total_kib": ll["helm_rss"]["peak_total_kib"],
        "helm_processes_at_peak": ll["helm_rss"]["processes_at_peak"],
        "helm_max_processes": ll["helm_rss"]["max_processes"],
        "floor_helm_peak_total_kib": max(fb["helm_rss"]["peak_total_kib"],
                                         fa["helm_rss"]["peak_total_kib"]),
        "resync_s": res["resync"]["settled_s"],
        "resync_ready_s": res["resync"]["ready_s"],
        "resync_helm_runs": res["resync"]["helm_runs_total"],
        "resync_records_unchanged": res["resync"]["records_unchanged"],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--namespaces", type=int, default=50)
    ap.add_argument("--concurrency", type=int, default=4,
                    help="landlord's --helm-concurrency, and the floor's parallelism")
    ap.add_argument("--sample-ms", type=float, default=50)
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds after the resync before helm runs are read again")
    ap.add_argument("--quiet", type=float, default=2.0,
                    help="seconds without a reconcile that end the resync")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--landlord", default=str(BUILD / "landlord"))
    ap.add_argument("--deploy", default=str(REPO / "deploy"),
                    help="CRDs, RBAC and policies installed (the measured build's deploy/)")
    ap.add_argument("--landlord-args", default=FAST)
    ap.add_argument("--state-dir", default=str(REPO / "build" / "bench-helm"))
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--pprof", help="a directory for kube-apiserver CPU profiles of the "
                    "install and the floors (development; implies --no-record)")
    ap.add_argument("--pprof-seconds", type=int, default=6)
    ap.add_argument("--perf", action="store_true", help="with --pprof: also `perf record -a -g` "
                    "of the whole machine during landlord's install, into the same directory")
    args = ap.parse_args()
    if args.pprof:  # the control plane this benchmark starts serves /debug/pprof
        os.environ["LANDLORD_APISERVER_PROFILING"] = "true"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # the cluster is stopped
    tmp = pathlib.Path(args.state_dir + "-logs")
    tmp.mkdir(parents=True, exist_ok=True)
    res = run(args, tmp)
    res["summary"] = s = summarize(res, args)
    res["versions"] = versions(args)
    print(json.dumps(s, indent=1))
    (tmp / "helm.json").write_text(json.dumps(res, indent=1) + "\n")  # raw, also unrecorded
    if s["resync_helm_runs"] != 0 or not s["resync_records_unchanged"]:
        print("the resync ran helm or changed a release record", flush=True)
    if args.no_record or args.pprof:
        return
    save_json("helm", {"args": {k: v for k, v in vars(args).items()}, **res})
    record_doc(args, res)


def mib(kib):
    return f"{kib / 1024:.1f} MiB"


def running(mean):
    return ", ".join(f"{v} {n:.2f}" for v, n in sorted(mean.items()) if v != "?")


def record_doc(args, res):
    s, ll, v, rs = res["summary"], res["landlord"], res["versions"], res["resync"]
    ok = lambda good: "met" if good else "**missed**"  # noqa: E731
    runs = ", ".join(f"{k} {n:.0f}" for k, n in sorted(s["helm_runs"].items()))
    n, p = args.namespaces, args.concurrency
    record("Helm", f"""
`python3 bench/helm.py`: one private control plane (Kubernetes v1.33.13, landlord
`{v['landlord']}`, {v['cores']} shared cores, {v['cpu']}), landlord's CRDs, RBAC and
admission policies; {4 * n} plain labelled namespaces (not tenants), a quarter each for landlord
and the floors. The chart is `tests/e2e/charts/hello` (one ConfigMap) from a `path`, its
values holding `${{namespace}}`; helm is the pinned {pathlib.Path(res['helm']).parent.name}.
landlord is `landlord run {args.landlord_args} --helm-concurrency {p}`: one Template, one
TemplateGroupInstance selecting {n} namespaces, each chart run as `tgi.<ns>`. Floors: {p}
threads running the same helm, `helm upgrade --install` of the same chart directory with
landlord's arguments (`-f <values> --timeout --history-max 10 --labels`), {p} at once, landlord
not running: as a ServiceAccount with a token, bound in each namespace to `landlord-templates`
(what landlord's `tgi.<ns>` accounts are: the like-for-like floor, the target's); and as admin
(in `system:masters`, which skips authorization: a lower bound no tenant identity reaches),
run before landlord starts and after it stops, the faster counted; and once more as the
ServiceAccount with helm's collector set as landlord sets it (`GOGC=off GOMEMLIMIT=128MiB`):
what landlord adds to the helm it runs. helm processes are sampled
every {args.sample_ms:g} ms (`/proc`, children of landlord or of the floor).

| measure | landlord | floor | ratio / target |
|---|---|---|---|
| TGI POST to the last release record `deployed` ({n} releases), floor as a ServiceAccount | \
{s['landlord_records_s']:.2f} s | {s['floor_account_s']:.2f} s | **{s['ratio_account']:.2f}x** \
(target <= 1.1x: {ok(s['ratio_account'] <= 1.1)}) |
| the same, floor as admin (no authorization) | | {s['floor_s']:.2f} s (runs: \
{s['floor_before_s']:.2f} s, {s['floor_after_s']:.2f} s) | {s['ratio']:.2f}x |
| the same, floor as a ServiceAccount with landlord's helm environment | | \
{s['floor_collector_s']:.2f} s (helm CPU {s['floor_collector_helm_cpu_s']:.2f} s, control plane \
{s['floor_collector_plane_cpu_s']:.2f} s, peak helm VmRSS \
{mib(s['floor_collector_helm_peak_total_kib'])}) | {s['ratio_collector']:.2f}x |
| TGI POST to the first release record `deployed` | {s['first_record_s']:.2f} s | | |
| TGI POST to its status rows all `deployed` and ready | {s['landlord_rows_s']:.2f} s | | \
{s['ratio_rows']:.2f}x |
| helm runs during the install (verb/outcome) | {runs} | {n} `upgrade --install` | |
| helm CPU time (children's utime+stime) | {s['helm_cpu_s']:.2f} s | {s['floor_helm_cpu_s']:.2f} \
s (admin; {s['floor_account_helm_cpu_s']:.2f} s as a ServiceAccount) | \
{s['helm_cpu_s'] / s['floor_helm_cpu_s']:.2f}x |
| helm processes running, mean over the install, by verb | {running(s['mean_running'])} | \
{running(s['floor_mean_running'])} | of {p} |
| landlord CPU time (utime+stime) during the install | {s['landlord_cpu_s']:.2f} s | | |
| control plane CPU time (kube-apiserver, etcd, kube-controller-manager) during the install | \
{s['plane_cpu_s']:.2f} s | {s['floor_account_plane_cpu_s']:.2f} s (as a ServiceAccount) | \
{s['plane_cpu_s'] / s['floor_account_plane_cpu_s']:.2f}x |
| landlord's VmRSS after the install | {mib(s['landlord_rss_kib'])} | | |
| peak total VmRSS of helm processes | {mib(s['helm_peak_total_kib'])} \
({s['helm_processes_at_peak']} running; at most {s['helm_max_processes']} seen) | \
{mib(s['floor_helm_peak_total_kib'])} | |
| resync: landlord restarted (SIGTERM, start), to its last reconcile ({n} releases; \
{rs['reconciles']['helmrelease']:.0f} release, {rs['reconciles']['templategroupinstance']:.0f} \
TGI reconciles) | {s['resync_s']:.2f} s (ready: {s['resync_ready_s']:.2f} s) | | |
| helm processes started by the resync (and {rs['settle_s']:g} s after it) | \
{s['resync_helm_runs']:.0f} | | target 0: {ok(s['resync_helm_runs'] == 0)}; records \
unchanged: {s['resync_records_unchanged']} |

Raw numbers: `bench/results/helm.json`.
""")


if __name__ == "__main__":
    main()
