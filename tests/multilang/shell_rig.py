"""One shell component run in the test's own thread as its executor runs it, against a real
subprocess: the recorded-exchange player (``replay.py``) or a script of the test.

The component is bound to a :class:`~stormpy.testing.RecordingCollector` (emits, acks, fails and
errors are recorded); what it hands to its executor loop (``call_soon_threadsafe``: messages
read, faults, room for waiting tuples, restarts) queues in a :class:`TaskLoop` and runs only
while the test drives the loop (:meth:`Rig.run_until`), in the test's thread, so the component
sees the same one-thread world it has in a worker::

    with shell_bolt(tmp_path, [[{"expect": {...}}, {"send": {...}}]]) as rig:
        rig.execute(["a b"])
        rig.run_until(lambda: rig.collector.acked, "the ack")
        assert rig.verdicts() == {0: "ok"}
"""

from __future__ import annotations

import json
import queue
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mlkit import FIXTURES, no_subprocess_left_behind, verdicts

from stormpy import Tuple
from stormpy.multilang import ShellBolt, ShellSpout
from stormpy.testing import RecordingCollector, test_tuple, wait_for
from stormpy.topology._context import TopologyContext

REPLAY = FIXTURES / "replay.py"


class TaskLoop:
    """The executor loop of one task: callbacks handed over from other threads queue here and run
    in the test's thread when the test drives the loop."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()

    def call_soon(self, fn: Callable[[], None]) -> None:
        self._calls.put(fn)

    @property
    def pending(self) -> int:
        """Callbacks queued and not run yet."""
        return self._calls.qsize()

    def run_pending(self) -> None:
        """Run every callback queued so far (and those they queue)."""
        while True:
            try:
                fn = self._calls.get_nowait()
            except queue.Empty:
                return
            fn()


class Rig:
    """A running shell component (:attr:`component`), its collector, loop and context."""

    def __init__(self, component: Any, collector: RecordingCollector, loop: TaskLoop,
                 context: TopologyContext, replay_dir: Path) -> None:
        self.component = component
        self.collector = collector
        self.loop = loop
        self.context = context
        self.replay_dir = replay_dir

    def run_until(self, condition: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
        """Drive the loop until ``condition()`` holds (checked after each round of callbacks)."""
        def ran_and_holds() -> Any:
            self.loop.run_pending()
            return condition()
        return wait_for(ran_and_holds, timeout, what)

    def execute(self, values: Sequence[Any], component: str = "feeder", stream: str = "default",
                task: int = 3) -> Tuple:
        """Give the bolt an input tuple (on the loop, as the executor does); returns it."""
        tup = test_tuple(values, component=component, stream=stream, task=task)
        self.component.execute(tup)
        return tup

    def verdicts(self) -> dict[int, str]:
        """The replay player's verdict per run (start) of the subprocess."""
        return verdicts(self.replay_dir)

    def metric(self, name: str) -> Any:
        return self.context.metric_values().get(name)


def exchange(tmp_path: Path, runs: Sequence[Sequence[Mapping[str, Any]]]) -> Path:
    """An exchange file for the player: run n is played by the n-th start of the subprocess."""
    path = tmp_path / "exchange.json"
    path.write_text(json.dumps({"runs": [list(run) for run in runs]}))
    return path


def player_command(tmp_path: Path, runs: Sequence[Sequence[Mapping[str, Any]]]) -> list[str]:
    return [sys.executable, str(REPLAY), str(exchange(tmp_path, runs))]


@contextmanager
def shell_rig(component: ShellBolt | ShellSpout, tmp_path: Path, conf: Mapping[str, Any] | None = None,
              task_ids: Sequence[int] | None = (4,)) -> Iterator[Rig]:
    """Open (spouts) or prepare (bolts) ``component`` with ``conf`` (its code dir ``tmp_path``)
    on a collector whose undirected emits answer ``task_ids`` (None: the n-th emit goes to task
    n, so that each answer tells which emit it answers); closes it and checks that no subprocess
    is left after the block."""
    ending = no_subprocess_left_behind()
    next(ending)
    collector = RecordingCollector()
    loop = TaskLoop()
    collector.bind(component, kwargs=component.component_kwargs, component_id="shell")
    obj: Any = component
    emit = obj.emit

    def answering_emit(*args: Any, **kwargs: Any) -> list[int]:
        emit(*args, **kwargs)
        return list(task_ids) if task_ids is not None else [len(collector.emitted)]
    obj.emit = answering_emit
    obj.call_soon_threadsafe = loop.call_soon
    context = collector.context(component, component_id="shell", task=1)
    full = {"worker.code.dir": str(tmp_path), **(conf or {})}
    rig = Rig(component, collector, loop, context, tmp_path / "replay")
    rig.replay_dir.mkdir(exist_ok=True)
    try:
        if isinstance(component, ShellSpout):
            component.open(full, context)
        else:
            component.prepare(full, context)
        yield rig
    finally:
        if isinstance(component, ShellSpout):
            component.close()
        else:
            component.cleanup()
        next(ending, None)


def replay_bolt(tmp_path: Path, runs: Sequence[Sequence[Mapping[str, Any]]],
                outputs: Any = ("word",), **kwargs: Any) -> ShellBolt:
    """A shell bolt running the player on ``runs`` (outputs: fields, or a stream map)."""
    rig_env = {"REPLAY_DIR": str(tmp_path / "replay")}
    return ShellBolt(*player_command(tmp_path, runs), env=rig_env, **kwargs).declare(
        list(outputs) if not isinstance(outputs, dict) else outputs)


def replay_spout(tmp_path: Path, runs: Sequence[Sequence[Mapping[str, Any]]],
                 outputs: Any = ("word",), **kwargs: Any) -> ShellSpout:
    rig_env = {"REPLAY_DIR": str(tmp_path / "replay")}
    return ShellSpout(*player_command(tmp_path, runs), env=rig_env, **kwargs).declare(
        list(outputs) if not isinstance(outputs, dict) else outputs)
