"""The worker actions asked through Nimbus (stormpy.client._worker_actions): the request, and the
wait for its answer on a driven clock (polled at once, then every interval, until not pending or
the patience has passed; the last answer returned either way)."""

from __future__ import annotations

from typing import Any

import pytest
from driven_clock_kit import DrivenClock

from stormpy.client import await_worker_action, request_worker_action
from stormpy.host import waiting


class ScriptedNimbus:
    """``call(method, **args)`` recorded; ``worker_action_result`` answers from a script whose
    last answer repeats; ``request_worker_action`` answers request ``sup-1-6700/4``."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, method: str, /, **args: Any) -> Any:
        self.calls.append((method, args))
        if method == "request_worker_action":
            return {"request": "sup-1-6700/4"}
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_a_request_is_relayed_with_its_arguments_and_answers_its_id() -> None:
    nimbus = ScriptedNimbus([])
    args = {"seconds": 5}
    assert request_worker_action(nimbus, "wc", "h1", 6700, "cpu", args) == "sup-1-6700/4"
    assert nimbus.calls == [("request_worker_action", {"name": "wc", "host": "h1", "port": 6700,
                                                       "action": "cpu", "args": {"seconds": 5}})]
    assert nimbus.calls[0][1]["args"] is not args  # a copy: the caller's mapping is not sent on


def test_the_answer_is_polled_at_once_then_every_interval_until_not_pending() -> None:
    done = {"status": "done", "result": {"file": "jstack-1.txt"}}
    nimbus = ScriptedNimbus([{"status": "pending"}, {"status": "pending"}, done])
    clock = DrivenClock()
    assert await_worker_action(nimbus, "wc", "sup-1-6700/4", 30.0, interval=0.3, clock=clock,
                               sleep=clock.sleep) == done
    assert clock.sleeps == [0.3, 0.3]
    assert nimbus.calls == [("worker_action_result", {"name": "wc", "request": "sup-1-6700/4"})] * 3


def test_a_failed_answer_ends_the_wait_and_is_returned() -> None:
    failed = {"status": "failed", "error": "no such worker"}
    clock = DrivenClock()
    assert await_worker_action(ScriptedNimbus([failed]), "wc", "r", 30.0, interval=0.5,
                               clock=clock, sleep=clock.sleep) == failed
    assert clock.sleeps == []


def test_an_answer_still_pending_at_the_patience_is_returned_pending() -> None:
    nimbus = ScriptedNimbus([{"status": "pending", "since": 1}])
    clock = DrivenClock(start=0.0)
    answer = await_worker_action(nimbus, "wc", "r", 60.0, interval=0.5, clock=clock, sleep=clock.sleep)
    assert answer == {"status": "pending", "since": 1}
    assert clock.now == 60.0 and clock.sleeps == [0.5] * 120  # up to the deadline, not past it
    assert len(nimbus.calls) == 121


def test_a_zero_patience_polls_once() -> None:
    nimbus = ScriptedNimbus([{"status": "pending"}])
    clock = DrivenClock()
    assert await_worker_action(nimbus, "wc", "r", 0.0, interval=0.5, clock=clock,
                               sleep=clock.sleep) == {"status": "pending"}
    assert len(nimbus.calls) == 1 and clock.sleeps == []


def test_without_a_clock_the_wait_uses_the_real_one(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = DrivenClock()
    monkeypatch.setattr(waiting.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(waiting.time, "sleep", clock.sleep)
    nimbus = ScriptedNimbus([{"status": "pending"}, {"status": "done", "result": {}}])
    assert await_worker_action(nimbus, "wc", "r", 5.0, interval=0.25)["status"] == "done"
    assert clock.sleeps == [0.25]


def test_a_nimbus_error_passes_through() -> None:
    def down(method: str, /, **_args: Any) -> Any:
        raise ConnectionError(f"{method}: Nimbus is down")
    with pytest.raises(ConnectionError, match="worker_action_result: Nimbus is down"):
        await_worker_action(down, "wc", "r", 30.0, interval=0.5, clock=DrivenClock(),
                            sleep=DrivenClock().sleep)
