"""The test kit's waiting and port helpers: wait_for returns the condition's value or names what
it waited for, stays_unchanged names what changed, free ports are distinct and bindable."""

from __future__ import annotations

import socket
import threading

import pytest

from stormpy.testing import WaitTimeout, free_port, free_ports, stays_unchanged, wait_for


def test_wait_for_returns_the_truthy_value() -> None:
    values = iter([0, None, [], "ready"])
    assert wait_for(lambda: next(values), 5, "a value", interval=0) == "ready"


def test_wait_for_names_what_it_waited_for_and_the_last_ignored_error() -> None:
    def flaky() -> bool:
        raise ConnectionError("daemon not up")

    with pytest.raises(WaitTimeout, match=r"waiting for the daemon \(last error: Connection"):
        wait_for(flaky, 0.05, "the daemon", ignore=(ConnectionError,))
    assert issubclass(WaitTimeout, TimeoutError) and issubclass(WaitTimeout, AssertionError)
    with pytest.raises(ConnectionError):
        wait_for(flaky, 1, "an unignored error")


def test_wait_for_check_ends_the_wait_early_but_not_a_met_condition() -> None:
    def dead() -> None:
        raise RuntimeError("the worker failed")

    with pytest.raises(RuntimeError, match="worker failed"):
        wait_for(lambda: False, 30, "never", check=dead)
    assert wait_for(lambda: True, 1, "met", check=dead) is True


def test_stays_unchanged_names_what_changed() -> None:
    box = [1]
    assert stays_unchanged(lambda: box[0], 0.05, "the box", interval=0.01) == 1
    timer = threading.Timer(0.02, lambda: box.append(2) or box.__setitem__(0, 2))
    timer.start()
    with pytest.raises(WaitTimeout, match="the box changed within 5s: 1 -> 2"):
        stays_unchanged(lambda: box[0], 5, "the box", interval=0.01)
    timer.join()


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3
    for port in [*ports, free_port()]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
