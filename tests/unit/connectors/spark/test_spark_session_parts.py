"""How the Spark connector gets, configures and stops the process's SparkSession, against a
stand-in for PySpark's ``SparkSession.builder`` and Py4J gateway (no JVM): the exact builder
settings taken from a topology's ``spark.*`` config, one session per worker process reused by
every caller, a missing PySpark or Java named clearly, a dead or broken session replaced, and
stopping only what this process started (its session, then its JVM at exit)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import pyspark
import pyspark.sql
import pytest

from stormpy.connectors.spark import SparkMasterUnreachable, SparkUnavailableError
from stormpy.connectors.spark import _session as spark
from stormpy.host.waiting import wait_for


class FakeJsc:
    def __init__(self, ctx: FakeContext) -> None:
        self.ctx = ctx

    def sc(self) -> FakeContext:
        if self.ctx.jvm_gone:
            raise RuntimeError("py4j: the JVM is gone")
        return self.ctx


class FakeExecutorIds:
    def __init__(self, n: int) -> None:
        self.n = n

    def size(self) -> int:
        return self.n


class FakeContext:
    def __init__(self, master: str | None = "local[*]") -> None:
        self.master = master
        self.stopped = False
        self.jvm_gone = False
        self.executors = 1
        self.executors_error = False
        self.log_levels: list[str] = []
        self.py_files: list[str] = []
        self._jsc: FakeJsc | None = FakeJsc(self)

    def isStopped(self) -> bool:  # noqa: N802 - the JVM method's name
        return self.stopped

    def getExecutorIds(self) -> FakeExecutorIds:  # noqa: N802 - the JVM method's name
        if self.executors_error:
            raise RuntimeError("no answer")
        return FakeExecutorIds(self.executors)

    def setLogLevel(self, level: str) -> None:  # noqa: N802 - PySpark's name
        self.log_levels.append(level)

    def addPyFile(self, path: str) -> None:  # noqa: N802 - PySpark's name
        self.py_files.append(path)


class FakeSession:
    def __init__(self, master: str | None = "local[*]") -> None:
        self.sparkContext = FakeContext(master)
        self.stops = 0
        self.stop_error: Exception | None = None

    def stop(self) -> None:
        self.stops += 1
        self.sparkContext.stopped = True
        if self.stop_error is not None:
            raise self.stop_error


class FakeBuilder:
    """Stands in for ``SparkSession.builder``: records every ``config`` call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.sessions: list[FakeSession] = []
        self.on_create: Any = None

    def config(self, key: str, value: str) -> FakeBuilder:
        self.calls.append((key, value))
        return self

    def getOrCreate(self) -> FakeSession:  # noqa: N802 - PySpark's name
        if self.on_create is not None:
            self.on_create()
        session = FakeSession(dict(self.calls).get("spark.master"))
        self.sessions.append(session)
        return session


class FakeSparkSession:
    builder: FakeBuilder


@pytest.fixture
def builder(monkeypatch: pytest.MonkeyPatch) -> FakeBuilder:
    """A fresh process state, PySpark's builder replaced and the Spark checks passing."""
    fake = FakeBuilder()
    FakeSparkSession.builder = fake
    monkeypatch.setattr(pyspark.sql, "SparkSession", FakeSparkSession)
    monkeypatch.setattr(spark, "require_spark", lambda: None)
    monkeypatch.setattr(spark, "_session", None)
    monkeypatch.setattr(spark, "_holders", 0)
    monkeypatch.setattr(spark, "_shipped", set())
    monkeypatch.setattr(spark, "_proven", False)
    monkeypatch.setattr(spark, "_atexit_registered", True)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    return fake


# -- the settings a topology config asks for ---------------------------------------------------

LOCAL_DEFAULTS = {
    "spark.master": "local[*]",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.log.level": "WARN",
}


def test_no_config_gives_the_one_host_defaults_and_the_app_name_stormpy() -> None:
    assert spark.spark_settings(None) == {**LOCAL_DEFAULTS, "spark.app.name": "stormpy"}
    assert spark.spark_settings({}) == {**LOCAL_DEFAULTS, "spark.app.name": "stormpy"}


def test_every_spark_key_goes_verbatim_but_the_connectors_own_and_none() -> None:
    settings = spark.spark_settings({
        "topology.name": "wordcount", "topology.workers": 2,
        "spark.executor.memory": "1g", "spark.sql.shuffle.partitions": 8,
        "spark.ui.enabled": True, "spark.eventLog.enabled": False,
        "spark.driver.cores": None, "spark.stormpy.batch.timeout.secs": 5,
        "sparkish.key": "x"})
    assert settings == {**LOCAL_DEFAULTS, "spark.app.name": "wordcount",
                        "spark.executor.memory": "1g", "spark.sql.shuffle.partitions": "8",
                        "spark.ui.enabled": "true", "spark.eventLog.enabled": "false"}


def test_the_app_name_set_wins_over_the_topology_name() -> None:
    settings = spark.spark_settings({"topology.name": "t", "spark.app.name": "mine"})
    assert settings["spark.app.name"] == "mine"


def test_a_cluster_master_makes_the_driver_reachable_unless_set() -> None:
    cluster = spark.spark_settings({"spark.master": "spark://m:7077", "supervisor.host": "node1"})
    assert cluster == {**LOCAL_DEFAULTS, "spark.master": "spark://m:7077",
                       "spark.app.name": "stormpy", "spark.driver.bindAddress": "0.0.0.0",
                       "spark.driver.host": "node1"}
    own = spark.spark_settings({"spark.master": "yarn", "supervisor.host": "node1",
                                "spark.driver.host": "10.0.0.5",
                                "spark.driver.bindAddress": "10.0.0.5"})
    assert own["spark.driver.host"] == "10.0.0.5" and own["spark.driver.bindAddress"] == "10.0.0.5"
    no_host = spark.spark_settings({"spark.master": "yarn"})
    assert "spark.driver.host" not in no_host and no_host["spark.driver.bindAddress"] == "0.0.0.0"
    local = spark.spark_settings({"spark.master": "local[2]", "supervisor.host": "node1"})
    assert "spark.driver.host" not in local and "spark.driver.bindAddress" not in local


# -- starting a session: the builder -----------------------------------------------------------

def test_the_builder_gets_exactly_the_settings_and_the_log_level(builder: FakeBuilder) -> None:
    settings = {"spark.master": "local[1]", "spark.app.name": "a", "spark.log.level": "ERROR"}
    session = spark._create(settings)
    assert builder.calls == list(settings.items())
    assert builder.sessions == [session]
    assert session.sparkContext.log_levels == ["ERROR"]


def test_no_log_level_set_leaves_sparks_own(builder: FakeBuilder) -> None:
    session = spark._create({"spark.master": "local[1]"})
    assert session.sparkContext.log_levels == []


def test_a_local_driver_talks_to_itself_with_this_interpreter(
        builder: FakeBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_LOCAL_IP")
    monkeypatch.delenv("PYSPARK_PYTHON")
    probed: list[Any] = []
    monkeypatch.setattr(spark, "probe_master", lambda *a: probed.append(a))
    spark._create({"spark.master": "local[*]"})
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    assert probed == []


def test_the_users_environment_is_kept(builder: FakeBuilder,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.1.1.1")
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py")
    spark._create({"spark.master": "local[*]"})
    assert os.environ["SPARK_LOCAL_IP"] == "10.1.1.1" and os.environ["PYSPARK_PYTHON"] == "/opt/py"


def test_a_standalone_master_is_probed_first_and_others_are_not(
        builder: FakeBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_LOCAL_IP")
    probed: list[Any] = []
    monkeypatch.setattr(spark, "probe_master", lambda *a: probed.append((a, len(builder.calls))))
    spark._create({"spark.master": "spark://m:7077,n:7077"}, 2.5)
    assert probed == [(("spark://m:7077,n:7077", 2.5), 0)]
    spark._create({"spark.master": "yarn"})
    assert len(probed) == 1
    assert "SPARK_LOCAL_IP" not in os.environ


def test_an_unreachable_master_starts_nothing(builder: FakeBuilder,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(url: str, secs: float) -> None:
        raise SparkMasterUnreachable(f"no Spark master answers at {url}")

    monkeypatch.setattr(spark, "probe_master", unreachable)
    with pytest.raises(SparkMasterUnreachable, match="spark://m:7077"):
        spark.get_spark({"spark.master": "spark://m:7077"})
    assert builder.sessions == [] and spark._session is None


def test_the_sigint_handler_spark_replaces_is_put_back(builder: FakeBuilder) -> None:
    def mine(signum: int, frame: Any) -> None:
        raise AssertionError("never delivered")

    def theirs(signum: int, frame: Any) -> None:
        raise AssertionError("never delivered")

    previous = signal.signal(signal.SIGINT, mine)
    try:
        builder.on_create = lambda: signal.signal(signal.SIGINT, theirs)
        spark._create({"spark.master": "local[1]"})
        assert signal.getsignal(signal.SIGINT) is mine

        def fail() -> None:
            signal.signal(signal.SIGINT, theirs)
            raise RuntimeError("the JVM did not start")

        builder.on_create = fail
        with pytest.raises(RuntimeError, match="the JVM did not start"):
            spark._create({"spark.master": "local[1]"})
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_session_started_off_the_main_thread_leaves_signals_alone(builder: FakeBuilder) -> None:
    got: list[Any] = []

    def start() -> None:
        try:
            got.append(spark._create({"spark.master": "local[1]"}))
        except Exception as exc:  # noqa: BLE001 - handed to the test's thread
            got.append(exc)

    thread = threading.Thread(target=start)
    thread.start()
    thread.join(60)
    assert len(got) == 1 and isinstance(got[0], FakeSession)


def test_pysparks_pandas_advisory_is_kept_out_of_user_output(builder: FakeBuilder) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        spark._create({"spark.master": "local[1]"})
        warnings.warn("PySpark does not yet fully support pandas 3", FutureWarning, stacklevel=1)
        warnings.warn("PySpark does not yet fully support pandas 3", UserWarning, stacklevel=1)
        warnings.warn("something else entirely", FutureWarning, stacklevel=1)
    assert [(str(w.message), w.category) for w in seen] == [
        ("PySpark does not yet fully support pandas 3", UserWarning),
        ("something else entirely", FutureWarning)]


# -- one session per process -------------------------------------------------------------------

def test_one_session_per_process_reused_whatever_later_callers_ask(builder: FakeBuilder) -> None:
    first = spark.get_spark({"topology.name": "one", "spark.executor.memory": "1g"})
    assert dict(builder.calls) == {**LOCAL_DEFAULTS, "spark.app.name": "one",
                                   "spark.executor.memory": "1g"}
    assert spark.get_spark({"topology.name": "two"}) is first
    assert spark.get_spark() is first
    assert builder.sessions == [first] and spark.spark_running()


def test_a_missing_pyspark_or_java_is_named_and_nothing_starts(
        builder: FakeBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise SparkUnavailableError("Spark bolts need Java 17 or later; 'java' was not found")

    monkeypatch.setattr(spark, "require_spark", missing)
    with pytest.raises(SparkUnavailableError, match="'java' was not found"):
        spark.get_spark({})
    assert builder.sessions == [] and spark._session is None and not spark.spark_running()


def test_a_stopped_session_is_stopped_and_replaced(builder: FakeBuilder) -> None:
    first = spark.get_spark({})
    first.sparkContext.stopped = True  # stopped inside the JVM
    assert not spark.spark_running()
    second = spark.get_spark({})
    assert second is not first and builder.sessions == [first, second]
    assert first.stops == 1 and second.stops == 0 and spark.spark_running()


def test_exit_handling_is_registered_once(builder: FakeBuilder,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[Any] = []
    monkeypatch.setattr(spark.atexit, "register", registered.append)
    monkeypatch.setattr(spark, "_atexit_registered", False)
    first = spark.get_spark({})
    first.sparkContext.stopped = True
    spark.get_spark({})
    assert registered == [spark._at_exit] and spark._atexit_registered is True


def test_is_alive_asks_the_jvm_side(builder: FakeBuilder) -> None:
    session = FakeSession()
    assert spark.is_alive(session) is True
    session.sparkContext.stopped = True
    assert spark.is_alive(session) is False
    session.sparkContext.stopped = False
    session.sparkContext.jvm_gone = True
    assert spark.is_alive(session) is False
    session.sparkContext._jsc = None
    assert spark.is_alive(session) is False
    assert spark.spark_running() is False


# -- code shipped once per session -------------------------------------------------------------

def test_the_topologys_code_is_shipped_once_per_session(
        builder: FakeBuilder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "mod.py").write_text("X = 1\n")
    zips = tmp_path / "zips"
    made: list[str] = []

    def mkdtemp(prefix: str) -> str:
        made.append(prefix)
        zips.mkdir()
        return str(zips)

    monkeypatch.setattr(spark, "_zip_dir", None)
    monkeypatch.setattr(spark.tempfile, "mkdtemp", mkdtemp)
    conf = {"spark.stormpy.code.dir": str(code)}
    first = spark.get_spark(conf)
    assert made == ["stormpy-spark-code-"]
    assert len(first.sparkContext.py_files) == 1
    shipped = Path(first.sparkContext.py_files[0])
    assert shipped.parent == zips and shipped.suffix == ".zip"
    assert spark.get_spark(conf) is first and len(first.sparkContext.py_files) == 1
    assert spark._shipped == {str(code.resolve())}
    # a second code dir on the same session is shipped too; the zip dir is made once
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.py").write_text("Y = 2\n")
    assert spark.get_spark({"spark.stormpy.code.dir": str(other)}) is first
    assert len(first.sparkContext.py_files) == 2 and made == ["stormpy-spark-code-"]
    # a new session gets the code again
    first.sparkContext.stopped = True
    second = spark.get_spark(conf)
    assert second is not first and len(second.sparkContext.py_files) == 1
    assert spark._shipped == {str(code.resolve())}
    # without code to ship nothing is added
    assert spark.get_spark({"spark.stormpy.ship.code": False, "spark.stormpy.code.dir": str(other)}) \
        is second
    assert len(second.sparkContext.py_files) == 1


# -- broken sessions ---------------------------------------------------------------------------

def test_needs_restart_for_a_stopped_or_a_proven_session_without_executors(
        builder: FakeBuilder) -> None:
    session = FakeSession("spark://m:7077")
    spark._session = session  # type: ignore[assignment]
    assert spark.needs_restart(session) is False  # young: waiting for its first executors
    session.sparkContext.executors = 0
    assert spark.needs_restart(session) is False  # no job has succeeded yet
    spark.note_job_ok(session)
    assert spark._proven is True
    assert spark.needs_restart(session) is True  # it worked, and its executors are gone
    session.sparkContext.executors = 1
    assert spark.needs_restart(session) is False
    session.sparkContext.executors_error = True
    assert spark.needs_restart(session) is True  # the JVM does not answer
    session.sparkContext.executors_error = False
    session.sparkContext.stopped = True
    assert spark.needs_restart(session) is True


def test_needs_restart_never_for_a_local_master_nor_another_session(builder: FakeBuilder) -> None:
    local = FakeSession("local[2]")
    local.sparkContext.executors_error = True
    spark._session = local  # type: ignore[assignment]
    spark.note_job_ok(local)
    assert spark.needs_restart(local) is False
    other = FakeSession("spark://m:7077")
    other.sparkContext.executors = 0
    spark.note_job_ok(other)  # not the process's session: nothing recorded for it
    assert spark.needs_restart(other) is False
    spark._proven = False
    spark.note_job_ok(other)
    assert spark._proven is False
    nameless = FakeSession(None)
    nameless.sparkContext.executors = 0
    spark._session = nameless  # type: ignore[assignment]
    spark.note_job_ok(nameless)
    assert spark.needs_restart(nameless) is True


def test_reset_stops_only_the_process_session_and_keeps_holders(builder: FakeBuilder) -> None:
    spark.retain_spark()
    session = spark.get_spark({})
    stranger = FakeSession()
    spark.reset_spark(stranger)  # type: ignore[arg-type]
    assert stranger.stops == 0 and session.stops == 0 and spark._session is session
    spark.note_job_ok(session)
    spark.reset_spark(session)
    assert session.stops == 1 and spark._session is None and spark._proven is False
    assert spark._holders == 1
    replacement = spark.get_spark({})
    assert replacement is not session and spark._shipped == set()


# -- stopping ----------------------------------------------------------------------------------

def test_stop_is_idempotent_and_survives_a_failing_stop(builder: FakeBuilder) -> None:
    spark.stop_spark()  # nothing started: nothing to stop
    session = spark.get_spark({})
    session.stop_error = RuntimeError("py4j: connection refused")
    spark._shipped.add("/code")
    spark.note_job_ok(session)
    spark.stop_spark()
    assert session.stops == 1 and spark._session is None
    assert spark._shipped == set() and spark._proven is False
    spark.stop_spark()
    assert session.stops == 1


def test_extra_releases_do_not_keep_a_later_holders_session(builder: FakeBuilder) -> None:
    spark.release_spark()
    spark.release_spark()
    assert spark._holders == 0
    spark.retain_spark()
    session = spark.get_spark({})
    spark.release_spark()
    assert session.stops == 1 and spark._session is None


def test_release_without_a_session_stops_nothing(builder: FakeBuilder) -> None:
    spark.retain_spark()
    spark.release_spark()
    assert spark._session is None and builder.sessions == []


def test_at_exit_stops_the_session_then_the_jvm_and_removes_the_zips(
        builder: FakeBuilder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    order: list[Any] = []
    session = spark.get_spark({})
    monkeypatch.setattr(spark, "_stop_jvm",
                        lambda secs: order.append(("jvm", secs, session.stops)))
    zips = tmp_path / "zips"
    zips.mkdir()
    (zips / "a.zip").write_bytes(b"PK")
    monkeypatch.setattr(spark, "_zip_dir", str(zips))
    spark._at_exit()
    assert order == [("jvm", 10.0, 1)] and spark.JVM_EXIT_WAIT_SECS == 10.0
    assert not zips.exists() and spark._zip_dir is None
    spark._at_exit()  # nothing left: no error
    assert order == [("jvm", 10.0, 1), ("jvm", 10.0, 1)]


class FakeStdin:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


class FakeProc:
    pid = 4242

    def __init__(self, exits: bool = True, exited: bool = False,
                 error: Exception | None = None) -> None:
        self.stdin: FakeStdin | None = FakeStdin()
        self.exits = exits
        self.exited = exited
        self.error = error
        self.waits: list[float] = []
        self.killed = 0

    def poll(self) -> int | None:
        return 0 if self.exited else None

    def wait(self, timeout: float) -> int:
        self.waits.append(timeout)
        if self.error is not None:
            raise self.error
        if not self.exits and not self.killed:
            raise subprocess.TimeoutExpired("java", timeout)
        self.exited = True
        return 0


class FakeGateway:
    def __init__(self, proc: FakeProc | None, fails: bool = False) -> None:
        self.proc = proc
        self.fails = fails
        self.shutdowns = 0

    def shutdown(self) -> None:
        self.shutdowns += 1
        if self.fails:
            raise RuntimeError("gateway already closed")


@pytest.fixture
def gateway_slot(monkeypatch: pytest.MonkeyPatch) -> type[pyspark.SparkContext]:
    monkeypatch.setattr(pyspark.SparkContext, "_gateway", None)
    monkeypatch.setattr(pyspark.SparkContext, "_jvm", None)
    return pyspark.SparkContext


def _install(ctx: Any, gateway: FakeGateway) -> None:
    ctx._gateway = gateway
    ctx._jvm = object()


def test_the_jvm_is_told_to_exit_and_waited_for(gateway_slot: Any) -> None:
    spark._stop_jvm(3.0)  # no JVM launched: nothing to do
    proc = FakeProc()
    gateway = FakeGateway(proc)
    _install(gateway_slot, gateway)
    spark._stop_jvm(3.0)
    assert gateway.shutdowns == 1 and proc.stdin is not None and proc.stdin.closed
    assert proc.waits == [3.0] and proc.killed == 0
    assert gateway_slot._gateway is None and gateway_slot._jvm is None


def test_a_jvm_that_does_not_exit_in_time_is_killed(gateway_slot: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    proc = FakeProc(exits=False)
    monkeypatch.setattr(proc, "kill", lambda: setattr(proc, "killed", proc.killed + 1),
                        raising=False)
    gateway = FakeGateway(proc, fails=True)  # a failing gateway close does not stop the exit
    _install(gateway_slot, gateway)
    spark._stop_jvm(2.0)
    assert proc.waits == [2.0, 5] and proc.killed == 1
    assert gateway_slot._gateway is None and gateway_slot._jvm is None


def test_an_exited_or_unknown_jvm_is_left_alone(gateway_slot: Any) -> None:
    exited = FakeProc(exited=True)
    _install(gateway_slot, FakeGateway(exited))
    spark._stop_jvm(2.0)
    assert exited.waits == [] and exited.stdin is not None and not exited.stdin.closed
    gateway = FakeGateway(None)
    _install(gateway_slot, gateway)
    spark._stop_jvm(2.0)
    assert gateway.shutdowns == 1 and gateway_slot._gateway is None


def test_a_jvm_without_stdin_or_that_cannot_be_waited_for(gateway_slot: Any) -> None:
    proc = FakeProc()
    proc.stdin = None
    _install(gateway_slot, FakeGateway(proc))
    spark._stop_jvm(2.0)
    assert proc.waits == [2.0]
    broken = FakeProc(error=OSError("no child"))
    _install(gateway_slot, FakeGateway(broken))
    spark._stop_jvm(2.0)  # logged, not raised: the process exits either way
    assert broken.waits == [2.0] and broken.killed == 0


# -- from the mutation run's survivors ---------------------------------------------------------

def test_the_probe_waits_as_long_as_the_topology_says(builder: FakeBuilder,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_LOCAL_IP")
    probed: list[Any] = []
    monkeypatch.setattr(spark, "probe_master", lambda *a: probed.append(a))
    spark.get_spark({"spark.master": "spark://m:7077", "spark.stormpy.master.probe.secs": 2})
    assert probed == [("spark://m:7077", 2.0)]


def test_a_running_session_is_handed_out_while_another_task_holds_the_start_lock(
        builder: FakeBuilder) -> None:
    session = spark.get_spark({})
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # e.g. another task shipping a large code dir, or stopping
        with spark._lock:
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        assert held.wait(30)
        got: list[Any] = []
        caller = threading.Thread(target=lambda: got.append(spark.get_spark({})), daemon=True)
        caller.start()
        wait_for(lambda: bool(got), 30, "get_spark of a running session while the lock is held")
        assert got == [session] and not release.is_set()
    finally:
        release.set()
        holder.join(30)


def test_a_sigint_handler_python_did_not_install_is_left_as_it_was(
        builder: FakeBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    before = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(spark.signal, "getsignal", lambda signum: None)
    session = spark._create({"spark.master": "local[1]"})
    assert isinstance(session, FakeSession)
    monkeypatch.undo()
    assert signal.getsignal(signal.SIGINT) is before


def test_a_context_without_a_jvm_handle_is_not_alive() -> None:
    class HalfStarted:
        pass

    class Session:
        sparkContext = HalfStarted()

    assert spark.is_alive(Session()) is False  # type: ignore[arg-type]


def test_a_gateway_this_process_did_not_launch_is_closed_but_not_waited_for(
        gateway_slot: Any) -> None:
    class ForeignGateway:
        def __init__(self) -> None:
            self.shutdowns = 0

        def shutdown(self) -> None:
            self.shutdowns += 1

    gateway = ForeignGateway()
    gateway_slot._gateway = gateway
    gateway_slot._jvm = object()
    spark._stop_jvm(2.0)
    assert gateway.shutdowns == 1 and gateway_slot._gateway is None and gateway_slot._jvm is None


def test_at_exit_with_its_zip_dir_already_gone(builder: FakeBuilder,
                                               monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setattr(spark, "_stop_jvm", lambda secs: None)
    monkeypatch.setattr(spark, "_zip_dir", str(tmp_path / "removed-by-a-cleaner"))
    spark._at_exit()
    assert spark._zip_dir is None
