"""Scheduling: pure functions from a topology's executors and the free worker slots to an
assignment. Nimbus (cluster mode) and local mode both deal executors through :mod:`.even`.

A shared service below the daemons: it imports only the topology layout types, never ZooKeeper,
the clock, or a daemon.
"""

from stormpy.scheduler.even import ExecutorKey, Slot, available_slots, schedule_topology, sort_slots

__all__ = ["ExecutorKey", "Slot", "available_slots", "schedule_topology", "sort_slots"]
