"""The process cluster for tests: :class:`~stormpy.local._processes.ProcessCluster` (which lives in
:mod:`stormpy.local`) and short timeouts that make cluster tests quick."""

from __future__ import annotations

from typing import Any

from stormpy.local._processes import DaemonProcess, ProcessCluster, end_processes, find_processes, free_ports

__all__ = ["FAST_TIMEOUTS", "DaemonProcess", "ProcessCluster", "end_processes", "find_processes",
           "free_ports"]

#: Short timeouts for tests (seconds unless the key says ms). The supervisor restarts a silent
#: worker (3 s) before Nimbus gives up on it (4 s), so the two never race for the same worker.
FAST_TIMEOUTS: dict[str, Any] = {
    "nimbus.task.timeout.secs": 4,
    "nimbus.supervisor.timeout.secs": 4,
    "nimbus.monitor.freq.secs": 1,
    "nimbus.task.launch.secs": 20,
    "supervisor.monitor.frequency.secs": 1,
    "supervisor.heartbeat.frequency.secs": 1,
    "supervisor.worker.timeout.secs": 3,
    "supervisor.worker.start.timeout.secs": 20,
    "worker.heartbeat.frequency.secs": 0.5,
    "task.heartbeat.frequency.secs": 0.5,
    "storm.zookeeper.session.timeout": 8000,
}
