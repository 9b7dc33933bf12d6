"""The one check of a topology's configuration at submit, and of a daemon's config file.

Contract:

* :func:`check_topology_config` is the submit check. Every entry point calls it before anything
  runs or is written: :meth:`stormpy.local.LocalCluster.submit_topology`, Nimbus's
  ``submit_topology`` (:func:`stormpy.nimbus.submission.prepare_submission`) and the submitting
  client (before it uploads). It checks every key of the table (:mod:`stormpy.config.keys`) that
  the topology's config or a component's own config sets against the key's type, then the rules
  between keys (``topology.state.provider`` with its ``topology.state.provider.config``:
  :func:`stormpy.config.state.check_state_provider`; a window's needs against
  ``topology.message.timeout.secs`` and ``topology.max.spout.pending``), and returns the
  warnings (plain sentences) for what runs but probably not as meant. Any problem is one
  :class:`~stormpy.config.errors.SettingError` naming the key (and the component when the value
  is a component's), the value and what was expected.
* :func:`~stormpy.config.check_values` checks the known keys of any config (a daemon's ``stormpy.yaml`` and
  ``-c`` overrides, through :func:`stormpy.config.load_config`).
* Nothing is clamped or converted: a value that passes is used as written, and runtime code
  reads it once at setup with :func:`stormpy.config.setting` (the table's default when unset).

Windows and ``topology.max.spout.pending``: a count window of N tuples (length plus sliding
interval) holds N tuples un-acked, so a topology-wide ``topology.max.spout.pending`` below N is
refused, as Storm's windowed bolt refuses it; a spout's own lower value (which Storm's check does
not see) is a warning. A time window holds each tuple un-acked for its length (plus sliding
interval, lag and watermark interval), so with ``topology.max.spout.pending`` set the window can
see at most pending / seconds tuples per second per spout task; the rate is not knowable at
submit, so this is a warning stating that bound, never a refusal.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, Protocol

from stormpy.config import CORE_PREFIXES, DEFAULTS, KEYS, check_value, check_values, setting
from stormpy.config.errors import SettingError
from stormpy.config.state import check_state_provider

__all__ = ["SUBMIT_WARNINGS_KEY", "WARNING_LOG_EXTRA", "ComponentSettings", "check_topology_config",
           "check_value", "check_values"]

#: Where Nimbus and LocalCluster keep the submit check's warnings in a topology's config.
SUBMIT_WARNINGS_KEY = "topology.submit.warnings"
#: ``extra`` of the log records of submit warnings (LocalCluster, the Nimbus client): a front end
#: that prints the warnings itself (the CLI's ``warning:`` lines) leaves these records out.
WARNING_LOG_EXTRA = {"submit_warning": True}

#: Component config a component sets for the shortest topology.message.timeout.secs it works
#: with (windowed bolts do); the topology layer names it MIN_MESSAGE_TIMEOUT_KEY.
MIN_TIMEOUT = "topology.message.timeout.secs.min"
#: Likewise the smallest topology.max.spout.pending (count windows).
MIN_PENDING = "topology.max.spout.pending.min"
TIMEOUT = "topology.message.timeout.secs"
PENDING = "topology.max.spout.pending"


class ComponentSettings(Protocol):
    """What the submit check reads of a component (``stormpy.topology._spec.ComponentSpec``)."""

    @property
    def kind(self) -> str: ...

    @property
    def config(self) -> Mapping[str, Any]: ...


def check_topology_config(conf: Mapping[str, Any], components: Mapping[str, ComponentSettings],
                          cluster_conf: Mapping[str, Any] | None = None) -> list[str]:
    """The submit check (see the module contract); returns the warnings.

    ``conf`` is the topology's own config, ``components`` its components by id. The rules between
    keys read ``conf`` over ``cluster_conf`` over the table's defaults when ``cluster_conf`` is
    given (Nimbus, LocalCluster: what the workers will see); without it (a client that does not
    know the cluster's values) they use only what ``conf`` sets."""
    if not isinstance(conf, Mapping) or not all(isinstance(k, str) for k in conf):
        raise SettingError("topology config", f"must be a map with string keys, got {conf!r}")
    check_values(conf)
    warnings = [*_unknown_keys(conf)]
    for cid, comp in sorted(components.items()):
        check_values(comp.config, cid)
    effective = dict(conf) if cluster_conf is None else {**DEFAULTS, **cluster_conf, **conf}
    # the state provider and its config, as the workers will read them (the table's defaults
    # for what neither side sets: a client does not know the cluster's ZooKeeper servers)
    check_state_provider({**DEFAULTS, **effective})
    warnings += _window_rules(effective, components)
    return warnings


def _unknown_keys(conf: Mapping[str, Any]) -> list[str]:
    """A warning for each key under a core prefix the table does not know (a typo goes
    unnoticed otherwise: the topology runs with the default)."""
    out = []
    for key in sorted(conf):
        if key in KEYS or not key.startswith(CORE_PREFIXES):
            continue
        close = difflib.get_close_matches(key, list(KEYS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        out.append(f"unknown config key {key}{hint}; it is passed on but stormpy does not read it")
    return out


def _window_rules(conf: Mapping[str, Any], components: Mapping[str, ComponentSettings]) -> list[str]:
    """Refuse a message timeout or max spout pending below what a window needs; warn where a
    spout's pending may hold a window back (see the module doc)."""
    warnings: list[str] = []
    timeout = conf.get(TIMEOUT)
    timeouts_on = setting(conf, "topology.enable.message.timeouts")
    pending = conf.get(PENDING)
    spout_pending = {cid: c.config[PENDING] for cid, c in sorted(components.items())
                     if c.kind == "spout" and c.config.get(PENDING) is not None}
    for cid, comp in sorted(components.items()):
        need_secs = comp.config.get(MIN_TIMEOUT)
        if need_secs and timeouts_on and timeout is not None and timeout < need_secs:
            raise SettingError(TIMEOUT, f"must be >= {need_secs:g} for component {cid!r} (its window "
                                        f"holds tuples un-acked that long), got {timeout!r}; "
                                        "raise the timeout or shorten the window")
        need = comp.config.get(MIN_PENDING)
        if need and pending is not None and pending < need:
            raise SettingError(PENDING, f"must be >= {need} for component {cid!r} (its count window "
                                        f"holds that many tuples un-acked), got {pending!r}; "
                                        "raise it, unset it or shorten the window")
        if need:
            warnings += [f"spout {sid!r} sets {PENDING} {value}, below the {need} tuples the count "
                         f"window of {cid!r} holds: if it feeds that window, the window never "
                         "fills and the spout stalls" for sid, value in spout_pending.items()
                         if value < need]
        if need_secs:
            limits = dict(spout_pending)
            if pending is not None:
                limits.setdefault("every spout", pending)
            warnings += [f"component {cid!r} holds each tuple un-acked for up to {need_secs:g} s "
                         f"(its time window); with {PENDING} {value} ({who}) a spout task stalls at "
                         f"{value} pending tuples, so the window sees at most "
                         f"{value / need_secs:.4g} tuples/s per spout task; raise or unset "
                         f"{PENDING} if the spouts emit faster"
                         for who, value in limits.items()]
    return warnings

