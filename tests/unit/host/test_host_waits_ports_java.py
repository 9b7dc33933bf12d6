"""The polling helpers on a driven clock (how often a condition is asked, when the wait gives up,
what the timeout names), free ports, and the rule that finds ``java``."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from driven_clock_kit import DrivenClock

from stormpy.host import java, waiting
from stormpy.host.ports import free_port, free_ports
from stormpy.host.waiting import WaitTimeout, stays_unchanged, wait_for


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> DrivenClock:
    fake = DrivenClock(start=0.0)
    monkeypatch.setattr(waiting.time, "monotonic", fake.monotonic)
    monkeypatch.setattr(waiting.time, "sleep", fake.sleep)
    return fake


def _counting(values: list[object]) -> tuple[Callable[[], object], list[int]]:
    calls = [0]

    def condition() -> object:
        calls[0] += 1
        return values.pop(0) if values else None
    return condition, calls


def test_wait_for_returns_the_conditions_value_polling_every_interval(clock: DrivenClock) -> None:
    condition, calls = _counting([None, 0, "", {"ready": 1}])
    assert wait_for(condition, 10, "the thing") == {"ready": 1}
    assert calls[0] == 4 and clock.sleeps == [0.01, 0.01, 0.01]
    condition, calls = _counting([None, 7])
    assert wait_for(condition, 10, "x", interval=0.5) == 7 and clock.sleeps[-1] == 0.5


def test_wait_for_gives_up_at_the_deadline_naming_what(clock: DrivenClock) -> None:
    condition, calls = _counting([])
    with pytest.raises(WaitTimeout, match=r"^timed out after 3s waiting for the broker$"):
        wait_for(condition, 3, "the broker", interval=1)
    assert calls[0] == 4 and clock.now == 3  # asked at 0, 1, 2 and at the deadline itself
    condition, calls = _counting([])
    with pytest.raises(WaitTimeout, match=r"^timed out after 0s waiting for now$"):
        wait_for(condition, 0, "now")
    assert calls[0] == 1
    with pytest.raises(ValueError, match=r"^wait_for: timeout must be >= 0, got -1$"):
        wait_for(lambda: True, -1, "never")
    assert isinstance(WaitTimeout("x"), TimeoutError) and isinstance(WaitTimeout("x"), AssertionError)


def test_ignored_errors_count_as_not_yet_and_the_last_is_named(clock: DrivenClock) -> None:
    errors = [OSError("refused 1"), OSError("refused 2")]

    def connect() -> bool:
        if errors:
            raise errors.pop(0)
        return True
    assert wait_for(connect, 10, "a connection", ignore=(OSError,)) is True

    def always() -> bool:
        raise ConnectionRefusedError("refused")
    last = r"waiting for a server \(last error: ConnectionRefusedError\('refused'\)\)$"
    with pytest.raises(WaitTimeout, match=last):
        wait_for(always, 1, "a server", ignore=(OSError,), interval=0.5)
    with pytest.raises(KeyError):
        wait_for(lambda: {}["k"], 10, "a key", ignore=(OSError,))


def test_check_runs_after_every_false_poll_and_may_end_the_wait(clock: DrivenClock) -> None:
    checks: list[float] = []
    condition, _ = _counting([None, None, "done"])
    assert wait_for(condition, 10, "x", check=lambda: checks.append(clock.now)) == "done"
    assert checks == [0.0, 0.01]

    def died() -> None:
        if clock.now >= 0.02:
            raise RuntimeError("the daemon exited")
    with pytest.raises(RuntimeError, match="the daemon exited"):
        wait_for(lambda: False, 10, "y", check=died)
    assert clock.now == pytest.approx(0.02)


def _real_time_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*_args: object) -> float:
        raise AssertionError("the real clock was used")
    monkeypatch.setattr(waiting.time, "monotonic", forbidden)
    monkeypatch.setattr(waiting.time, "sleep", forbidden)


def test_a_given_clock_and_sleep_replace_the_real_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    _real_time_forbidden(monkeypatch)
    driven = DrivenClock(start=50.0)
    condition, calls = _counting([None, None, "up"])
    assert wait_for(condition, 10, "x", interval=0.5, clock=driven, sleep=driven.sleep) == "up"
    assert driven.sleeps == [0.5, 0.5] and calls == [3]
    never, polls = _counting([])
    with pytest.raises(WaitTimeout, match=r"^timed out after 2s waiting for the answer$"):
        wait_for(never, 2, "the answer", interval=0.5, clock=driven, sleep=driven.sleep)
    assert driven.now == 53.0 and polls == [5]  # polled at +0, +0.5, ... and at the deadline


def test_stays_unchanged_reads_until_the_time_is_up(clock: DrivenClock) -> None:
    reads = [0]

    def read() -> str:
        reads[0] += 1
        return "same"
    assert stays_unchanged(read, 1.25, "the value", interval=0.5) == "same"
    assert clock.sleeps == [0.5, 0.5, 0.25] and reads[0] == 4
    clock.sleeps.clear()
    stays_unchanged(read, 0.1, "the value")
    assert clock.sleeps == [0.05, 0.05]


def test_stays_unchanged_names_the_change(clock: DrivenClock) -> None:
    values = [1, 1, 2]
    with pytest.raises(WaitTimeout, match=r"^the count changed within 5s: 1 -> 2$"):
        stays_unchanged(lambda: values.pop(0), 5, "the count", interval=1)
    assert clock.now == 2


def test_free_ports_are_distinct_and_released() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3 and all(0 < p < 65536 for p in ports)
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))
    assert free_ports(0) == []
    with pytest.raises(ValueError, match=r"^free_ports: count must be >= 0, got -1$"):
        free_ports(-1)
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", port))
        s.listen()
    assert isinstance(free_port("127.0.0.1"), int)


def _fake_java(folder: Path, executable: bool = True) -> Path:
    folder.mkdir(parents=True)
    java_bin = folder / "java"
    java_bin.write_text("#!/bin/sh\n")
    java_bin.chmod(stat.S_IRWXU if executable else stat.S_IRUSR | stat.S_IWUSR)
    return java_bin


def test_java_home_decides_alone_when_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = _fake_java(tmp_path / "path")
    monkeypatch.setenv("PATH", str(on_path.parent))
    home = tmp_path / "jdk"
    java_bin = _fake_java(home / "bin")
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert java.find_java() == str(java_bin)
    java_bin.chmod(stat.S_IRUSR)
    assert java.find_java() is None  # not executable: reported, not replaced by the one on PATH
    assert java.missing_java_reason() == f"JAVA_HOME={home} has no executable bin/java"
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nothing"))
    assert java.find_java() is None
    (tmp_path / "dir" / "bin" / "java").mkdir(parents=True)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "dir"))
    assert java.find_java() is None  # a directory named java is no executable


def test_without_java_home_java_comes_from_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = _fake_java(tmp_path / "path")
    monkeypatch.setenv("PATH", str(on_path.parent))
    for unset in (None, ""):
        if unset is None:
            monkeypatch.delenv("JAVA_HOME", raising=False)
        else:
            monkeypatch.setenv("JAVA_HOME", unset)
        assert java.find_java() == str(on_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("JAVA_HOME")
    assert java.find_java() is None
    assert java.missing_java_reason() == "`java` is not on PATH and JAVA_HOME is not set"
    assert os.environ.get("JAVA_HOME") is None


def test_free_port_binds_the_host_it_is_given() -> None:
    with pytest.raises(OSError):
        free_port("256.0.0.1")  # not an address: the bind fails, no port is made up
    with pytest.raises(OSError):
        free_ports(2, "256.0.0.1")
