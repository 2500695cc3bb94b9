"""exec, attach, port-forward and logs end to end through the real kube-apiserver, into pods bound
to the stub kubelet's Node at 127.0.0.1 (stubkubelet.py, tests/stubkubelet), with the real
kubectl as the cluster admin; and nodes/proxy to that Node refused.

kubectl 1.33 speaks WebSocket (v5.channel.k8s.io) to the API server for exec and attach unless
KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false (then SPDY), and WebSocket-tunnelled SPDY for
port-forward unless KUBECTL_PORT_FORWARD_WEBSOCKETS=false; the API server speaks SPDY to the
kubelet in each case. The Python client's v4.channel.k8s.io WebSocket goes through to the
kubelet as a WebSocket, so both of the stub's transports are exercised.
"""

import os
import queue
import socket
import subprocess
import threading
import time

import pytest
from kubernetes import client as k8s
from kubernetes.stream import stream

from stubkubelet import NODE, PORT_ANNOTATION, stub_kubelet  # noqa: F401 (fixture)

POD = "stub"
FORWARD_PORT = 8080  # forwarded to a TCP server of the test's (the pod's annotation)
ECHO_PORT = 7000  # no annotation: the stub echoes

TRANSPORTS = {
    "websocket": {},
    "spdy": {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false",
             "KUBECTL_PORT_FORWARD_WEBSOCKETS": "false"},
}


class UpperServer:
    """A TCP server on 127.0.0.1 that answers each connection's bytes in upper case."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(10)
                try:
                    while data := conn.recv(4096):
                        conn.sendall(data.upper())
                except OSError:
                    pass

    def close(self):
        self.stopped.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture(scope="module")
def upper():
    srv = UpperServer()
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def ns(cluster, stub_kubelet, upper):
    """A namespace with the pod `stub` (containers main and side) on the stub's Node, deleted
    after the module's tests (its pods have a grace period of 0, and the stub's stop() deletes
    whatever is left on its Node)."""
    name = cluster.create_namespace("stubkubelet")
    try:
        stub_kubelet.make_pod(name, POD, containers=("main", "side"),
                              annotations={f"{PORT_ANNOTATION}{FORWARD_PORT}": str(upper.port)})
        yield name
    finally:
        cluster.delete_namespace(name)


def kubectl(cluster, *args, env=None, input=None, timeout=30):
    cmd = [cluster.kubectl_bin, "--kubeconfig", cluster.kubeconfig("admin"), *map(str, args)]
    return subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_node_and_pod(cluster, stub_kubelet, ns):
    core = k8s.CoreV1Api(cluster.client("admin"))
    node = core.read_node(NODE)
    assert [(a.type, a.address) for a in node.status.addresses] == [("InternalIP", "127.0.0.1")]
    assert node.status.daemon_endpoints.kubelet_endpoint.port == stub_kubelet.port
    assert {c.type: c.status for c in node.status.conditions}["Ready"] == "True"
    lease = k8s.CoordinationV1Api(cluster.client("admin")).read_namespaced_lease(
        NODE, "kube-node-lease")
    assert lease.spec.holder_identity == NODE
    pod = core.read_namespaced_pod(POD, ns)
    assert pod.spec.node_name == NODE and pod.status.phase == "Running"
    assert {(s.name, s.ready, bool(s.state.running)) for s in pod.status.container_statuses} == {
        ("main", True, True), ("side", True, True)}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_exec(cluster, ns, transport):
    env = TRANSPORTS[transport]
    r = kubectl(cluster, "-v=4", "exec", "-n", ns, POD, "--", "echo", "hello", "world", env=env)
    assert (r.returncode, r.stdout) == (0, "hello world\n"), r.stderr
    # kubectl's own word on the protocol it spoke to the API server.
    assert ("The subprotocol is v5.channel.k8s.io" in r.stderr) == (transport == "websocket")
    r = kubectl(cluster, "exec", "-i", "-n", ns, POD, "--", "cat", env=env,
                input="line one\nline two\n")
    assert (r.returncode, r.stdout) == (0, "line one\nline two\n"), r.stderr
    r = kubectl(cluster, "exec", "-n", ns, POD, "--", "sh", "-c", "exit 3", env=env)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "command terminated with exit code 3" in r.stderr
    r = kubectl(cluster, "exec", "-n", ns, POD, "-c", "side", "--", "env", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"POD_NAMESPACE={ns}", f"POD_NAME={POD}",
                                     "CONTAINER_NAME=side", f"HOSTNAME={POD}"]
    r = kubectl(cluster, "exec", "-n", ns, POD, "-c", "main", "--", "stderr", "to", "stderr",
                env=env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "to stderr\n")
    r = kubectl(cluster, "exec", "-n", ns, POD, "--", "ls", "-l", "/", env=env)
    assert (r.returncode, r.stdout) == (0, "stub: ls -l /\n"), r.stderr


def test_exec_unknown_container(cluster, ns):
    r = kubectl(cluster, "exec", "-n", ns, POD, "-c", "nope", "--", "echo", "x")
    assert r.returncode != 0
    assert "nope" in r.stderr and "not valid" in r.stderr


def test_exec_websocket_to_kubelet(cluster, ns, stub_kubelet):
    """The Python client's v4.channel.k8s.io WebSocket reaches the stub as a WebSocket."""
    core = k8s.CoreV1Api(cluster.new_client("admin"))
    out = stream(core.connect_get_namespaced_pod_exec, POD, ns, container="main",
                 command=["echo", "via", "ws"], stderr=True, stdin=False, stdout=True, tty=False)
    assert out == "via ws\n"
    resp = stream(core.connect_get_namespaced_pod_exec, POD, ns, container="main",
                  command=["sh", "-c", "exit 7"], stderr=True, stdin=False, stdout=True, tty=False,
                  _preload_content=False)
    resp.run_forever(timeout=10)
    assert resp.returncode == 7
    assert "websocket: v4.channel.k8s.io" in stub_kubelet.log()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_attach(cluster, ns, transport):
    r = kubectl(cluster, "attach", "-i", "-n", ns, POD, "-c", "main", env=TRANSPORTS[transport],
                input="hello attach\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"stub attach: {ns}/{POD}/main\nhello attach\n"


class Kubectl:
    """A long-running kubectl (port-forward, logs -f) as the admin, its stdout read line by line
    by a thread; stopped by its PID."""

    def __init__(self, cluster, *args, env=None):
        self.proc = subprocess.Popen(
            [cluster.kubectl_bin, "--kubeconfig", cluster.kubeconfig("admin"), *map(str, args)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **(env or {})})
        self.lines = queue.Queue()
        self._stderr = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def line(self, timeout):
        """The next line of stdout within timeout seconds, or None."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def stderr(self):
        """Its stderr, once it has exited."""
        if self.proc.poll() is None:
            return "(still running)"
        if self._stderr is None:
            self._stderr = self.proc.stderr.read()
        return self._stderr

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        stop(self.proc)


def stop(proc):
    """Stop a kubectl this test started, by its PID."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def exchange(port, payload):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while len(got) < len(payload) and (chunk := s.recv(4096)):
            got += chunk
        return got


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_port_forward(cluster, ns, transport):
    with Kubectl(cluster, "-v=4", "port-forward", "-n", ns, "--address", "127.0.0.1", f"pod/{POD}",
                 f":{ECHO_PORT}", f":{FORWARD_PORT}", env=TRANSPORTS[transport]) as pf:
        local = {}
        deadline = time.monotonic() + 20
        while len(local) < 2 and time.monotonic() < deadline:
            line = pf.line(1)
            if line and line.startswith("Forwarding from 127.0.0.1:"):
                port, remote = line.split("127.0.0.1:", 1)[1].split(" -> ")
                local[int(remote)] = int(port)
            if line is None and pf.proc.poll() is not None:
                break
        assert len(local) == 2, f"kubectl port-forward: {local} {pf.stderr()}"
        payload = os.urandom(64 * 1024)
        assert exchange(local[ECHO_PORT], payload) == payload
        assert exchange(local[FORWARD_PORT], b"shout please") == b"SHOUT PLEASE"
        # A second connection through the same forward.
        assert exchange(local[ECHO_PORT], b"again") == b"again"
    tunnelled = "negotiated protocol: portforward.k8s.io" in pf.stderr()
    assert tunnelled == (transport == "websocket")


def test_logs(cluster, ns):
    r = kubectl(cluster, "logs", "-n", ns, POD, "-c", "main")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"stub log line {i} of {ns}/{POD}/main" for i in (1, 2, 3)]
    r = kubectl(cluster, "logs", "-n", ns, POD, "-c", "side", "--tail=1")
    assert r.stdout.splitlines() == [f"stub log line 3 of {ns}/{POD}/side"], r.stderr


def test_logs_follow(cluster, ns):
    with Kubectl(cluster, "logs", "-f", "-n", ns, POD, "-c", "main") as logs:
        lines = []
        start = time.monotonic()
        while len(lines) < 5 and time.monotonic() - start < 15:
            line = logs.line(1)
            if line is not None:
                lines.append(line)
            elif logs.proc.poll() is not None:
                break
        assert lines == [f"stub log line {i} of {ns}/{POD}/main" for i in range(1, 6)], \
            (lines, logs.stderr())
        # Lines 4 and 5 come a second apart: the stream is followed, not replayed.
        assert time.monotonic() - start >= 1.5
        assert logs.proc.poll() is None


def test_node_proxy_refused(cluster, stub_kubelet):
    """The API server proxies nodes/proxy only to global unicast addresses: 127.0.0.1 is
    refused before the stub sees a request."""
    r = kubectl(cluster, "get", "--raw", f"/api/v1/nodes/{NODE}/proxy/healthz")
    assert r.returncode != 0
    assert "address not allowed" in r.stderr, r.stderr
    assert "/healthz" not in stub_kubelet.log()
