"""One SparkSession per worker process, created lazily and shared by every Spark bolt in it.

Contract:

* ``get_spark(conf)`` returns the process's session, creating it on first use (thread-safe; a
  second caller waits for the first to finish starting the JVM). The first caller's config wins;
  later callers get the same session whatever their config says.
* Holders ``retain_spark()`` while they may use the session and ``release_spark()`` when done; the
  release of the last holder stops the session. Neither waits for a session being started (a
  component's ``prepare`` and ``cleanup`` call them on the executor loop, which nothing may block):
  the holder count has a lock of its own, never held while Spark starts or stops, and a last
  release that meets a start under way leaves the stop to a thread of its own, which stops the
  session once the start is over unless a holder came meanwhile. ``spark_session(conf)`` does
  both around a ``with`` block (tests pin one session for a whole run this way, so topologies
  started and stopped meanwhile reuse it).
* At interpreter exit whatever is still running is stopped, and then the JVM PySpark launched,
  which it keeps for the life of the process even after the session stops: the JVM is told to exit
  and waited for (up to ``JVM_EXIT_WAIT_SECS``), so its shutdown hooks — which delete Spark's
  temporary directories — finish before this process is gone (a supervisor kills a worker's whole
  process group right after the worker exits).
* Settings come from the topology config: ``spark.master`` (default ``local[*]``),
  ``spark.app.name`` (default the topology name), and every other ``spark.*`` key verbatim (but
  the connector's own ``spark.stormpy.*``), over small defaults suited to one host (no UI, few
  shuffle partitions, UTC session time zone). With a cluster master (not ``local…``) the driver
  defaults to being reachable from other hosts: ``spark.driver.host`` = ``supervisor.host`` when
  set, ``spark.driver.bindAddress`` = ``0.0.0.0``.
* Before starting a session on ``spark://host:port[,host:port]`` the master is probed (TCP, up to
  ``spark.stormpy.master.probe.secs``): an unreachable master raises SparkMasterUnreachable at
  once instead of Spark retrying its registration for a minute.
* A session whose SparkContext stopped (on the JVM side too) is replaced by the next
  ``get_spark``; ``reset_spark(session)`` stops a session that is known broken so the next
  ``get_spark`` starts a fresh one. ``needs_restart(session)`` says whether a session with a stuck
  job is broken: stopped, or it ran jobs (``note_job_ok``) and has lost every executor.
* The topology's code (``spark.stormpy.code.dir``, default the worker's ``worker.code.dir``) is
  shipped to executors once per session (``ship_code``): a zip of the directory, named by its
  content hash, added with ``SparkContext.addPyFile``, so functions and UDFs of the topology's
  modules unpickle on executors. Turn it off with ``spark.stormpy.ship.code: false``.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from stormpy.config import setting
from stormpy.connectors.spark._code import code_dir_of, probe_master, zip_code
from stormpy.connectors.spark._errors import require_spark
from stormpy.connectors.spark._settings import DEFAULT_MASTER, OWN_PREFIX, probe_secs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("stormpy.connectors.spark")

#: Settings applied unless the topology config sets the key.
DEFAULT_SETTINGS: dict[str, str] = {
    "spark.master": DEFAULT_MASTER,
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.log.level": "WARN",
}

#: How long the exit of the process waits for the Spark JVM to finish its shutdown hooks.
JVM_EXIT_WAIT_SECS = 10.0

#: Driver defaults when the master is a cluster (executors on other hosts must reach the driver).
CLUSTER_DRIVER_DEFAULTS: dict[str, str] = {"spark.driver.bindAddress": "0.0.0.0"}

_lock = threading.RLock()  # held while the session starts or stops (seconds)
_holders_lock = threading.Lock()  # held only to count holders (never while Spark works)
_session: SparkSession | None = None
_holders = 0
_atexit_registered = False
_shipped: set[str] = set()  # code dirs shipped to the current session
_proven = False  # a job succeeded on the current session (so it had executors)
_zip_dir: str | None = None  # where this process keeps the zips it shipped


def _as_setting(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def spark_settings(conf: Mapping[str, Any] | None) -> dict[str, str]:
    """The Spark settings a topology config asks for (defaults, then every non-None ``spark.*``
    key of ``conf``); ``spark.app.name`` defaults to ``topology.name``."""
    conf = conf or {}
    settings = dict(DEFAULT_SETTINGS)
    for key, value in conf.items():
        if key.startswith("spark.") and not key.startswith(OWN_PREFIX) and value is not None:
            settings[key] = _as_setting(value)
    settings.setdefault("spark.app.name", str(setting(conf, "topology.name") or "stormpy"))
    if not settings["spark.master"].startswith("local"):
        for key, value in CLUSTER_DRIVER_DEFAULTS.items():
            settings.setdefault(key, value)
        if conf.get("supervisor.host"):
            settings.setdefault("spark.driver.host", str(conf["supervisor.host"]))
    return settings


def is_alive(session: SparkSession) -> bool:
    """The session's SparkContext runs (not stopped from Python nor inside the JVM)."""
    sc = session.sparkContext
    jsc = getattr(sc, "_jsc", None)
    if jsc is None:
        return False
    try:
        return not jsc.sc().isStopped()
    except Exception:  # noqa: BLE001 - the JVM is gone or unreachable: not alive
        return False


def _create(settings: Mapping[str, str], probe_secs: float = 5.0) -> SparkSession:
    from pyspark.sql import SparkSession

    # pandas 3 is fine for the Arrow paths used here; keep PySpark's advisory out of user output.
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                            category=FutureWarning)
    master = settings.get("spark.master", "")
    if master.startswith("local"):
        # A local driver talks to itself: skip the hostname lookup (and its warning).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    elif master.startswith("spark://"):
        probe_master(master, probe_secs)
    # Python UDFs run with this worker's interpreter (its venv), not whatever python3 is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    try:
        session = builder.getOrCreate()
    finally:
        if main and previous is not None:
            signal.signal(signal.SIGINT, previous)  # SparkContext replaces the SIGINT handler
    level = settings.get("spark.log.level")
    if level:
        session.sparkContext.setLogLevel(level)
    log.info("started SparkSession (master %s, app %s)", settings.get("spark.master"),
             settings.get("spark.app.name"))
    return session


def get_spark(conf: Mapping[str, Any] | None = None) -> SparkSession:
    """The process's SparkSession, started on first call from ``conf`` (see module contract).

    Raises SparkUnavailableError when PySpark/PyArrow or Java is missing. Blocks while the JVM
    starts (seconds): call it off the executor loop.
    """
    global _session, _atexit_registered
    session = _session
    code = code_dir_of(conf)
    if session is not None and (code is None or code in _shipped) and is_alive(session):
        return session
    with _lock:
        if _session is None or not is_alive(_session):
            require_spark()
            if _session is not None:
                log.warning("the SparkSession stopped; starting a new one")
                stop_spark()
            _session = _create(spark_settings(conf), probe_secs(conf))
            _shipped.clear()
            if not _atexit_registered:
                atexit.register(_at_exit)
                _atexit_registered = True
        if code is not None and code not in _shipped:
            ship_code(_session, code)
        return _session


def ship_code(session: SparkSession, code_dir: str) -> str:
    """Add a zip of ``code_dir`` to ``session``'s Python path on every executor (once per session
    and directory); return the zip's path. The zip is named by its content's hash, so a changed
    bundle is a new file."""
    global _zip_dir
    with _lock:
        if _zip_dir is None:
            _zip_dir = tempfile.mkdtemp(prefix="stormpy-spark-code-")
        path = zip_code(code_dir, _zip_dir)
        session.sparkContext.addPyFile(path)
        _shipped.add(code_dir)
        log.info("shipped %s to Spark executors as %s", code_dir, os.path.basename(path))
        return path


def note_job_ok(session: SparkSession) -> None:
    """Record that a job succeeded on ``session`` (it has had executors)."""
    global _proven
    if _session is session:
        _proven = True


def needs_restart(session: SparkSession) -> bool:
    """After a stuck job: should ``session`` be replaced? Yes when its SparkContext stopped, or
    when it worked before and has no executor left (its cluster went away; a restarted master does
    not know the old application). No for a local master, or for a young session still waiting
    for its first executors (restarting it would only start the wait again)."""
    if not is_alive(session):
        return True
    if (session.sparkContext.master or "").startswith("local"):
        return False
    try:
        executors = session.sparkContext._jsc.sc().getExecutorIds().size()
    except Exception:  # noqa: BLE001 - the JVM does not answer: replace the session
        return True
    return bool(executors == 0 and _proven and _session is session)


def reset_spark(session: SparkSession) -> None:
    """Stop ``session`` if it is still the process's session (a broken one: the next
    ``get_spark`` starts a fresh one); holders are kept."""
    with _lock:
        if _session is session:
            log.warning("stopping the SparkSession; the next batch starts a new one")
            stop_spark()


def retain_spark() -> None:
    """Declare one more holder of the process's session (does not start it, nor wait for a
    session being started or stopped: safe on the executor loop)."""
    global _holders
    with _holders_lock:
        _holders += 1


def release_spark() -> None:
    """Drop one holder; the last release stops the session if it was started. Never waits for a
    session being started: then the stop is left to a thread of its own (see module contract)."""
    global _holders
    with _holders_lock:
        _holders = max(0, _holders - 1)
        if _holders:
            return
    if _lock.acquire(blocking=False):
        try:
            _stop_unless_held()
        finally:
            _lock.release()
    else:
        threading.Thread(target=_stop_after_start, name="stormpy-spark-stop", daemon=True).start()


def _stop_unless_held() -> None:
    """Stop the session when nobody holds it (the caller holds ``_lock``)."""
    with _holders_lock:
        held = _holders > 0
    if not held:
        stop_spark()


def _stop_after_start() -> None:
    with _lock:
        _stop_unless_held()


def stop_spark() -> None:
    """Stop the process's session now, if one is running (idempotent)."""
    global _session, _proven
    with _lock:
        session, _session = _session, None
        _shipped.clear()
        _proven = False
        if session is not None:
            try:
                session.stop()
            except Exception:  # noqa: BLE001 - stopping must not raise at shutdown
                log.exception("could not stop the SparkSession cleanly")


def _at_exit() -> None:
    global _zip_dir
    stop_spark()
    _stop_jvm(JVM_EXIT_WAIT_SECS)
    if _zip_dir is not None:
        shutil.rmtree(_zip_dir, ignore_errors=True)
        _zip_dir = None


def _stop_jvm(timeout_secs: float) -> None:
    """End the JVM PySpark launched for this process, if any, and wait for it to exit."""
    from pyspark import SparkContext

    with _lock:
        gateway = SparkContext._gateway
        if gateway is None:
            return
        SparkContext._gateway = None  # a later session launches a new JVM
        SparkContext._jvm = None
        proc = getattr(gateway, "proc", None)
        try:
            gateway.shutdown()
        except Exception:  # noqa: BLE001 - the JVM is ended below either way
            log.debug("closing the Py4J gateway failed", exc_info=True)
        if proc is None or proc.poll() is not None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()  # Spark's PythonGatewayServer exits on EOF of its stdin
            proc.wait(timeout_secs)
        except subprocess.TimeoutExpired:
            log.warning("the Spark JVM (pid %d) did not exit within %.0f s; killing it", proc.pid,
                        timeout_secs)
            proc.kill()
            proc.wait(5)
        except OSError:
            log.debug("could not end the Spark JVM", exc_info=True)


def spark_running() -> bool:
    """True while the process's session is started."""
    session = _session
    return session is not None and is_alive(session)


@contextmanager
def spark_session(conf: Mapping[str, Any] | None = None) -> Iterator[SparkSession]:
    """Hold the process's session for the ``with`` block (started if needed, stopped after it
    when nothing else holds it)."""
    retain_spark()
    try:
        yield get_spark(conf)
    finally:
        release_spark()
