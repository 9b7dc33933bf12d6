"""The supervisor's local layout, the cluster change hooks and the watches, without ZooKeeper."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from stormpy.cluster import local_layout, watches
from stormpy.cluster.change_hooks import ChangeHooks, drop_path
from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.cluster.watches import Watch


def test_the_local_layout_module_names_its_contract() -> None:
    assert local_layout.__doc__


def test_every_file_of_a_supervisor_and_its_workers_sits_at_its_path(tmp_path: Path) -> None:
    dirs = SupervisorDirs(tmp_path / "l", "sup-1")
    root = (tmp_path / "l").resolve() / "supervisor" / "sup-1"
    assert (dirs.local_dir, dirs.supervisor_id, dirs.root) == ((tmp_path / "l").resolve(), "sup-1", root)
    assert dirs.logs == (tmp_path / "l").resolve() / "logs"
    assert dirs.conf_file == root / "conf.yaml"
    assert dirs.stormdist_root == root / "stormdist"
    assert dirs.stormdist("t-1") == root / "stormdist" / "t-1"
    assert dirs.code_dir("t-1") == root / "stormdist" / "t-1" / "code"
    assert dirs.topology_file("t-1") == root / "stormdist" / "t-1" / "topology.msgpack"
    assert dirs.bundle_file("t-1") == root / "stormdist" / "t-1" / "bundle.zip"
    assert dirs.workers_root == root / "workers"
    assert dirs.worker_dir("t-1", "6700") == root / "workers" / "t-1-6700"  # type: ignore[arg-type]
    assert dirs.heartbeat_file("t-1", 6700) == root / "workers" / "t-1-6700" / "heartbeat"
    assert dirs.nimbus_heartbeat_file("t-1", 6700) == root / "workers" / "t-1-6700" / "nimbus-heartbeat"
    assert dirs.pid_file("t-1", 6700) == root / "workers" / "t-1-6700" / "pid"
    assert dirs.worker_log("t-1", "6700") == dirs.logs / "worker-t-1-6700.log"  # type: ignore[arg-type]
    assert dirs.worker_events_log("t-1", "6700") == dirs.logs / "worker-t-1-6700-events.log"  # type: ignore[arg-type]
    assert dirs.supervisor_log == dirs.logs / "supervisor-sup-1.log"
    elsewhere = SupervisorDirs(tmp_path, "s", logs=tmp_path / "x" / ".." / "logs2")
    assert elsewhere.logs == (tmp_path / "logs2").resolve()


def test_a_topology_is_downloaded_once_its_code_and_description_are_there(tmp_path: Path) -> None:
    dirs = SupervisorDirs(tmp_path, "s")
    assert not dirs.is_downloaded("t")
    dirs.code_dir("t").mkdir(parents=True)
    assert not dirs.is_downloaded("t")
    dirs.topology_file("t").write_bytes(b"x")
    assert dirs.is_downloaded("t")
    dirs.code_dir("t").rmdir()
    dirs.code_dir("t").write_bytes(b"not a dir")
    assert not dirs.is_downloaded("t")


def test_the_worker_directories_present_are_listed_in_order(tmp_path: Path) -> None:
    dirs = SupervisorDirs(tmp_path, "s")
    assert dirs.worker_dirs() == []
    for name in ("wc-1-17-6701", "wc-1-17-6700", "noport", "-6700", "t-x"):
        (dirs.workers_root / name).mkdir(parents=True)
    (dirs.workers_root / "file-6702").write_text("")
    assert dirs.worker_dirs() == [("wc-1-17", 6700, dirs.workers_root / "wc-1-17-6700"),
                                  ("wc-1-17", 6701, dirs.workers_root / "wc-1-17-6701")]


class _Storage:
    """Watches set up by hand: each call of ``fire`` is what kazoo's recipe would deliver."""

    def __init__(self, fail: bool = False) -> None:
        self.feeds: dict[tuple[str, str], Any] = {}
        self.handles: dict[tuple[str, str], Watch] = {}  # the newest per node
        self.all_handles: list[tuple[str, str, Watch]] = []
        self.fail = fail

    def _watch(self, kind: str, path: str, changed: Any) -> Watch:
        if self.fail:
            raise RuntimeError("no ZooKeeper")
        self.feeds[(kind, path)] = changed
        handle = self.handles[(kind, path)] = Watch(path)
        self.all_handles.append((kind, path, handle))
        changed(b"first" if kind == "data" else ["a"])  # the recipe's set-up call
        return handle

    def watch_data(self, path: str, changed: Any) -> Watch:
        return self._watch("data", path, changed)

    def watch_children(self, path: str, changed: Any) -> Watch:
        return self._watch("children", path, changed)


def test_a_change_runs_the_slots_callback_once_and_the_set_up_call_is_no_change() -> None:
    storage = _Storage()
    hooks = ChangeHooks(storage)  # type: ignore[arg-type]
    calls: list[str] = []
    hooks.set_callback("assign", lambda: calls.append("a"))
    hooks.watch("assign", "data", "/p/a")
    hooks.watch("assign", "data", "/p/a")  # a re-read sets up no second watch
    assert list(storage.feeds) == [("data", "/p/a")]
    assert calls == []
    assert hooks.latest("assign", "data", "/p/a") == (True, b"first")
    assert hooks.latest("assign", "children", "/p/a") == (False, None)
    assert hooks.latest("other", "data", "/p/a") == (False, None)
    storage.feeds[("data", "/p/a")](b"second")
    assert calls == ["a"]
    assert hooks.latest("assign", "data", "/p/a") == (True, b"second")
    storage.feeds[("data", "/p/a")](None)  # the callback was popped: no second run until set again
    assert calls == ["a"]
    assert hooks.latest("assign", "data", "/p/a") == (True, None)
    hooks.set_callback("assign", lambda: calls.append("b"))
    storage.feeds[("data", "/p/a")](b"third")
    assert calls == ["a", "b"]


def test_a_children_watch_feeds_its_slot_and_a_failing_callback_is_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    storage = _Storage()
    hooks = ChangeHooks(storage)  # type: ignore[arg-type]
    hooks.watch("sups", "children", "/p")
    assert hooks.latest("sups", "children", "/p") == (True, ["a"])

    def boom() -> None:
        raise RuntimeError("boom")

    hooks.set_callback("sups", boom)
    with caplog.at_level(logging.ERROR, logger="stormpy.cluster.state"):
        storage.feeds[("children", "/p")](["a", "b"])
    assert "cluster-state callback for sups failed" in caplog.text
    assert hooks.latest("sups", "children", "/p") == (True, ["a", "b"])


def test_a_watch_that_cannot_be_set_up_leaves_nothing_registered() -> None:
    storage = _Storage(fail=True)
    hooks = ChangeHooks(storage)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="no ZooKeeper"):
        hooks.watch("s", "data", "/p")
    storage.fail = False
    hooks.watch("s", "data", "/p")  # tried again
    assert ("data", "/p") in storage.feeds


def test_retain_cancels_the_data_watches_of_children_that_are_gone() -> None:
    storage = _Storage()
    hooks = ChangeHooks(storage)  # type: ignore[arg-type]
    for child in ("a", "b"):
        hooks.watch("s", "data", f"/p/{child}")
    hooks.watch("other", "data", "/p/b")
    hooks.watch("s", "children", "/p/b")
    hooks.watch("s", "data", "/q/b")
    hooks.retain("s", "/p", ["a"])
    assert [(kind, path) for kind, path, h in storage.all_handles if h.cancelled] == [("data", "/p/b")]
    assert not storage.all_handles[2][2].cancelled  # the other slot's watch on /p/b
    assert hooks.latest("s", "data", "/p/b") == (False, None)
    assert hooks.latest("other", "data", "/p/b") == (True, b"first")
    assert hooks.latest("s", "children", "/p/b") == (True, ["a"])
    assert hooks.latest("s", "data", "/p/a") == (True, b"first")
    hooks.retain("other", "/p", [])
    hooks.retain("s", "/p/b", [])
    assert hooks.latest("other", "data", "/p/b") == (False, None)
    assert "/p/b" in hooks._latest  # the children watch's delivery stays
    hooks.retain("s", "/q", [])
    assert "/q/b" not in hooks._latest  # nothing delivered for it any more
    hooks.watch("s", "data", "/p/b")  # a gone child that comes back is watched again
    assert not storage.handles[("data", "/p/b")].cancelled


def test_forget_latest_drops_a_node_or_a_tree_and_cancel_all_stops_everything() -> None:
    storage = _Storage()
    hooks = ChangeHooks(storage)  # type: ignore[arg-type]
    for path in ("/p", "/p/a", "/p/a/x", "/pq"):
        hooks.watch("s", "data", path)
    hooks.forget_latest("/p/a")
    nodes = ("/p", "/p/a", "/p/a/x", "/pq")
    assert [hooks.latest("s", "data", p)[0] for p in nodes] == [True, False, True, True]
    hooks.forget_latest("/p", tree=True)
    assert [hooks.latest("s", "data", p)[0] for p in nodes] == [False, False, False, True]
    calls: list[int] = []
    hooks.set_callback("s", lambda: calls.append(1))
    hooks.cancel_all()
    assert all(h.cancelled for h in storage.handles.values())
    assert hooks.latest("s", "data", "/pq") == (False, None)
    storage.feeds[("data", "/pq")](b"late")
    assert calls == []
    assert hooks.latest("s", "data", "/pq") == (False, None)


def test_drop_path_removes_a_path_and_with_tree_everything_under_it() -> None:
    paths = {"/a": 1, "/a/b": 2, "/ab": 3}
    drop_path(paths, "/a")
    assert paths == {"/a/b": 2, "/ab": 3}
    drop_path(paths, "/a", tree=True)
    assert paths == {"/ab": 3}


def test_a_watch_cancelled_while_it_was_being_set_up_is_cancelled() -> None:
    storage = _Storage()
    hooks = ChangeHooks(storage)  # type: ignore[arg-type]
    original = storage._watch

    def closing(kind: str, path: str, changed: Any) -> Watch:
        handle = original(kind, path, changed)
        hooks.cancel_all()
        return handle

    storage._watch = closing  # type: ignore[method-assign]
    hooks.watch("s", "data", "/p")
    assert storage.handles[("data", "/p")].cancelled
    assert hooks.latest("s", "data", "/p") == (False, None)


class _Recipe:
    made: list[_Recipe] = []

    def __init__(self, client: Any, path: str, func: Any) -> None:
        self.client, self.path, self.func = client, path, func
        _Recipe.made.append(self)


def test_a_data_watch_delivers_bytes_or_none_until_cancelled(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(watches, "DataWatch", _Recipe)
    _Recipe.made = []
    seen: list[Any] = []
    handle = watches.data_watch("client", "/p", seen.append)  # type: ignore[arg-type]
    assert handle.path == "/p" and not handle.first_call.is_set() and _Recipe.made == []
    handle.run()
    handle.run()  # set up once
    assert [(r.client, r.path) for r in _Recipe.made] == [("client", "/p")]
    recipe = _Recipe.made[0]
    assert recipe.func(bytearray(b"ab"), None) is None
    assert seen == [b"ab"] and type(seen[0]) is bytes and handle.first_call.is_set()
    assert recipe.func(None, None) is None
    assert seen == [b"ab", None]
    handle.cancel()
    handle.cancel()
    assert handle.cancelled
    assert recipe.func(b"c", None) is False
    assert seen == [b"ab", None]


def test_a_children_watch_delivers_sorted_children_and_goes_on_after_a_failing_callback(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(watches, "ChildrenWatch", _Recipe)
    _Recipe.made = []
    seen: list[Any] = []

    def callback(children: list[str]) -> None:
        seen.append(children)
        if children == ["x"]:
            raise RuntimeError("bad")

    handle = watches.children_watch("client", "/p", callback)  # type: ignore[arg-type]
    handle.run()
    recipe = _Recipe.made[0]
    with caplog.at_level(logging.ERROR, logger="stormpy.cluster.watches"):
        assert recipe.func(["x"]) is None
    assert "children watch callback for /p failed" in caplog.text
    assert handle.first_call.is_set()
    assert recipe.func(["b", "a"]) is None
    assert seen == [["x"], ["a", "b"]]
    assert not handle.cancelled


def test_retain_drops_a_watch_whose_delivery_was_already_forgotten() -> None:
    storage = _Storage()
    hooks = ChangeHooks(storage)  # type: ignore[arg-type]
    hooks.watch("s", "data", "/p/a")
    hooks.forget_latest("/p/a")  # this client wrote there
    hooks.retain("s", "/p", [])
    assert storage.handles[("data", "/p/a")].cancelled
    assert hooks.latest("s", "data", "/p/a") == (False, None)


def test_a_watch_failing_while_the_hooks_close_raises_its_own_error() -> None:
    storage = _Storage()
    hooks = ChangeHooks(storage)  # type: ignore[arg-type]

    def closing_then_failing(kind: str, path: str, changed: Any) -> Watch:
        hooks.cancel_all()
        raise RuntimeError("connection lost")

    storage._watch = closing_then_failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="^connection lost$"):
        hooks.watch("s", "data", "/p")


def test_a_failing_data_watch_callback_is_logged_as_a_data_watch(monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(watches, "DataWatch", _Recipe)
    _Recipe.made = []

    def callback(data: bytes | None) -> None:
        raise RuntimeError("bad")

    handle = watches.data_watch("client", "/p", callback)  # type: ignore[arg-type]
    handle.run()
    with caplog.at_level(logging.ERROR, logger="stormpy.cluster.watches"):
        assert _Recipe.made[0].func(b"x", None) is None
    assert "data watch callback for /p failed" in caplog.text
    assert handle.first_call.is_set()


def test_a_children_watch_is_set_up_on_its_client_and_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watches, "ChildrenWatch", _Recipe)
    _Recipe.made = []
    watches.children_watch("client", "/q", lambda _c: None).run()  # type: ignore[arg-type]
    assert [(r.client, r.path) for r in _Recipe.made] == [("client", "/q")]
