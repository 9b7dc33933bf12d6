"""The Spark connector's configuration section (``spark.*``), registered when the connector is
imported, and the readers of its own settings. Every ``spark.*`` key of a topology's config
reaches its SparkSession verbatim (:func:`~stormpy.connectors.spark.session.spark_settings`),
except the ``spark.stormpy.*`` keys, which are the connector's own; these are the documented ones.
A reader returns the value in force (the default when unset) or raises
:class:`~stormpy.config.SettingError` naming the key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormpy.config import ConfigKey, ConfigSection, SettingError, register_section
from stormpy.settings import check_number

__all__ = ["BATCH_TIMEOUT_KEY", "CODE_DIR_KEY", "DEFAULT_MASTER", "OWN_PREFIX", "PROBE_KEY",
           "SHIP_CODE_KEY", "SPARK_CONFIG", "SWITCH_INTERVAL_KEY", "batch_timeout_secs",
           "probe_secs", "switch_interval_secs"]

#: Where Spark bolts run their jobs unless ``spark.master`` says otherwise: in the worker process.
DEFAULT_MASTER = "local[*]"
#: Keys under this prefix configure the connector and are not passed to Spark.
OWN_PREFIX = "spark.stormpy."
SHIP_CODE_KEY = "spark.stormpy.ship.code"
CODE_DIR_KEY = "spark.stormpy.code.dir"
BATCH_TIMEOUT_KEY = "spark.stormpy.batch.timeout.secs"
PROBE_KEY = "spark.stormpy.master.probe.secs"
SWITCH_INTERVAL_KEY = "spark.stormpy.switch.interval.secs"
DEFAULT_BATCH_TIMEOUT_SECS = 300.0
DEFAULT_PROBE_SECS = 5.0
DEFAULT_SWITCH_INTERVAL_SECS = 0.0005

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
                  "the next batch. None or 0: no limit."),
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
