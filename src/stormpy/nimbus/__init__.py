"""Nimbus: the RPC server, uploads and bundle store, the monitor and leadership.

:class:`Nimbus` is the daemon; submitters, operators and tests talk to it through
:class:`stormpy.client.NimbusClient`, and it deals executors with the pure scheduler of
:mod:`stormpy.scheduler`. Modules: :mod:`.localdirs` (paths under ``storm.local.dir``),
:mod:`.uploads`, :mod:`.downloads`, :mod:`.store`, :mod:`.topologies` (state transitions),
:mod:`.monitor`, :mod:`.info`, :mod:`.handler` (RPC methods), :mod:`.daemon`. Nimbus never
imports supervisor, worker or cli code.
"""

from stormpy.nimbus.daemon import Nimbus, run_nimbus
from stormpy.nimbus.localdirs import NimbusDirs

__all__ = ["Nimbus", "NimbusDirs", "run_nimbus"]
