"""The Redis backend's own guarantees on a real ``redis-server`` (the contract every store keeps
is in test_state_layer.py and test_state_backends.py): keys of two tasks or topologies never
mixed, a compare-and-set that two writers on two connections never both win, batched writes
larger than one pipeline round landing whole and in order, scans by prefix and page, and Redis
unreachable refused naming the address and the provider."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from parts_kit import fresh_redis_store
from stormpy.local._redis_server import RedisServer
from stormpy.state import _redis_store as redis_module
from stormpy.state._redis_store import RedisConfig, RedisStore
from stormpy.testing import wait_for
from stormpy.topology._state import StateKeyError, StateStoreError, StateUnavailableError


@pytest.fixture
def store(redis_server: RedisServer) -> Iterator[RedisStore]:
    s = fresh_redis_store(redis_server, "t")
    try:
        yield s
    finally:
        s.close()


def test_keys_of_two_tasks_and_two_topologies_are_never_mixed(store: RedisStore) -> None:
    a, b = store.sub("topo-1", "task-1"), store.sub("topo-1", "task-2")
    other = RedisStore(store.config, ("t2",))  # another topology, same prefix
    try:
        a.put_many({"k": 1, "x/y": 2})
        b.put_many({"k": 10})
        other.put("k", 100)
        assert (a.get("k"), b.get("k"), other.get("k"), store.get("k")) == (1, 10, 100, None)
        assert a.children() == ["k", "x"] and b.children() == ["k"]
        assert dict(a.scan()) == {"k": 1} and dict(b.scan()) == {"k": 10}
        assert a.count() == 2 and b.count() == 1
        assert store.children() == ["topo-1"] and store.children("topo-1") == ["task-1", "task-2"]
        assert b.delete("k") is True and b.delete("k") is False
        assert a.get("k") == 1 and other.get("k") == 100 and a.get("x/y") == 2
        assert a.delete("x") is True  # a subtree: the node and its children
        assert a.get("x/y") is None and a.children() == ["k"]
    finally:
        other.close()


def test_two_writers_on_two_connections_never_both_win_and_no_update_is_lost(
        store: RedisStore) -> None:
    other = RedisStore(store.config, ("t",))  # its own connection pool
    rounds = 40
    errors: list[BaseException] = []

    def add(s: RedisStore) -> None:
        try:
            for _ in range(rounds):
                assert s.update("n", lambda v: (v or 0) + 1) is True
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    try:
        threads = [threading.Thread(target=add, args=(s,)) for s in (store, other)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors and store.get("n") == 2 * rounds
    finally:
        other.close()


def test_an_update_whose_key_changed_since_its_read_runs_again_on_the_new_value(
        store: RedisStore) -> None:
    other = RedisStore(store.config, ("t",))
    seen: list[Any] = []

    def fn(value: Any) -> Any:
        seen.append(value)
        if len(seen) == 1:
            other.put("n", 5)  # another writer between our read and our write
        return value + 1
    try:
        store.put("n", 1)
        assert store.update("n", fn) is True
        assert seen == [1, 5] and store.get("n") == 6
        assert store.update("n", lambda v: None) is False and store.get("n") == 6
        assert store.update("fresh", lambda v: [v]) is True and store.get("fresh") == [None]
        assert store.update("a/b", lambda v: 7) is True
        assert store.children() == ["a", "fresh", "n"] and store.get("a") is None
    finally:
        other.close()


def test_a_batch_larger_than_a_pipeline_round_lands_whole_and_in_order(
        store: RedisStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redis_module, "PIPELINE_BATCH", 40)
    monkeypatch.setattr(redis_module, "HSET_FIELDS", 4)
    puts = {f"k{i:03d}": i for i in range(150)}
    puts.update({f"d/e{i}": -i for i in range(30)})
    puts.update({"a=b": "eq", "sp ace": "sp", ".": "dot", "q%": "pct"})
    store.write_batch({"gone": 1, "gone2/x": 2})
    store.write_batch(puts, deletes=["gone", "gone2", "k000"])
    expected = {k: v for k, v in puts.items() if "/" not in k and k != "k000"}
    assert dict(store.scan()) == expected
    assert store.get_many([f"d/e{i}" for i in range(30)]) == {f"d/e{i}": -i for i in range(30)}
    assert store.get("gone") is None and store.get("gone2/x") is None and store.get("k000") is None
    assert store.children() == sorted([*expected, "d"]) and store.count() == len(expected) + 1
    # puts then deletes, in that order: a key put and deleted in one batch is gone
    store.write_batch({"both": 1}, deletes=["both"])
    assert store.get("both") is None
    deletes = [f"k{i:03d}" for i in range(1, 150)]
    store.write_encoded([], deletes)
    assert store.get_many(deletes) == {}


def test_a_scan_by_prefix_and_page_reads_exactly_the_matching_children(store: RedisStore) -> None:
    store.put_many({f"p*{i}": i for i in range(25)})
    store.put_many({f"p{i}": i for i in range(5)})
    store.put("p*x/child", 1)  # a node with children: listed, but no value of its own
    assert dict(store.scan(prefix="p*", page=3)) == {f"p*{i}": i for i in range(25)}
    assert dict(store.scan(prefix="p?", page=3)) == {}
    assert dict(store.scan(prefix="p", page=2)) == {**{f"p*{i}": i for i in range(25)},
                                                    **{f"p{i}": i for i in range(5)}}
    assert dict(store.scan("p*x")) == {"child": 1}


def test_an_unreachable_redis_is_refused_naming_the_address_and_the_provider() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = RedisStore(RedisConfig("127.0.0.1", port, timeout_ms=500), ("a",))
    try:
        with pytest.raises(StateUnavailableError) as err:
            store.get("k")
        assert str(err.value).startswith(f"state redis 127.0.0.1:{port} db 0 at stormpy/a/k: ")
        assert f"Redis at 127.0.0.1:{port} unreachable (provider redis)" in str(err.value)
        assert store.available() is False
    finally:
        store.close()
    with pytest.raises(StateUnavailableError) as closed:
        store.get("k")
    assert str(closed.value) == f"state redis 127.0.0.1:{port} db 0 at stormpy/a/k: store is closed"


class FailingClient:
    """Stands in for redis-py's client: every command raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            raise self.error
        return fail


OUT_OF_MEMORY = "is out of memory (provider redis): "
CANNOT_SERVE = "cannot serve now (provider redis): "


@pytest.mark.parametrize("reply, kind, says", [
    ("OOM command not allowed when used memory > 'maxmemory'", StateUnavailableError, OUT_OF_MEMORY),
    ("OOM command not allowed", StateUnavailableError, OUT_OF_MEMORY),
    ("ERR over the maxmemory limit", StateUnavailableError, OUT_OF_MEMORY),
    ("LOADING Redis is loading the dataset in memory", StateUnavailableError, CANNOT_SERVE),
    ("MASTERDOWN Link with MASTER is down", StateUnavailableError, CANNOT_SERVE),
    ("READONLY You can't write against a read only replica.", StateUnavailableError, CANNOT_SERVE),
    ("BUSY Redis is busy running a script.", StateUnavailableError, CANNOT_SERVE),
    ("WRONGTYPE Operation against a key holding the wrong kind of value", StateStoreError,
     "failed: "),
])
def test_each_refusal_of_redis_is_named_by_kind_address_and_key(
        store: RedisStore, monkeypatch: pytest.MonkeyPatch, reply: str, kind: type[Exception],
        says: str) -> None:
    import redis

    monkeypatch.setattr(store._conn, "client",  # noqa: SLF001
                        FailingClient(redis.exceptions.ResponseError(reply)))
    with pytest.raises(StateStoreError) as err:
        store.get("k")
    assert type(err.value) is kind
    address = store.config.address
    assert str(err.value) == (f"state redis {address} db 0 at {store.config.prefix}/t/k: "
                              f"Redis at {address} {says}{reply}")


@pytest.mark.parametrize("error, kind, says", [
    ("TimeoutError", StateUnavailableError, "unreachable (provider redis): slow"),
    ("ConnectionError", StateUnavailableError, "unreachable (provider redis): slow"),
    ("AuthenticationError", StateUnavailableError, "unreachable (provider redis): slow"),
    ("DataError", StateStoreError, "failed: slow"),
])
def test_other_redis_errors_are_named_too(store: RedisStore, monkeypatch: pytest.MonkeyPatch,
                                          error: str, kind: type[Exception], says: str) -> None:
    import redis

    monkeypatch.setattr(store._conn, "client",  # noqa: SLF001
                        FailingClient(getattr(redis.exceptions, error)("slow")))
    with pytest.raises(StateStoreError) as err:
        store.put("k", 1)
    assert type(err.value) is kind
    assert str(err.value) == (f"state redis {store.config.address} db 0 at {store.config.prefix}/t: "
                              f"Redis at {store.config.address} {says}")


def test_a_namespace_shares_its_stores_connection_and_leaves_it_open_when_closed(
        store: RedisStore) -> None:
    ns = store.sub("a", "b")
    assert ns.location == f"redis {store.config.address} db 0 at {store.config.prefix}/t/a/b"
    ns.put("k", 1)
    ns.close()
    assert store.get("a/b/k") == 1 and store.available() is True
    own = redis_module.open_redis_store(store.config, "t", "a")
    assert own.get("b/k") == 1 and own.location.endswith(f"{store.config.prefix}/t/a")
    own.close()
    assert store.get("a/b/k") == 1  # another pool: closing it left this one open
    with pytest.raises(StateUnavailableError, match="store is closed"):
        own.get("b/k")


def test_the_database_and_the_prefix_keep_stores_apart(redis_server: RedisServer) -> None:
    import redis

    config = RedisConfig(redis_server.host, redis_server.port, database=3, prefix="dbtest")
    in_db3 = RedisStore(config, ("t",))
    in_db0 = RedisStore(RedisConfig(redis_server.host, redis_server.port, prefix="dbtest"), ("t",))
    raw = redis.Redis(host=redis_server.host, port=redis_server.port, db=3)
    try:
        in_db3.put("k", 1)
        assert in_db0.get("k") is None and in_db3.get("k") == 1
        assert raw.hkeys("dbtest/t") == [b"k"] and raw.hkeys("dbtest") == [b"t"]
        assert in_db3.location.startswith(f"redis {redis_server.host}:{redis_server.port} db 3 ")
    finally:
        raw.delete("dbtest/t", "dbtest")
        raw.close()
        in_db3.close()
        in_db0.close()


def test_a_node_with_children_but_no_value_reads_as_the_default(store: RedisStore) -> None:
    store.put("a/b", 1)
    assert store.get("a", "none") == "none" and store.get_many(["a", "a/b"]) == {"a/b": 1}
    assert store.get_many([]) == {} and dict(store.scan()) == {}
    root = RedisStore(store.config)
    with pytest.raises(StateKeyError) as err:
        root.get("")
    assert str(err.value) == (f"state redis {store.config.address} db 0 at {store.config.prefix}: "
                              "the Redis backend's root holds no value of its own; use a store below it")
    for call in (lambda: store.get("a//b"), lambda: store.where("a//b")):
        with pytest.raises(StateKeyError) as err:
            call()
        assert str(err.value).startswith(f"state {store.location}/a//b: ")
    with pytest.raises(StateKeyError) as err:
        RedisStore(store.config, ("t", ""))
    assert str(err.value) == (f"state redis {store.config.address}/'': a namespace segment is a "
                              "non-empty string")
    root.close()


def test_an_update_beaten_every_round_gives_up_naming_the_key(
        store: RedisStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from stormpy.state import _base as base_module

    monkeypatch.setattr(base_module, "contention_pause", lambda backoff: None)
    other = RedisStore(store.config, ("t",))
    calls = [0]

    def beaten(value: Any) -> Any:
        calls[0] += 1
        other.put("n", calls[0])
        return -1
    try:
        with pytest.raises(StateUnavailableError) as err:
            store.update("n", beaten)
        assert str(err.value) == (f"state redis {store.config.address} db 0 at "
                                  f"{store.config.prefix}/t/n: changed by others "
                                  f"{base_module.MAX_UPDATE_ROUNDS} times in a row")
        assert calls[0] == base_module.MAX_UPDATE_ROUNDS and store.get("n") == calls[0]
    finally:
        other.close()


def test_keys_that_need_encoding_read_back_whatever_call_wrote_them(store: RedisStore) -> None:
    odd = {"sp ace": 1, ".": 2, "..": 3, "x%41": 4, "a=b": 5, "plain": 6}
    store.write_batch(odd)
    assert store.get_many(list(odd)) == odd and dict(store.scan()) == odd
    assert store.children() == sorted(odd)
    store.delete_many(list(odd))
    assert store.children() == []
    store.put_many(odd)
    assert {k: store.get(k) for k in odd} == odd


def test_the_parents_of_a_store_are_nodes_without_values(store: RedisStore) -> None:
    deep = store.sub("u", "v")
    deep.write_batch({"k": 1})
    assert store.get("u") is None and store.get("u/v") is None
    assert store.children() == ["u"] and store.children("u") == ["v"] and deep.get("k") == 1
    other = store.sub("w")
    assert other.update("k", lambda v: 1) is True and store.get("w") is None
    other.put_many({"k": 2})
    assert store.get("w") is None and store.children() == ["u", "w"]


def test_a_batch_is_sent_in_rounds_bounded_by_the_pipeline_batch(
        store: RedisStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint larger than memory is written in rounds: at most PIPELINE_BATCH keys queued
    in the client at once (HSETs of HSET_FIELDS fields), the deletes PIPELINE_BATCH // 10 keys
    per script call."""
    monkeypatch.setattr(redis_module, "PIPELINE_BATCH", 200)
    monkeypatch.setattr(redis_module, "HSET_FIELDS", 4)
    client = store._conn.client  # noqa: SLF001
    real = client.pipeline
    rounds: list[list[tuple[str, int]]] = []

    def pipeline(*args: Any, **kwargs: Any) -> Any:
        pipe = real(*args, **kwargs)
        execute = pipe.execute

        def counted(*a: Any, **kw: Any) -> Any:
            rounds.append([(str(c[0][0]), len(c[0])) for c in pipe.command_stack])
            return execute(*a, **kw)
        pipe.execute = counted
        return pipe
    monkeypatch.setattr(client, "pipeline", pipeline)
    store.write_batch({f"k{i:04d}": i for i in range(450)} | {"n/a": 1, "n/b": 2},
                      deletes=[f"k{i:04d}" for i in range(100)])
    assert dict(store.scan()) == {f"k{i:04d}": i for i in range(100, 450)}
    assert store.get_many(["n/a", "n/b"]) == {"n/a": 1, "n/b": 2}
    hset = ("HSET", 2 + 2 * 4)  # one HSET of 4 fields
    assert rounds[0] == [("HSETNX", 4)] + [hset] * 50
    assert rounds[1] == [hset] * 50
    # the last 48 + 2 rows, the markers of "n/a" and "n/b", both of them, and the first script
    markers = [("HSETNX", 4)] * 2
    assert rounds[2] == ([hset] * 12 + markers + [("HSET", 2 + 2 * 2)] + markers
                         + [("HSET", 2 + 2 * 2), ("EVALSHA", 3 + 2 * 20)])
    # 100 deletes: 20 keys (parent and field each) per script call, two calls per round
    assert rounds[3:6] == [[("EVALSHA", 3 + 2 * 20)] * 2] * 2 + [[]]
    assert all(len(r) <= 1 + 200 // 4 for r in rounds)
    # the markers of nested keys count towards a round too: each row below is in a hash of its
    # own (two markers, one HSET), so a round ends once 50 of them are queued (51 commands with
    # the store's own marker; 40 rows: 120 commands and that marker in three rounds)
    rounds.clear()
    store.write_batch({f"n{i:02d}/x": i for i in range(40)})
    assert [len(r) for r in rounds] == [51, 51, 19]
    assert store.get_many([f"n{i:02d}/x" for i in range(40)]) == {f"n{i:02d}/x": i for i in range(40)}


@pytest.mark.parametrize("call, key", [
    (lambda s: s.write_batch({"k": 1}), ""),
    (lambda s: s.write_encoded([("k", b"")], ["j"]), ""),
    (lambda s: s.get_many(["k"]), ""),
    (lambda s: s.delete_many(["k"]), ""),
    (lambda s: s.children("a"), "/a"),
    (lambda s: s.count("a"), "/a"),
    (lambda s: s.update("k", lambda v: 1), "/k"),
    (lambda s: s.delete("k"), "/k"),
    (lambda s: list(s.scan("a")), "/a"),
])
def test_every_call_that_meets_an_unreachable_redis_names_where(
        store: RedisStore, monkeypatch: pytest.MonkeyPatch, call: Any, key: str) -> None:
    import redis

    failing = FailingClient(redis.exceptions.ConnectionError("down"))
    monkeypatch.setattr(store._conn, "client", failing)  # noqa: SLF001
    monkeypatch.setattr(store._conn, "delete_script", failing.evalsha)  # noqa: SLF001
    with pytest.raises(StateUnavailableError) as err:
        call(store)
    assert str(err.value) == (f"state {store.location}{key}: Redis at {store.config.address} "
                              "unreachable (provider redis): down")


def test_a_value_that_is_not_a_state_document_is_named_by_its_key(store: RedisStore) -> None:
    import redis

    raw = redis.Redis(host=store.config.host, port=store.config.port)
    try:
        raw.hset(f"{store.config.prefix}/t", "bad", b"\xc1garbage")
    finally:
        raw.close()
    for call in (lambda: store.get_many(["bad"]), lambda: store.update("bad", lambda v: 1),
                 lambda: store.get("bad"), lambda: dict(store.scan())):
        with pytest.raises(StateStoreError, match=f"^state {store.location}/bad: "):
            call()
    with pytest.raises(StateStoreError, match=f"^state {store.location}/gone: "):
        store.write_batch({"ok": 1, "gone": object()})


def test_a_namespace_is_checked_and_closed_with_its_store(store: RedisStore) -> None:
    with pytest.raises(StateStoreError, match=f"^state {store.location}/'': a namespace segment"):
        store.sub("")
    ns = store.sub("a")
    ns.put("k", 1)
    store.close()
    with pytest.raises(StateUnavailableError, match="store is closed"):
        ns.get("k")


def test_a_watch_whose_reads_fail_warns_once_without_a_traceback_and_keeps_polling(
        store: RedisStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import redis

    store.put("k", 1)
    seen: list[Any] = []
    cancel = store.watch("k", seen.append, poll_secs=0.02)
    try:
        name = f"redis watch {store.where('k')}"
        assert any(t.name == name and t.is_alive() for t in threading.enumerate())
        with caplog.at_level(logging.WARNING):
            monkeypatch.setattr(store._conn, "client",  # noqa: SLF001
                                FailingClient(redis.exceptions.ConnectionError("down")))
            wait_for(lambda: store._conn.client.calls >= 3, 30, "three failed polls")  # noqa: SLF001
            monkeypatch.undo()
        failures = [r for r in caplog.records if name in r.getMessage()]
        assert failures and all(r.levelno == logging.WARNING and r.exc_info is None for r in failures)
        assert failures[0].getMessage().startswith(f"{name}: round failed (1 in a row): state ")
        store.put("k", 2)
        wait_for(lambda: seen[-1:] == [2], 30, "the change after Redis came back")
    finally:
        cancel()


def test_the_root_store_lists_the_nodes_below_it(store: RedisStore) -> None:
    root = RedisStore(store.config)
    try:
        root.put("a/b", 1)
        root.write_batch({"c/d": 2})
        assert root.children() == ["a", "c"] and root.get("a") is None
        assert root.children("a") == ["b"] and root.get("c/d") == 2
    finally:
        root.close()


def test_without_redis_py_the_provider_setting_is_refused_with_the_install_hint(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from stormpy.config import SettingError

    real = importlib.import_module

    def no_redis(name: str, *args: Any) -> Any:
        if name == "redis" or name.startswith("redis."):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args)
    monkeypatch.setattr(importlib, "import_module", no_redis)
    with pytest.raises(SettingError) as err:
        RedisStore(RedisConfig())
    assert err.value.setting == "topology.state.provider"
    assert err.value.problem == ("the redis provider needs redis-py: pip install 'stormpy[redis]' "
                                 "(redis-py with hiredis)")


def test_keys_are_laid_out_as_documented(store: RedisStore) -> None:
    """One hash per node, its children's names percent-encoded (encode_segment): the layout
    another reader of the same Redis (another version, a tool) relies on."""
    import redis

    keys = {".": 1, "..": 2, "a=b": 3, "sp ace": 4, "x/y": 5}
    store.put_many(keys)
    store.write_batch({"w.": 6})
    raw = redis.Redis(host=store.config.host, port=store.config.port)
    try:
        own = f"{store.config.prefix}/t"
        assert sorted(raw.hkeys(own)) == sorted(
            [b"%2E", b"%2E%2E", b"a%3Db", b"sp%20ace", b"x", b"w."])
        assert raw.hkeys(f"{own}/x") == [b"y"] and raw.hget(own, "x") == b""
        assert raw.hkeys(store.config.prefix) == [b"t"]
    finally:
        raw.close()


def test_the_pool_settings_reach_the_connection(redis_server: RedisServer) -> None:
    """jedisPoolConfig's host, port, database, password and timeout are the client's; a lost
    connection is retried briefly (twice, backing off from 10 ms up to 100 ms)."""
    store = RedisStore(RedisConfig("10.1.2.3", 6390, 1500, "pw", 2, "p"))
    try:
        assert store.timeout_secs == 1.5
        kwargs = store._conn.client.connection_pool.connection_kwargs  # noqa: SLF001
        assert {k: kwargs[k] for k in ("host", "port", "db", "password", "socket_timeout",
                                      "socket_connect_timeout", "health_check_interval")} == {
            "host": "10.1.2.3", "port": 6390, "db": 2, "password": "pw", "socket_timeout": 1.5,
            "socket_connect_timeout": 1.5, "health_check_interval": 30}
        retry = kwargs["retry"]
        assert (retry._retries, retry._backoff._base, retry._backoff._cap) == (2, 0.01, 0.1)  # noqa: SLF001
    finally:
        store.close()


def test_a_password_protected_redis_takes_the_configured_password() -> None:
    from parts_kit import running_redis

    with running_redis(password="s3cret") as server:
        right = RedisStore(RedisConfig(server.host, server.port, password="s3cret"), ("p",))
        wrong = RedisStore(RedisConfig(server.host, server.port, password="nope"), ("p",))
        try:
            right.put("k", 1)
            assert right.get("k") == 1
            with pytest.raises(StateUnavailableError, match=f"Redis at {server.host}:{server.port} "):
                wrong.get("k")
        finally:
            right.close()
            wrong.close()


def test_a_redis_that_does_not_answer_is_refused_within_the_timeout() -> None:
    """A server that takes the connection and never answers (stopped, overloaded): the call
    fails as unreachable instead of waiting for ever."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        store = RedisStore(RedisConfig("127.0.0.1", port, timeout_ms=100), ("a",))
        try:
            with pytest.raises(StateUnavailableError, match=f"Redis at 127.0.0.1:{port} unreachable"):
                store.get("k")
        finally:
            store.close()
