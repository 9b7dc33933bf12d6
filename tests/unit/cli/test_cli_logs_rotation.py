"""`stormpy logs` reads a worker's rotated files too: --grep searches them oldest first, and
following a log across a rotation prints the old file's rest before the new file's lines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stormpy.cli.ops_cmds import WorkerLogReader, _sampled_by
from stormpy.logviewer.server import LogviewerServer

FILE = "worker-wc-1-17-6700.log"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, WorkerLogReader]]:
    server = LogviewerServer({"logviewer.port": 0, "logviewer.host": "127.0.0.1"}, logs=tmp_path).start()
    worker = {"host": "h1", "port": 6700, "logviewer": server.url, "file": FILE, "topology_id": "wc-1-17"}
    try:
        yield tmp_path, WorkerLogReader(worker, None)
    finally:
        server.stop()


def test_grep_searches_every_rotated_file_oldest_first(served: tuple[Path, WorkerLogReader]) -> None:
    logs, reader = served
    (logs / f"{FILE}.2").write_text("hit 1\nmiss\nhit 2\n")
    (logs / f"{FILE}.1").write_text("hit 3\n")
    (logs / FILE).write_text("miss\nhit 4\n")
    (logs / "worker-wc-1-17-6701.log").write_text("hit of another worker\n")
    (logs / f"{FILE}.10").write_text("hit 0\n")
    assert reader.files() == [f"{FILE}.10", f"{FILE}.2", f"{FILE}.1", FILE]
    assert reader.grep("hit") == ["hit 0", "hit 1", "hit 2", "hit 3", "hit 4"]


def test_grep_pages_through_more_matches_than_one_answer(served: tuple[Path, WorkerLogReader]) -> None:
    logs, reader = served
    (logs / FILE).write_text("".join(f"hit {i}\n" for i in range(2500)))
    assert reader.grep("hit") == [f"hit {i}" for i in range(2500)]


def test_following_across_a_rotation_loses_nothing(served: tuple[Path, WorkerLogReader]) -> None:
    logs, reader = served
    current = logs / FILE
    current.write_text("one\ntwo\n")
    assert reader.tail(4096) == "one\ntwo\n"
    assert reader.read_new() == ""
    with current.open("a") as f:
        f.write("three\nfour\n")  # written after the last read, then the file rotates
    current.rename(logs / f"{FILE}.1")
    current.write_text("five\n")
    assert reader.read_new() == "three\nfour\nfive\n"
    with current.open("a") as f:
        f.write("six\n")
    assert reader.read_new() == "six\n"


def test_a_rotation_whose_old_file_is_gone_reads_the_new_file(served: tuple[Path, WorkerLogReader]) -> None:
    logs, reader = served
    current = logs / FILE
    current.write_text("a long first line that was read\n")
    reader.tail(4096)
    current.write_text("new\n")  # truncated in place, no .1 kept
    assert reader.read_new() == "new\n"


def test_events_logs_are_read_and_filtered_by_component(tmp_path: Path) -> None:
    events = "worker-wc-1-17-6700-events.log"
    server = LogviewerServer({"logviewer.port": 0, "logviewer.host": "127.0.0.1"}, logs=tmp_path).start()
    worker = {"host": "h1", "port": 6700, "logviewer": server.url, "file": events, "topology_id": "wc-1-17"}
    try:
        (tmp_path / FILE).write_text('{"component": "split"} in the worker log\n')
        (tmp_path / f"{events}.1").write_text('{"component": "split", "values": ["a"]}\n')
        (tmp_path / events).write_text('{"component": "count", "values": ["b", 1]}\n'
                                        '{"component": "split", "values": ["c"]}\n')
        reader = WorkerLogReader(worker, None)
        assert reader.files() == [f"{events}.1", events]
        assert reader.grep('"split"') == ['{"component": "split", "values": ["a"]}',
                                          '{"component": "split", "values": ["c"]}']
        shown = _sampled_by("split")
        tail = reader.tail(60)  # starts inside the first line: that partial line is not shown
        assert [line for line in tail.splitlines() if shown(line)] == [
            '{"component": "split", "values": ["c"]}']
        assert not shown('{"component": "count"}') and not shown("split") and not shown('["split"]')
    finally:
        server.stop()
