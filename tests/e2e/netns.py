"""A network namespace of the test's own, so that the real kube-apiserver reaches a server through
a Service's Endpoints.

kube-apiserver (started with --enable-aggregator-routing=true, tests/cluster/start.sh) resolves a
webhook's `service` reference through the Service's Endpoints, and the API server refuses
loopback addresses in Endpoints. So a test makes a network namespace `llw-<pid>` with a veth pair
whose two ends get addresses from 10.213.0.0/16 (a /30 chosen from the PID, skipping any subnet
that overlaps an address or route of the host), and runs its server inside with `ip netns exec`.
Test traffic goes only to loopback and to this namespace, never to the host's own address.

    from netns import netns          # the fixture (module scope); import it into the test module
    def test_x(netns):
        proc = netns.popen([sys.executable, "server.py", ...], log_path)
        ... Endpoints address: netns.ns_ip (the host end is netns.host_ip) ...

More addresses in the namespace, for several servers on one port: `netns.add_address()`. A
process in the namespace reaches the API server on the host's loopback through
`netns.bridge_to_host(port, dir)` (tcp_bridge.py, over a Unix socket).

Set-up and tear-down go by PID: the namespace and the veth pair are named after this process,
each server started here is stopped by its own PID, and everything set up so far is removed when
a step fails. Namespaces `llw-<pid>` whose process is gone (a killed run) are removed at the next
set-up. Without the right to run `ip netns add` (root, CAP_NET_ADMIN and CAP_SYS_ADMIN) the
fixture skips with the reason.
"""

import ipaddress
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

PREFIX = "llw-"
POOL = ipaddress.ip_network("10.213.0.0/16")
SUBNETS = 1 << (30 - POOL.prefixlen)  # /30 subnets in the pool


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check,
                          timeout=30)


def _host_networks():
    """Every IPv4 network the host has an address or a route in."""
    nets = []
    for line in _ip("-o", "-4", "addr", "show").stdout.splitlines():
        m = re.search(r"\binet (\S+)", line)
        if m:
            nets.append(ipaddress.ip_interface(m.group(1)).network)
    for line in _ip("-4", "route", "show", "table", "all").stdout.splitlines():
        dest = line.split()[0] if line.split() else ""
        if dest and dest not in ("default", "broadcast", "local", "unreachable"):
            try:
                nets.append(ipaddress.ip_network(dest, strict=False))
            except ValueError:
                pass
    return nets


def _pick_subnet(pid):
    used = _host_networks()
    for i in range(SUBNETS):
        net = ipaddress.ip_network((int(POOL.network_address) + 4 * ((pid + i) % SUBNETS), 30))
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError(f"no free /30 in {POOL}")


def _remove_stale():
    """Remove namespaces llw-<pid> (and their veth pairs) whose process is gone."""
    r = _ip("netns", "list", check=False)
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(re.escape(PREFIX) + r"(\d+)", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            _ip("netns", "del", name, check=False)
            _ip("link", "del", f"llw{m.group(1)}h", check=False)


class NetNS:
    """One network namespace with a veth pair: host end host_ip, namespace end ns_ip (a /30)."""

    def __init__(self, pid=None):
        self.host_procs = []
        self.extra_ips = []
        self.pid = pid or os.getpid()
        self.name = f"{PREFIX}{self.pid}"
        self.host_if = f"llw{self.pid}h"  # interface names are at most 15 characters
        self.ns_if = f"llw{self.pid}n"
        self.procs = []
        self._created = False
        self.subnet = None
        self.host_ip = self.ns_ip = None

    def setup(self):
        _remove_stale()
        self.subnet = _pick_subnet(self.pid)
        hosts = list(self.subnet.hosts())
        self.host_ip, self.ns_ip = str(hosts[0]), str(hosts[1])
        plen = self.subnet.prefixlen
        try:
            _ip("netns", "add", self.name)
            self._created = True
            _ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
            _ip("link", "set", self.ns_if, "netns", self.name)
            _ip("addr", "add", f"{self.host_ip}/{plen}", "dev", self.host_if)
            _ip("link", "set", self.host_if, "up")
            self.ip("addr", "add", f"{self.ns_ip}/{plen}", "dev", self.ns_if)
            self.ip("link", "set", self.ns_if, "up")
            self.ip("link", "set", "lo", "up")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            self.teardown()
            raise RuntimeError(f"setting up network namespace {self.name} failed: "
                               f"{' '.join(e.cmd)}: {getattr(e, 'stderr', '')}") from e
        return self

    def add_address(self):
        """One more address inside the namespace, reachable from the host (a /32 on the
        namespace's end of the veth pair, routed there from the host): for a second server on
        the same port. Taken from a free /30 of the pool; removed with the namespace."""
        used = _host_networks() + [self.subnet] + [
            ipaddress.ip_network(f"{a}/30", strict=False) for a in self.extra_ips]
        for i in range(1, SUBNETS):
            net = ipaddress.ip_network(
                (int(POOL.network_address) + 4 * ((self.pid + len(self.extra_ips) + i) % SUBNETS),
                 30))
            if any(net.overlaps(u) for u in used):
                continue
            addr = str(list(net.hosts())[1])
            self.ip("addr", "add", f"{addr}/32", "dev", self.ns_if)
            _ip("route", "add", f"{addr}/32", "dev", self.host_if)
            self.extra_ips.append(addr)
            return addr
        raise RuntimeError(f"no free /30 in {POOL}")

    def bridge_to_host(self, port, directory):
        """Make the host's 127.0.0.1:port (the API server) reachable at 127.0.0.1:port inside
        the namespace, through a Unix socket in directory (tcp_bridge.py), for landlord
        processes run in the namespace. Stopped at tear-down."""
        sock = pathlib.Path(directory) / f"bridge-{port}.sock"
        bridge = pathlib.Path(__file__).with_name("tcp_bridge.py")
        log = open(pathlib.Path(directory) / f"bridge-{port}-host.log", "w")
        host = subprocess.Popen([sys.executable, str(bridge), "unix-to-tcp", str(sock),
                                 str(port)], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.host_procs.append(host)
        inner_log = pathlib.Path(directory) / f"bridge-{port}-ns.log"
        self.popen([sys.executable, bridge, "tcp-to-unix", port, sock], inner_log)
        for path in (pathlib.Path(directory) / f"bridge-{port}-host.log", inner_log):
            deadline = time.monotonic() + 10
            while "listening" not in path.read_text():
                assert time.monotonic() < deadline, f"the bridge did not start: {path}"
                time.sleep(0.02)

    def ip(self, *args, check=True):
        """`ip` inside the namespace."""
        return _ip("netns", "exec", self.name, "ip", *args, check=check)

    def popen(self, argv, log_path, env=None):
        """Start argv inside the namespace (stdout and stderr to log_path); stopped at
        tear-down, by its PID. `ip netns exec` execs argv, so the PID is the server's own."""
        log = open(log_path, "w")
        p = subprocess.Popen(["ip", "netns", "exec", self.name, *map(str, argv)],
                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env={**os.environ, **(env or {})}, start_new_session=True)
        log.close()
        self.procs.append(p)
        return p

    def stop(self, p, timeout=5):
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout)
        if p in self.procs:
            self.procs.remove(p)

    def teardown(self):
        for p in list(self.procs) + self.host_procs:
            try:
                self.stop(p)
            except ProcessLookupError:
                pass
        self.host_procs = []
        # Deleting the namespace destroys the veth end inside it, and with it the host end.
        if self._created:
            _ip("netns", "del", self.name, check=False)
            self._created = False
        _ip("link", "del", self.host_if, check=False)


def unavailable_reason():
    """Why network namespaces cannot be used here, or None."""
    if not shutil.which("ip"):
        return "the `ip` command (iproute2) is not installed"
    probe = f"{PREFIX}probe{os.getpid()}"
    r = _ip("netns", "add", probe, check=False)
    if r.returncode:
        return (f"`ip netns add` is not permitted here ({r.stderr.strip()}); these tests need "
                "root with CAP_NET_ADMIN and CAP_SYS_ADMIN")
    r = _ip("netns", "exec", probe, "true", check=False)
    _ip("netns", "del", probe, check=False)
    if r.returncode:
        return f"`ip netns exec` is not permitted here ({r.stderr.strip()})"
    return None


# Module scope: each test module imports the fixture, which makes a fixture of that module, and
# the namespace is named after the process; one module's namespace is gone before the next's.
@pytest.fixture(scope="module")
def netns():
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    ns = NetNS().setup()
    try:
        yield ns
    finally:
        ns.teardown()


# ---------- a throwaway CA and a serving certificate, for servers in the namespace ----------

def throwaway_pki(directory, dns_names=(), ips=()):
    """A new CA and a serving certificate signed by it (SANs dns_names and ips), made with
    openssl in directory. Returns (ca_pem_bytes, cert_path, key_path)."""
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)

    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-days", "1", "-subj", "/CN=llw-throwaway-ca", "-keyout", d / "ca.key",
        "-out", d / "ca.crt", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign")
    san = ",".join([f"DNS:{n}" for n in dns_names] + [f"IP:{i}" for i in ips])
    (d / "srv.ext").write_text(f"subjectAltName={san}\nextendedKeyUsage=serverAuth\n"
                               "keyUsage=critical,digitalSignature\n")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-subj", "/CN=llw-server", "-keyout", d / "srv.key", "-out", d / "srv.csr")
    run("x509", "-req", "-in", d / "srv.csr", "-CA", d / "ca.crt", "-CAkey", d / "ca.key",
        "-CAcreateserial", "-days", "1", "-extfile", d / "srv.ext", "-out", d / "srv.crt")
    return (d / "ca.crt").read_bytes(), d / "srv.crt", d / "srv.key"
