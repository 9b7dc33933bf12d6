"""Which broker ``stormpy dev-kafka`` runs and what it says while it starts, on stand-in brokers
(no JVM, no tansu) and a driven clock: the choice rule and its "why not Apache Kafka" reason,
the line before a start, a progress line every ``PROGRESS_SECS`` of the start, how long it took,
and the run's lines until it is stopped or the broker dies."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from driven_clock_kit import DrivenClock

from stormpy.local import _dev_kafka as dev_kafka
from stormpy.local._apache_kafka import ApacheKafkaBroker
from stormpy.local._kafka_broker import KafkaBrokerNotFound, KafkaBrokerStartError, TansuBroker
from stormpy.testing import wait_for


class ProgressDriver:
    """Stands in for ``threading.Event`` in ``_dev_kafka``: the reporter's waits advance the
    driven clock by their timeout, ``ticks`` times, then block until the event is set."""

    def __init__(self, clock: DrivenClock) -> None:
        self.clock = clock
        self.ticks = 0
        self.lock = threading.Lock()
        self.timeouts: list[float | None] = []
        self.waiters: list[tuple[str, bool]] = []
        self.errors: list[str] = []
        self.events: list[DrivenEvent] = []

    def Event(self) -> DrivenEvent:  # noqa: N802 - stands in for threading.Event
        event = DrivenEvent(self)
        self.events.append(event)
        return event


class DrivenEvent:
    def __init__(self, driver: ProgressDriver) -> None:
        self.driver = driver
        self.real = threading.Event()

    def set(self) -> None:
        self.real.set()

    def is_set(self) -> bool:
        return self.real.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        driver = self.driver
        me = threading.current_thread()
        with driver.lock:
            driver.timeouts.append(timeout)
            driver.waiters.append((me.name, me.daemon))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with driver.lock:
                if self.real.is_set():
                    return True
                if driver.ticks > 0:
                    driver.ticks -= 1
                    driver.clock.now += timeout or 0.0
                    return False
            self.real.wait(0.01)
        driver.errors.append("the progress reporter was never told the start ended")
        raise AssertionError(driver.errors[-1])


@pytest.fixture
def driver(monkeypatch: pytest.MonkeyPatch) -> ProgressDriver:
    clock = DrivenClock(start=500.0)
    progress = ProgressDriver(clock)
    monkeypatch.setattr(dev_kafka, "time", clock)
    monkeypatch.setattr(dev_kafka, "threading",
                        SimpleNamespace(Event=progress.Event, Thread=threading.Thread))
    return progress


class StandInBroker:
    """A broker that starts at once on the driven clock (``start_secs`` later)."""

    kind = "the stand-in broker"
    flavour = "Stand-in Kafka 1.0"
    bootstrap_servers = "10.0.0.7:19092"
    log_path = Path("/var/tmp/stand-in/broker.log")

    def __init__(self, clock: DrivenClock | None = None, start_secs: float = 0.0,
                 lines: list[str] | None = None, progress_lines: int = 0,
                 driver: ProgressDriver | None = None) -> None:
        self.clock = clock
        self.driver = driver
        self.before_start: list[str] = []
        self.start_secs = start_secs
        self.lines = lines
        self.progress_lines = progress_lines
        self.started = 0
        self.stopped = 0
        self.running = False
        self.returncode: int | None = None
        self.dies_with: int | None = None

    def start(self) -> StandInBroker:
        if self.lines is not None:
            # what was said before the start, then the reporter may tick
            self.before_start = list(self.lines)
            assert self.driver is not None
            with self.driver.lock:
                self.driver.ticks = self.progress_lines
            wait_for(lambda: sum(line.startswith("still starting") for line in self.lines or [])
                     >= self.progress_lines, 30, "the progress lines")
        if self.clock is not None:
            self.clock.now += self.start_secs
        self.started += 1
        self.running = self.dies_with is None
        self.returncode = self.dies_with
        return self

    def stop(self) -> None:
        self.stopped += 1
        self.running = False

    def log_tail(self) -> str:
        return "the broker's last words"


# -- starting: the line before, the progress lines, the time it took -------------------------------

def test_starting_says_what_starts_then_every_progress_interval_how_long_so_far(
        driver: ProgressDriver) -> None:
    assert dev_kafka.PROGRESS_SECS == 5.0
    lines: list[str] = []
    broker = StandInBroker(driver.clock, start_secs=2.5, lines=lines, progress_lines=3, driver=driver)
    took = dev_kafka.starting(broker, "10.0.0.7:19092", lines.append)  # type: ignore[arg-type]
    assert took == 17.5
    assert broker.before_start == [
        "starting the stand-in broker on 10.0.0.7:19092; waiting until it serves..."]
    assert lines == [
        "starting the stand-in broker on 10.0.0.7:19092; waiting until it serves...",
        "still starting the stand-in broker: 5 s so far",
        "still starting the stand-in broker: 10 s so far",
        "still starting the stand-in broker: 15 s so far",
    ]
    # every wait of the reporter is one progress interval, on its own daemon thread (a Ctrl-C
    # during the start does not wait for it), and it ended once the start ended
    assert driver.timeouts == [5.0] * 4
    assert driver.waiters == [("dev-kafka-progress", True)] * 4
    assert driver.errors == []
    assert broker.started == 1
    assert not any(t.name == "dev-kafka-progress" for t in threading.enumerate())


def test_a_quick_start_prints_no_progress_line(driver: ProgressDriver) -> None:
    lines: list[str] = []
    broker = StandInBroker(driver.clock, start_secs=3.2)
    assert dev_kafka.starting(broker, "h:1", lines.append) == pytest.approx(3.2)  # type: ignore[arg-type]
    assert lines == ["starting the stand-in broker on h:1; waiting until it serves..."]
    assert driver.errors == []


def test_a_failed_start_propagates_its_error_and_ends_the_reporter(driver: ProgressDriver) -> None:
    lines: list[str] = []

    class FailingBroker(StandInBroker):
        def start(self) -> StandInBroker:
            raise KafkaBrokerStartError("the broker exited with status 1")

    with pytest.raises(KafkaBrokerStartError, match="^the broker exited with status 1$"):
        dev_kafka.starting(FailingBroker(), "h:2", lines.append)  # type: ignore[arg-type]
    assert lines == ["starting the stand-in broker on h:2; waiting until it serves..."]
    assert all(event.is_set() for event in driver.events)
    assert driver.errors == []
    assert not any(t.name == "dev-kafka-progress" for t in threading.enumerate())


# -- choose_broker: the rule ----------------------------------------------------------------------

def _no_lookup() -> str | None:
    raise AssertionError("Apache Kafka was looked up although tansu was asked for")


def test_tansu_asked_for_is_tansu_without_looking_for_apache_kafka(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(dev_kafka, "apache_kafka_missing", _no_lookup)
    broker, why = dev_kafka.choose_broker(19093, host="10.1.2.3", log_dir=tmp_path, choice="tansu")
    assert type(broker) is TansuBroker
    assert why == "tansu was asked for"
    assert (broker.host, broker.port, broker._requested_work_dir) == ("10.1.2.3", 19093, tmp_path)


@pytest.mark.parametrize("choice", ["auto", "kafka"])
def test_apache_kafka_when_it_can_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                      choice: str) -> None:
    monkeypatch.setattr(dev_kafka, "apache_kafka_missing", lambda: None)
    broker, why = dev_kafka.choose_broker(19094, host="10.1.2.4", log_dir=tmp_path, choice=choice)
    assert type(broker) is ApacheKafkaBroker
    assert why is None
    assert (broker.host, broker.port, broker._requested_work_dir) == ("10.1.2.4", 19094, tmp_path)


def test_auto_falls_back_to_tansu_saying_why_not_apache_kafka(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(dev_kafka, "apache_kafka_missing", lambda: "Java was not found (no java)")
    broker, why = dev_kafka.choose_broker(19095, host="10.1.2.5", log_dir=tmp_path)
    assert type(broker) is TansuBroker
    assert why == "Java was not found (no java)"
    assert (broker.host, broker.port, broker._requested_work_dir) == ("10.1.2.5", 19095, tmp_path)


def test_kafka_asked_for_but_missing_is_refused_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dev_kafka, "apache_kafka_missing", lambda: "no kafka_2.13-*.jar in /x/libs")
    with pytest.raises(KafkaBrokerNotFound) as caught:
        dev_kafka.choose_broker(choice="kafka")
    assert str(caught.value) == "no kafka_2.13-*.jar in /x/libs"


def test_the_defaults_are_a_free_port_on_localhost_in_a_temporary_directory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dev_kafka, "apache_kafka_missing", lambda: "missing")
    broker, why = dev_kafka.choose_broker()
    assert type(broker) is TansuBroker and why == "missing"
    assert broker.host == "127.0.0.1" and broker._requested_work_dir is None
    with pytest.raises(RuntimeError, match="known only after start"):
        _ = broker.port


def test_an_unknown_choice_is_refused_naming_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dev_kafka, "apache_kafka_missing", _no_lookup)
    assert dev_kafka.BROKER_CHOICES == ("auto", "kafka", "tansu")
    with pytest.raises(ValueError) as caught:
        dev_kafka.choose_broker(choice="redpanda")
    assert str(caught.value) == "broker choice must be one of auto, kafka, tansu, got 'redpanda'"


# -- start_broker and run_dev_kafka: the lines a developer sees ----------------------------------

class ChoiceRecorder:
    def __init__(self, broker: Any, why: str | None) -> None:
        self.broker, self.why = broker, why
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, str | None]:
        self.calls.append((args, kwargs))
        return self.broker, self.why


def test_start_broker_says_why_not_apache_kafka_and_where_it_serves(
        monkeypatch: pytest.MonkeyPatch, driver: ProgressDriver, tmp_path: Path) -> None:
    broker = StandInBroker(driver.clock, start_secs=4.4)
    choose = ChoiceRecorder(broker, "Java was not found")
    monkeypatch.setattr(dev_kafka, "choose_broker", choose)
    lines: list[str] = []
    assert dev_kafka.start_broker("auto", port=19096, host="10.0.0.7", log_dir=tmp_path,
                                  echo=lines.append) is broker
    assert choose.calls == [((19096,), {"host": "10.0.0.7", "log_dir": tmp_path, "choice": "auto"})]
    assert lines == [
        "starting tansu instead of Apache Kafka: Java was not found",
        "starting the stand-in broker on 10.0.0.7:19096; waiting until it serves...",
        "Kafka broker Stand-in Kafka 1.0 serving on 10.0.0.7:19092 (ready after 4 s; log "
        "/var/tmp/stand-in/broker.log)",
    ]
    assert broker.started == 1 and broker.stopped == 0


def test_start_broker_defaults_print_and_name_a_free_port(
        monkeypatch: pytest.MonkeyPatch, driver: ProgressDriver, capsys: pytest.CaptureFixture[str]) -> None:
    broker = StandInBroker(driver.clock, start_secs=0.6)
    choose = ChoiceRecorder(broker, None)
    monkeypatch.setattr(dev_kafka, "choose_broker", choose)
    assert dev_kafka.start_broker() is broker
    assert choose.calls == [((0,), {"host": "127.0.0.1", "log_dir": None, "choice": "auto"})]
    assert capsys.readouterr().out.splitlines() == [
        "starting the stand-in broker on 127.0.0.1:a free port; waiting until it serves...",
        "Kafka broker Stand-in Kafka 1.0 serving on 10.0.0.7:19092 (ready after 1 s; log "
        "/var/tmp/stand-in/broker.log)",
    ]


def _stand_in(cls: type[Any], clock: DrivenClock, dies_with: int | None = None) -> Any:
    """A real broker class (so the kind of data kept is told by its type) that starts at once."""
    class StandIn(cls):  # type: ignore[misc,valid-type]
        running = False
        returncode = None
        stopped = 0
        bootstrap_servers = "10.0.0.7:19097"

        def start(self) -> Any:
            clock.now += 2.0
            self.running = dies_with is None
            self.returncode = dies_with
            return self

        def stop(self, grace_secs: float | None = None) -> None:
            self.stopped += 1
            self.running = False

        def log_tail(self, lines: int = 40) -> str:
            return "the broker's last words"
    broker = StandIn(19097)
    broker.log_path = Path("/var/tmp/dev-kafka/broker.log")
    return broker


@pytest.mark.parametrize(("cls", "why", "first", "kept", "flavour"), [
    (TansuBroker, "Java was not found", ["starting tansu instead of Apache Kafka: Java was not found"],
     "data in memory only", "tansu (in memory)"),
    (ApacheKafkaBroker, None, [], "data kept across restarts", "Apache Kafka ? (KRaft)"),
])
def test_dev_kafka_runs_until_stopped_saying_where_it_serves_and_what_it_keeps(
        monkeypatch: pytest.MonkeyPatch, driver: ProgressDriver, tmp_path: Path, cls: type[Any],
        why: str | None, first: list[str], kept: str, flavour: str) -> None:
    broker = _stand_in(cls, driver.clock)
    choose = ChoiceRecorder(broker, why)
    monkeypatch.setattr(dev_kafka, "choose_broker", choose)
    stop = threading.Event()
    ready: list[Any] = []
    lines: list[str] = []

    def on_ready(b: Any) -> None:
        ready.append(b)
        stop.set()
    code = dev_kafka.run_dev_kafka(19097, tmp_path, host="10.0.0.7", choice="kafka", echo=lines.append,
                                   stop_event=stop, on_ready=on_ready)
    assert code == 0
    assert choose.calls == [((19097,), {"host": "10.0.0.7", "log_dir": tmp_path, "choice": "kafka"})]
    assert ready == [broker]
    assert lines == [*first,
                     f"starting {cls.kind} on 10.0.0.7:19097; waiting until it serves...",
                     f"Kafka broker {flavour} serving on 10.0.0.7:19097 (ready after 2 s; log "
                     f"/var/tmp/dev-kafka/broker.log; {kept}); Ctrl-C to stop",
                     "stopping the Kafka broker"]
    assert broker.stopped == 1


def test_dev_kafka_reports_a_broker_that_died_with_its_status_and_log_tail(
        monkeypatch: pytest.MonkeyPatch, driver: ProgressDriver, capsys: pytest.CaptureFixture[str]) -> None:
    broker = _stand_in(TansuBroker, driver.clock, dies_with=7)
    choose = ChoiceRecorder(broker, None)
    monkeypatch.setattr(dev_kafka, "choose_broker", choose)
    # the defaults: port 9092, stormpy-local/dev-kafka, localhost, the rule, print
    assert dev_kafka.run_dev_kafka() == 7
    assert choose.calls == [((9092,), {"host": "127.0.0.1", "log_dir": "stormpy-local/dev-kafka",
                                       "choice": "auto"})]
    assert capsys.readouterr().out.splitlines() == [
        "starting the tansu Kafka-protocol broker on 127.0.0.1:9092; waiting until it serves...",
        "Kafka broker tansu (in memory) serving on 10.0.0.7:19097 (ready after 2 s; log "
        "/var/tmp/dev-kafka/broker.log; data in memory only); Ctrl-C to stop",
        "the Kafka broker exited with status 7; last log lines:",
        "the broker's last words",
    ]
    assert broker.stopped == 1
