"""Shared helpers for landlord's benchmarks: a private control plane, a bare HTTPS client for
floors, process memory, medians, and recording results in docs/benchmarks.md."""

import http.client
import json
import os
import pathlib
import re
import ssl
import statistics
import subprocess
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
CLUSTER = REPO / "tests" / "cluster"
# The binaries measured (landlord, the floors' tools): LANDLORD_BUILD_DIR, as tests/e2e honours
# it, measures another build (another commit, side by side) with the same harness.
BUILD = pathlib.Path(os.environ.get("LANDLORD_BUILD_DIR", REPO / "build" / "release"))


def read_env(path):
    env = {}
    for line in pathlib.Path(path).read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            env[k] = v
    return env


class Cluster:
    """A control plane of the benchmark's own, stopped by PID when done."""

    def __init__(self, state_dir):
        self.dir = pathlib.Path(state_dir)

    def __enter__(self):
        subprocess.run([CLUSTER / "build-k8s.sh"], check=True, capture_output=True)
        subprocess.run(["rm", "-rf", str(self.dir)], check=True)
        out = subprocess.run([CLUSTER / "start.sh", self.dir], check=True, capture_output=True,
                             text=True).stdout
        print(out.strip().splitlines()[-1])
        self.env = read_env(self.dir / "env")
        return self

    def __exit__(self, *exc):
        subprocess.run([CLUSTER / "stop.sh", self.dir], check=False)

    def kubeconfig(self, user):
        return str(self.dir / "kubeconfigs" / f"{user}.kubeconfig")

    def kubectl(self, *args, user="admin", input=None):
        return subprocess.run([self.env["BIN_DIR"] + "/kubectl", "--kubeconfig",
                               self.kubeconfig(user), *map(str, args)], input=input, check=True,
                              capture_output=True, text=True)

    def connection(self, user="admin"):
        """A bare keep-alive HTTPS connection with the user's client certificate."""
        pki = self.dir / "pki"
        ctx = ssl.create_default_context(cafile=self.env["CA"])
        ctx.load_cert_chain(pki / f"{user}.crt", pki / f"{user}.key")
        return http.client.HTTPSConnection("127.0.0.1", int(self.env["API_PORT"]), context=ctx)


_CONTINUE = re.compile(rb'"continue":"([^"]*)"')


def bare_paginated_list(conn, path, page_size, accept="application/json"):
    """The floor: the same paginated LIST a client does, reading every byte, parsing only the
    continue token. Returns (pages, bytes)."""
    token, pages, size = "", 0, 0
    while True:
        q = f"{path}?limit={page_size}" + (f"&continue={token}" if token else "")
        conn.request("GET", q, headers={"Accept": accept})
        r = conn.getresponse()
        body = r.read()
        assert r.status == 200, body[:300]
        pages, size = pages + 1, size + len(body)
        m = _CONTINUE.search(body[:4096])
        token = m.group(1).decode() if m else ""
        if not token:
            return pages, size


def install_landlord(cluster, policies=True):
    """landlord's namespace, CRDs, RBAC (and admission policies) on @cluster, the CRDs
    established and past the API server's hold on a new CRD's creates, so that the hold is not
    counted in what a benchmark measures."""
    files = ["deploy/namespace.yaml", "deploy/crds", "deploy/rbac.yaml"]
    if policies:
        files.append("deploy/policies")
    cluster.kubectl("apply", *[a for f in files for a in ("-f", REPO / f)])
    for _ in range(60):  # kubectl wait fails while a new CRD has no conditions yet
        try:
            for crd in ("tenants", "plans", "landlordconfigs"):
                cluster.kubectl("wait", "--for", "condition=established",
                                f"crd/{crd}.landlord.dev")
            break
        except subprocess.CalledProcessError:
            time.sleep(1)
    time.sleep(6)  # creates of a new CRD's objects are held a few seconds (kubernetes#99199)


def proc_status_kib(pid, field):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def median(xs):
    return statistics.median(xs)


def timed(fn):
    t0 = time.monotonic()
    out = fn()
    return time.monotonic() - t0, out


def record(section, markdown):
    """Replace (or append) the section '## <section>' of docs/benchmarks.md, keeping its
    hand-written "What the numbers mean:" notes (check them against the new numbers)."""
    path = REPO / "docs" / "benchmarks.md"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    head = f"## {section}\n"
    block = head + markdown.strip() + "\n"
    if head in text:
        start = text.index(head)
        nxt = text.find("\n## ", start + len(head))
        old = text[start:nxt + 1] if nxt >= 0 else text[start:]
        notes = old.find("\nWhat the numbers mean:\n")
        if notes >= 0:  # written by hand: kept until someone rewrites them
            block += old[notes:].rstrip("\n") + "\n\n"
        text = text[:start] + block + (text[nxt + 1:] if nxt >= 0 else "")
    else:
        text = text.rstrip() + "\n\n" + block
    path.write_text(text)
    (REPO / "bench" / "results").mkdir(exist_ok=True)


def save_json(name, data):
    out = REPO / "bench" / "results" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
