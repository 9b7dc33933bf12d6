"""A shell bolt against a real subprocess (the exchange player), run as its executor runs it:
what the subprocess is sent for each input tuple, how its emits, acks, fails, logs, errors and
metrics are carried out, and what a subprocess that breaks the protocol costs (the fault
reported, the tuples it held failed, a new subprocess that gets the later tuples)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from mlkit import FIXTURES
from shell_rig import replay_bolt, shell_rig

from stormpy.multilang import ShellBolt, ShellComponentError
from stormpy.multilang._shell import QUEUED_METRIC
from stormpy.multilang._shell_bolt import WAITING_METRIC
from stormpy.testing import Emitted


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_tuples_go_out_with_fresh_ids_and_emits_acks_and_fails_come_back(
        tmp_path: Path, serializer: str) -> None:
    runs = [[
        {"expect": {"id": "$t1", "comp": "feeder", "stream": "default", "task": 3,
                    "tuple": ["snow white"]}},
        {"send": {"command": "emit", "anchors": ["$t1"], "tuple": ["snow"]}},
        {"expect": [1]},  # the task ids the emit went to (the rig sends the n-th emit to task n)
        {"send": {"command": "emit", "anchors": ["$t1"], "stream": "counts", "tuple": ["white", 1],
                  "need_task_ids": False}},
        {"send": {"command": "ack", "id": "$t1"}},
        {"expect": {"id": "$t2", "comp": "other", "stream": "s2", "task": 8, "tuple": [1, None]}},
        {"send": {"command": "emit", "tuple": ["loose"], "need_task_ids": False}},
        {"send": {"command": "emit", "tuple": ["asked"], "need_task_ids": True}},
        {"expect": [4]},  # only the emits that asked were answered
        {"send": {"command": "fail", "id": "$t2"}},
    ]]
    bolt = replay_bolt(tmp_path, runs, outputs={"default": ["word"], "counts": ["word", "n"]})
    # the serializer as the topology's setting: the subprocess is told which (its environment)
    with shell_rig(bolt, tmp_path, {"topology.multilang.serializer": serializer},
                   task_ids=None) as rig:
        first = rig.execute(["snow white"])
        second = rig.execute([1, None], component="other", stream="s2", task=8)
        rig.run_until(lambda: rig.collector.failed, "the second tuple failed")
        assert rig.collector.emitted == [Emitted(["snow"], "default", [first]),
                                         Emitted(["white", 1], "counts", [first]),
                                         Emitted(["loose"], "default", []),
                                         Emitted(["asked"], "default", [])]
        assert rig.collector.acked == [first] and rig.collector.failed == [second]
        assert rig.collector.errors == []
        rig.run_until(lambda: rig.verdicts() == {0: "ok"}, "the player's verdict")


def test_a_direct_emit_goes_to_the_task_named_and_answers_no_task_ids(tmp_path: Path) -> None:
    runs = [[
        {"expect": {"id": "$t1", "tuple": ["x"]}},
        {"send": {"command": "emit", "task": 7, "stream": "direct", "anchors": ["$t1"],
                  "tuple": ["to seven"]}},
        {"send": {"command": "emit", "anchors": ["$t1"], "tuple": ["everyone"]}},
        {"expect": [4]},  # the first list the subprocess reads answers the undirected emit
        {"send": {"command": "ack", "id": "$t1"}},
    ]]
    bolt = replay_bolt(tmp_path, runs, outputs={"default": ["word"],
                                               "direct": {"fields": ["word"], "direct": True}})
    with shell_rig(bolt, tmp_path) as rig:
        tup = rig.execute(["x"])
        rig.run_until(lambda: rig.collector.acked, "the ack")
        assert rig.collector.emitted == [Emitted(["to seven"], "direct", [tup], task=7),
                                         Emitted(["everyone"], "default", [tup])]
        rig.run_until(lambda: rig.verdicts() == {0: "ok"}, "the player's verdict")


def test_log_error_and_metrics_commands_reach_the_log_the_errors_and_the_task_metrics(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    runs = [[
        {"expect": {"id": "$t1", "tuple": ["x"]}},
        {"send": {"command": "log", "msg": "a warning", "level": 3}},
        {"send": {"command": "log", "msg": "no level"}},
        {"send": {"command": "log", "msg": "odd level", "level": "loud"}},
        {"send": {"command": "log", "msg": "unknown level", "level": 9}},
        {"send": {"command": "log", "msg": "a list for a level", "level": [3]}},
        {"send": {"command": "error", "msg": "it went wrong"}},
        {"send": {"command": "metrics", "name": "words", "params": 2}},
        {"send": {"command": "metrics", "name": "words", "params": 5}},
        {"send": {"command": "metrics", "name": "other"}},
        {"send": {"command": "ack", "id": "$t1"}},
    ]]
    bolt = replay_bolt(tmp_path, runs)
    with caplog.at_level("DEBUG", logger="stormpy.multilang"), shell_rig(bolt, tmp_path) as rig:
        rig.execute(["x"])
        rig.run_until(lambda: rig.collector.acked, "the ack")
        lines = [(r.name, r.levelname, r.getMessage()) for r in caplog.records
                 if r.name == "stormpy.multilang.shell"]
        assert lines == [("stormpy.multilang.shell", "WARNING", "shell:1: a warning"),
                         ("stormpy.multilang.shell", "INFO", "shell:1: no level"),
                         ("stormpy.multilang.shell", "INFO", "shell:1: odd level"),
                         ("stormpy.multilang.shell", "INFO", "shell:1: unknown level"),
                         ("stormpy.multilang.shell", "INFO", "shell:1: a list for a level")]
        [error] = rig.collector.errors
        assert isinstance(error, ShellComponentError)
        assert str(error) == "Shell Process Exception (shell:1): it went wrong"
        assert rig.metric("words") == 5 and rig.metric("other") is None
        assert "other" in rig.context.metric_values()
        assert rig.metric(WAITING_METRIC) == 0 and rig.metric(QUEUED_METRIC) == 0


@pytest.mark.parametrize(("message", "fault"), [
    ({"command": "emit", "anchors": ["nope"], "tuple": ["a"]},
     "emit anchored onto unknown tuple id 'nope' (never given, or already acked or failed)"),
    ({"command": "emit", "anchors": [1], "tuple": ["a"]}, "emit anchored onto unknown tuple id 1"),
    ({"command": "emit", "anchors": [["t"]], "tuple": ["a"]},
     "emit anchored onto unknown tuple id ['t']"),
    ({"command": "ack", "id": "nope"},
     "ack of unknown tuple id 'nope' (never given, or already acked or failed)"),
    ({"command": "fail", "id": 1}, "fail of unknown tuple id 1"),
    ({"command": "ack", "id": ["t"]}, "ack of unknown tuple id ['t']"),
    ({"command": "metrics", "name": ""}, "metrics with a bad name ''"),
    ({"command": "next"}, "unknown command 'next'"),
])
def test_a_message_breaking_the_protocol_fails_what_the_subprocess_held_and_restarts_it(
        tmp_path: Path, message: dict[str, Any], fault: str) -> None:
    runs = [
        [{"expect": {"id": "$t1", "tuple": ["held"]}}, {"send": message}, {"hang": True}],
        [{"expect": {"id": "$t1", "tuple": ["later"]}}, {"send": {"command": "ack", "id": "$t1"}}],
    ]
    bolt = replay_bolt(tmp_path, runs)
    with shell_rig(bolt, tmp_path) as rig:
        held = rig.execute(["held"])
        rig.run_until(lambda: rig.collector.failed, "the held tuple failed")
        assert rig.collector.failed == [held] and rig.collector.emitted == []
        [error] = rig.collector.errors
        assert isinstance(error, ShellComponentError)
        assert str(error).startswith(f"shell process of shell:1 ({' '.join(bolt._shell.command)}): "
                                     f"{fault}")
        assert f"(it sent {message!r:.200})" in str(error)
        later = rig.execute(["later"])  # the new subprocess takes it
        rig.run_until(lambda: rig.collector.acked, "the later tuple acked")
        assert rig.collector.acked == [later] and rig.collector.failed == [held]
        assert len(rig.collector.errors) == 1
        rig.run_until(lambda: rig.verdicts().get(1) == "ok", "the second run's verdict")


def test_a_tuple_the_serializer_cannot_carry_is_failed_and_reported_and_the_next_goes_out(
        tmp_path: Path) -> None:
    runs = [[{"expect": {"id": "$t1", "tuple": ["fine"]}},
             {"send": {"command": "ack", "id": "$t1"}}]]
    bolt = replay_bolt(tmp_path, runs)
    with shell_rig(bolt, tmp_path) as rig:
        bad = rig.execute([object()])
        assert rig.collector.failed == [bad]
        [error] = rig.collector.errors
        assert isinstance(error, ValueError)
        assert str(error).startswith(f"shell:1: tuple {bad!r:.200} cannot be sent to the "
                                     "subprocess (json): Object of type object is not JSON")
        fine = rig.execute(["fine"])
        rig.run_until(lambda: rig.collector.acked, "the next tuple acked")
        assert rig.collector.acked == [fine] and len(rig.collector.errors) == 1
        rig.run_until(lambda: rig.verdicts() == {0: "ok"}, "the player's verdict")


#: 20 kB values: four fill the subprocess's stdin pipe (64 kB on Linux) while it holds
HELD_VALUES = [f"{i:02d}-" + "x" * 20000 for i in range(12)]


def test_tuples_beyond_max_pending_wait_in_the_bolt_and_all_go_out_in_order(tmp_path: Path) -> None:
    """The subprocess stops reading at its first tuple: its pipe fills, ``max.pending`` tuples
    queue for the writer, the others wait in the bolt (the task's metric counts them); once it
    reads again every tuple reaches it, in arrival order, and nothing waits any more."""
    release = tmp_path / "release"
    bolt = ShellBolt(sys.executable, str(FIXTURES / "held_echo.py"),
                     env={"RELEASE_FILE": str(release)}).declare(["value"])
    conf = {"worker.code.dir": str(FIXTURES), "topology.shellbolt.max.pending": 2,
            "topology.subprocess.timeout.secs": 120}
    with shell_rig(bolt, tmp_path, conf) as rig:
        tuples = [rig.execute([value]) for value in HELD_VALUES]
        # at most 64 kB in the pipe, one value in the subprocess, two queued for the writer
        rig.run_until(lambda: rig.metric(WAITING_METRIC) >= len(HELD_VALUES) - 8,
                      "tuples waiting in the bolt")
        assert rig.metric(QUEUED_METRIC) <= 2 + 1  # and perhaps a heartbeat
        # the next heartbeat queues behind the blocked write
        rig.run_until(lambda: rig.metric(QUEUED_METRIC) >= 1, "a message queued for the writer")
        assert rig.collector.emitted == []
        release.touch()
        rig.run_until(lambda: len(rig.collector.acked) == len(HELD_VALUES), "every tuple acked")
        assert rig.collector.emitted_values() == [[v] for v in HELD_VALUES]
        assert rig.collector.acked == tuples
        assert rig.metric(WAITING_METRIC) == 0 and rig.collector.errors == []


def test_an_idle_bolt_sends_heartbeats_with_fresh_ids_and_one_that_answers_them_is_not_hung(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Storm's heartbeat tuple every period (a third of a 1.5 s timeout): stream ``__heartbeat``,
    task -1, no values, a fresh string id; the subprocess answers each with ``sync``."""
    heartbeat = {"comp": None, "stream": "__heartbeat", "task": -1, "tuple": []}
    runs = [[
        {"expect": {"id": "$h1", **heartbeat}},
        {"send": {"command": "log", "msg": "$h1"}},
        {"send": {"command": "sync"}},
        {"expect": {"id": "$h2", **heartbeat}},
        {"send": {"command": "log", "msg": "$h2"}},
        {"send": {"command": "sync"}},
    ]]
    bolt = replay_bolt(tmp_path, runs)
    with caplog.at_level("INFO", logger="stormpy.multilang"), \
            shell_rig(bolt, tmp_path, {"topology.subprocess.timeout.secs": 1.5}) as rig:
        rig.run_until(lambda: rig.verdicts() == {0: "ok"}, "two heartbeats answered")
        ids = [r.getMessage().removeprefix("shell:1: ") for r in caplog.records
               if r.name == "stormpy.multilang.shell"]
        assert len(ids) == 2 and ids[0] != ids[1] and all(i.isdigit() for i in ids)
        assert rig.collector.errors == []


#: a subprocess that takes its time to answer the first heartbeat: it keeps talking (log lines,
#: so it is not hung) without reading for three heartbeat periods, then counts the heartbeats
#: that came meanwhile
SLOW_TO_SYNC = textwrap.dedent('''
    import json, os, select, sys, time

    def read():
        lines = []
        while True:
            line = sys.stdin.readline()
            if line.strip() == "end":
                return json.loads("".join(lines))
            lines.append(line)

    def write(msg):
        sys.stdout.write(json.dumps(msg) + "\\nend\\n")
        sys.stdout.flush()

    read()
    write({"pid": os.getpid()})
    first = read()
    until = time.monotonic() + 1.5
    while time.monotonic() < until:
        write({"command": "log", "msg": "busy"})
        time.sleep(0.1)
    more = 0
    while select.select([sys.stdin], [], [], 0.2)[0]:
        more += read().get("stream") == "__heartbeat"
    write({"command": "log", "msg": f"{first['stream']} then {more} more"})
    write({"command": "sync"})
    sys.stdin.read()
''')


def test_a_heartbeat_goes_out_only_once_the_previous_one_was_answered(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "slow_to_sync.py").write_text(SLOW_TO_SYNC)
    bolt = ShellBolt(sys.executable, "slow_to_sync.py").declare(["word"])

    def report() -> list[str]:
        return [r.getMessage() for r in caplog.records if "more" in r.getMessage()]
    with caplog.at_level("INFO", logger="stormpy.multilang"), \
            shell_rig(bolt, tmp_path, {"topology.subprocess.timeout.secs": 1.5}) as rig:
        rig.run_until(report, "the subprocess's count")
        assert report() == ["shell:1: __heartbeat then 0 more"]
        assert rig.collector.errors == []


def test_a_single_tuple_waiting_for_room_goes_out_once_the_subprocess_reads_again(
        tmp_path: Path) -> None:
    """max.pending 1: the first tuple is written and held by the subprocess, the second fills
    its pipe and stays unwritten, so the third is the one tuple waiting in the bolt; it goes out
    when the writer makes room."""
    release = tmp_path / "release"
    bolt = ShellBolt(sys.executable, str(FIXTURES / "held_echo.py"),
                     env={"RELEASE_FILE": str(release)}).declare(["value"])
    conf = {"worker.code.dir": str(FIXTURES), "topology.shellbolt.max.pending": 1,
            "topology.subprocess.timeout.secs": 120}
    with shell_rig(bolt, tmp_path, conf) as rig:
        proc = bolt._process
        assert proc is not None
        first = rig.execute(["small"])
        rig.run_until(lambda: proc.tuples_queued == 0, "the first tuple written")
        second = rig.execute(["x" * 100_000])  # more than the pipe holds
        third = rig.execute(["last"])
        assert rig.metric(WAITING_METRIC) == 1
        release.touch()
        rig.run_until(lambda: len(rig.collector.acked) == 3, "every tuple acked")
        assert rig.collector.acked == [first, second, third]
        assert rig.metric(WAITING_METRIC) == 0


#: a bolt on Storm's storm.py that takes its time over each tuple (so its pipe stays full) and
#: acks it (it emits nothing: an emit would make storm.py read ahead for its task ids)
SLOW_ACKER = textwrap.dedent('''
    import time
    import storm

    class SlowAcker(storm.BasicBolt):
        def process(self, tup):
            time.sleep(0.2)

    SlowAcker().run()
''')


def test_acks_keep_flowing_while_tuples_wait_for_the_subprocess_to_read(tmp_path: Path) -> None:
    """The executor is never held by a shell bolt waiting for room: the subprocess's ack of its
    first tuple is carried out while later tuples still wait in the bolt."""
    (tmp_path / "slow_acker.py").write_text(SLOW_ACKER)
    bolt = ShellBolt(sys.executable, "slow_acker.py", env={"PYTHONPATH": str(FIXTURES)}).declare(["v"])
    conf = {"topology.shellbolt.max.pending": 1, "topology.subprocess.timeout.secs": 120}
    with shell_rig(bolt, tmp_path, conf) as rig:
        tuples = [rig.execute([f"{i:02d}" + "x" * 40_000]) for i in range(5)]
        rig.run_until(lambda: rig.collector.acked and rig.metric(WAITING_METRIC) > 0,
                      "an ack while tuples still wait")
        rig.run_until(lambda: len(rig.collector.acked) == 5, "every tuple acked")
        assert rig.collector.acked == tuples


def test_an_idle_bolt_subprocess_that_stops_answering_heartbeats_has_hung(tmp_path: Path) -> None:
    """Bolts are watched at all times (not only while a tuple is out): a subprocess that takes
    no tuple and leaves its heartbeat unanswered for the timeout is replaced."""
    runs = [[{"hang": True}],
            [{"expect": {"id": "$t1", "tuple": ["a"]}}, {"send": {"command": "ack", "id": "$t1"}}]]
    bolt = replay_bolt(tmp_path, runs)
    with shell_rig(bolt, tmp_path, {"topology.subprocess.timeout.secs": 1.5}) as rig:
        rig.run_until(lambda: rig.collector.errors, "the hang")
        assert "subprocess heartbeat timeout: nothing heard for" in str(rig.collector.errors[0])
        tup = rig.execute(["a"])
        rig.run_until(lambda: rig.collector.acked == [tup], "the new subprocess's ack")
