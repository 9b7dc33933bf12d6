"""Helpers of the multilang tests: the fixture directory, replay components, a replaying feeder,
a bolt that fails chosen values, the check that no subprocess outlives its test."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from stormpy import Bolt, Tuple
from stormpy.multilang import ShellBolt, ShellSpout
from stormpy.testing import FeederSpout, wait_for

FIXTURES = Path(__file__).resolve().parent
EXCHANGES = FIXTURES / "exchanges"


def conf(**extra: Any) -> dict[str, Any]:
    """A topology config running shell commands in the fixture directory."""
    return {"worker.code.dir": str(FIXTURES), "topology.message.timeout.secs": 30, **extra}


def replay_bolt(exchange: str, replay_dir: Path, outputs: Any = ("word",),
                serializer: str | None = None) -> ShellBolt:
    return ShellBolt(sys.executable, "replay.py", str(EXCHANGES / f"{exchange}.json"),
                     env={"REPLAY_DIR": str(replay_dir)}, serializer=serializer).declare(
                         list(outputs) if not isinstance(outputs, dict) else outputs)


def replay_spout(exchange: str, replay_dir: Path, outputs: Any = ("word",),
                 serializer: str | None = None) -> ShellSpout:
    return ShellSpout(sys.executable, "replay.py", str(EXCHANGES / f"{exchange}.json"),
                      env={"REPLAY_DIR": str(replay_dir)}, serializer=serializer).declare(
                          list(outputs))


def verdicts(replay_dir: Path) -> dict[int, str]:
    """Run number → the player's verdict, for the runs that gave one."""
    return {int(p.name.split("-")[1]): p.read_text() for p in replay_dir.glob("verdict-*")
            if not p.name.endswith(".tmp")}


def exchange_runs(exchange: str) -> list[Any]:
    return json.loads((EXCHANGES / f"{exchange}.json").read_text())["runs"]


class Replayer:
    """A FeederSpout delegate that feeds a failed tuple again (a reliable spout)."""

    def __init__(self, feeder: FeederSpout) -> None:
        self.feeder = feeder
        self.values: dict[Any, Sequence[Any]] = {}
        self.replays = 0
        feeder.set_ack_fail_delegate(self)

    def feed(self, values: Sequence[Any], msg_id: Any) -> None:
        self.values[msg_id] = list(values)
        self.feeder.feed(values, msg_id)

    def ack(self, msg_id: Any) -> None:
        pass

    def fail(self, msg_id: Any) -> None:
        self.replays += 1
        self.feeder.feed(self.values[msg_id], msg_id)


class FailSome(Bolt):
    """Fails the tuples whose first value is in ``fail``, acks the others."""

    outputs = ()

    def __init__(self, fail: Sequence[Any] = ()) -> None:
        self.to_fail = set(fail)

    def prepare(self, conf: Mapping[str, Any], context: Any) -> None:
        pass

    def execute(self, tup: Tuple) -> None:
        if tup.values[0] in self.to_fail:
            self.fail(tup)
        else:
            self.ack(tup)


def own_children() -> set[int]:
    """The pids of this process's running descendants."""
    return {p.pid for p in psutil.Process().children(recursive=True)}


def no_subprocess_left_behind() -> Iterator[None]:
    """Fixture body: after the test, every process it started (beyond those running before it,
    such as a shared ZooKeeper server) has ended."""
    before = own_children()
    yield
    wait_for(lambda: not (own_children() - before), 10, "every subprocess of the test ended")
