"""The log directory's rules, exactly: which requested paths are refused and how (400, 403, 404),
what a page of a log holds at each edge, what a search returns and where it continues, which files
are worker logs, and which files the clean-up deletes (only all-old groups of dead workers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stormpy.logviewer.files import (
    CONTEXT_BYTES,
    MAX_READ,
    MAX_SEARCH_BYTES,
    BadRequest,
    Forbidden,
    LogDir,
    NotFound,
    clean_up,
)

LOG = "worker-wc-1-17-6700.log"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    root.mkdir()
    return root


def _age(path: Path, mtime: float) -> None:
    os.utime(path, (mtime, mtime))


# -- resolve -------------------------------------------------------------------------------------


def test_each_refused_name_gets_its_own_error_and_message(root: Path, tmp_path: Path) -> None:
    logs = LogDir(root)
    for name in ("", None):
        with pytest.raises(BadRequest, match="^the 'file' parameter is required$"):
            logs.resolve(name)
    for name in ("/etc/passwd", "\\share\\x.log", "a\x00b.log"):
        with pytest.raises(BadRequest, match="must be a path relative to the log directory"):
            logs.resolve(name)
    for name in ("..", "../x.log", "a/../x.log", "a\\..\\x.log", "sub/.."):
        with pytest.raises(BadRequest, match="must not contain '..'"):
            logs.resolve(name)
    assert BadRequest.status == 400 and Forbidden.status == 403 and NotFound.status == 404


def test_names_that_only_look_like_parent_steps_are_files(root: Path) -> None:
    (root / "..hidden.log").write_text("a")
    (root / "x..log").write_text("b")
    logs = LogDir(root)
    assert logs.resolve("..hidden.log") == root / "..hidden.log"
    assert logs.resolve("x..log") == root / "x..log"


def test_links_are_judged_by_where_they_lead(root: Path, tmp_path: Path) -> None:
    sibling = tmp_path / "logs-x"  # starts with the log directory's name: still outside
    sibling.mkdir()
    (sibling / "other.log").write_text("not ours")
    (root / "sibling.log").symlink_to(sibling / "other.log")
    (root / "up").symlink_to(tmp_path)
    (root / LOG).write_text("ours")
    (root / "alias.log").symlink_to(root / LOG)
    logs = LogDir(root)
    with pytest.raises(Forbidden, match="'sibling.log' is outside the log directory"):
        logs.resolve("sibling.log")
    with pytest.raises(Forbidden):
        logs.resolve("up")
    assert logs.resolve("alias.log") == root / LOG  # a link inside the directory is followed


def test_missing_files_and_directories_are_not_found(root: Path) -> None:
    (root / "workers-artifacts" / "wc-1-17" / "6700").mkdir(parents=True)
    (root / "workers-artifacts" / "wc-1-17" / "6700" / "jstack-1.txt").write_text("dump")
    logs = LogDir(root)
    for name in (".", "workers-artifacts", "nope.log"):
        with pytest.raises(NotFound, match=f"^no log file {name!r} on this host$"):
            logs.resolve(name)
    nested = "workers-artifacts/wc-1-17/6700/jstack-1.txt"
    assert logs.resolve(nested) == root / nested


def test_the_root_is_resolved_once(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    (real / LOG).write_text("x")
    logs = LogDir(str(tmp_path / "link"))
    assert logs.root == real
    assert logs.resolve(LOG) == real / LOG


# -- read ------------------------------------------------------------------------------------------


def test_a_page_at_each_edge(root: Path) -> None:
    (root / LOG).write_bytes(b"0123456789")
    logs = LogDir(root)
    assert logs.read(LOG, None, 4) == {"file": LOG, "start": 6, "length": 4, "size": 10, "content": "6789"}
    assert logs.read(LOG, 2, 3) == {"file": LOG, "start": 2, "length": 3, "size": 10, "content": "234"}
    assert logs.read(LOG, -3, 2)["start"] == 7 and logs.read(LOG, -3, 2)["content"] == "78"
    assert logs.read(LOG, -30, 4)["start"] == 0 and logs.read(LOG, -30, 4)["content"] == "0123"
    assert logs.read(LOG, None, 30) == {"file": LOG, "start": 0, "length": 10, "size": 10,
                                        "content": "0123456789"}
    past = logs.read(LOG, 25, 5)
    assert past == {"file": LOG, "start": 10, "length": 0, "size": 10, "content": ""}
    assert logs.read(LOG, 8, 5)["content"] == "89" and logs.read(LOG, 8, 5)["length"] == 2
    assert logs.read(LOG, 0, -5) == {"file": LOG, "start": 0, "length": 0, "size": 10, "content": ""}
    assert logs.read(LOG, None, 0)["start"] == 10
    assert logs.read(LOG, 3, "2")["content"] == "34"  # type: ignore[arg-type]


def test_a_page_is_at_most_one_mebibyte_and_bad_bytes_are_replaced(root: Path) -> None:
    (root / "big.log").write_bytes(b"a" * (MAX_READ + 10))
    logs = LogDir(root)
    page = logs.read("big.log", 0, MAX_READ * 4)
    assert page["length"] == MAX_READ and len(page["content"]) == MAX_READ
    assert logs.read("big.log", None, MAX_READ * 4)["start"] == 10
    (root / "bad.log").write_bytes(b"ok \xff\xfe end")
    assert logs.read("bad.log", 0, 100)["content"] == "ok \ufffd\ufffd end"


# -- search ----------------------------------------------------------------------------------------


def test_the_search_string_is_one_to_1024_utf8_bytes(root: Path) -> None:
    (root / LOG).write_text("x" * 2000 + "é" * 600)
    logs = LogDir(root)
    message = "^the 'search-string' parameter must be 1 to 1024 UTF-8 bytes$"
    with pytest.raises(BadRequest, match=message):
        logs.search(LOG, "")
    with pytest.raises(BadRequest, match=message):
        logs.search(LOG, "x" * (MAX_SEARCH_BYTES + 1))
    with pytest.raises(BadRequest, match=message):
        logs.search(LOG, "é" * 513)  # 513 characters, 1026 bytes
    assert logs.search(LOG, "x" * MAX_SEARCH_BYTES, 0, 1)["matches"][0]["byteOffset"] == 0
    assert logs.search(LOG, "é" * 512, 0, 1)["matches"][0]["byteOffset"] == 2000
    with pytest.raises(BadRequest):
        logs.search("../x.log", "x")  # the path rules hold for searches too
    with pytest.raises(NotFound):
        logs.search("nope.log", "x")


def test_a_match_has_its_offset_its_context_and_its_line(root: Path) -> None:
    head = "h" * 200
    tail = "t" * 200
    (root / LOG).write_text(f"first line\n{head}NEEDLE{tail}\nlast")
    found = LogDir(root).search(LOG, "NEEDLE", 0, 5)
    at = len("first line\n") + 200
    assert found == {
        "fileName": LOG, "isDaemon": "no", "searchString": "NEEDLE", "startByteOffset": 0,
        "nextByteOffset": None,  # no further match: nothing to continue from
        "matches": [{"byteOffset": at, "matchString": "NEEDLE",
                     "beforeString": "h" * CONTEXT_BYTES, "afterString": "t" * CONTEXT_BYTES,
                     "line": f"{head}NEEDLE{tail}"}]}


def test_context_and_line_at_the_ends_of_the_file(root: Path) -> None:
    (root / LOG).write_text("ab NEEDLE cd")
    found = LogDir(root).search(LOG, "NEEDLE", 0, 1)
    assert found["matches"] == [{"byteOffset": 3, "matchString": "NEEDLE", "beforeString": "ab ",
                                 "afterString": " cd", "line": "ab NEEDLE cd"}]
    assert found["nextByteOffset"] == 9
    (root / "end.log").write_text("x\nyy NEEDLE")
    at_end = LogDir(root).search("end.log", "NEEDLE", 0, 1)
    assert at_end["matches"][0]["line"] == "yy NEEDLE" and at_end["matches"][0]["afterString"] == ""
    assert at_end["nextByteOffset"] is None  # the match ends the file


def test_paging_through_matches_loses_none_and_counts_bytes(root: Path) -> None:
    (root / LOG).write_text("".join(f"é{i} hit\n" for i in range(7)))
    logs = LogDir(root)
    data = (root / LOG).read_bytes()
    expected = [data.find(b"hit", 0)]
    while (nxt := data.find(b"hit", expected[-1] + 1)) >= 0:
        expected.append(nxt)
    offsets: list[int] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = logs.search(LOG, "hit", offset, 3)
        assert page["startByteOffset"] == offset
        offsets += [m["byteOffset"] for m in page["matches"]]
        offset = page["nextByteOffset"]
        pages += 1
    assert offsets == expected and pages == 3
    first = logs.search(LOG, "hit", 0, 3)
    assert first["nextByteOffset"] == expected[2] + 3
    assert [m["line"] for m in first["matches"]] == ["é0 hit", "é1 hit", "é2 hit"]


def test_matches_do_not_overlap_and_at_least_one_is_returned(root: Path) -> None:
    (root / LOG).write_text("aaaaa")
    logs = LogDir(root)
    assert [m["byteOffset"] for m in logs.search(LOG, "aa", 0, 10)["matches"]] == [0, 2]
    for asked in (0, -4):
        only = logs.search(LOG, "aa", 0, asked)
        assert [m["byteOffset"] for m in only["matches"]] == [0] and only["nextByteOffset"] == 2
    from_negative = logs.search(LOG, "aa", -7, 1)
    assert from_negative["startByteOffset"] == -7 and from_negative["matches"][0]["byteOffset"] == 0
    assert logs.search(LOG, "aa", 1, 10)["matches"][0]["byteOffset"] == 1
    none = logs.search(LOG, "b", 0, 10)
    assert none["matches"] == [] and none["nextByteOffset"] is None
    beyond = logs.search(LOG, "a", 50, 10)
    assert beyond["matches"] == [] and beyond["nextByteOffset"] is None and beyond["startByteOffset"] == 50


def test_a_match_with_more_of_the_file_after_it_continues_after_it(root: Path) -> None:
    (root / LOG).write_text("k.k.")
    page = LogDir(root).search(LOG, "k", 0, 1)
    assert page["nextByteOffset"] == 1
    last = LogDir(root).search(LOG, "k", 1, 5)
    assert [m["byteOffset"] for m in last["matches"]] == [2] and last["nextByteOffset"] is None


# -- which files are worker logs --------------------------------------------------------------------


def test_worker_logs_are_recognised_by_name_and_kind(root: Path) -> None:
    names = ["worker-wc-1-17-6700.log", "worker-wc-1-17-6700.log.3", "worker-wc-1-17-6700-events.log",
             "worker-wc-1-17-6700-events.log.1", "worker-b-2-6701.log"]
    for name in names:
        (root / name).write_text("x")
    for other in ("supervisor.log", "worker-wc.log", "worker-wc-1-17-6700.log.old", "xworker-a-1-2.log",
                  "worker-wc-1-17-6700.txt", "worker-a-1-2.log.1x"):
        (root / other).write_text("x")
    (root / "worker-dir-1-6702.log").mkdir()
    logs = LogDir(root)
    assert [(t, p, f.name) for t, p, f in logs.worker_logs()] == [
        ("b-2", 6701, "worker-b-2-6701.log"),
        ("wc-1-17", 6700, "worker-wc-1-17-6700-events.log"),
        ("wc-1-17", 6700, "worker-wc-1-17-6700-events.log.1"),
        ("wc-1-17", 6700, "worker-wc-1-17-6700.log"),
        ("wc-1-17", 6700, "worker-wc-1-17-6700.log.3")]
    assert [f.name for f in logs.topology_logs("b-2")] == ["worker-b-2-6701.log"]
    assert logs.topology_logs("wc-1") == []
    assert LogDir(root / "missing").worker_logs() == []


def test_artifacts_are_the_files_of_one_workers_folder(root: Path) -> None:
    folder = root / "workers-artifacts" / "wc-1-17" / "6700"
    (folder / "sub").mkdir(parents=True)
    for name in ("jstack-2.txt", "heap-1.txt"):
        (folder / name).write_text("x")
    (folder / "sub" / "deep.txt").write_text("x")
    logs = LogDir(root)
    assert [p.name for p in logs.artifacts("wc-1-17", 6700)] == ["heap-1.txt", "jstack-2.txt"]
    assert [p.name for p in logs.artifacts("wc-1-17", "6700")] == ["heap-1.txt", "jstack-2.txt"]  # type: ignore[arg-type]
    assert logs.artifacts("wc-1-17", 6701) == [] and logs.artifacts("other", 6700) == []


# -- clean-up ----------------------------------------------------------------------------------------


def test_clean_up_deletes_exactly_the_all_old_groups_of_dead_workers(root: Path) -> None:
    now = 1_000_000.0
    age = 600.0
    old, young = now - age - 1, now - 10
    files = {
        "worker-dead-1-6700.log": old, "worker-dead-1-6700.log.1": old, "worker-dead-1-6700-events.log": old,
        "worker-mixed-1-6700.log": old, "worker-mixed-1-6700.log.1": young,
        "worker-alive-1-6700.log": old, "worker-dead-1-6701.log": now - age,  # exactly at the age: old
        "worker-young-1-6700.log": young, "supervisor.log": old,
    }
    for name, mtime in files.items():
        (root / name).write_text(name)
        _age(root / name, mtime)
    dead_art = root / "workers-artifacts" / "dead-1" / "6700"
    (dead_art / "deep").mkdir(parents=True)
    (dead_art / "deep" / "profile.txt").write_text("p")
    _age(dead_art / "deep" / "profile.txt", old)
    young_art = root / "workers-artifacts" / "artonly-1" / "6702"
    young_art.mkdir(parents=True)
    (young_art / "jstack.txt").write_text("j")
    _age(young_art / "jstack.txt", young)
    odd = root / "workers-artifacts" / "dead-1" / "notaport"
    odd.mkdir()
    (odd / "keep.txt").write_text("k")
    _age(odd / "keep.txt", old)
    (root / "workers-artifacts" / "stray-file").write_text("s")
    alive_art = root / "workers-artifacts" / "alive-1" / "6700"
    alive_art.mkdir(parents=True)
    (alive_art / "heap.txt").write_text("h")
    _age(alive_art / "heap.txt", old)
    (root / "workers-artifacts" / "empty-1" / "6703").mkdir(parents=True)

    removed = clean_up(LogDir(root), iter([("alive-1", 6700)]), age, now=lambda: now)

    assert sorted(p.relative_to(root).as_posix() for p in removed) == [
        "worker-dead-1-6700-events.log", "worker-dead-1-6700.log", "worker-dead-1-6700.log.1",
        "worker-dead-1-6701.log", "workers-artifacts/dead-1/6700/deep/profile.txt"]
    left = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    assert left == [
        "supervisor.log", "worker-alive-1-6700.log", "worker-mixed-1-6700.log", "worker-mixed-1-6700.log.1",
        "worker-young-1-6700.log", "workers-artifacts", "workers-artifacts/alive-1",
        "workers-artifacts/alive-1/6700", "workers-artifacts/alive-1/6700/heap.txt",
        "workers-artifacts/artonly-1", "workers-artifacts/artonly-1/6702",
        "workers-artifacts/artonly-1/6702/jstack.txt", "workers-artifacts/dead-1",
        "workers-artifacts/dead-1/notaport", "workers-artifacts/dead-1/notaport/keep.txt",
        "workers-artifacts/stray-file"]


def test_clean_up_reads_the_clock_it_is_given(root: Path) -> None:
    (root / LOG).write_text("x")
    _age(root / LOG, 5000.0)
    logs = LogDir(root)
    assert clean_up(logs, [], 100.0, now=lambda: 5099.0) == []
    assert clean_up(logs, [("wc-1-17", 6701), ("wc-1-18", 6700)], 100.0, now=lambda: 5100.0) == [root / LOG]
    assert not (root / LOG).exists()


def test_clean_up_without_a_log_directory_or_artefacts_deletes_nothing(tmp_path: Path) -> None:
    assert clean_up(LogDir(tmp_path / "none"), [], 0.0) == []
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "workers-artifacts").write_text("a file, not the folder")
    assert clean_up(LogDir(tmp_path / "w"), [], 0.0) == []
    assert (tmp_path / "w" / "workers-artifacts").is_file()


def test_bad_bytes_around_a_match_are_replaced_not_refused(root: Path) -> None:
    (root / LOG).write_bytes(b"\xff\xfe before NEEDLE after \xfe\xff\nnext")
    match = LogDir(root).search(LOG, "NEEDLE", 0, 1)["matches"][0]
    assert match["beforeString"] == "\ufffd\ufffd before "
    assert match["afterString"] == " after \ufffd\ufffd\nnext"
    assert match["line"] == "\ufffd\ufffd before NEEDLE after \ufffd\ufffd"


def test_the_line_of_a_match_next_to_the_files_first_byte(root: Path) -> None:
    (root / LOG).write_text("\nxx NEEDLE\n")
    assert LogDir(root).search(LOG, "NEEDLE", 0, 1)["matches"][0]["line"] == "xx NEEDLE"
    (root / "nl.log").write_text("\nNEEDLE\n")
    first = LogDir(root).search("nl.log", "\nNEEDLE", 0, 1)["matches"][0]
    assert first["byteOffset"] == 0 and first["line"] == ""  # the match starts on the empty first line


def test_a_young_group_does_not_stop_the_clean_up_of_the_next(root: Path) -> None:
    now = 10_000.0
    for name, mtime in (("worker-aaa-1-6700.log", now), ("worker-bbb-1-6700.log", 0.0),
                        ("worker-ccc-1-6700.log", 0.0)):
        (root / name).write_text("x")
        _age(root / name, mtime)
    removed = clean_up(LogDir(root), [], 60.0, now=lambda: now)
    assert sorted(p.name for p in removed) == ["worker-bbb-1-6700.log", "worker-ccc-1-6700.log"]


def test_a_file_gone_before_its_group_is_judged_skips_that_group_only(root: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("worker-aaa-1-6700.log", "worker-bbb-1-6700.log"):
        (root / name).write_text("x")
        _age(root / name, 0.0)
    real_stat = Path.stat

    def stat(self: Path, *args: object, **kwargs: object) -> os.stat_result:
        if self.name == "worker-aaa-1-6700.log" and not args and not kwargs:
            raise FileNotFoundError(self)
        return real_stat(self, *args, **kwargs)  # type: ignore[arg-type]
    logs = LogDir(root)
    found = logs.worker_logs()  # listed before the file goes
    monkeypatch.setattr(logs, "worker_logs", lambda: found)
    monkeypatch.setattr(Path, "stat", stat)
    removed = clean_up(logs, [], 60.0, now=lambda: 10_000.0)
    assert [p.name for p in removed] == ["worker-bbb-1-6700.log"]


def test_the_artefacts_folder_itself_stays_when_emptied(root: Path) -> None:
    folder = root / "workers-artifacts" / "dead-1" / "6700"
    folder.mkdir(parents=True)
    (folder / "jstack.txt").write_text("j")
    _age(folder / "jstack.txt", 0.0)
    assert [p.name for p in clean_up(LogDir(root), [], 60.0, now=lambda: 10_000.0)] == ["jstack.txt"]
    assert (root / "workers-artifacts").is_dir() and list((root / "workers-artifacts").iterdir()) == []


def test_a_search_starts_at_the_first_byte_with_ten_matches_by_default(root: Path) -> None:
    (root / LOG).write_text("k" * 11)
    found = LogDir(root).search(LOG, "k")
    assert [m["byteOffset"] for m in found["matches"]] == list(range(10)) and found["nextByteOffset"] == 10
