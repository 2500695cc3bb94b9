"""pytest harness: one real control plane (etcd, kube-apiserver, kube-controller-manager) per session.

By default the session starts a fresh control plane with tests/cluster/start.sh in a pytest temporary
directory (kept for the last few runs, with logs) and stops it at the end. With
LANDLORD_TEST_CLUSTER_DIR=<STATE_DIR> the session reuses a running one (e.g. from `make run`) and
leaves it running.

Fixtures:
  cluster         -> Cluster: env values, client(user), kubectl(user, *args), create_namespace(), ...
  k8s_client      -> cluster.client: user name -> kubernetes.client.ApiClient
  kubectl         -> cluster.kubectl
  namespace       -> a fresh namespace name, deleted after the test
  make_namespace  -> factory for more namespaces, all deleted after the test
  installed       -> cluster, with landlord's namespace, CRDs and least-privilege RBAC applied
  kit             -> a tenants.Kit: this test's landlord, Plans, Tenants and namespaces
Users: admin, landlord, alice, bob, carol, dave, erin, frank (see tests/cluster/README.md).
"""

import contextlib
import os
import pathlib
import subprocess
import time
import uuid

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from kube import GROUP, VERSION, custom, ignore_404

REPO = pathlib.Path(__file__).resolve().parents[2]
CLUSTER_SCRIPTS = REPO / "tests" / "cluster"
USERS = ("admin", "landlord", "landlord-proxy", "alice", "bob", "carol", "dave", "erin", "frank")


def read_env(path):
    """Parse a KEY=VALUE file as written by start.sh."""
    env = {}
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            env[key] = value
    return env


def wait_for(predicate, timeout=30.0, interval=0.1, what="condition"):
    """Poll predicate() until it returns a truthy value; return it, or fail after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Cluster:
    wait_for = staticmethod(wait_for)

    def __init__(self, state_dir):
        self.state_dir = pathlib.Path(state_dir)
        self.env = read_env(self.state_dir / "env")
        self.api_url = self.env["API_URL"]
        self.api_port = int(self.env["API_PORT"])
        self.etcd_url = self.env["ETCD_URL"]
        self.ca = self.env["CA"]
        self.pki_dir = pathlib.Path(self.env["PKI_DIR"])
        self.bin_dir = pathlib.Path(self.env["BIN_DIR"])
        self.kubectl_bin = str(self.bin_dir / "kubectl")
        self._clients = {}

    def reload_env(self):
        """Re-read STATE_DIR/env, e.g. after restart_apiserver()."""
        self.env = read_env(self.state_dir / "env")

    def kubeconfig(self, user):
        path = self.state_dir / "kubeconfigs" / f"{user}.kubeconfig"
        if not path.exists():
            raise ValueError(f"no kubeconfig for user {user!r}; known: {', '.join(USERS)}")
        return str(path)

    def client(self, user="admin"):
        """An official kubernetes ApiClient authenticated as user (cached per user)."""
        if user not in self._clients:
            self._clients[user] = self.new_client(user)
        return self._clients[user]

    def new_client(self, user="admin", impersonate=None, group=None):
        """A new ApiClient as user (one per thread), optionally impersonating another user
        (and group)."""
        api = k8s_config.new_client_from_config(config_file=self.kubeconfig(user),
                                                persist_config=False)
        if impersonate:
            api.set_default_header("Impersonate-User", impersonate)
        if group:
            api.set_default_header("Impersonate-Group", group)
        return api

    def kubectl(self, user, *args, input=None, timeout=120):
        """Run the built kubectl as user; returns CompletedProcess with text stdout/stderr."""
        cmd = [self.kubectl_bin, "--kubeconfig", self.kubeconfig(user), *map(str, args)]
        return subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)

    def create_namespace(self, prefix="e2e", labels=None):
        """Create a uniquely named namespace (<prefix>-<8 hex digits>) as admin and return its
        name."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        body = k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name, labels=labels))
        k8s.CoreV1Api(self.client("admin")).create_namespace(body)
        return name

    def delete_namespace(self, name, wait=False, timeout=60):
        core = k8s.CoreV1Api(self.client("admin"))
        try:
            core.delete_namespace(name)
        except ApiException as e:
            if e.status != 404:
                raise
        if wait:
            wait_for(lambda: not self.namespace_exists(name), timeout,
                     what=f"namespace {name} to be deleted")

    def namespace_exists(self, name):
        try:
            k8s.CoreV1Api(self.client("admin")).read_namespace(name)
            return True
        except ApiException as e:
            if e.status == 404:
                return False
            raise

    def wait_crds_established(self, *names, timeout=60):
        """Poll until every named CRD reports Established=True. (`kubectl wait` fails instead of
        waiting while a just-created CRD has no status.conditions yet.)"""
        ext = k8s.ApiextensionsV1Api(self.client("admin"))

        def established():
            for name in names:
                try:
                    crd = ext.read_custom_resource_definition(name)
                except ApiException as e:
                    if e.status == 404:
                        return False
                    raise
                conds = (crd.status and crd.status.conditions) or []
                if not any(c.type == "Established" and c.status == "True" for c in conds):
                    return False
            return True
        wait_for(established, timeout, what=f"CRDs {', '.join(names)} to be established")

    def restart_apiserver(self):
        run_script("restart-apiserver.sh", self.state_dir)
        self.reload_env()

    def stop_kcm(self):
        """Stop kube-controller-manager (by the PID start.sh recorded). Start it again with
        start_kcm() before the test ends: the cluster is shared by the session."""
        run_script("kcm.sh", self.state_dir, "stop")
        self.reload_env()

    def start_kcm(self, *flags):
        """(Re)start kube-controller-manager with start.sh's flags plus flags (later ones win,
        e.g. "--kube-api-qps=20")."""
        run_script("kcm.sh", self.state_dir, "start", *flags)
        self.reload_env()

    def etcd_compact(self):
        """Compact etcd to its current revision; returns that revision."""
        return int(run_script("etcd-compact.sh", self.state_dir).stdout.strip())


def run_script(name, *args, timeout=300):
    return subprocess.run([str(CLUSTER_SCRIPTS / name), *map(str, args)], check=True,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    reuse = os.environ.get("LANDLORD_TEST_CLUSTER_DIR")
    if reuse:
        yield Cluster(reuse)
        return
    with private_cluster(tmp_path_factory.mktemp("cluster")) as c:
        yield c


@contextlib.contextmanager
def private_cluster(state_dir):
    """A fresh control plane kept in @state_dir, stopped when the block ends."""
    subprocess.run([str(CLUSTER_SCRIPTS / "build-k8s.sh")], check=True, capture_output=True)
    try:
        run_script("start.sh", state_dir)
    except subprocess.CalledProcessError as e:
        pytest.fail(f"start.sh failed (logs in {state_dir}/logs):\n{e.stdout}{e.stderr}")
    try:
        yield Cluster(state_dir)
    finally:
        run_script("stop.sh", state_dir)


@pytest.fixture(autouse=True)
def _stop_leftover_processes():
    """A failing test must not leave a landlord process behind to disturb the next one."""
    yield
    import procs
    procs.stop_leftovers()


@pytest.fixture(scope="session")
def k8s_client(cluster):
    return cluster.client


@pytest.fixture(scope="session")
def kubectl(cluster):
    return cluster.kubectl


@pytest.fixture
def make_namespace(cluster):
    created = []

    def make(prefix="e2e", labels=None):
        name = cluster.create_namespace(prefix, labels)
        created.append(name)
        return name

    yield make
    for name in created:
        cluster.delete_namespace(name)


@pytest.fixture
def namespace(make_namespace):
    return make_namespace()


@pytest.fixture(scope="session")
def installed(cluster):
    """landlord's namespace, CRDs and least-privilege RBAC, as deploy/ ships them, and the
    Gateway API's standard CRDs (so that every landlord of the session watches HTTPRoutes)."""
    import tenants
    install_gateway_api(cluster)
    return tenants.install(cluster)


@pytest.fixture(scope="module")
def module_policies(installed):
    """deploy/policies in force for one module's tests (pytestmark = usefixtures), and gone
    after them: later modules assume a cluster without them unless they apply them."""
    import tenants
    tenants.apply_policies(installed)
    yield
    tenants.remove_policies(installed)


@pytest.fixture
def created(installed):
    """Cluster-scoped landlord.dev objects a test creates for real, as (plural, name) pairs:
    deleted afterwards."""
    objs = []
    yield objs
    api = custom(installed)
    for plural, name in objs:
        ignore_404(api.delete_cluster_custom_object, GROUP, VERSION, plural, name)


def install_gateway_api(cluster):
    """The pinned Gateway API's standard-channel CRDs (tests/cluster/gateway-api-crds.sh fetches
    them into its cache once), applied server-side: the HTTPRoute CRD is too large for the
    annotation of a client-side apply."""
    files = run_script("gateway-api-crds.sh").stdout.split()
    r = cluster.kubectl("admin", "apply", "--server-side", "--force-conflicts", "-o", "name",
                        *(a for f in files for a in ("-f", f)))
    assert r.returncode == 0, r.stderr
    cluster.wait_crds_established(*(line.split("/", 1)[1] for line in r.stdout.split()))


@pytest.fixture
def kit(installed, tmp_path):
    """A tenants.Kit: this test's landlord, Plans, Tenants and namespaces, cleaned up after."""
    import tenants
    with tenants.Kit(installed, tmp_path) as k:
        yield k
