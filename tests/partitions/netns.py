"""Test hosts as Linux network namespaces on one private bridge, with links that can be cut.

:class:`HostNetwork` contract:

* :meth:`~HostNetwork.create` makes one network namespace per host name, named
  ``<prefix>-<host>`` with a prefix unique to this run (``stormpy-pt<pid>x<hex>``), plus a
  namespace ``<prefix>-br`` holding a Linux bridge; each host gets a veth pair (one end in its
  namespace, the other on the bridge) and an address ``10.213.S.N/24`` in a /24 no route of the
  root namespace uses. The root namespace (the test process, the *observer*) joins the bridge
  with ``10.213.S.254`` so the test can talk to every host; nothing is routed anywhere else (no
  default route, no forwarding): hosts reach each other and the observer only.
* :meth:`~HostNetwork.cut` drops every packet between two hosts, on both sides: each host's
  nftables ``input`` hook drops what comes from the other (silently, as a failed link does:
  senders see timeouts, never an error). :meth:`~HostNetwork.heal` removes that;
  :meth:`~HostNetwork.isolate` cuts a host from every other host (the observer keeps its link);
  :meth:`~HostNetwork.heal_all` heals every cut.
* :meth:`~HostNetwork.argv` prefixes a command with ``ip netns exec <namespace>``; processes keep
  the namespace across ``exec`` and pass it to their children (a supervisor's workers run on its
  host). :meth:`~HostNetwork.python_wrapper` writes a script that runs Python there.
  :meth:`~HostNetwork.kill_host` SIGKILLs every process inside a host (a host that lost power).
* :meth:`~HostNetwork.destroy` kills every process still inside a namespace, then deletes the
  namespaces (which removes every veth and the bridge); it is idempotent, and
  :func:`remove_stale_namespaces` removes namespaces of earlier runs whose process is gone.
* :func:`missing_tools` names what is missing (Linux, root, ``ip``, ``nft``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil

__all__ = ["HostNetwork", "NetnsError", "missing_tools", "remove_stale_namespaces"]

PREFIX_ROOT = "stormpy-pt"
OBSERVER = 254
_TABLE = "stormpy_partition"


class NetnsError(RuntimeError):
    """A namespace, link or filter command failed; the message has the command and its output."""


def missing_tools() -> str | None:
    """Why the partition harness cannot run here (None when it can)."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces need Linux (this is {sys.platform})"
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool, package in (("ip", "iproute2"), ("nft", "nftables")):
        if shutil.which(tool) is None:
            return f"`{tool}` is missing (Debian package {package}; `make netns-tools` installs it)"
    return None


def run(*argv: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command; NetnsError with its output when it fails and ``check``."""
    proc = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise NetnsError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout}")
    return proc


def namespaces() -> list[str]:
    """Names of every network namespace (``ip netns list``)."""
    return [line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines() if line.strip()]


def remove_stale_namespaces() -> list[str]:
    """Delete the namespaces of earlier runs of this harness whose test process is gone."""
    removed = []
    for ns in namespaces():
        m = re.match(rf"{PREFIX_ROOT}(\d+)x", ns)
        if m and not psutil.pid_exists(int(m.group(1))):
            _kill_inside(ns)
            run("ip", "netns", "del", ns, check=False)
            removed.append(ns)
    return removed


def _kill_inside(ns: str) -> list[int]:
    pids = [int(p) for p in run("ip", "netns", "pids", ns, check=False).stdout.split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def _free_subnet() -> ipaddress.IPv4Network:
    used = run("ip", "-4", "route", "show", "table", "all").stdout + run("ip", "-4", "addr").stdout
    for _ in range(200):
        net = ipaddress.IPv4Network(f"10.213.{secrets.randbelow(250) + 1}.0/24")
        if f"10.213.{net.network_address.packed[2]}." not in used:
            return net
    raise NetnsError("no free 10.213.x.0/24 subnet in the root namespace")


class HostNetwork:
    """Hosts in network namespaces on one bridge (see the module doc)."""

    def __init__(self, hosts: list[str]) -> None:
        if len(set(hosts)) != len(hosts) or not hosts or len(hosts) > 200:
            raise ValueError(f"hosts must be 1..200 distinct names, got {hosts}")
        self.hosts = list(hosts)
        self.prefix = f"{PREFIX_ROOT}{os.getpid()}x{secrets.token_hex(2)}"
        self.subnet = _free_subnet()
        base = int(self.subnet.network_address)
        self.addresses = {h: str(ipaddress.IPv4Address(base + 10 + i)) for i, h in enumerate(hosts)}
        self.observer_address = str(ipaddress.IPv4Address(base + OBSERVER))
        self.bridge_ns = f"{self.prefix}-br"
        self._tag = self.prefix[len(PREFIX_ROOT):].replace("x", "")[-9:]
        self._created: list[str] = []
        self._observer_link: str | None = None
        self.cuts: set[frozenset[str]] = set()

    def ns(self, host: str) -> str:
        """The namespace of ``host``."""
        if host not in self.addresses:
            raise KeyError(f"unknown host {host!r} (hosts: {self.hosts})")
        return f"{self.prefix}-{host}"

    def address(self, host: str) -> str:
        return self.addresses[host]

    # -- building and removing -----------------------------------------------------------------------
    def create(self) -> HostNetwork:
        """Make the namespaces, the bridge, the links and the drop tables; undo all on failure."""
        try:
            self._add_ns(self.bridge_ns)
            run("ip", "-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
            run("ip", "-n", self.bridge_ns, "link", "set", "br0", "up")
            for i, host in enumerate(self.hosts):
                ns = self.ns(host)
                self._add_ns(ns)
                run("ip", "-n", ns, "link", "set", "lo", "up")
                run("ip", "link", "add", "eth0", "netns", ns, "type", "veth",
                    "peer", "name", f"h{i}", "netns", self.bridge_ns)
                self._attach(f"h{i}")
                run("ip", "-n", ns, "addr", "add", f"{self.addresses[host]}/24", "dev", "eth0")
                run("ip", "-n", ns, "link", "set", "eth0", "up")
                run("ip", "netns", "exec", ns, "nft", "-f", "-", stdin=(
                    f"table inet {_TABLE} {{\n  set cut {{ type ipv4_addr; }}\n"
                    "  chain input { type filter hook input priority -200; policy accept; "
                    "ip saddr @cut drop; }\n}\n"))
            link = f"spt{self._tag}"
            run("ip", "link", "add", link, "type", "veth", "peer", "name", "obs", "netns", self.bridge_ns)
            self._observer_link = link
            self._attach("obs")
            run("ip", "addr", "add", f"{self.observer_address}/24", "dev", link)
            run("ip", "link", "set", link, "up")
        except BaseException:
            self.destroy()
            raise
        return self

    def _add_ns(self, ns: str) -> None:
        run("ip", "netns", "add", ns)
        self._created.append(ns)

    def _attach(self, port: str) -> None:
        run("ip", "-n", self.bridge_ns, "link", "set", port, "master", "br0")
        run("ip", "-n", self.bridge_ns, "link", "set", port, "up")

    def processes_inside(self) -> dict[str, list[int]]:
        """host → pids still running in its namespace (hosts with none left out)."""
        out = {}
        for host in self.hosts:
            if self.ns(host) in self._created:
                pids = [int(p) for p in run("ip", "netns", "pids", self.ns(host), check=False).stdout.split()]
                if pids:
                    out[host] = pids
        return out

    def destroy(self) -> dict[str, list[int]]:
        """Kill what still runs inside, delete every namespace (and so every link); return the
        pids that had to be killed, by host."""
        killed: dict[str, list[int]] = {}
        for ns in list(self._created):
            pids = _kill_inside(ns)
            if pids:
                killed[ns] = pids
        procs = []
        for pid in (p for ps in killed.values() for p in ps):
            with contextlib.suppress(psutil.NoSuchProcess):
                procs.append(psutil.Process(pid))
        psutil.wait_procs(procs, timeout=10)
        for ns in reversed(self._created):
            run("ip", "netns", "del", ns, check=False)
        self._created.clear()
        if self._observer_link is not None:  # gone with its peer in the bridge namespace; make sure
            run("ip", "link", "del", self._observer_link, check=False)
            self._observer_link = None
        return killed

    def leftovers(self) -> list[str]:
        """Namespaces and root links of this run that still exist (empty after :meth:`destroy`)."""
        left = [ns for ns in namespaces() if ns.startswith(self.prefix)]
        links = run("ip", "-o", "link").stdout
        if f"spt{self._tag}" in links:
            left.append(f"spt{self._tag}")
        return left

    # -- processes -------------------------------------------------------------------------------
    def argv(self, host: str, *command: str) -> list[str]:
        """``command`` run on ``host``."""
        return ["ip", "netns", "exec", self.ns(host), *command]

    def python_wrapper(self, host: str, directory: Path) -> str:
        """Path of an executable script that runs ``sys.executable`` on ``host`` (same pid)."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"python-{host}"
        path.write_text(f"#!/bin/sh\nexec ip netns exec {self.ns(host)} {sys.executable} \"$@\"\n")
        path.chmod(0o755)
        return str(path)

    # -- faults ----------------------------------------------------------------------------------
    def kill_host(self, host: str) -> list[int]:
        """SIGKILL every process running on ``host`` (its daemons and their children at once, as
        when the host loses power); return their pids, reaped or not."""
        return _kill_inside(self.ns(host))

    def _drop(self, host: str, source: str, *, on: bool) -> None:
        verb = "add" if on else "delete"
        run("ip", "netns", "exec", self.ns(host), "nft", verb, "element", "inet", _TABLE, "cut",
            f"{{ {self.addresses[source]} }}")

    def cut(self, a: str, b: str) -> None:
        """Drop all traffic between ``a`` and ``b`` (both directions, on both hosts)."""
        if a == b:
            raise ValueError(f"cannot cut {a!r} from itself")
        pair = frozenset((a, b))
        if pair in self.cuts:
            return
        self._drop(a, b, on=True)
        self._drop(b, a, on=True)
        self.cuts.add(pair)

    def heal(self, a: str, b: str) -> None:
        """Undo :meth:`cut` of ``a`` and ``b``."""
        pair = frozenset((a, b))
        if pair not in self.cuts:
            return
        self._drop(a, b, on=False)
        self._drop(b, a, on=False)
        self.cuts.discard(pair)

    def isolate(self, host: str) -> None:
        """Cut ``host`` from every other host (the observer still reaches it)."""
        for other in self.hosts:
            if other != host:
                self.cut(host, other)

    def heal_all(self) -> None:
        for pair in list(self.cuts):
            a, b = sorted(pair)
            self.heal(a, b)

    def reachable(self, a: str, b: str, port: int, timeout: float = 1.0) -> bool:
        """Whether a TCP connect from ``a`` to ``b``:``port`` gets an answer (accepted or refused)."""
        code = (f"import socket,sys\ns=socket.socket();s.settimeout({timeout!r})\n"
                f"try: s.connect(({self.addresses[b]!r},{port:d}))\nexcept ConnectionRefusedError: pass\n"
                "except OSError: sys.exit(1)\n")
        return subprocess.run(self.argv(a, sys.executable, "-c", code), capture_output=True,
                              timeout=30).returncode == 0
