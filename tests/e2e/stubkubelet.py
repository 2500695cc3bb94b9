"""A stub kubelet (tests/stubkubelet) for a test cluster: a Node at 127.0.0.1 whose pods exec,
attach, port-forward and log through the real kube-apiserver, with no container runtime.

The stub (built by tests/cluster/build-stubkubelet.sh, on k8s.io/kubelet/pkg/cri/streaming)
serves HTTPS on 127.0.0.1 with a certificate signed by the cluster's CA, registers the Node
`stub-node` (status.addresses [InternalIP 127.0.0.1], status.daemonEndpoints.kubeletEndpoint.Port
its port, Ready=True, heartbeats and a Lease in kube-node-lease), marks every pod bound to the
Node by spec.nodeName Running, and finishes their graceful deletion as a kubelet does. Its fake
runtime runs nothing on the host: `echo ARGS`, `cat`, `sh -c 'exit N'`, `env`, `stderr ARGS`,
anything else prints "stub: <cmd>"; attach greets then echoes stdin; port-forward echoes, or
connects to 127.0.0.1:<L> when the pod has the annotation stubkubelet.landlord.dev/port-<P>: "L";
logs are three lines, and with follow one more a second (see tests/stubkubelet/main.go).

    # the fixture (module scope): import it into the test module
    from stubkubelet import stub_kubelet
    def test_x(stub_kubelet, namespace, kubectl):
        stub_kubelet.make_pod(namespace, "web")  # bound to the node, Running when it returns
        r = kubectl("admin", "exec", "-n", namespace, "web", "--", "echo", "hi")
        assert r.stdout == "hi\\n"

The API server reaches the loopback node for exec, attach, port-forward and logs; it refuses
`nodes/proxy` to it ("address not allowed": it proxies to global unicast addresses only).

Started and stopped by PID: stop() deletes the pods still bound to the Node (grace period 0), sends
SIGTERM to the stub's PID (SIGKILL after 10 s), then deletes its Lease and the Node.
"""

import pathlib
import signal
import subprocess
import time

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from conftest import CLUSTER_SCRIPTS, wait_for

NODE = "stub-node"
PORT_ANNOTATION = "stubkubelet.landlord.dev/port-"  # + "<pod port>": "<port on 127.0.0.1>"
IMAGE = "stub.invalid/none:latest"  # never pulled: no runtime


def binary():
    """Path of the stub kubelet, built first when not cached (a no-op when it is)."""
    r = subprocess.run([str(CLUSTER_SCRIPTS / "build-stubkubelet.sh")], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"build-stubkubelet.sh failed:\n{r.stdout}{r.stderr}"
    return pathlib.Path(r.stdout.strip().splitlines()[-1])


def serving_cert(cluster, directory):
    """A serving certificate for 127.0.0.1 signed by the cluster's CA (kube-apiserver has no
    --kubelet-certificate-authority and so verifies nothing, but it would accept this one)."""
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    key, csr, crt, ext = (d / n for n in ("kubelet.key", "kubelet.csr", "kubelet.crt",
                                          "kubelet.ext"))
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
                   "keyUsage=critical,digitalSignature\n")

    def run(*args):
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=60)
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-subj", "/CN=system:node:stub", "-keyout", key, "-out", csr)
    run("x509", "-req", "-in", csr, "-CA", cluster.pki_dir / "ca.crt",
        "-CAkey", cluster.pki_dir / "ca.key", "-CAcreateserial", "-CAserial", d / "ca.srl",
        "-days", "2", "-extfile", ext, "-out", crt)
    return crt, key


class StubKubelet:
    def __init__(self, cluster, directory, node=NODE):
        self.cluster = cluster
        self.dir = pathlib.Path(directory)
        self.node = node
        self.proc = None
        self.port = None
        self.log_path = self.dir / "stubkubelet.log"
        self.core = k8s.CoreV1Api(cluster.client("admin"))

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def log(self):
        return self.log_path.read_text() if self.log_path.exists() else ""

    def start(self, timeout=60):
        exe = binary()
        crt, key = serving_cert(self.cluster, self.dir)
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [str(exe), "--kubeconfig", self.cluster.kubeconfig("admin"),
                 "--node-name", self.node, "--tls-cert-file", str(crt),
                 "--tls-private-key-file", str(key), "--heartbeat", "5s"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            self.port = self._wait_ready(timeout)
            wait_for(self._node_ready, timeout, what=f"node {self.node} Ready")
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        marker = f"ready node={self.node} port="
        while time.monotonic() < deadline:
            for line in self.log().splitlines():
                if marker in line:
                    return int(line.split(marker, 1)[1].split()[0])
            if self.proc.poll() is not None:
                raise AssertionError(f"stubkubelet exited {self.proc.returncode}:\n"
                                     f"{self.log()[-4000:]}")
            time.sleep(0.05)
        raise AssertionError(f"stubkubelet not ready within {timeout}s:\n{self.log()[-4000:]}")

    def _node_ready(self):
        try:
            node = self.core.read_node(self.node)
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        ep = node.status.daemon_endpoints.kubelet_endpoint.port
        return ep == self.port and any(c.type == "Ready" and c.status == "True"
                                       for c in node.status.conditions or [])

    def stop(self):
        """Delete the pods still on the Node, stop the stub by its PID, delete its Lease and
        the Node. Safe to call twice."""
        try:
            self.delete_pods()
        finally:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            for delete in (lambda: k8s.CoordinationV1Api(self.cluster.client("admin"))
                           .delete_namespaced_lease(self.node, "kube-node-lease"),
                           lambda: self.core.delete_node(self.node)):
                try:
                    delete()
                except ApiException as e:
                    if e.status != 404:
                        raise

    def delete_pods(self):
        pods = self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={self.node}")
        for p in pods.items:
            self.delete_pod(p.metadata.namespace, p.metadata.name)

    def delete_pod(self, namespace, name):
        """Delete at once (grace period 0), as after a kubelet has stopped the containers."""
        try:
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        except ApiException as e:
            if e.status != 404:
                raise

    # ---------- pods on the node ----------

    def pod_manifest(self, name, containers=("main",), annotations=None, labels=None):
        """A pod bound to this Node by spec.nodeName (no scheduler runs here), its containers'
        image never pulled, no service-account token mounted."""
        return {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": dict(annotations or {}),
                         "labels": dict(labels or {})},
            "spec": {
                "nodeName": self.node,
                "automountServiceAccountToken": False,
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": c, "image": IMAGE} for c in containers],
            },
        }

    def make_pod(self, namespace, name="stub", containers=("main",), annotations=None,
                 labels=None, timeout=30):
        """Create the pod as the cluster admin (once the namespace's default ServiceAccount
        exists: the admission plugin wants it) and return it once the stub has marked it
        Running."""
        wait_for(lambda: _exists(self.core.read_namespaced_service_account, "default",
                                 namespace), timeout,
                 what=f"ServiceAccount default in {namespace}")
        self.core.create_namespaced_pod(namespace, self.pod_manifest(
            name, containers, annotations, labels))
        return self.wait_running(namespace, name, timeout)

    def wait_running(self, namespace, name, timeout=30):
        def running():
            p = self.core.read_namespaced_pod(name, namespace)
            return p if p.status.phase == "Running" else None
        return wait_for(running, timeout, what=f"pod {namespace}/{name} Running on {self.node}")


def _exists(read, *args):
    try:
        return read(*args)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


@pytest.fixture(scope="module")
def stub_kubelet(cluster, tmp_path_factory):
    """A running StubKubelet for the module's tests, stopped (and its Node deleted) after."""
    stub = StubKubelet(cluster, tmp_path_factory.mktemp("stubkubelet"))
    stub.start()
    try:
        yield stub
    finally:
        stub.stop()


__all__ = ["StubKubelet", "stub_kubelet", "binary", "NODE", "PORT_ANNOTATION"]
