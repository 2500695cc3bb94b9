"""Start and stop landlord's own processes (the landlord binary, informer_probe) for tests.

Each process logs JSON lines to a file; the probe port is read from its "probe server
listening" record, so every process binds an ephemeral loopback port. Processes are stopped by
the PID this module started, never by name.
"""

import json
import os
import pathlib
import re
import signal
import subprocess
import time
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("LANDLORD_BUILD_DIR", REPO / "build" / "release"))
LANDLORD = BUILD / "landlord"
INFORMER_PROBE = BUILD / "informer_probe"


STARTED = []


# Clusters where a landlord started here registered its webhook configurations.
REGISTERED_IN = []


def stop_leftovers():
    """Stop (by PID) every process this module started that a test left running, then remove
    the webhook configurations a landlord killed on the way left behind (they would make every
    later test's tenant namespaces fail closed)."""
    while STARTED:
        p = STARTED.pop()
        if p.popen.poll() is None:
            p.kill()
    while REGISTERED_IN:
        remove_registered_webhooks(REGISTERED_IN.pop())


def any_running():
    """Whether a process this module started (a landlord, a probe) still runs."""
    return any(p.popen.poll() is None for p in STARTED)


def detach(proc, cluster):
    """Hand @proc, started by start_landlord() in @cluster, to a fixture wider than one test (a
    module's landlord): stop_leftovers() no longer stops it after each test nor removes the
    configurations it registered. Its owner stops it, and after a SIGKILL removes them
    (remove_registered_webhooks())."""
    if proc in STARTED:
        STARTED.remove(proc)
    if cluster in REGISTERED_IN:
        REGISTERED_IN.remove(cluster)
    return proc


def remove_registered_webhooks(cluster):
    """Delete the configurations named landlord that landlord registered (its managed-by label)
    in @cluster, as its administrator; never the chart's."""
    from kubernetes import client as k8s
    from kubernetes.client.rest import ApiException
    adm = k8s.AdmissionregistrationV1Api(cluster.client("admin"))
    for read, delete in ((adm.read_validating_webhook_configuration,
                          adm.delete_validating_webhook_configuration),
                         (adm.read_mutating_webhook_configuration,
                          adm.delete_mutating_webhook_configuration)):
        try:
            obj = read(WEBHOOK_CONFIG)
            if (obj.metadata.labels or {}).get("app.kubernetes.io/managed-by") == "landlord":
                delete(WEBHOOK_CONFIG)
        except ApiException as e:
            if e.status != 404:
                raise


class Proc:
    def __init__(self, argv, log_path, env=None):
        self.argv = [str(a) for a in argv]
        self.log_path = pathlib.Path(log_path)
        self.log = open(self.log_path, "w")
        self.popen = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT,
                                      env={**os.environ, **(env or {})})
        self.port = None
        STARTED.append(self)

    @property
    def pid(self):
        return self.popen.pid

    def records(self):
        """Every JSON log record so far (non-JSON lines are skipped)."""
        out = []
        for line in self.log_path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def find(self, msg):
        return [r for r in self.records() if r.get("msg") == msg]

    def wait_record(self, msg, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.find(msg)
            if found:
                return found[0]
            if self.popen.poll() is not None:
                raise AssertionError(f"{self.argv[0]} exited {self.popen.returncode} before "
                                     f"logging {msg!r}:\n{self.log_path.read_text()[-4000:]}")
            time.sleep(0.05)
        raise AssertionError(f"no {msg!r} record within {timeout}s:\n"
                             f"{self.log_path.read_text()[-4000:]}")

    def wait_probe(self, timeout=60):
        self.port = self.wait_record("probe server listening", timeout)["port"]
        return self.port

    def get(self, path, timeout=10):
        """(status, body) of GET http://127.0.0.1:<probe port><path>."""
        url = f"http://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self):
        status, text = self.get("/metrics")
        assert status == 200, text
        return parse_metrics(text)

    def metric(self, name, **labels):
        """Sum of the samples of name whose labels include the given ones."""
        total = 0.0
        for (n, lab), v in self.metrics().items():
            if n == name and all(dict(lab).get(k) == str(val) for k, val in labels.items()):
                total += v
        return total

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Signal the process and wait; returns its exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.log.close()
        return self.popen.returncode

    def kill(self):
        return self.stop(signal.SIGKILL)


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """Prometheus text format -> {(name, frozenset(labels.items())): value}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, f"malformed metrics line: {line!r}"
        labels = frozenset(_LABEL.findall(m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


WEBHOOK_CONFIG = "landlord"  # the configurations' name (deploy/webhooks.json)


def webhook_args(args):
    """What `landlord run`/`webhook` get unless the test says otherwise: the webhook on an
    ephemeral loopback port, registered at https://127.0.0.1:<that port> (--webhook-url with port
    0), as `make run` does, so that the webhook is on in every test. The API server then calls it
    for tenant namespaces, and it must answer. No drain delay on stop unless the test asks."""
    given = {str(a).split("=", 1)[0] for a in args}
    extra = []
    if "--webhook-addr" not in given:
        extra += ["--webhook-addr", "127.0.0.1:0"]
    if not given & {"--webhook-url", "--tls-cert-file", "--no-webhook-url"}:
        extra += ["--webhook-url", "https://127.0.0.1:0"]
    if "--shutdown-delay" not in given:  # the drain delay is test_webhook_ha.py's subject
        extra += ["--shutdown-delay", "0s"]
    if "--proxy-addr" not in given:  # the tenant proxy too, never on the shared 8444
        extra += ["--proxy-addr", "127.0.0.1:0"]
    return [a for a in args if a != "--no-webhook-url"] + extra


def start_landlord(cluster, tmp_path, *args, user="landlord", name="landlord", env=None):
    """landlord <args> as the given identity, probe on an ephemeral port, test hooks on; `run`
    and `webhook` serve and register the webhook (webhook_args(); "--no-webhook-url" in @args:
    serve it, register nothing)."""
    args = list(args)
    if args and args[0] in ("run", "webhook"):
        args = [args[0], *webhook_args(args[1:])]
        if "--webhook-url" in args:
            REGISTERED_IN.append(cluster)
    argv = [LANDLORD, *args, "--kubeconfig", cluster.kubeconfig(user),
            "--probe-addr", "127.0.0.1:0", "--enable-test-hooks"]
    return Proc(argv, tmp_path / f"{name}.log", env)


def start_controllers(cluster, tmp_path, *args, name="landlord", wait=True, env=None):
    """`landlord run --leader-elect false` (every controller, no election) as landlord's own
    identity; waits for its probe server unless wait is False (a process that may exit early)."""
    p = start_landlord(cluster, tmp_path, "run", "--leader-elect", "false", *args, name=name,
                       env=env)
    if wait:
        p.wait_probe()
    return p


def start_informer_probe(cluster, tmp_path, *resources, namespace=None, name="informer"):
    argv = [INFORMER_PROBE, "--kubeconfig", cluster.kubeconfig("admin")]
    for r in resources:
        argv += ["--resource", r]
    if namespace:
        argv += ["--namespace", namespace]
    p = Proc(argv, tmp_path / f"{name}.log")
    p.wait_probe()
    return p
