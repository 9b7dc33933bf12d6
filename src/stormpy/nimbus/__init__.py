"""Nimbus: the RPC server, uploads and bundle store, the even scheduler and the monitor.

:class:`Nimbus` is the daemon; :class:`NimbusClient` is how submitters, operators and tests talk
to it. Modules: :mod:`.localdirs` (paths under ``storm.local.dir``), :mod:`.uploads`,
:mod:`.downloads`, :mod:`.store`, :mod:`.scheduler` (pure), :mod:`.timers`, :mod:`.topologies`
(state transitions), :mod:`.monitor`, :mod:`.info`, :mod:`.handler` (RPC methods),
:mod:`.daemon`, :mod:`.client`. Nimbus never imports supervisor, worker or cli code.
"""

from stormpy.nimbus.client import NimbusClient, parse_address
from stormpy.nimbus.daemon import Nimbus, run_nimbus
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.scheduler import schedule_topology

__all__ = ["Nimbus", "NimbusClient", "NimbusDirs", "parse_address", "run_nimbus", "schedule_topology"]
