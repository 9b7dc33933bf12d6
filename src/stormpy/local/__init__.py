"""Local mode: a whole topology inside this process (:class:`LocalCluster`, ``stormpy local``) or
Nimbus and supervisors as subprocesses on this machine (:class:`ProcessCluster`,
``stormpy dev-cluster``).

Production code (the CLI runs it), built on the worker and the Nimbus client like a cluster is;
the public test kit :mod:`stormpy.testing` re-exports it.
"""

from stormpy.local.cluster import LocalCluster, TopologyNotFound
from stormpy.local.processes import DaemonProcess, ProcessCluster, end_processes, find_processes, free_ports

__all__ = ["DaemonProcess", "LocalCluster", "ProcessCluster", "TopologyNotFound", "end_processes",
           "find_processes", "free_ports"]
