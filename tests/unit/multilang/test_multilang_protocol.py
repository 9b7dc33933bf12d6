"""The multilang protocol's rules on the host side: which commands are taken, the handshake
document, the timeout settings, and how shell and pystorm components declare themselves
(refused clearly when they do not); and the shell components' own rules without a subprocess: the
order of tuples held back by max pending, the restart backoff, the watchdog's clock, and acks of a
dead subprocess's message ids."""

from __future__ import annotations

import itertools
import logging
import re
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pystorm_wordcount as wordcount
import pytest
from pystorm import Bolt as PystormBolt

from stormpy import Bolt, TopologyBuilder, Tuple
from stormpy.config import COMPONENT_KEYS, DEFAULTS, KEYS, SettingError, merged
from stormpy.host.backoff import Backoff
from stormpy.host.service import Service
from stormpy.host.waiting import wait_for
from stormpy.multilang import ShellBolt, ShellSpout, pystorm_component
from stormpy.multilang import _shell as shell_module
from stormpy.multilang._process import ShellProcess
from stormpy.multilang._protocol import (
    BOLT_COMMANDS,
    SPOUT_COMMANDS,
    ProtocolError,
    check_command,
    handshake,
    heartbeat_period,
    max_pending,
    subprocess_timeout,
)
from stormpy.multilang._serializers import JsonCodec, codec_for
from stormpy.multilang._shell import ShellSettings
from stormpy.topology._context import TopologyContext
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._layout import compute_layout


@pytest.mark.parametrize("msg", [
    {"command": "emit", "tuple": ["a"]}, {"command": "ack", "id": "1"},
    {"command": "fail", "id": "1"}, {"command": "log", "msg": "m", "level": 4},
    {"command": "error", "msg": "e"}, {"command": "metrics", "name": "n", "params": 1},
    {"command": "sync"},
])
def test_bolt_commands_are_taken(msg: dict[str, Any]) -> None:
    assert check_command(msg, BOLT_COMMANDS) == msg["command"]


@pytest.mark.parametrize(("msg", "problem"), [
    ({"command": "frobnicate"}, "unknown command 'frobnicate'"),
    ({"no": "command"}, "unknown command None"),
    (["a", "list"], "expected a command map"),
    ({"command": "ack"}, "ack without 'id'"),
    ({"command": "emit", "tuple": "abc"}, "emit of a non-list tuple"),
    ({"command": "next"}, "unknown command 'next'"),
])
def test_bad_bolt_messages_are_refused_quoting_them(msg: Any, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        check_command(msg, BOLT_COMMANDS)


def test_a_long_bad_message_is_quoted_cut_at_200_characters() -> None:
    msg = {"command": "emit", "tuple": "x" * 500}
    with pytest.raises(ProtocolError) as refused:
        check_command(msg, BOLT_COMMANDS)
    assert str(refused.value) == f"emit of a non-list tuple: {repr(msg)[:200]}..."
    short = {"command": "emit", "tuple": "x"}
    with pytest.raises(ProtocolError) as refused:
        check_command(short, BOLT_COMMANDS)
    assert str(refused.value) == f"emit of a non-list tuple: {short!r}"


@pytest.mark.parametrize(("msg", "error"), [
    (["a", "list"], "expected a command map, got ['a', 'list']"),
    ({"command": "frobnicate", "x": 1}, "unknown command 'frobnicate' in {'command': 'frobnicate', 'x': 1}"),
    ({"command": "ack", "ids": "1"}, "ack without 'id': {'command': 'ack', 'ids': '1'}"),
    ({"command": "emit", "tuple": 5}, "emit of a non-list tuple: {'command': 'emit', 'tuple': 5}"),
])
def test_each_refusal_quotes_the_message_whole(msg: Any, error: str) -> None:
    with pytest.raises(ProtocolError) as refused:
        check_command(msg, BOLT_COMMANDS)
    assert str(refused.value) == error


def test_a_bad_message_quoted_at_exactly_200_characters_is_not_cut() -> None:
    exactly = ["y" * 196]  # repr: ['yyy...'] is 200 characters
    assert len(repr(exactly)) == 200
    with pytest.raises(ProtocolError) as refused:
        check_command(exactly, BOLT_COMMANDS)
    assert str(refused.value) == f"expected a command map, got {exactly!r}"
    one_more = ["y" * 197]
    with pytest.raises(ProtocolError) as refused:
        check_command(one_more, BOLT_COMMANDS)
    assert str(refused.value) == f"expected a command map, got {repr(one_more)[:200]}..."


@pytest.mark.parametrize("command", [5, None, ["emit"]])
def test_a_command_that_is_no_string_is_unknown(command: Any) -> None:
    with pytest.raises(ProtocolError, match=f"^unknown command {re.escape(repr(command))} in "):
        check_command({"command": command, "tuple": []}, BOLT_COMMANDS)


def test_spouts_may_not_ack() -> None:
    with pytest.raises(ProtocolError, match="unknown command 'ack'"):
        check_command({"command": "ack", "id": "1"}, SPOUT_COMMANDS)


def test_the_subprocess_timeout_follows_storms_settings() -> None:
    assert subprocess_timeout({}) == 30
    assert subprocess_timeout({"supervisor.worker.timeout.secs": 12}) == 12
    assert subprocess_timeout({"supervisor.worker.timeout.secs": 12,
                               "topology.subprocess.timeout.secs": 4}) == 4
    assert subprocess_timeout({"supervisor.worker.timeout.secs": 12,
                               "topology.subprocess.timeout.secs": None}) == 12
    assert heartbeat_period(3) == 1.0
    assert heartbeat_period(30) == 1.0
    assert heartbeat_period(1.5) == 0.5
    with pytest.raises(SettingError, match=r"^topology\.subprocess\.timeout\.secs: must be a n"):
        subprocess_timeout({"topology.subprocess.timeout.secs": 0})
    with pytest.raises(SettingError, match=r"^supervisor\.worker\.timeout\.secs: must be a nu"):
        subprocess_timeout({"supervisor.worker.timeout.secs": "soon"})


def test_storms_multilang_settings_are_known_keys_with_storms_defaults() -> None:
    assert DEFAULTS["topology.multilang.serializer"] == "org.apache.storm.multilang.JsonSerializer"
    assert DEFAULTS["topology.subprocess.timeout.secs"] is None
    assert DEFAULTS["topology.shellbolt.max.pending"] == 100
    assert DEFAULTS["supervisor.worker.timeout.secs"] == 30
    assert all(KEYS[k].doc for k in ("topology.multilang.serializer",
                                      "topology.subprocess.timeout.secs",
                                      "topology.shellbolt.max.pending"))
    assert {"topology.multilang.serializer", "topology.shellbolt.max.pending"} <= COMPONENT_KEYS
    # the defaults read as Storm's: JSON, the worker timeout, 100 pending writes
    conf = merged()
    assert codec_for(conf).name == "json"
    assert subprocess_timeout(conf) == 30
    assert max_pending(conf) == 100


def test_the_shellbolt_max_pending_setting_is_checked() -> None:
    assert max_pending({}) == 100
    assert max_pending({"topology.shellbolt.max.pending": None}) == 100
    assert max_pending({"topology.shellbolt.max.pending": 1}) == 1
    for bad in (0, -5, 2.5, "10", True):
        with pytest.raises(SettingError, match=r"^topology\.shellbolt\.max\.pending: must be an "
                                               r"integer >= 1, got"):
            max_pending({"topology.shellbolt.max.pending": bad})


class _Sink(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_the_handshake_carries_conf_context_and_pid_dir() -> None:
    b = TopologyBuilder()
    b.set_spout("sentences", ShellSpout("node", "spout.js").declare(["sentence"]))
    b.set_bolt("split", ShellBolt("python3", "split.py").declare(
        {"default": ["word"], "other": ["word", "n"]}), 2).shuffle_grouping("sentences")
    b.set_bolt("sink", _Sink).fields_grouping("split", ["word"])
    spec = b.create_topology()
    conf = {"topology.name": "wc", "topology.debug": False, "an.object": object()}
    layout = compute_layout(spec, conf)
    task = layout.component_tasks["split"][1]
    doc = handshake(TopologyContext("wc-1", spec, layout, task, [task], conf), "/tmp/pids")
    assert doc["pidDir"] == "/tmp/pids"
    assert doc["conf"] == {"topology.name": "wc", "topology.debug": False}  # JSON values only
    ctx = doc["context"]
    assert ctx["taskid"] == task and ctx["componentid"] == "split"
    assert ctx["task->component"][str(task)] == "split"
    assert ctx["streams"] == ["default", "other"]
    assert ctx["stream->outputfields"] == {"default": ["word"], "other": ["word", "n"]}
    assert ctx["source->stream->fields"] == {"sentences": {"default": ["sentence"]}}
    assert ctx["stream->target->grouping"] == {"default": {"sink": {"type": "fields",
                                                                   "fields": ["word"]}}}


def test_the_handshake_names_the_topology_and_leaves_out_what_json_cannot_carry() -> None:
    b = TopologyBuilder()
    b.set_spout("s", ShellSpout("node", "s.js").declare(["w"]))
    spec = b.create_topology()
    conf = {"a.set": {1, 2}, "nested": {"ok": [1, "two"], "bad": object()}, 7: "int key",
            "plain": 1.5}
    layout = compute_layout(spec, conf)
    [task] = layout.component_tasks["s"]
    doc = handshake(TopologyContext("wc-1", spec, layout, task, [task], conf), "/pids")
    assert doc["conf"] == {"plain": 1.5, "topology.name": "wc-1"}
    assert doc["context"]["source->stream->fields"] == {}
    assert doc["context"]["stream->target->grouping"] == {}


def test_a_shell_bolt_without_declared_outputs_is_refused() -> None:
    b = TopologyBuilder()
    with pytest.raises(InvalidTopologyError, match=r"'split'.*declares no outputs.*\.declare"):
        b.set_bolt("split", ShellBolt("python3", "split.py"))


def test_a_shell_bolt_subclass_declares_as_on_storm() -> None:
    class SplitSentence(ShellBolt):
        command = ("python3", "splitsentence.py")
        outputs = ["word"]

    b = TopologyBuilder()
    b.set_spout("s", ShellSpout("node", "s.js", serializer="msgpack").declare(["sentence"]))
    b.set_bolt("split", SplitSentence).shuffle_grouping("s")
    spec = b.create_topology()
    assert spec.components["split"].streams["default"].fields.to_list() == ["word"]
    assert spec.components["s"].config["topology.multilang.serializer"] == "msgpack"
    assert SplitSentence()._shell.command == ["python3", "splitsentence.py"]


@pytest.mark.parametrize(("kwargs", "error", "text"), [
    ({"args": ("a",), "command": ["b"]}, TypeError, "not both"),
    ({"args": ()}, ValueError, "needs a command"),
    ({"args": ("",)}, ValueError, "needs a command"),
    ({"args": ("a",), "env": {"X": 1}}, TypeError, "env must map strings"),
    ({"args": ("a",), "serializer": "xml"}, SettingError, "unknown multilang serializer"),
])
def test_bad_shell_arguments_are_refused(kwargs: dict[str, Any], error: type, text: str) -> None:
    kwargs = dict(kwargs)  # a copy: the parameter's dict is shared by every run of the test
    args = kwargs.pop("args")
    with pytest.raises(error, match=text):
        ShellBolt(*args, **kwargs)


def test_the_working_directory_stays_inside_the_code_dir(tmp_path: Path) -> None:
    (tmp_path / "resources").mkdir()
    conf = {"worker.code.dir": str(tmp_path)}
    inside = ShellSettings(("x",), None, "resources", None, [])
    assert inside.directory(conf) == str(tmp_path.resolve() / "resources")
    with pytest.raises(ValueError, match="leads out of the topology's code dir"):
        ShellSettings(("x",), None, "../..", None, []).directory(conf)
    with pytest.raises(ValueError, match="no directory"):
        ShellSettings(("x",), None, "missing", None, []).directory(conf)


def test_in_local_mode_the_code_dir_is_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "resources").mkdir()
    monkeypatch.chdir(tmp_path)
    assert ShellSettings(("x",), None, None, None, []).directory({}) == str(tmp_path.resolve())
    assert ShellSettings(("x",), None, "resources", None, []).directory({}) == \
        str(tmp_path.resolve() / "resources")


def test_a_sibling_dir_whose_name_starts_with_the_code_dirs_is_outside_it(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (tmp_path / "code-x").mkdir()  # "code-x" starts with "code" as a string, not as a path
    conf = {"worker.code.dir": str(code)}
    with pytest.raises(ValueError, match="leads out of the topology's code dir"):
        ShellSettings(("x",), None, "../code-x", None, []).directory(conf)
    assert ShellSettings(("x",), None, "../code", None, []).directory(conf) == str(code.resolve())


def test_pystorm_components_declare_from_streamparse_outputs() -> None:
    b = TopologyBuilder()
    b.set_spout("s", pystorm_component(wordcount.SentenceSpout))
    b.set_bolt("count", pystorm_component(wordcount.WordCountBolt, shell=True)) \
        .shuffle_grouping("s")
    b.set_bolt("batch", pystorm_component(wordcount.TicklessCountBolt)).shuffle_grouping("s")
    spec = b.create_topology()
    assert spec.components["count"].streams["default"].fields.to_list() == ["word", "count"]
    assert spec.components["count"].kwargs["command"][1:] == [
        "-m", "stormpy.multilang.pystorm_run", "pystorm_wordcount:WordCountBolt"]
    assert spec.components["batch"].config["topology.tick.tuple.freq.secs"] == 1


def test_pystorm_components_are_refused_clearly() -> None:
    class NoOutputs(PystormBolt):
        def process(self, tup: Any) -> None:
            pass

    with pytest.raises(TypeError, match="not a pystorm Bolt or Spout"):
        pystorm_component(_Sink)
    with pytest.raises(ValueError, match="declares no outputs"):
        pystorm_component(NoOutputs)
    with pytest.raises(ValueError, match="defined inside a function"):
        pystorm_component(NoOutputs, outputs=[], shell=True)


def test_shell_and_pystorm_components_travel_to_a_cluster_as_plain_data() -> None:
    import msgpack

    from stormpy.topology._spec import TopologySpec

    b = TopologyBuilder()
    b.set_spout("s", ShellSpout("node", "s.js", cwd="resources", env={"A": "1"})
                .declare(["sentence"]))
    b.set_bolt("split", ShellBolt("python3", "split.py", serializer="msgpack").declare(
        {"default": ["word"], "direct": {"fields": ["word"], "direct": True}})) \
        .shuffle_grouping("s")
    b.set_bolt("count", pystorm_component(wordcount.WordCountBolt)).fields_grouping("split",
                                                                                    ["word"])
    spec = b.create_topology()
    doc = msgpack.unpackb(msgpack.packb(spec.to_doc()), raw=False)
    again = TopologySpec.from_doc(doc)
    assert again.components["split"].streams["direct"].direct
    assert again.components["s"].kwargs == {"command": ["node", "s.js"], "cwd": "resources",
                                            "env": {"A": "1"}, "outputs": ["sentence"]}
    assert again.components["count"].class_path == \
        "stormpy.multilang._pystorm_adapter:PystormBolt"


class HeldProcess:
    """A subprocess stand-in whose writer has room only when the test says so."""

    def __init__(self) -> None:
        self.room = False
        self.sent: list[Any] = []

    def has_room(self) -> bool:
        return self.room

    def want_room(self) -> bool:
        return self.room

    def send(self, msg: Any, counted: bool = False) -> None:
        self.sent.append(msg["tuple"][0] if "tuple" in msg else msg)


def test_tuples_waiting_beyond_max_pending_go_before_later_ones_in_arrival_order() -> None:
    """Room appears before the bolt hands out its waiting tuples: a tuple arriving then still
    queues behind them (Storm keeps a shell bolt's input order)."""
    bolt = ShellBolt("x")
    proc = HeldProcess()
    bolt._process, bolt._waiting, bolt._pending = proc, deque(), {}  # type: ignore[assignment]
    bolt._ids, bolt._name, bolt._codec = itertools.count(1), "x:1", JsonCodec()
    for value in ("a", "b"):
        bolt.execute(Tuple([value], "default", 1, "feeder", None))
    assert proc.sent == []
    proc.room = True  # the writer made room; the bolt has not been told yet
    bolt.execute(Tuple(["c"], "default", 1, "feeder", None))
    bolt._on_room()
    bolt.execute(Tuple(["d"], "default", 1, "feeder", None))
    assert proc.sent == ["a", "b", "c", "d"]


def faulting_bolt(loop: list[Callable[[], None]], spawned: list[int]) -> ShellBolt:
    """A ShellBolt whose subprocess never starts: ``_spawn`` counts, the loop's
    ``call_soon_threadsafe`` queues into ``loop``, the restart service is the component's own."""
    bolt = ShellBolt("x")
    bolt._process, bolt._closing, bolt._name, bolt._pending = None, False, "x:1", {}
    bolt._log = logging.getLogger("test.shell")
    bolt._backoff = Backoff(0.5, 30.0, free_failures=1)
    bolt._restart_due = False
    bolt._restarter = Service("multilang-restart-x:1", bolt._restart_round,
                              interval=shell_module._RESTART_IDLE_SECS)
    bolt.report_error = lambda error: None  # type: ignore[method-assign]
    bolt.call_soon_threadsafe = loop.append  # type: ignore[attr-defined]
    bolt._spawn = lambda: (spawned.append(1), setattr(bolt, "_restart_due", False))  # type: ignore[method-assign]
    bolt._started_at = time.monotonic()
    return bolt


def test_the_restart_backoff_starts_over_after_a_healthy_run() -> None:
    """Crashes in a row wait longer and longer; a crash after a healthy run (longer than the
    stable time) restarts at once, however many crashes came before."""
    loop: list[Callable[[], None]] = []
    spawned: list[int] = []
    bolt = faulting_bolt(loop, spawned)
    bolt._restarter.start = lambda: bolt._restarter  # type: ignore[method-assign]  # no thread here
    delays = []
    try:
        for healthy in (False, False, False, True, False):
            bolt._started_at = time.monotonic() - (shell_module._STABLE_SECS + 5 if healthy else 0)
            bolt._restart_due = False
            before = len(spawned)
            now = time.monotonic()
            bolt._fault("exited with code 1")
            immediate = len(spawned) > before
            assert bolt._restart_due is not immediate
            delays.append(0.0 if immediate else round(bolt._backoff.next_attempt - now, 1))
        assert delays == [0.0, 0.5, 1.0, 0.0, 0.5]
    finally:
        bolt._restarter.stop()


def test_a_delayed_restart_reaches_the_loop_through_the_restart_service_once_due() -> None:
    """The second fault in a row waits the backoff's 0.5 s: the component's restart service (the
    one background loop, host.Service) hands the restart to the executor loop when it is due,
    once; the loop runs it, and the service stays idle after."""
    loop: list[Callable[[], None]] = []
    spawned: list[int] = []
    bolt = faulting_bolt(loop, spawned)
    try:
        bolt._fault("exited with code 1")
        assert spawned == [1] and loop == [] and not bolt._restarter.running  # at once, on the loop
        bolt._fault("exited with code 1")
        assert bolt._restart_due and bolt._restarter.running
        wait_for(lambda: loop, 30, "the restart handed to the loop")
        assert len(loop) == 1 and not bolt._restart_due
        assert time.monotonic() >= bolt._backoff.next_attempt  # never before the backoff's delay
        loop.pop()()
        assert spawned == [1, 1]
        rounds = bolt._restarter.rounds
        bolt._restarter.wake()  # a round with nothing due hands nothing over
        wait_for(lambda: bolt._restarter.rounds > rounds, 30, "one more round")
        assert loop == []
    finally:
        assert bolt._restarter.stop(timeout=30)


def test_stopping_the_component_cancels_a_restart_still_due() -> None:
    loop: list[Callable[[], None]] = []
    spawned: list[int] = []
    bolt = faulting_bolt(loop, spawned)
    bolt._backoff = Backoff(30.0, 60.0, free_failures=0)  # the restart is due in 30 s
    bolt._fault("exited with code 1")
    assert bolt._restart_due and bolt._restarter.running and spawned == []
    bolt._stop_shell()
    assert not bolt._restart_due and bolt._restarter.stopping
    assert not bolt._restarter._thread.is_alive()  # type: ignore[union-attr]  # joined
    assert loop == [] and spawned == []
    bolt._fault("exited with code 1")  # a fault while closing restarts nothing
    assert loop == [] and spawned == [] and not bolt._restart_due


def watched(waiting_since_ago: float, last_heard_ago: float) -> list[str]:
    """The faults a subprocess's watchdog (timeout 30 s) finds over a few rounds when its owner
    started waiting ``waiting_since_ago`` seconds ago and it last spoke ``last_heard_ago``."""
    faults: list[str] = []
    rounds: list[int] = []
    proc = ShellProcess("t:1", ["x"], ".", {}, JsonCodec(), 30.0, 0.01, lambda fn: None,
                        lambda msg: None, faults.append, heartbeat=lambda: rounds.append(1))
    proc._fault = faults.append  # type: ignore[method-assign]
    proc.pid = 1  # heartbeats (counted as rounds) only go to a started subprocess
    now = time.monotonic()
    proc.waiting_since, proc.last_heard = now - waiting_since_ago, now - last_heard_ago
    for _ in range(5):  # five watchdog rounds (the Service calls _watch once per period)
        proc._watch()
        if faults:
            break
    return faults


def test_a_spout_subprocess_asked_nothing_for_long_is_timed_from_the_command_sent() -> None:
    """Deactivated (or held by max spout pending) for longer than the timeout, the subprocess is
    asked a command just now: it is not hung; a command unanswered for the timeout is."""
    assert watched(waiting_since_ago=0.0, last_heard_ago=100.0) == []
    hung = watched(waiting_since_ago=100.0, last_heard_ago=100.0)
    assert len(hung) == 1 and "heartbeat timeout" in hung[0]


def test_a_shell_spout_waits_on_its_subprocess_from_each_command_until_its_sync() -> None:
    spout = ShellSpout("x")
    proc = HeldProcess()
    proc.waiting_since = None  # type: ignore[attr-defined]
    spout._process, spout._ready, spout._busy = proc, True, False  # type: ignore[assignment]
    spout._commands, spout._generation = deque(), 1
    before = time.monotonic()
    spout.next_tuple()
    assert proc.waiting_since is not None and proc.waiting_since >= before  # type: ignore[attr-defined]
    spout._on_command({"command": "sync"})
    assert proc.waiting_since is None  # type: ignore[attr-defined]


def test_acks_and_fails_of_a_restarted_spout_subprocess_ids_do_not_reach_the_new_one() -> None:
    spout = ShellSpout("x")
    proc = HeldProcess()
    spout._process, spout._ready, spout._busy = proc, True, False  # type: ignore[assignment]
    spout._commands, spout._generation, spout._name = deque(), 1, "s:1"
    spout._log = logging.getLogger("test.shell")
    emitted: list[Any] = []
    spout.emit = lambda values, msg_id=None, stream="default": emitted.append(msg_id) or []  # type: ignore
    spout._on_command({"command": "emit", "tuple": ["a"], "id": "m1", "need_task_ids": False})
    spout._generation = 2  # the subprocess was restarted
    spout._on_command({"command": "emit", "tuple": ["b"], "id": "m1", "need_task_ids": False})
    old, new = emitted
    assert old != new
    spout.ack(old)
    spout.fail(old)
    assert proc.sent == []
    spout.ack(new)
    assert proc.sent == [{"command": "ack", "id": "m1"}]
