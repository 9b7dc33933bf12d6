"""A shell spout against a real subprocess (the exchange player), run as its executor runs it:
the commands it is sent (one at a time, each after the previous one's ``sync``; ``next`` only
when nothing else waits), how its emits become tuples with message ids, where acks and fails of
those ids go, and what a fault costs (the commands it held, the ids it emitted)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from shell_rig import Rig, replay_spout, shell_rig

from stormpy.multilang import ShellComponentError
from stormpy.testing import Emitted


def pull(rig: Rig, count: int, what: str) -> list[Emitted]:
    """Call ``next_tuple`` on every loop round (as the executor does) until ``count`` emits."""
    def enough() -> bool:
        rig.component.next_tuple()
        return len(rig.collector.emitted) >= count
    rig.run_until(enough, what)
    return rig.collector.emitted


def test_a_spouts_life_activation_emits_and_the_acks_and_fails_of_its_message_ids(
        tmp_path: Path) -> None:
    runs = [[
        {"expect": {"command": "activate"}},
        {"send": {"command": "sync"}},
        {"expect": {"command": "next"}},
        {"send": {"command": "emit", "id": "m1", "tuple": ["one"]}},
        {"expect": [1]},  # the task ids the emit went to (the rig sends the n-th emit to task n)
        {"send": {"command": "emit", "id": "m2", "stream": "other", "tuple": ["two", 2],
                  "need_task_ids": False}},
        {"send": {"command": "emit", "tuple": ["untracked"]}},
        {"expect": [3]},  # the second emit did not ask
        {"send": {"command": "emit", "id": "m3", "task": 9, "stream": "direct", "tuple": ["nine"]}},
        {"send": {"command": "sync"}},
        {"expect": {"command": "ack", "id": "m1"}},
        {"send": {"command": "sync"}},
        {"expect": {"command": "fail", "id": "m2"}},
        {"send": {"command": "sync"}},
        {"expect": {"command": "ack", "id": "m3"}},
        {"send": {"command": "sync"}},
        {"expect": {"command": "deactivate"}},
        {"send": {"command": "sync"}},
        {"expect": {"command": "activate"}},
        {"send": {"command": "sync"}},
    ]]
    spout = replay_spout(tmp_path, runs, outputs={
        "default": ["word"], "other": ["word", "n"], "direct": {"fields": ["word"], "direct": True}})
    with shell_rig(spout, tmp_path, task_ids=None) as rig:
        spout.activate()  # before the subprocess answered the handshake: kept until it did
        emitted = pull(rig, 4, "four emits")
        one, two, untracked, nine = emitted
        assert (one.values, one.stream, one.task) == (["one"], "default", None)
        assert (two.values, two.stream) == (["two", 2], "other")
        assert (untracked.values, untracked.msg_id) == (["untracked"], None)
        assert (nine.values, nine.stream, nine.task) == (["nine"], "direct", 9)
        assert None not in (one.msg_id, two.msg_id, nine.msg_id)
        assert len({repr(one.msg_id), repr(two.msg_id), repr(nine.msg_id)}) == 3
        spout.ack(one.msg_id)
        spout.fail(two.msg_id)
        spout.ack(nine.msg_id)
        spout.deactivate()
        spout.activate()
        rig.run_until(lambda: rig.verdicts() == {0: "ok"}, "the player's verdict")
        assert rig.collector.errors == []


@pytest.mark.parametrize(("message", "fault"), [
    ({"command": "ack", "id": "m1"}, "unknown command 'ack'"),
    ({"command": "emit", "tuple": "one"}, "emit of a non-list tuple"),
    ({"command": "metrics", "name": 5}, "metrics with a bad name 5"),
])
def test_a_message_breaking_the_protocol_is_a_fault_and_a_new_subprocess_runs(
        tmp_path: Path, message: dict[str, Any], fault: str) -> None:
    runs = [
        [{"expect": {"command": "next"}}, {"send": message}, {"hang": True}],
        [{"expect": {"command": "next"}},
         {"send": {"command": "emit", "id": "m1", "tuple": ["again"], "need_task_ids": False}},
         {"send": {"command": "sync"}}],
    ]
    spout = replay_spout(tmp_path, runs)
    with shell_rig(spout, tmp_path) as rig:
        [again] = pull(rig, 1, "the second subprocess's emit")
        assert again.values == ["again"]
        [error] = rig.collector.errors
        assert isinstance(error, ShellComponentError)
        assert str(error).startswith(f"shell process of shell:1 ({' '.join(spout._shell.command)}): "
                                     f"{fault}")
        assert f"(it sent {message!r:.200})" in str(error)


def test_after_a_fault_the_new_subprocess_gets_activation_but_no_acks_of_the_old_ones_ids(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The first subprocess emits m1 and never syncs: the ack of m1, a deactivation and an
    activation wait behind that command. When it is declared hung, the new subprocess is told
    of the deactivation and the activation but gets no ack of m1 (it never emitted m1), then or
    later; its own m1 is acked."""
    runs = [
        [{"expect": {"command": "next"}},
         {"send": {"command": "emit", "id": "m1", "tuple": ["one"], "need_task_ids": False}},
         {"hang": True}],
        [{"expect": {"command": "deactivate"}},
         {"send": {"command": "sync"}},
         {"expect": {"command": "activate"}},
         {"send": {"command": "sync"}},
         {"expect": {"command": "next"}},
         {"send": {"command": "emit", "id": "m1", "tuple": ["again"], "need_task_ids": False}},
         {"send": {"command": "sync"}},
         {"expect": {"command": "ack", "id": "m1"}},
         {"send": {"command": "sync"}}],
    ]
    spout = replay_spout(tmp_path, runs)
    with caplog.at_level("INFO", logger="stormpy.multilang"), \
            shell_rig(spout, tmp_path, {"topology.subprocess.timeout.secs": 1.5}) as rig:
        [first] = pull(rig, 1, "the first subprocess's emit")
        spout.ack(first.msg_id)  # these wait: the subprocess is busy with next
        spout.deactivate()
        spout.activate()
        rig.run_until(lambda: rig.collector.errors, "the hung subprocess's fault")
        spout.fail(first.msg_id)  # an ack or fail arriving after the restart is dropped too
        assert [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()] == [
            "shell:1: fail of message id 'm1' dropped: the subprocess that emitted it was restarted"]
        _, again = pull(rig, 2, "the second subprocess's emit")
        assert again.values == ["again"] and again.msg_id != first.msg_id
        spout.ack(again.msg_id)
        rig.run_until(lambda: rig.verdicts().get(1) == "ok", "the second run's verdict")
        assert len(rig.collector.errors) == 1


def test_a_spout_subprocess_that_leaves_a_command_unanswered_for_the_timeout_has_hung(
        tmp_path: Path) -> None:
    runs = [
        [{"expect": {"command": "next"}}, {"hang": True}],
        [{"expect": {"command": "next"}},
         {"send": {"command": "emit", "id": "m2", "tuple": ["y"], "need_task_ids": False}},
         {"send": {"command": "sync"}}],
    ]
    spout = replay_spout(tmp_path, runs)
    with shell_rig(spout, tmp_path, {"topology.subprocess.timeout.secs": 1.5}) as rig:
        [emitted] = pull(rig, 1, "the second subprocess's emit")
        assert emitted.values == ["y"]
        [error] = rig.collector.errors
        assert "subprocess heartbeat timeout: nothing heard for" in str(error)
        assert str(error).endswith("s (timeout 1.5 s)")
        silence = float(str(error).split("nothing heard for ")[1].split(" s ")[0])
        assert 1.5 <= silence < 1000  # the silence it saw: at least the timeout


def test_a_next_asked_before_the_subprocess_is_ready_is_not_kept_for_it(tmp_path: Path) -> None:
    """The executor asks for a tuple before the subprocess answered the handshake, then the
    topology is deactivated: the subprocess is told of the deactivation and asked for nothing
    (a deactivated spout gets no next)."""
    runs = [[{"expect": {"command": "deactivate"}, "strict": True},
             {"send": {"command": "sync"}}]]
    spout = replay_spout(tmp_path, runs)
    with shell_rig(spout, tmp_path) as rig:
        spout.next_tuple()  # not ready yet: the pid is handed over by the loop, not yet run
        spout.deactivate()
        rig.run_until(lambda: rig.verdicts(), "the player's verdict")
        assert rig.verdicts() == {0: "ok"}
