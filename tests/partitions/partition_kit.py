"""Helpers of the partition tests: submitting the ledger topology, locating its workers, and the
checks every partition test ends with (:func:`settle_and_audit`)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ledger
from partition_cluster import ZK_PORT, NetnsCluster

from stormpy.testing import wait_for
from stormpy.testing._zookeeper import four_letter_word

__all__ = ["RESULTS", "final_workers", "record", "running_workers", "settle_and_audit", "submit_ledger",
           "worker_hosts", "zk_sessions"]

#: test name → its ledger audit and figures; printed in the terminal summary of the run
RESULTS: dict[str, str] = {}

MESSAGE_TIMEOUT_SECS = 6


def submit_ledger(cluster: NetnsCluster, bundle: Path, name: str, ledger_dir: Path, *, rate: float = 20.0,
                  workers: int = 2, pad: int = 0, conf: dict[str, Any] | None = None) -> str:
    """Submit the ledger topology (``ledger_dir`` must hold the ledger); return its id."""
    spec = ledger.build(str(ledger_dir), rate, pad).to_doc()
    topo_conf = {"topology.workers": workers, "topology.message.timeout.secs": MESSAGE_TIMEOUT_SECS,
                 **(conf or {})}
    return cluster.client().submit(name, bundle, spec, topo_conf)


def _arg(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def running_workers(cluster: NetnsCluster, topology_id: str) -> dict[tuple[str, int], list[int]]:
    """(supervisor id, port) → pids of the worker processes of ``topology_id`` running now."""
    out: dict[tuple[str, int], list[int]] = {}
    for pid, argv in cluster.worker_processes(topology_id):
        if "--supervisor-id" in argv and "--port" in argv:
            out.setdefault((_arg(argv, "--supervisor-id"), int(_arg(argv, "--port"))), []).append(pid)
    return out


def final_workers(cluster: NetnsCluster, topology_id: str) -> set[tuple[str, int]]:
    """The workers of the current assignment (supervisor id, port)."""
    a = cluster.state.assignment(topology_id)
    return set(a.workers()) if a is not None else set()


def worker_hosts(cluster: NetnsCluster, topology_id: str) -> dict[str, set[int]]:
    """Supervisor host (``sup0``/``sup1``) → ports of the topology's assigned workers there."""
    ids = cluster.supervisor_ids()
    host_of = {sid: cluster.supervisor_hosts[i] for i, sid in ids.items()}
    out: dict[str, set[int]] = {}
    for node, port in final_workers(cluster, topology_id):
        out.setdefault(host_of.get(node, node), set()).add(port)
    return out


def wait_acked(cluster: NetnsCluster, ledger_dir: Path, at_least: int, timeout: float, what: str) -> None:
    cluster.wait_for(lambda: ledger.acked_count(ledger_dir) >= at_least, timeout, what)


def settle_and_audit(cluster: NetnsCluster, topology_id: str, ledger_dir: Path, *,
                     timeout: float = 90) -> ledger.Audit:
    """After healing: wait until every id of the ledger is acked and exactly the workers of the
    final assignment run (one process each, no old one left), then assert the at-least-once
    contract on the ledger and return its audit."""
    expected = ledger.audit(ledger_dir).expected
    cluster.wait_for(lambda: ledger.acked_count(ledger_dir) == expected, timeout,
                     f"all {expected} ids of the ledger to be acked after healing")

    def only_assigned_workers_run() -> bool:
        wanted = final_workers(cluster, topology_id)
        running = running_workers(cluster, topology_id)
        return bool(wanted) and set(running) == wanted and all(len(p) == 1 for p in running.values())

    cluster.wait_for(only_assigned_workers_run, timeout,
                     "exactly the workers of the final assignment to run (one process each)")
    result = ledger.audit(ledger_dir)
    assert result.lost == [], f"lost ids: {result.lost[:20]} ({result.summary()})"
    assert result.doubled == [], f"ids processed more often than emitted: {result.doubled[:20]}"
    assert result.acked == expected
    return result


def record(name: str, text: str) -> None:
    RESULTS[name] = text


def timed(what: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    return what(), time.monotonic() - started


def wait_progress(cluster: NetnsCluster, ledger_dir: Path, more: int, timeout: float, what: str) -> int:
    """Wait until ``more`` further ids are acked; return the new acked count."""
    start = ledger.acked_count(ledger_dir)
    wait_for(lambda: ledger.acked_count(ledger_dir) >= start + more, timeout, what)
    return ledger.acked_count(ledger_dir)


def zk_client_ports(pid: int, zk_port: int) -> set[int]:
    """Local ports of the TCP connections process ``pid`` holds to port ``zk_port`` (read from its
    own namespace's ``/proc/<pid>/net/tcp`` and its socket descriptors)."""
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], fields[9]
        if inode in inodes and int(remote.split(":")[1], 16) == zk_port and fields[3] == "01":
            ports.add(int(local.split(":")[1], 16))
    return ports


def zk_sessions(cluster: NetnsCluster, pid: int) -> set[str]:
    """ZooKeeper session ids of process ``pid`` (its connections as ZooKeeper's ``cons`` lists them)."""
    ports = zk_client_ports(pid, ZK_PORT)
    sessions = set()
    for line in four_letter_word(cluster.net.address("zk"), ZK_PORT, "cons").splitlines():
        m = re.search(r"/[\d.]+:(\d+)\[.*sid=(0x[0-9a-f]+)", line)
        if m and int(m.group(1)) in ports:
            sessions.add(m.group(2))
    return sessions


def feed_and_wait(cluster: NetnsCluster, ledger_dir: Path, ids: range, timeout: float, what: str) -> None:
    """Put ``ids`` into the ledger and wait until every one of them is acked (progress made now,
    whatever was acked before)."""
    ledger.add_ids(ledger_dir, ids)
    cluster.wait_for(lambda: ledger.acked_among(ledger_dir, ids) == len(ids), timeout,
                     f"the {len(ids)} new ids {ids.start}..{ids.stop - 1} to be acked {what}")
