"""The Redis state provider against a real ``redis-server``: a stateful word count on it is exact
despite failures and replays, and stays exact when Redis is killed and restarted mid-run (the
inputs that met the dead Redis are failed and replayed, none acked); an unreachable or full Redis
is an error naming the provider, the address and the key; ``stormpy dev-redis``'s runner serves
and keeps its data across restarts."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_state import ReplayingSpout, _Log, word_count
from trident_kit import FAILS, FailOnWord, forget

from parts_kit import fresh_redis_store, running_redis
from stormpy.config import SettingError
from stormpy.host.ports import free_port
from stormpy.local._redis_server import RedisServer, run_dev_redis
from stormpy.state import KeyValueState
from stormpy.state._redis_store import RedisConfig, RedisStore, open_redis_store, redis_config
from stormpy.testing import LocalCluster, wait_for
from stormpy.testing import _registry as registry
from stormpy.topology._state import StateUnavailableError
from stormpy.trident import (
    NON_TRANSACTIONAL,
    OPAQUE,
    TRANSACTIONAL,
    Count,
    FixedBatchSpout,
    MapState,
    StateFactory,
    TridentTopology,
)


def redis_counts(server: RedisServer, prefix: str, name: str) -> Counter[str]:
    """The committed counts of every ``count`` task of topology ``name``."""
    store = RedisStore(RedisConfig(server.host, server.port, prefix=prefix), (name,))
    total: Counter[str] = Counter()
    try:
        for task in store.children():
            if task.startswith("count-"):
                total.update(dict(KeyValueState(store.sub(task)).items()))
    finally:
        store.close()
    return total


def conf_for(server: RedisServer, prefix: str) -> dict[str, Any]:
    return {"topology.state.checkpoint.interval.ms": 50, "topology.message.timeout.secs": 10,
            "topology.state.provider": "org.apache.storm.redis.state.RedisKeyValueStateProvider",
            "topology.state.provider.config": server.provider_config(prefix),
            "topology.state.cache.max.keys": 10}


def test_a_stateful_word_count_on_redis_is_exact_despite_failures_and_replays(
        redis_server: RedisServer) -> None:
    words = [f"W{i % 37}" for i in range(600)]
    log = _Log(words)
    key = registry.register(log)
    try:
        with LocalCluster() as lc:
            lc.submit_topology("wc", conf_for(redis_server, "wc-exact"), word_count(key))
            lc.wait_for(lambda: len(log.acked) == len(words), 60, "every word acked")
    finally:
        registry.unregister(key)
    assert log.failed > 0  # replays happened
    assert redis_counts(redis_server, "wc-exact", "wc") == Counter(w.lower() for w in words)


class GatedLog(_Log):
    """The words, of which the spout emits only the first ``allowed`` (raised by the test)."""

    allowed = 0


class GatedSpout(ReplayingSpout):
    """Emits (and replays) only the words below the log's ``allowed``."""

    def next_tuple(self) -> None:
        allowed = self.log.allowed  # type: ignore[attr-defined]
        for n, i in enumerate(self.todo):
            if i < allowed:
                del self.todo[n]
                self.emit([self.log.words[i]], msg_id=i)
                return


def gated_word_count(key: str) -> Any:
    spec = word_count(key)
    spec.components["words"].class_path = f"{__name__}.GatedSpout"
    return spec


def test_redis_killed_and_restarted_mid_run_fails_inputs_and_ends_exact(tmp_path: Path) -> None:
    words = [f"W{i % 37}" for i in range(900)]
    log = GatedLog(words)
    key = registry.register(log)
    try:
        with running_redis(data_dir=tmp_path / "redis", persistent=True) as server, \
                LocalCluster() as lc:
            lc.submit_topology("wc", conf_for(server, "wc-restart"), gated_word_count(key))
            log.allowed = 300
            lc.wait_for(lambda: len(log.acked) == 300, 60, "the first 300 words acked")
            failed_before = log.failed
            server.kill()  # SIGKILL: what it acknowledged is in its append-only file
            log.allowed = 600
            lc.wait_for(lambda: log.failed > failed_before + 50, 60,
                        "inputs failed while Redis is down")
            assert len(log.acked) == 300, "nothing is acked while the state cannot be committed"
            server.start()  # same port, same data
            log.allowed = len(words)
            lc.wait_for(lambda: len(log.acked) == len(words), 120, "every word acked")
            counts = redis_counts(server, "wc-restart", "wc")
    finally:
        registry.unregister(key)
    assert counts == Counter(w.lower() for w in words)


def test_an_unreachable_redis_is_named_by_provider_address_and_key() -> None:
    port = free_port()
    pool = {"host": "127.0.0.1", "port": port, "timeout": 500}
    store = RedisStore(redis_config({"jedisPoolConfig": pool, "keyPrefix": "gone"}), ("wc", "count-3"))
    try:
        with pytest.raises(StateUnavailableError) as err:
            store.get("meta")
        assert err.value.path == f"redis 127.0.0.1:{port} db 0 at gone/wc/count-3/meta"
        assert f"Redis at 127.0.0.1:{port} unreachable (provider redis)" in err.value.problem
        assert store.available() is False
    finally:
        store.close()


def test_a_full_redis_is_an_unavailable_store_and_nothing_half_written() -> None:
    with running_redis(maxmemory="3mb") as server:
        store = fresh_redis_store(server, "full")
        try:
            with pytest.raises(StateUnavailableError) as err:
                for i in range(100):
                    store.put_many({f"k{i}-{j}": "x" * 1000 for j in range(100)})
            assert "out of memory (provider redis)" in err.value.problem
            assert err.value.path == store.location
            assert store.available()
            written = store.count()
            assert written % 100 == 1 or written % 100 == 0  # whole batches (and maybe a marker)
        finally:
            store.close()


def _dev_redis_round(port: int, data: Path, lines: list[str],
                     use: Any) -> None:
    """Run ``run_dev_redis`` in a thread, ``use`` a store on it, stop it; exit status 0."""
    stop = threading.Event()
    ready: list[RedisServer] = []
    result: list[int] = []
    runner = threading.Thread(target=lambda: result.append(run_dev_redis(
        port, data, echo=lines.append, stop_event=stop, on_ready=ready.append)))
    runner.start()
    try:
        wait_for(lambda: bool(ready) or not runner.is_alive(), 60, "dev Redis serving")
        assert ready, lines
        store = RedisStore(redis_config(ready[0].provider_config("dev")), ("t",))
        try:
            use(store)
        finally:
            store.close()
    finally:
        stop.set()
        runner.join(30)
    assert result == [0]


def test_dev_redis_serves_until_stopped_and_keeps_its_data(tmp_path: Path) -> None:
    lines: list[str] = []
    port = free_port()
    _dev_redis_round(port, tmp_path / "dev-redis", lines, lambda s: s.put("kept", 42))
    assert f"Redis serving on 127.0.0.1:{port}" in lines[0]
    assert '"jedisPoolConfig"' in lines[0]
    _dev_redis_round(port, tmp_path / "dev-redis", lines,
                     lambda s: (assert_equal(s.get("kept"), 42)))


def assert_equal(got: Any, expected: Any) -> None:
    assert got == expected


# -- Trident map states on Redis (Storm's RedisMapState) -----------------------------------------
def redis_trident_counts(config: dict[str, Any], kind: str) -> dict[str, int]:
    state = MapState(open_redis_store(redis_config(config), "counts"), kind)
    try:
        return {key[0]: value for key, value in state.items()}
    finally:
        state.close()


TRIDENT_WORDS = [["apple"], ["pear"], ["apple"], ["fig"], ["boom"], ["pear"], ["apple"], ["fig"],
                 ["kiwi"], ["apple"], ["pear"], ["fig"]]


@pytest.mark.parametrize("kind, twice", [
    (TRANSACTIONAL, []), (OPAQUE, []), (NON_TRANSACTIONAL, ["boom", "pear", "apple", "fig"])])
def test_a_trident_word_count_on_redis_map_state_replays_by_its_kind(
        redis_server: RedisServer, kind: str, twice: list[str]) -> None:
    """The batch holding ``boom`` fails once after its state update: applied once by
    transactional and opaque state, twice by non-transactional state (as Storm's)."""
    forget()
    config = redis_server.provider_config(f"trident-{kind}")
    t = TridentTopology()
    t.new_stream("words", FixedBatchSpout(["word"], 4, TRIDENT_WORDS)).group_by(["word"]) \
        .persistent_aggregate(StateFactory.redis("counts", kind, config), Count(), ["count"]) \
        .new_values_stream().filter(FailOnWord(f"redis-{kind}", "boom"))
    with LocalCluster() as cluster:
        cluster.submit_topology("fail", {"topology.max.spout.pending": 1}, t.build())
        cluster.wait_for(lambda: redis_trident_counts(config, kind).get("kiwi") == 1, 60,
                         "the last batch")
        cluster.wait_until_quiet("fail")
    assert FAILS[f"redis-{kind}"] == 1
    exact = Counter(w for (w,) in TRIDENT_WORDS) + Counter(twice)
    assert redis_trident_counts(config, kind) == dict(exact)


def test_trident_redis_state_takes_the_topologys_provider_config(redis_server: RedisServer) -> None:
    factory = StateFactory.redis("words", OPAQUE)
    assert StateFactory.from_doc(factory.doc()).key == factory.key
    conf = {"topology.state.provider": "redis",
            "topology.state.provider.config": redis_server.provider_config("trident-conf")}
    state = factory.make_state(conf, None)
    try:
        state.begin_commit(1)
        state.multi_update([["a"], ["b"]], [lambda old: 1, lambda old: 2])
        state.commit(1)
        assert state.multi_get([["b"], ["a"], ["c"]]) == [2, 1, None]
        assert state.store.location.endswith("at trident-conf/words")
    finally:
        state.close()
    with pytest.raises(SettingError) as err:
        StateFactory.redis("words", OPAQUE, {"jedisPoolConfig": {"port": "x"}})
    assert err.value.setting == "trident state config"


# -- transactional topologies with their coordinator state in Redis -----------------------------
def test_a_transactional_topology_keeps_its_coordinator_state_in_redis(
        redis_server: RedisServer, tmp_path: Path) -> None:
    import transactional_global_count as global_count
    from stormpy.transactional import SqliteState

    db = tmp_path / "count.sqlite"
    conf = {"topology.max.spout.pending": 3, "transactional.store": "redis",
            "topology.state.provider.config": redis_server.provider_config("tx-coord")}

    def stored() -> int | None:
        if not db.exists():
            return None
        state = SqliteState(db)
        try:
            value = state.get(global_count.GLOBAL_COUNT_KEY)
        finally:
            state.close()
        return None if value is None else value.value

    with LocalCluster() as cluster:
        cluster.submit_topology("gc", conf, global_count.build(60, str(db), 7).create_topology())
        cluster.wait_for(lambda: stored() == 60, 90, "the count to reach 60")
        cluster.wait_until_quiet("gc")
    coordinator = RedisStore(redis_config(conf["topology.state.provider.config"]),
                             ("transactional", "tx:global-count"))
    try:
        assert coordinator.children(), "the coordinator's state is in Redis"
    finally:
        coordinator.close()


def test_stormpy_dev_redis_is_a_command() -> None:
    from click.testing import CliRunner

    from stormpy.cli.main import cli

    result = CliRunner().invoke(cli, ["dev-redis", "--help"])
    assert result.exit_code == 0, result.output
    assert "--port" in result.output and "--data-dir" in result.output
