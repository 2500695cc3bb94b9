"""The chart sources of tests/e2e/charts.py with the real tools: the pinned distribution
`registry` (TLS from a test CA, htpasswd auth) filled with `helm push`, and the loopback chart
repository behind basic auth, both read back with the pinned `helm pull`.

Infrastructure tests: landlord's own Helm support will install from these sources. No control
plane is needed. Passwords go to helm on the command line only here, for `helm pull --repo`
(which has no --password-stdin); the registry's goes to `helm registry login` on stdin.
"""

import hashlib
import json

import pytest

from charts import CHARTS, ChartRepo, Helm, Registry

CHART, VERSION = "hello", "0.1.0"


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tgz(tmp_path_factory):
    """The tiny chart, packaged once."""
    d = tmp_path_factory.mktemp("packaged")
    return Helm(d / "helm").package(CHARTS / CHART, d)


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    with Registry(tmp_path_factory.mktemp("registry")) as reg:
        yield reg


@pytest.fixture(scope="module")
def pushed(registry, tgz, tmp_path_factory):
    """The chart pushed to the registry by a logged-in Helm; that Helm."""
    helm = Helm(tmp_path_factory.mktemp("pusher"))
    helm.registry_login(registry)
    r = helm.push(tgz, registry)
    assert f"Pushed: {registry.host}/charts/{CHART}:{VERSION}" in r.stdout + r.stderr
    return helm


def test_registry_demands_credentials(registry):
    status, headers, _ = registry.request("/v2/", auth=False)
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Basic ")
    assert registry.request("/v2/")[0] == 200


def test_pushed_chart_pulls_back_identical(registry, tgz, pushed, tmp_path):
    out = tmp_path / "out"
    pushed.pull_oci(registry, f"charts/{CHART}", out, version=VERSION)
    got = out / tgz.name
    assert sha256(got) == sha256(tgz)
    # The registry holds the chart's bytes as the manifest's one layer.
    status, _, body = registry.request(f"/v2/charts/{CHART}/manifests/{VERSION}")
    assert status == 200, body
    manifest = json.loads(body)
    assert manifest["config"]["mediaType"] == "application/vnd.cncf.helm.config.v1+json"
    [layer] = manifest["layers"]
    assert layer["mediaType"] == "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
    assert layer["digest"] == f"sha256:{sha256(tgz)}"


def test_registry_refuses_without_login(registry, pushed, tmp_path):
    manifest = f"/v2/charts/{CHART}/manifests/{VERSION}"
    seen = len(registry.access("GET", manifest))
    stranger = Helm(tmp_path / "helm")
    out = tmp_path / "out"
    r = stranger.pull_oci(registry, f"charts/{CHART}", out, version=VERSION, check=False)
    assert r.returncode != 0
    # The registry answered 401 and helm, having no credential for it, gave up.
    assert "basic credential not found" in r.stderr, r.stderr
    assert registry.access("GET", manifest)[seen:] == [401]
    assert not any(out.iterdir())
    r = stranger.registry_login(registry, password="not-" + registry.password, check=False)
    assert r.returncode != 0
    assert "401" in r.stderr, r.stderr
    assert registry.access("GET", "/v2/")[-1] == 401


def test_registry_refuses_unknown_ca(registry, tmp_path):
    """TLS is verified: without the test CA the login fails before any request is made."""
    seen = len(registry.access())
    helm = Helm(tmp_path / "helm")
    r = helm("registry", "login", registry.host, "--username", registry.username,
             "--password-stdin", input=registry.password, check=False)
    assert r.returncode != 0
    assert "certificate signed by unknown authority" in r.stderr, r.stderr
    assert len(registry.access()) == seen


@pytest.fixture(scope="module")
def repo(tgz, tmp_path_factory):
    d = tmp_path_factory.mktemp("chart-repo")
    with ChartRepo(d / "repo", [tgz], Helm(d / "helm")) as r:
        yield r


def test_chart_repo_with_credentials(repo, tgz, tmp_path):
    helm = Helm(tmp_path / "helm")
    out = tmp_path / "out"
    out.mkdir()
    helm("pull", CHART, "--version", VERSION, "--repo", repo.url, "--username", repo.username,
         f"--password={repo.password}", "-d", out)
    assert sha256(out / tgz.name) == sha256(tgz)
    assert ("GET", f"/{tgz.name}", True) in repo.requests


def test_chart_repo_refuses_without_credentials(repo, tmp_path):
    helm = Helm(tmp_path / "helm")
    seen = len(repo.requests)
    r = helm("pull", CHART, "--repo", repo.url, "-d", tmp_path, check=False)
    assert r.returncode != 0
    assert "401" in r.stderr, r.stderr
    r = helm("pull", CHART, "--repo", repo.url, "--username", repo.username,
             f"--password=not-{repo.password}", "-d", tmp_path, check=False)
    assert r.returncode != 0
    assert "401" in r.stderr, r.stderr
    assert repo.requests[seen:] and not any(ok for _, _, ok in repo.requests[seen:])
