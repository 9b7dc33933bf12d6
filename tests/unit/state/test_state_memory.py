"""The state layer's memory backend at its edges: its bounded lock naming what waited (every call,
``drop``, ``notify_due``, a watch's cancel, an ``update`` beaten to its write), named and
anywhere stores, dropping a topology, watches that are cancelled, cancelled while due or failing,
parents staying after their last child as znodes do, and corrupt nodes named by the key."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest

from state_store_kit import memory_backend_held
from stormpy.state import MemoryBackend
from stormpy.topology._state import (
    AREAS,
    CHECKPOINTS,
    TRANSACTIONAL,
    CorruptStateError,
    StateUnavailableError,
)


def test_a_memory_backend_and_its_stores_are_bounded_by_its_timeout() -> None:
    backend = MemoryBackend()
    assert backend.timeout_secs == 5.0 and backend.description == "memory"
    assert backend.store(CHECKPOINTS, "t").timeout_secs == 5.0
    quick = MemoryBackend(timeout_secs=0.25)
    assert quick.at("x").timeout_secs == 0.25
    assert quick.named_store(TRANSACTIONAL, "tx", "n").timeout_secs == 0.25


def test_a_busy_memory_backend_names_the_key_and_its_bound() -> None:
    backend = MemoryBackend(timeout_secs=0.05)
    store = backend.at("w")
    with memory_backend_held(backend):
        for call, args, path in ((store.get, ("k",), "memory:w/k"),
                                 (store.put, ("k", 1), "memory:w"),
                                 (store.delete, ("k",), "memory:w/k"),
                                 (store.children, ("k",), "memory:w/k"),
                                 (store.update, ("k", lambda old: 1), "memory:w/k")):
            with pytest.raises(StateUnavailableError) as err:
                call(*args)
            assert str(err.value) == f"state {path}: store busy for 0.05 s"
    store.put("k", 1)  # the lock was released after every refusal
    assert store.get("k") == 1


def test_named_and_anywhere_stores_of_a_memory_backend() -> None:
    backend = MemoryBackend()
    named = backend.named_store(TRANSACTIONAL, "tx", "global/count")
    assert named.location == "memory:transactional/tx:global/count"
    named.put("coordinator/current", 3)
    assert backend.named_store(TRANSACTIONAL, "tx", "global/count").get("coordinator/current") == 3
    assert backend.named_store(CHECKPOINTS, "tx", "global/count").children() == []
    assert backend.named_store(TRANSACTIONAL, "kinesis", "global/count").children() == []
    with pytest.raises(ValueError, match="unknown state area"):
        backend.named_store("nowhere", "tx", "n")
    assert backend.at().location == "memory:"
    backend.at("x", "y").put("k", 1)
    assert backend.at("x").get("y/k") == 1 and backend.at("x").children() == ["y"]


def test_dropping_a_topology_removes_every_area_of_it_and_tells_its_watchers() -> None:
    backend = MemoryBackend()
    for area in AREAS:
        backend.store(area, "t-1").put("k", area)
    backend.store(CHECKPOINTS, "t-2").put("k", "other")
    backend.store(CHECKPOINTS, "t-10").put("k", "longer id")
    seen: list[Any] = []
    backend.store(TRANSACTIONAL, "t-1").watch("k", seen.append)
    backend.drop("t-1")
    assert all(backend.store(area, "t-1").children() == [] for area in AREAS)
    assert backend.store(CHECKPOINTS, "t-2").get("k") == "other"
    assert backend.store(CHECKPOINTS, "t-10").get("k") == "longer id"
    assert seen == [TRANSACTIONAL, None]
    backend.drop("never-there")  # nothing to drop


def test_a_cancelled_watch_stays_cancelled_and_others_on_the_key_go_on() -> None:
    store = MemoryBackend().at("w")
    first: list[Any] = []
    second: list[Any] = []
    cancel_first = store.watch("k", first.append)
    store.watch("k", second.append)
    store.put("k", 1)
    cancel_first()
    cancel_first()  # twice is harmless
    store.put("k", 2)
    assert first == [None, 1] and second == [None, 1, 2]


def test_a_watch_cancelled_while_its_change_is_due_is_not_called() -> None:
    store = MemoryBackend().at("w")
    seen: list[Any] = []
    cancels: list[Callable[[], None]] = []
    store.watch("k", lambda value: cancels[0]() if value == 1 else None)  # cancels the other
    cancels.append(store.watch("k", seen.append))
    store.put("k", 1)
    assert seen == [None]


def test_a_failing_watch_callback_is_logged_and_the_others_still_called(
        caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryBackend().at("w")
    seen: list[Any] = []

    def failing(value: Any) -> None:
        if value is not None:
            raise RuntimeError("watcher broke")

    store.watch("k", failing)
    store.watch("k", seen.append)
    with caplog.at_level(logging.ERROR, logger="stormpy.state"):
        store.put("k", 1)
        store.delete("k")
    assert seen == [None, 1, None] and store.get("k") is None
    assert [r.exc_info[1].args for r in caplog.records if r.exc_info] == [("watcher broke",)]


def test_watches_hear_of_several_keys_and_of_subtrees_removed_at_once() -> None:
    store = MemoryBackend().at("w")
    seen: dict[str, list[Any]] = {"a": [], "b/c": []}
    for key, values in seen.items():
        store.watch(key, values.append)
    store.put_many({"a": 1, "b/c": 2})
    store.delete_many(["a", "b"])
    assert seen == {"a": [None, 1, None], "b/c": [None, 2, None]}


def test_a_memory_store_keeps_a_copy_of_what_it_was_given() -> None:
    store = MemoryBackend().at("w")
    value = {"list": [1, 2]}
    store.put("k", value)
    value["list"].append(3)
    assert store.get("k") == {"list": [1, 2]}
    assert store.get("missing", "dflt") == "dflt" and store.get("", "dflt") == "dflt"


def test_a_busy_memory_backend_names_what_waited() -> None:
    backend = MemoryBackend(timeout_secs=0.05)
    store = backend.store(CHECKPOINTS, "t-1")
    cancel = store.watch("k", lambda value: None)
    with memory_backend_held(backend):
        for call, args, path in ((store.delete_many, (["k"],), "memory:checkpoints/t-1"),
                                 (store.watch, ("k", print), "memory:checkpoints/t-1/k"),
                                 (cancel, (), "memory:checkpoints/t-1/k"),
                                 (backend.store, (CHECKPOINTS, "t-2"), "memory:checkpoints/t-2"),
                                 (backend.drop, ("t-1",), "memory:*/t-1"),
                                 (backend.notify_due, (), "memory:watchers")):
            with pytest.raises(StateUnavailableError) as err:
                call(*args)
            assert err.value.path == path


def test_an_update_that_finds_the_store_busy_when_writing_names_the_key() -> None:
    backend = MemoryBackend(timeout_secs=0.05)
    store = backend.at("w")
    with ExitStack() as held:

        def grab_the_lock_meanwhile(old: Any) -> Any:
            held.enter_context(memory_backend_held(backend))
            return 1

        with pytest.raises(StateUnavailableError) as err:
            store.update("k", grab_the_lock_meanwhile)
        assert str(err.value) == "state memory:w/k: store busy for 0.05 s"
    assert store.get("k") is None


def test_a_cancelled_watch_leaves_nothing_behind() -> None:
    backend = MemoryBackend()
    store = backend.at("w")
    cancels = [store.watch("k", lambda value: None) for _ in range(3)]
    assert len(backend.watchers[("w", "k")]) == 3
    for cancel in cancels:
        cancel()
    assert backend.watchers[("w", "k")] == []


def test_a_memory_parent_stays_after_its_last_child_goes_as_a_znode_would() -> None:
    backend = MemoryBackend()
    store = backend.at("w")
    store.put("a/b/c", 1)
    assert store.delete("a/b/c") is True
    assert store.children() == ["a"] and store.children("a") == ["b"]
    assert store.get("a") is None and store.get("a/b") is None  # no value of their own
    assert store.delete("a") is True and store.children() == []
    assert backend.at().children() == ["w"]  # the store's own node stays too
    assert store.delete("") is True and backend.at().children() == []
    assert backend.at().delete("") is False  # nothing is left, not even the top


def test_a_corrupt_memory_node_is_named_by_update_and_watch() -> None:
    backend = MemoryBackend()
    store = backend.at("w")
    backend.nodes[("w", "k")] = b"\xc1"  # not a state document (no store call writes one)
    with pytest.raises(CorruptStateError) as err:
        store.update("k", lambda old: 1)
    assert err.value.path == "memory:w/k"
    with pytest.raises(CorruptStateError) as err:
        store.watch("k", print)
    assert err.value.path == "memory:w/k"
