"""The Spark connector's configuration section (``spark.*``), registered when the connector is
imported, and the readers of its own settings. Every ``spark.*`` key of a topology's config
reaches its SparkSession verbatim (:func:`~stormpy.connectors.spark._session.spark_settings`),
except the ``spark.stormpy.*`` keys, which are the connector's own; these are the documented ones.
A reader returns the value in force (the default when unset) or raises
:class:`~stormpy.config.SettingError` naming the key. The checks of a Spark bolt's constructor
arguments (:func:`batch_limits`) and of its tick period (:func:`tick_config`, :func:`tick_secs`)
are here too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from stormpy._settings import check_int, check_number
from stormpy.config import ConfigKey, ConfigSection, SettingError, register_section, setting

__all__ = ["BATCH_TIMEOUT_KEY", "BATCH_TIMEOUT_MAX_KEY", "CODE_DIR_KEY", "DEFAULT_MASTER",
           "OWN_PREFIX", "PROBE_KEY", "SHIP_CODE_KEY", "SPARK_CONFIG", "SWITCH_INTERVAL_KEY",
           "TICK_KEY", "BatchLimits", "batch_limits", "batch_timeout_max_secs",
           "batch_timeout_secs", "probe_secs", "switch_interval_secs", "tick_config", "tick_secs"]

#: Where Spark bolts run their jobs unless ``spark.master`` says otherwise: in the worker process.
DEFAULT_MASTER = "local[*]"
#: Keys under this prefix configure the connector and are not passed to Spark.
OWN_PREFIX = "spark.stormpy."
SHIP_CODE_KEY = "spark.stormpy.ship.code"
CODE_DIR_KEY = "spark.stormpy.code.dir"
BATCH_TIMEOUT_KEY = "spark.stormpy.batch.timeout.secs"
BATCH_TIMEOUT_MAX_KEY = "spark.stormpy.batch.timeout.max.secs"
PROBE_KEY = "spark.stormpy.master.probe.secs"
SWITCH_INTERVAL_KEY = "spark.stormpy.switch.interval.secs"
DEFAULT_BATCH_TIMEOUT_SECS = 300.0
#: Unset, the grown batch timeout is capped at this many times the batch timeout.
DEFAULT_BATCH_TIMEOUT_GROWTH = 4
DEFAULT_PROBE_SECS = 5.0
DEFAULT_SWITCH_INTERVAL_SECS = 0.0005
#: Spark bolts close batches by time on tick tuples.
TICK_KEY = "topology.tick.tuple.freq.secs"

SPARK_CONFIG = register_section(ConfigSection(
    name="spark",
    prefix="spark.",
    doc="Spark bolts (stormpy.connectors.spark): the worker process's SparkSession. Any other "
        "spark.* key is passed to Spark as it is (spark.stormpy.* keys are the connector's own).",
    keys=(
        ConfigKey("spark.master", DEFAULT_MASTER,
                  "Spark master URL used by Spark bolts (local[*], spark://..., yarn, k8s://...)."),
        ConfigKey("spark.app.name", None, "Spark application name; defaults to the topology name."),
        ConfigKey("spark.driver.host", None,
                  "Address Spark executors use to reach the worker process's driver; with a "
                  "cluster master it defaults to supervisor.host (the supervisor's advertised "
                  "address), else Spark's own default (the host name's address)."),
        ConfigKey("spark.driver.bindAddress", None,
                  "Address the driver binds; with a cluster master it defaults to 0.0.0.0 (all "
                  "interfaces, so executors on other hosts and NAT'ed containers reach it)."),
        ConfigKey("spark.driver.port", None,
                  "Driver RPC port (Spark default: random). Fix it, and spark.blockManager.port, "
                  "when a firewall or container port mapping sits between driver and executors."),
        ConfigKey("spark.blockManager.port", None,
                  "Block manager port of the driver and executors (Spark default: random)."),
        ConfigKey(SHIP_CODE_KEY, True,
                  "Ship the topology's code (the worker's unpacked bundle) to Spark executors, "
                  "once per SparkSession, as a zip added with SparkContext.addPyFile."),
        ConfigKey(CODE_DIR_KEY, None,
                  "Directory shipped to executors; default the worker's worker.code.dir (none "
                  "outside cluster workers: set it for UDFs under stormpy local)."),
        ConfigKey(BATCH_TIMEOUT_KEY, DEFAULT_BATCH_TIMEOUT_SECS,
                  "Longest a Spark bolt's batch may run: then its Spark jobs are cancelled, its "
                  "tuples failed (replayed by reliable spouts) and the SparkSession restarted for "
                  "the next batch (when it lost its executors). None or 0: no limit. After "
                  "consecutive timed-out batches the limit doubles, up to "
                  f"{BATCH_TIMEOUT_MAX_KEY}; a batch that succeeds restores it."),
        ConfigKey(BATCH_TIMEOUT_MAX_KEY, None,
                  "Cap of the batch timeout grown after consecutive timeouts (each doubles it "
                  "for the next batches, so a cold executor's first batches, slower than the "
                  "timeout, eventually get through). Unset: "
                  f"{DEFAULT_BATCH_TIMEOUT_GROWTH} x {BATCH_TIMEOUT_KEY}; 0: no growth; "
                  f"else at least {BATCH_TIMEOUT_KEY}."),
        ConfigKey(PROBE_KEY, DEFAULT_PROBE_SECS,
                  "Before starting a SparkSession on spark://host:port, check the master accepts "
                  "connections within this many seconds (else fail fast: Spark itself retries "
                  "for a minute)."),
        ConfigKey(SWITCH_INTERVAL_KEY, DEFAULT_SWITCH_INTERVAL_SECS,
                  "While a Spark bolt or committer runs in a process, Python's thread switch "
                  "interval (sys.setswitchinterval) is at most this, so the thread waiting on "
                  "Spark's py4j replies gets the GIL back this soon while the executor loop is "
                  "busy (Python's default: 5 ms a reply). None or 0: leave it as it is. Restored "
                  "when the process's last Spark bolt or committer task cleans up."),
    ),
))


def _seconds_or_none(conf: Mapping[str, Any], key: str, default: float) -> float | None:
    """``key``'s seconds (None or 0: None); SettingError for anything but a number >= 0."""
    value = conf.get(key, default)
    if value is None:
        return None
    try:
        return check_number(key, value, 0, unit="seconds") or None
    except SettingError:
        raise SettingError(key, f"must be a number of seconds >= 0 or None, got {value!r}") from None


def batch_timeout_secs(conf: Mapping[str, Any]) -> float | None:
    """``spark.stormpy.batch.timeout.secs``: the longest a batch may run (None: no limit)."""
    return _seconds_or_none(conf, BATCH_TIMEOUT_KEY, DEFAULT_BATCH_TIMEOUT_SECS)


def batch_timeout_max_secs(conf: Mapping[str, Any], timeout: float) -> float:
    """``spark.stormpy.batch.timeout.max.secs``: the cap of the grown batch timeout, given the
    batch timeout ``timeout`` in force (unset or None: ``DEFAULT_BATCH_TIMEOUT_GROWTH`` times it;
    0: ``timeout``, no growth); SettingError when it is below ``timeout``."""
    value = conf.get(BATCH_TIMEOUT_MAX_KEY)
    if value is None:
        return timeout * DEFAULT_BATCH_TIMEOUT_GROWTH
    cap = _seconds_or_none(conf, BATCH_TIMEOUT_MAX_KEY, 0)
    if cap is None:
        return timeout
    if cap < timeout:
        raise SettingError(BATCH_TIMEOUT_MAX_KEY, f"must be 0 (no growth) or at least "
                                                  f"{BATCH_TIMEOUT_KEY} ({timeout:g}), got "
                                                  f"{value!r}")
    return cap


def probe_secs(conf: Mapping[str, Any] | None) -> float:
    """``spark.stormpy.master.probe.secs``: how long the master probe waits (unset, None or 0:
    the default)."""
    value = (conf or {}).get(PROBE_KEY)
    if value is None or value == 0:
        return DEFAULT_PROBE_SECS
    return check_number(PROBE_KEY, value, 0, unit="seconds")


def switch_interval_secs(conf: Mapping[str, Any]) -> float | None:
    """``spark.stormpy.switch.interval.secs``: the thread switch interval a Spark component holds
    (None: none; the setting may be None or 0)."""
    return _seconds_or_none(conf, SWITCH_INTERVAL_KEY, DEFAULT_SWITCH_INTERVAL_SECS)


class BatchLimits(NamedTuple):
    """A Spark bolt's checked batching arguments (see ``SparkBatchBolt``)."""

    batch_size: int
    batch_seconds: float
    idle_seconds: float | None
    max_in_flight: int
    schema: str | None


def batch_limits(name: str, batch_size: Any, batch_seconds: Any, idle_seconds: Any,
                 max_in_flight: Any, schema: Any) -> BatchLimits:
    """The bolt ``name``'s constructor arguments checked; SettingError naming
    ``<name>.<argument>`` for the first one that is wrong."""
    size = check_int(f"{name}.batch_size", batch_size, 1)
    seconds = check_number(f"{name}.batch_seconds", batch_seconds, unit="seconds")
    if seconds <= 0:
        raise SettingError(f"{name}.batch_seconds", f"must be positive, got {batch_seconds!r}")
    idle = None
    if idle_seconds is not None:
        idle = check_number(f"{name}.idle_seconds", idle_seconds, unit="seconds")
        if idle <= 0:
            raise SettingError(f"{name}.idle_seconds",
                               f"must be positive or None, got {idle_seconds!r}")
    in_flight = check_int(f"{name}.max_in_flight", max_in_flight, 1)
    if schema is not None and not isinstance(schema, str):
        raise SettingError(f"{name}.schema", f"must be a Spark DDL string or None, got {schema!r}")
    return BatchLimits(size, seconds, idle, in_flight, schema)


def tick_config(component_config: Mapping[str, Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A Spark bolt's component config: ``component_config`` with a tick often enough for its
    time limits (a quarter of ``batch_seconds``, half of ``idle_seconds``), between 0.05 s and
    the class's own tick (0.5 s when it sets none)."""
    default = float(setting(component_config, TICK_KEY) or 0.5)
    limits = [float(kwargs.get("batch_seconds", 2.0)) / 4]
    if kwargs.get("idle_seconds") is not None:
        limits.append(float(kwargs["idle_seconds"]) / 2)
    return {**component_config, TICK_KEY: max(0.05, min(default, *limits))}


def tick_secs(conf: Mapping[str, Any], who: str) -> float:
    """The tick period in force for the bolt ``who``; SettingError naming the key when there is
    none (the bolt closes batches on tick tuples)."""
    try:
        tick = float(setting(conf, TICK_KEY) or 0)
    except (TypeError, ValueError):
        tick = 0
    if not tick > 0:
        raise SettingError(TICK_KEY, f"{who} closes batches on tick tuples: set {TICK_KEY} (e.g. "
                                     f"{{'{TICK_KEY}': 0.5}}) in its config, got "
                                     f"{conf.get(TICK_KEY)!r}")
    return tick
