"""``stormpy local``'s summary through click's runner: waiting for a window is not idle
(``--idle-stop`` lets a tumbling window close and its tuples complete), the summary says why the
run stopped and how many spout tuples were still pending, a ttl that cuts an open window says so,
so do tuples a window or a stateful bolt holds, and a component's traceback is printed as
written (``[...]`` is not read as markup)."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from stormpy.cli.main import cli
from stormpy.topology import Bolt, Spout, TopologyBuilder
from stormpy.windowing import Duration, WindowedBolt

TOPOLOGIES = '''
from stormpy.topology import Bolt, Spout, TopologyBuilder
from stormpy.state import StatefulBolt
from stormpy.windowing import Count, Duration, WindowedBolt


class Lines(Spout):
    """Five reliable access-log lines, then nothing."""

    outputs = ["line"]

    def open(self, conf, context):
        self.left = 5

    def next_tuple(self):
        if self.left:
            self.left -= 1
            self.emit([f"10.0.0.{self.left} /index.html {200 if self.left else 'oops'}"],
                      msg_id=self.left)


class Parse(Bolt):
    outputs = ["ip", "path", "status"]

    def execute(self, tup):
        ip, path, status = tup["line"].split()
        self.emit([ip, path, int(status)])
        self.ack(tup)


class CountWindow(WindowedBolt):
    outputs = ["n", "end"]

    def execute(self, window):
        self.emit([len(window), window.end_timestamp])


def windowed(seconds):
    builder = TopologyBuilder()
    builder.set_spout("lines", Lines)
    builder.set_bolt("count", CountWindow.with_tumbling_window(Duration(seconds=seconds))
                     ).shuffle_grouping("lines")
    return builder.create_topology()


short_window = windowed(2)
long_window = windowed(30)


def counted():
    builder = TopologyBuilder()
    builder.set_spout("lines", Lines)
    builder.set_bolt("count", CountWindow.with_tumbling_window(Count(2))).shuffle_grouping("lines")
    return builder.create_topology()


count_window = counted()


def parsing():
    builder = TopologyBuilder()
    builder.set_spout("lines", Lines)
    builder.set_bolt("parse", Parse).shuffle_grouping("lines")
    return builder.create_topology()


broken = parsing()


class CountPaths(StatefulBolt):
    outputs = ["path", "n"]

    def init_state(self, state):
        self.paths = state

    def execute(self, tup):
        self.paths.put(tup["line"], self.paths.get(tup["line"], 0) + 1)
        self.ack(tup)


def stateful():
    builder = TopologyBuilder()
    builder.set_spout("lines", Lines)
    builder.set_bolt("paths", CountPaths).shuffle_grouping("lines")
    return builder.create_topology()


checkpointed = stateful()
'''

_names = itertools.count()


@pytest.fixture
def module(tmp_path: Path, own_import_path: None) -> tuple[Path, str]:
    """The topologies above as a fresh module in ``tmp_path`` (its name unique per test)."""
    name = f"newcomer_topologies_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(TOPOLOGIES))
    return tmp_path, name


def run_local(module: tuple[Path, str], attr: str, *args: str) -> Result:
    path, name = module
    return CliRunner().invoke(cli, ["local", str(path), f"{name}:{attr}", "--name", attr, *args],
                              env={"COLUMNS": "200"})


def row(output: str, component: str) -> list[str]:
    for line in output.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > 6 and cells[1] == component:
            return cells
    raise AssertionError(f"no row for {component} in:\n{output}")


def test_idle_stop_waits_for_a_tumbling_window_and_says_why_it_stopped(
        module: tuple[Path, str]) -> None:
    res = run_local(module, "short_window", "--idle-stop", "1", "--ttl", "120")
    assert res.exit_code == 0, res.output
    lines = row(res.output, "lines")
    assert lines[3] == "5" and lines[6] == "5", res.output  # emitted, acked: the window closed
    assert row(res.output, "count")[3] == "1"  # one window evaluated
    assert "stopped: finished: idle for 1 s" in res.output
    assert "0 spout tuple(s) still pending" in res.output


def test_a_ttl_that_cuts_an_open_window_says_so(module: tuple[Path, str]) -> None:
    res = run_local(module, "long_window", "--ttl", "2",
                    "-c", "topology.message.timeout.secs=120")
    assert res.exit_code == 0, res.output
    assert "stopped: ttl of 2 s reached; 5 spout tuple(s) still pending" in res.output
    assert "window(s) were still open: 'count' (5 tuple(s)) not evaluated yet" in res.output


def test_the_tail_of_a_finite_input_held_by_a_count_window_is_explained(
        module: tuple[Path, str]) -> None:
    """Five lines into tumbling windows of two: two windows close, the fifth line waits in the
    third for input that never comes; the summary says where the pending tuple is."""
    res = run_local(module, "count_window", "--ttl", "6", "-c", "topology.message.timeout.secs=120")
    assert res.exit_code == 0, res.output
    assert row(res.output, "count")[3] == "2"  # two windows evaluated
    assert "stopped: ttl of 6 s reached; 1 spout tuple(s) still pending" in res.output
    assert "window(s) still hold tuples un-acked: 'count' (1 tuple(s)); a window acks a tuple " \
           "once it has left every window" in res.output


def test_tuples_a_stateful_bolt_holds_until_its_checkpoint_commits_are_explained(
        module: tuple[Path, str]) -> None:
    """A stateful bolt acks its inputs when a checkpoint commits: with a checkpoint a minute
    away the five lines stay pending, and the summary says where and what bounds the rate."""
    res = run_local(module, "checkpointed", "--ttl", "3",
                    "-c", "topology.state.checkpoint.interval.ms=60000",
                    "-c", "topology.max.spout.pending=5", "-c", "topology.message.timeout.secs=120")
    assert res.exit_code == 0, res.output
    assert row(res.output, "lines")[6] == "0"  # none acked: every line waits for the commit
    assert "stopped: ttl of 3 s reached; 5 spout tuple(s) still pending" in res.output
    note = " ".join(res.output.split())  # the note wraps at the terminal width
    assert "stateful bolt(s) hold tuples un-acked until their next checkpoint commits: 'paths' " \
           "(5 tuple(s)); a stateful bolt acks its inputs when a checkpoint commits (every 60000 " \
           "ms, topology.state.checkpoint.interval.ms), so with topology.max.spout.pending 5 at " \
           "most 5 tuple tree(s) per spout task complete per interval" in note


def test_a_component_traceback_is_printed_as_written(module: tuple[Path, str]) -> None:
    res = run_local(module, "broken", "--ttl", "120")
    assert res.exit_code == 1, res.output
    assert "stopped: a component failed" in res.output
    assert "last error of parse:" in res.output
    assert "self.emit([ip, path, int(status)])" in res.output
    assert "ValueError: invalid literal for int() with base 10: 'oops'" in res.output


def test_the_checkpoint_note_names_each_bolt_the_interval_and_the_pending_bound() -> None:
    """The note, called directly: bolts sorted by name, the interval as given (its default when
    unset), and the ``topology.max.spout.pending`` clause only when a bound is set."""
    from stormpy.cli.local_cmd import checkpoint_note

    text = checkpoint_note({"b": 2, "a": 1}, {"topology.state.checkpoint.interval.ms": 2500.5,
                                              "topology.max.spout.pending": 3})
    assert text == ("stateful bolt(s) hold tuples un-acked until their next checkpoint commits: "
                    "'a' (1 tuple(s)), 'b' (2 tuple(s)); a stateful bolt acks its inputs when a "
                    "checkpoint commits (every 2500.5 ms, topology.state.checkpoint.interval.ms), "
                    "so with topology.max.spout.pending 3 at most 3 tuple tree(s) per spout task "
                    "complete per interval: raise it or shorten the interval for more throughput")
    assert checkpoint_note({"a": 1}, {}) == (
        "stateful bolt(s) hold tuples un-acked until their next checkpoint commits: 'a' "
        "(1 tuple(s)); a stateful bolt acks its inputs when a checkpoint commits (every 1000 ms, "
        "topology.state.checkpoint.interval.ms)")


WINDOWS_NOTE = ("window(s) still hold tuples un-acked: 'a' (1 tuple(s)), 'b' (2 tuple(s)); a "
                "window acks a tuple once it has left every window, so the last tuples of a "
                "finite input wait for more input (or fail at topology.message.timeout.secs and "
                "are replayed)")


def test_the_run_note_says_which_open_windows_the_ttl_cut() -> None:
    from stormpy.cli.local_cmd import run_note

    held = {"b": 2, "a": 1}
    assert run_note("ttl", 0, held, {}, {}, {}) == (
        "the ttl stopped the run while window(s) were still open: 'a' (1 tuple(s)), "
        "'b' (2 tuple(s)) not evaluated yet; raise --ttl to let them close")
    # open windows when the run stopped otherwise: not the ttl's doing, so not this note
    for stopped_by in ("idle", "signal", "failure"):
        assert run_note(stopped_by, 0, held, {}, {}, {}) is None
    assert run_note("idle", 3, held, {"b": 2, "a": 1}, {}, {}) == WINDOWS_NOTE


def test_the_run_note_explains_pending_tuples_held_by_windows_then_by_checkpoints() -> None:
    from stormpy.cli.local_cmd import checkpoint_note, run_note

    windows = {"b": 2, "a": 1}
    assert run_note("ttl", 1, {}, windows, {}, {}) == WINDOWS_NOTE
    assert run_note("ttl", 1, {}, windows, {"s": 4}, {}) == WINDOWS_NOTE  # windows first
    assert run_note("ttl", 0, {}, windows, {"s": 4}, {}) is None  # nothing pending: no note
    conf = {"topology.max.spout.pending": 2}
    assert run_note("signal", 4, {}, {}, {"s": 4}, conf) == checkpoint_note({"s": 4}, conf)
    assert run_note("ttl", 0, {}, {}, {"s": 4}, conf) is None
    assert run_note("ttl", 4, {}, {}, {}, conf) is None


TICKS_NOTE = ("the run stopped as idle after 3 s, sooner than the tick tuples of 'a' (every 4.5 s), "
              "'totals' (every 5 s): what they do on a tick (a flush, a periodic report) may not "
              "have run after the last input; give --idle-stop 6 or more")


def test_the_run_note_says_an_idle_stop_came_before_a_bolts_tick() -> None:
    from stormpy.cli.local_cmd import run_note

    ticks = {"totals": 5.0, "a": 4.5, "quick": 3.0}  # 3 s: a tick is due within the idle time
    assert run_note("idle", 0, {}, {}, {}, {}, idle_secs=3, ticks=ticks) == TICKS_NOTE
    assert run_note("idle", 0, {}, {}, {}, {}, idle_secs=5, ticks=ticks) is None
    assert run_note("idle", 0, {}, {}, {}, {}, idle_secs=None, ticks=ticks) is None
    for stopped_by in ("ttl", "signal", "failure"):  # not stopped as idle: not this note
        assert run_note(stopped_by, 0, {}, {}, {}, {}, idle_secs=3, ticks=ticks) is None
    # the earlier notes come first
    assert run_note("idle", 3, {}, {"b": 2, "a": 1}, {}, {}, idle_secs=3, ticks=ticks) == WINDOWS_NOTE
    assert run_note("idle", 0, {}, {}, {}, {}, idle_secs=3, ticks={"t": 6.5}).endswith(
        "give --idle-stop 7 or more")


class TickSource(Spout):
    outputs = ["x"]
    component_config = {"topology.tick.tuple.freq.secs": 2}  # a spout gets no ticks

    def next_tuple(self):
        pass


class TickedBolt(Bolt):
    outputs = ["x"]
    component_config = {"topology.tick.tuple.freq.secs": 5}

    def execute(self, tup):
        pass


class PlainBolt(Bolt):
    outputs = ["x"]

    def execute(self, tup):
        pass


class TimedWindow(WindowedBolt):
    def execute(self, window):
        pass


def test_tick_periods_of_the_users_own_bolts() -> None:
    """A window (stormpy's own bolt, ticking for its window) is left out: the idle rule waits
    for what it holds."""
    from stormpy.cli.local_cmd import user_tick_periods

    builder = TopologyBuilder()
    builder.set_spout("src", TickSource)
    builder.set_bolt("ticked", TickedBolt).shuffle_grouping("src")
    builder.set_bolt("plain", PlainBolt).shuffle_grouping("src")
    # stormpy's bolt before one of the user's: the user's after it still counts
    builder.set_bolt("win", TimedWindow.with_tumbling_window(Duration(seconds=10))).shuffle_grouping("src")
    builder.set_bolt("given", PlainBolt).shuffle_grouping("src").add_configuration(
        "topology.tick.tuple.freq.secs", 7)
    spec = builder.create_topology()
    assert spec.components["win"].config.get("topology.tick.tuple.freq.secs")  # it ticks
    assert user_tick_periods({}, spec) == {"ticked": 5.0, "given": 7.0}
    # the topology's period reaches every bolt of the user's that sets none of its own
    assert user_tick_periods({"topology.tick.tuple.freq.secs": 3}, spec) == {
        "ticked": 5.0, "given": 7.0, "plain": 3.0}
