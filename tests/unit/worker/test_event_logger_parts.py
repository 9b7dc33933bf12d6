"""The event logger's parts a user or an operator sees: which tasks it wraps (never a system
component, never a method of the component's own class), the sampling percentage drawn per
emit and changed on the fly, the heartbeat's copy of a big tuple (cut exactly past
``RECENT_CHARS``, its message id cut to 100 characters), the dropped count of a logger that
fell behind, the writer thread's name, the default rotation, and ``stop``: bounded by its
timeout even when the writer is stuck, safe on a logger that never wrote, idempotent."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from stormpy.testing import wait_for
from stormpy.topology._event_log import event_doc, event_line
from stormpy.worker import event_logger as event_logger_module
from stormpy.worker.event_logger import PENDING_LIMIT, RECENT_CHARS, EventLogger

TS = 1767225600.5


class Instance:
    """A component with the collector's ``emit`` and ``emit_many`` bound onto it."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.emit = lambda values, second=None, stream="default": self.sent.append(values)
        self.emit_many = lambda values_list, second=None, stream="default": self.sent.append(values_list)


class Runner:
    def __init__(self, component: str, task: int, spout: bool = True, instance: Any = None) -> None:
        self.component_id = component
        self.task_id = task
        self.is_spout = spout
        self.instance = Instance() if instance is None else instance


def sample_all(component: str = "words") -> dict[str, dict[str, Any]]:
    return {component: {"enable": True, "samplingpct": 100.0}}


@pytest.fixture
def draws(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The random draws the samplers make, in order (the test appends them)."""
    queue: list[float] = []
    monkeypatch.setattr(event_logger_module, "random", SimpleNamespace(random=lambda: queue.pop(0)))
    return queue


@pytest.fixture
def fixed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sampled tuple is stamped ``TS`` (so a line's length is known in advance)."""
    monkeypatch.setattr(event_logger_module, "time", SimpleNamespace(time=lambda: TS))


def test_a_percentage_samples_the_emits_whose_draw_falls_below_it(tmp_path: Path,
                                                                  draws: list[float]) -> None:
    logger = EventLogger(tmp_path / "events.log", "t-1")
    spout = Runner("words", 1)
    logger.apply([spout], {"words": {"enable": True, "samplingpct": 50.0}})
    draws += [0.49, 0.5, 0.51]  # 49 < 50 is sampled; 50 and 51 are not
    for i in range(3):
        spout.instance.emit([i])
    logger.apply([spout], {"words": {"enable": True, "samplingpct": 0.5}})  # changed on the fly
    assert logger.sampling == {1: 0.5}
    draws += [0.004, 0.006]  # 0.4 < 0.5 is sampled, 0.6 is not
    spout.instance.emit([3])
    spout.instance.emit([4])
    logger.stop()
    assert [e["values"] for e in logger.recent()] == [[0], [3]]
    assert draws == [] and spout.instance.sent == [[0], [1], [2], [3], [4]]


def test_system_components_are_never_wrapped_whatever_their_place(tmp_path: Path) -> None:
    logger = EventLogger(tmp_path / "events.log", "t-1")
    acker, metrics, spout = Runner("__acker", 3, False), Runner("__metrics", 4, False), Runner("words", 1)
    bound = {r.task_id: dict(r.instance.__dict__) for r in (acker, metrics, spout)}
    logger.apply([acker, metrics, spout], {"t-1": {"enable": True, "samplingpct": 100.0}})
    assert acker.instance.__dict__ == bound[3] and metrics.instance.__dict__ == bound[4]
    assert logger.sampling == {1: 100.0}  # the component after them samples
    spout.instance.emit(["a"])
    logger.stop()
    assert [e["values"] for e in logger.recent()] == [["a"]]


class OwnBatch:
    """A component whose class has a method named like a collector method (not bound by the
    runner): it is the component's own, and the sampler leaves it alone."""

    def __init__(self) -> None:
        self.calls: list[Any] = []
        self.emit = lambda values, second=None, stream="default": None

    def emit_batch(self, batch_id: Any, collector: Any) -> str:
        self.calls.append((batch_id, collector))
        return "own"


def test_a_method_of_the_components_own_class_is_not_wrapped(tmp_path: Path) -> None:
    logger = EventLogger(tmp_path / "events.log", "t-1")
    inst = OwnBatch()
    logger.apply([Runner("words", 1, instance=inst)], sample_all())
    assert "emit_batch" not in inst.__dict__ and inst.emit_batch.__func__ is OwnBatch.emit_batch
    assert inst.emit_batch(7, "collector") == "own" and inst.calls == [(7, "collector")]
    logger.stop()
    assert logger.recent() == [] and logger.written == 0


def test_the_wrapper_left_under_a_rebound_method_samples_nothing_once_removed(
        tmp_path: Path, draws: list[float]) -> None:
    logger = EventLogger(tmp_path / "events.log", "t-1")
    spout = Runner("words", 1)
    logger.apply([spout], sample_all())
    wrapper = spout.instance.emit
    spout.instance.emit = lambda values, msg_id=None, stream="default": wrapper(values, msg_id, stream)
    logger.apply([spout], {})
    draws += [0.0] * 3  # the lowest draw: sampled at any percentage above 0
    spout.instance.emit(["after"])
    logger.stop()
    assert logger.recent() == [] and spout.instance.sent == [["after"]]


def test_a_line_of_exactly_recent_chars_travels_whole_one_more_is_cut(
        tmp_path: Path, fixed_time: None) -> None:
    base = len(event_line(event_doc(TS, "words", 1, "default", [""], None)))
    fits = "x" * (RECENT_CHARS - base)
    assert len(event_line(event_doc(TS, "words", 1, "default", [fits], None))) == RECENT_CHARS
    logger = EventLogger(tmp_path / "events.log", "t-1")
    spout = Runner("words", 1)
    logger.apply([spout], sample_all())
    spout.instance.emit([fits])
    spout.instance.emit([fits + "y"])
    logger.stop()
    whole, cut = logger.recent()
    assert "truncated" not in whole and whole["values"] == [fits]
    assert cut["truncated"] is True and cut["values"] == [json.dumps([fits + "y"])[:RECENT_CHARS]]


def test_a_big_tuples_message_id_travels_cut_to_100_characters_as_text(tmp_path: Path) -> None:
    logger = EventLogger(tmp_path / "events.log", "t-1")
    spout = Runner("words", 1)
    logger.apply([spout], sample_all())
    big = ["x" * (RECENT_CHARS + 10)]
    spout.instance.emit(big, "m" * 150)
    spout.instance.emit(big, 12345)
    spout.instance.emit(big, None)
    logger.stop()
    assert [e["message_id"] for e in logger.recent()] == ["m" * 100, "12345", None]
    assert all(e["truncated"] is True for e in logger.recent())
    logged = [json.loads(line)["message_id"] for line in (tmp_path / "events.log").read_text().splitlines()]
    assert logged == ["m" * 150, 12345, None]  # the events log has them whole


def test_each_time_the_logger_falls_behind_counts_once(tmp_path: Path) -> None:
    logger = EventLogger(tmp_path / "events.log", "t-1")  # no thread: stop() drains
    spout = Runner("words", 1)
    logger.apply([spout], sample_all())
    for _ in range(2):
        for i in range(PENDING_LIMIT + 1):  # one pushed out
            spout.instance.emit([i])
        logger.stop()
    assert logger.dropped == 2 and logger.written == 2 * PENDING_LIMIT


def test_the_writer_runs_on_a_thread_named_after_it(tmp_path: Path) -> None:
    logger = EventLogger(tmp_path / "events.log", "t-1").start()
    try:
        assert "stormpy-event-logger" in [t.name for t in threading.enumerate()]
    finally:
        logger.stop()
    assert "stormpy-event-logger" not in [t.name for t in threading.enumerate()]


def test_by_default_one_older_file_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "events.log"
    logger = EventLogger(path, "t-1", max_bytes=300)  # backups left to the default
    spout = Runner("words", 1)
    logger.apply([spout], sample_all())
    for i in range(6):
        spout.instance.emit([f"{i} " + "z" * 150])
        logger.stop()  # one write each
    assert sorted(f.name for f in tmp_path.iterdir()) == ["events.log", "events.log.1"]
    assert json.loads(path.read_text().splitlines()[-1])["values"][0].startswith("5 ")


def test_stop_on_a_logger_that_never_wrote_and_stop_again_are_harmless(tmp_path: Path) -> None:
    path = tmp_path / "events.log"
    EventLogger(path, "t-1").stop()
    assert not path.exists()
    logger = EventLogger(path, "t-1").start()
    spout = Runner("words", 1)
    logger.apply([spout], sample_all())
    spout.instance.emit(["a"])
    logger.stop()
    logger.stop()
    assert path.read_text().count("\n") == 1


def test_stop_is_bounded_by_its_timeout_while_the_writer_is_stuck(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer stuck on a slow disk does not hold the worker's shutdown: ``stop(timeout)``
    returns after joining for ``timeout``, having written what was pending itself."""
    gate, entered = threading.Event(), threading.Event()
    real_line = event_logger_module.event_line

    def slow_line(doc: Any) -> str:
        if threading.current_thread().name == "stormpy-event-logger":
            entered.set()
            gate.wait(60)
        return real_line(doc)

    monkeypatch.setattr(event_logger_module, "event_line", slow_line)
    path = tmp_path / "events.log"
    logger = EventLogger(path, "t-1").start()
    spout = Runner("words", 1)
    logger.apply([spout], sample_all())
    stopper = threading.Thread(target=logger.stop, args=(0.05,), name="test-stopper")
    try:
        spout.instance.emit(["stuck"])
        wait_for(entered.is_set, 30, "the writer thread takes the first tuple")
        spout.instance.emit(["pending"])
        stopper.start()
        wait_for(lambda: not stopper.is_alive(), 30, "stop() returned while the writer is stuck")
        assert not gate.is_set()
        assert [json.loads(line)["values"] for line in path.read_text().splitlines()] == [["pending"]]
    finally:
        gate.set()
        if stopper.is_alive():
            stopper.join(60)
        logger.stop()  # joins the released writer and closes the file it reopened
    assert "stormpy-event-logger" not in [t.name for t in threading.enumerate()]
