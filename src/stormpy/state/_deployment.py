"""What a deployment should know about where its state lives: the submit-time warning for state
kept on one host in a cluster of several.

Contract: :func:`host_local_state_warning` is pure (no I/O): given a topology's spec and config
and how many distinct supervisor hosts the cluster has, it returns the warning to show when the
topology has stateful bolts whose provider keeps state on one host (``memory``: in the worker
process; ``sqlite``: in a file on the worker's host) and the cluster has more than one host, or
None. Nimbus calls it once per submit (the warning goes back to ``stormpy jar``) and for
``topology info``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.config import SettingError
from stormpy.state._checkpoint import CHECKPOINT_COMPONENT
from stormpy.state._settings import HOST_LOCAL_PROVIDERS, PROVIDER, state_settings
from stormpy.topology._spec import TopologySpec

__all__ = ["host_local_state_warning"]


def host_local_state_warning(name: str, spec: TopologySpec, conf: Mapping[str, Any],
                             supervisor_hosts: int) -> str | None:
    """The warning for topology ``name`` (see the module contract), or None."""
    if CHECKPOINT_COMPONENT not in spec.components or supervisor_hosts < 2:
        return None
    try:
        provider = state_settings(conf).provider
    except SettingError:
        return None  # refused by the submit check, naming the setting
    if provider not in HOST_LOCAL_PROVIDERS:
        return None
    where = ("in the worker process's memory" if provider == "memory"
             else "in a SQLite file on the worker's host")
    return (f"topology {name!r} keeps its stateful bolts' state {where} ({PROVIDER}: "
            f"{provider}) on a cluster of {supervisor_hosts} supervisor hosts: a task moved to "
            "another host (its host died, a rebalance) leaves its state behind and starts from "
            "an empty state; use the 'redis' provider (or 'zookeeper' for small state) so that "
            "state follows its task")
