"""A service stopped while another thread is still inside its ``start`` (a supervisor stopped
during its first sync round, which starts the bundle-return service): the stop waits for the
start to finish and then stops the new thread, instead of failing with "cannot join thread
before it is started"."""

from __future__ import annotations

import threading
import types
from typing import Any

import pytest

import stormpy.host.service as service_module
from stormpy.host.service import Service


def test_a_stop_during_a_start_waits_for_it_and_stops_the_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    entered = threading.Event()
    release = threading.Event()

    class SlowStart(threading.Thread):
        """A thread whose start is held until released (or half a second at most), so that a
        stop from another thread comes while ``Service.start`` has made it but not started it."""

        def start(self) -> None:
            entered.set()
            release.wait(0.5)
            super().start()

    module_threading = types.SimpleNamespace(**{**vars(threading), "Thread": SlowStart})
    monkeypatch.setattr(service_module, "threading", module_threading)
    service = Service("slow-start", lambda: None, interval=60.0)
    errors: list[BaseException] = []

    def start() -> Any:
        try:
            service.start()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    starter = threading.Thread(target=start, name="test-starter")
    starter.start()
    assert entered.wait(30)
    try:
        stopped = service.stop(30.0)
    finally:
        release.set()
        starter.join(30)
    assert errors == []
    assert stopped
    assert not any(t.name == "slow-start" for t in threading.enumerate())
