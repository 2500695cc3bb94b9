"""Chart sources for end-to-end tests of Helm charts per tenant namespace, served on loopback by
the test itself, and the pinned, real Helm to fill and read them:

- Registry: a real OCI registry, the distribution project's `registry` (REGISTRY_VERSION in
  tests/cluster/versions.env, built by tests/cluster/build-registry.sh), on 127.0.0.1 with TLS
  from a throwaway test CA (netns.throwaway_pki) and htpasswd (bcrypt) basic auth. Charts go in
  with `helm push` after `helm registry login`.
- ChartRepo: a classic chart repository (index.yaml, written by `helm repo index`, and .tgz
  files) behind HTTP basic auth, served by http.server from a thread; over TLS from a throwaway
  test CA (ca_file) with tls=True.
- Helm: the pinned helm (HELM_VERSION, tests/cluster/build-helm.sh) with private config, cache
  and data directories; package(), registry_login(), push(), pull_oci().
- CHARTS: tests/e2e/charts, tiny charts to package (`hello`: one ConfigMap from a value).

    helm = Helm(tmp_path / "helm")
    tgz = helm.package(CHARTS / "hello", tmp_path)
    with Registry(tmp_path / "registry") as reg:
        helm.registry_login(reg)
        helm.push(tgz, reg)                    # oci://127.0.0.1:<port>/charts/hello:0.1.0
    with ChartRepo(tmp_path / "repo", [tgz], helm) as repo:
        ... repo.url, repo.username, repo.password ...

Each server gets a random password; helm gets the registry's on stdin. The registry runs as a
procs.Proc detached from procs.stop_leftovers() (which runs after every test), so a
module-scoped fixture may keep it across tests: its owner stops it by PID with stop() or by
leaving the `with` block. ChartRepo.stop() shuts its server thread down.
"""

import base64
import functools
import hmac
import http.server
import os
import pathlib
import re
import secrets
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request

import bcrypt
import yaml

from netns import throwaway_pki
from procs import REPO, Proc, detach

CLUSTER_SCRIPTS = REPO / "tests" / "cluster"
CHARTS = REPO / "tests" / "e2e" / "charts"


def versions():
    env = {}
    for line in (CLUSTER_SCRIPTS / "versions.env").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            env[k] = v
    return env


@functools.cache
def pinned(name):
    """Path of the pinned `helm` or `registry`, built first by its script if it is not cached
    (a no-op when it is; `make deps` builds both)."""
    var = {"helm": "HELM", "registry": "REGISTRY"}[name]
    r = subprocess.run([str(CLUSTER_SCRIPTS / f"build-{name}.sh")], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"build-{name}.sh failed:\n{r.stdout}{r.stderr}"
    base = os.environ.get(f"LANDLORD_{var}_BIN", os.path.expanduser(
        f"~/.cache/landlord/{name}/{versions()[f'{var}_VERSION']}"))
    return pathlib.Path(base) / name


def write_htpasswd(path, users):
    """An htpasswd file for @users ({name: password}) with bcrypt hashes, the only kind the
    registry accepts (minimum cost: each authenticated request checks one)."""
    lines = [f"{u}:{bcrypt.hashpw(p.encode(), bcrypt.gensalt(rounds=4)).decode()}\n"
             for u, p in users.items()]
    pathlib.Path(path).write_text("".join(lines))
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Helm:
    """The pinned helm with its own HELM_CONFIG_HOME, HELM_CACHE_HOME and HELM_DATA_HOME under
    @home: no credentials, repositories or cached charts shared with another Helm or the user."""

    def __init__(self, home):
        self.binary = pinned("helm")
        home = pathlib.Path(home)
        self.env = {**os.environ, "HELM_CONFIG_HOME": str(home / "config"),
                    "HELM_CACHE_HOME": str(home / "cache"), "HELM_DATA_HOME": str(home / "data")}

    def __call__(self, *args, input=None, check=True, timeout=120):
        cmd = [str(self.binary), *map(str, args)]
        r = subprocess.run(cmd, input=input, capture_output=True, text=True, env=self.env,
                           timeout=timeout)
        if check:
            assert r.returncode == 0, f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}"
        return r

    def package(self, chart_dir, dest):
        """`helm package` @chart_dir into @dest; the .tgz's path."""
        out = self("package", chart_dir, "-d", dest).stdout
        m = re.search(r"saved it to: (\S+\.tgz)", out)
        assert m, out
        return pathlib.Path(m.group(1))

    def registry_login(self, registry, username=None, password=None, check=True):
        """`helm registry login` to @registry (a Registry) with its CA file, the password on
        stdin; its own credentials unless given others."""
        return self("registry", "login", registry.host, "--ca-file", registry.ca_file,
                    "--username", username or registry.username, "--password-stdin",
                    input=password or registry.password, check=check)

    def push(self, tgz, registry, path="charts", check=True):
        """`helm push @tgz oci://<registry>/<path>` (the chart lands at <path>/<name>:<version>)."""
        return self("push", tgz, registry.oci(path), "--ca-file", registry.ca_file, check=check)

    def pull_oci(self, registry, ref, dest, version=None, check=True):
        """`helm pull oci://<registry>/<ref> -d @dest` (made first: helm needs it) with the
        registry's CA file."""
        pathlib.Path(dest).mkdir(parents=True, exist_ok=True)
        extra = ["--version", version] if version else []
        return self("pull", registry.oci(ref), "-d", dest, "--ca-file", registry.ca_file, *extra,
                    check=check)


class Registry:
    """The pinned distribution `registry` on 127.0.0.1:<free port>, filesystem storage, TLS
    from a throwaway CA (ca_file) and htpasswd auth for one user (username, password). Files
    and its log (registry.log) live in @directory. `/v2/` answers 401 without credentials."""

    def __init__(self, directory, username="chart-pusher", password=None):
        self.dir = pathlib.Path(directory)
        self.username = username
        self.password = password or secrets.token_hex(16)
        self.proc = None
        self.port = None
        self.ca_file = None

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    def oci(self, path="charts"):
        return f"oci://{self.host}/{path}"

    def config(self, port, cert, key):
        return {
            "version": 0.1,
            "log": {"level": "info", "formatter": "text"},
            "storage": {"filesystem": {"rootdirectory": str(self.dir / "storage")},
                        "delete": {"enabled": True},
                        "maintenance": {"uploadpurging": {"enabled": False}}},
            "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16),
                     "tls": {"certificate": str(cert), "key": str(key)},
                     "headers": {"X-Content-Type-Options": ["nosniff"]}},
            "auth": {"htpasswd": {"realm": "landlord-test-registry",
                                  "path": str(self.dir / "htpasswd")}},
        }

    def start(self, timeout=30):
        self.dir.mkdir(parents=True, exist_ok=True)
        _, cert, key = throwaway_pki(self.dir / "pki", ips=["127.0.0.1"])
        self.ca_file = self.dir / "pki" / "ca.crt"
        write_htpasswd(self.dir / "htpasswd", {self.username: self.password})
        binary = pinned("registry")
        for _ in range(3):  # a free port may be taken between free_port() and the bind
            port = free_port()
            conf = self.dir / "config.yml"
            conf.write_text(yaml.safe_dump(self.config(port, cert, key)))
            # No OpenTelemetry export: its default is an OTLP collector on localhost:4318.
            proc = detach(Proc([binary, "serve", conf], self.dir / "registry.log",
                               env={"OTEL_TRACES_EXPORTER": "none"}), None)
            self.proc, self.port = proc, port
            if self.wait_ready(timeout):
                return self
            proc.stop()
            if "address already in use" not in proc.log_path.read_text():
                break
        raise AssertionError(f"registry did not start:\n{self.log()[-4000:]}")

    def request(self, path, auth=True, timeout=5):
        """(status, headers, body) of GET https://<host><path>, with basic auth unless
        @auth is False."""
        req = urllib.request.Request(f"https://{self.host}{path}")
        if auth:
            req.add_header("Authorization", basic_auth(self.username, self.password))
        req.add_header("Accept", "application/vnd.oci.image.manifest.v1+json")
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=timeout) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.popen.poll() is not None:
                return False
            try:  # a short timeout: on a port taken by another, nobody may answer at all
                if self.request("/v2/", auth=False, timeout=1)[0] == 401:
                    return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)
        return False

    def log(self):
        return self.proc.log_path.read_text() if self.proc else ""

    def access(self, method=None, path=None):
        """The statuses the registry logged so far (its access log, in order) for requests
        with @method on @path (all when None)."""
        out = []
        for m in _ACCESS.finditer(self.log()):
            if method in (None, m.group(1)) and path in (None, m.group(2)):
                out.append(int(m.group(3)))
        return out

    def stop(self):
        if self.proc:
            self.proc.stop()
            self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


_ACCESS = re.compile(r'^\S+ - \S+ \[[^]]*\] "(\S+) (\S+) HTTP/[\d.]+" (\d{3}) ', re.M)


def basic_auth(username, password):
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


class _RepoHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the repository's directory to requests with its basic-auth credentials; 401 with
    a Basic challenge to every other. Records (method, path, authorized) in repo.requests."""

    repo = None  # set per server by ChartRepo

    def authorized(self):
        return hmac.compare_digest(self.headers.get("Authorization", ""),
                                   basic_auth(self.repo.username, self.repo.password))

    def gate(self):
        ok = self.authorized()
        self.repo.requests.append((self.command, self.path, ok))
        if not ok:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="landlord-test-charts"')
            self.send_header("Content-Length", "0")
            self.end_headers()
        return ok

    def do_GET(self):
        if self.gate():
            super().do_GET()

    def do_HEAD(self):
        if self.gate():
            super().do_HEAD()

    def list_directory(self, path):
        self.send_error(404)

    def log_message(self, format, *args):
        pass


class ChartRepo:
    """A chart repository on http://127.0.0.1:<free port> (https:// with @tls, its CA in
    ca_file) behind basic auth (username, password): the .tgz files given (and add()ed) in
    @directory and their index.yaml, written by `helm repo index` with URLs relative to the
    repository's."""

    def __init__(self, directory, charts=(), helm=None, username="chart-reader", password=None,
                 tls=False):
        self.dir = pathlib.Path(directory)
        self.charts = list(charts)
        self.helm = helm
        self.username = username
        self.password = password or secrets.token_hex(16)
        self.tls = tls
        self.ca_file = None
        self.requests = []
        self.server = None
        self.thread = None

    @property
    def url(self):
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.server.server_address[1]}"

    def wrap_tls(self):
        """Serve over TLS with a certificate for 127.0.0.1 from a throwaway CA (ca_file)."""
        _, cert, key = throwaway_pki(self.dir.parent / f"{self.dir.name}-pki", ips=["127.0.0.1"])
        self.ca_file = self.dir.parent / f"{self.dir.name}-pki" / "ca.crt"
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)

    def index(self):
        (self.helm or Helm(self.dir.parent / f"{self.dir.name}-helm"))("repo", "index", self.dir)

    def add(self, tgz):
        """Put @tgz into the repository and index it again."""
        shutil.copy(tgz, self.dir / pathlib.Path(tgz).name)
        self.index()

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        for tgz in self.charts:
            shutil.copy(tgz, self.dir / pathlib.Path(tgz).name)
        self.index()
        handler = type("Handler", (_RepoHandler,), {"repo": self})
        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(self.dir)))
        self.server.daemon_threads = True
        if self.tls:
            self.wrap_tls()
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       name="chart-repo", daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(10)
            self.server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
