"""RedisStore.watch on a real ``redis-server``: the value now, every change a poll reads (by
another client too), nothing after the returned cancel, and no poll left once the store is
closed."""

from __future__ import annotations

import threading
from typing import Any

from parts_kit import fresh_redis_store
from stormpy.local._redis_server import RedisServer
from stormpy.state._redis_store import RedisStore
from stormpy.testing import wait_for


def test_a_watch_sees_the_value_and_its_changes_until_cancelled(redis_server: RedisServer) -> None:
    store = fresh_redis_store(redis_server, "watched")
    other = RedisStore(store.config, ("watched",))
    seen: list[Any] = []
    lock = threading.Lock()

    def record(value: Any) -> None:
        with lock:
            seen.append(value)

    try:
        store.put("list", [1])
        cancel = store.watch("list", record, poll_secs=0.05)
        assert seen == [[1]]  # the value now, on the caller's thread
        other.put("list", [1, 2])  # another client's write
        wait_for(lambda: seen[-1:] == [[1, 2]], 30, "the change to be seen")
        other.delete("list")
        wait_for(lambda: seen[-1:] == [None], 30, "the deletion to be seen")
        cancel()
        threads = [t for t in threading.enumerate() if "redis watch" in t.name]
        wait_for(lambda: not any(t.is_alive() for t in threads), 30, "the watch to stop")
        other.put("list", [3])
        assert [3] not in seen
        store.watch("list", record, poll_secs=0.05)
        threads = [t for t in threading.enumerate() if "redis watch" in t.name]
        store.close()  # a watch left running stops with its store
        wait_for(lambda: not any(t.is_alive() for t in threads), 30, "the watch to stop on close")
    finally:
        store.close()
        other.close()
