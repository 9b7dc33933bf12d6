"""The Kinesis spout's settings, records and schemes as a user meets them: each refused setting
named with its value and the exact rule it broke, each bound accepted at its edge and refused one
past it, where the ZooKeeper, its root and the Redis of the checkpoints come from, sequence
numbers ordered as integers, message ids split back exactly, and records turned into exactly the
scheme's values."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.connectors.kinesis import (
    KINESIS_EXTRA,
    CheckpointError,
    DefaultRecordScheme,
    KinesisError,
    KinesisRecord,
    KinesisSpoutConfig,
    KinesisStreamError,
    KinesisUnavailableError,
    message_id,
    parse_message_id,
)
from stormpy.connectors.kinesis._config import _BOUNDS
from stormpy.connectors.kinesis._records import sequence_key
from stormpy.connectors.kinesis._scheme import load_scheme
from stormpy.state._redis_store import RedisConfig

POOL = {"jedisPoolConfig": {"host": "redis.example", "port": 6380}, "keyPrefix": "kin"}


def cfg(**kw: Any) -> KinesisSpoutConfig:
    return KinesisSpoutConfig(**{"name": "clicks", "stream": "events", **kw})


def refusal(**kw: Any) -> str:
    with pytest.raises(SettingError) as err:
        cfg(**kw).validate()
    assert str(err.value) == f"{err.value.setting}: {err.value.problem}"
    return str(err.value)


# --- settings ----------------------------------------------------------------------------------
def test_a_valid_config_validates_to_itself_and_travels_as_its_fields() -> None:
    c = cfg(endpoint_url="http://localhost:4567", region="eu-west-1", zookeeper_servers="zk:2181",
            zookeeper_prefix="/kin", initial_position="LATEST")
    assert c.validate() is c
    doc = c.to_doc()
    assert doc["endpoint_url"] == "http://localhost:4567" and doc["region"] == "eu-west-1"
    assert doc["initial_position"] == "LATEST" and doc["records_per_get"] == 1000
    assert KinesisSpoutConfig.from_doc(doc) == c
    assert cfg(record_scheme=None).validate().record_scheme is None  # type: ignore[arg-type]


@pytest.mark.parametrize(("kw", "message"), [
    ({"name": ""}, "KinesisSpoutConfig.name: must be a non-empty string, got ''"),
    ({"stream": "  "}, "KinesisSpoutConfig.stream: must be a non-empty string, got '  '"),
    ({"name": "a/b"}, "KinesisSpoutConfig.name: 'a/b' must not contain '/'"),
    ({"initial_position": "EARLIEST"},
     "KinesisSpoutConfig.initial_position: 'EARLIEST' must be one of TRIM_HORIZON, LATEST, "
     "AT_TIMESTAMP"),
    ({"initial_position": "AT_TIMESTAMP"},
     "KinesisSpoutConfig.initial_timestamp: must be set exactly when initial_position is "
     "AT_TIMESTAMP"),
    ({"initial_timestamp": 5.0},
     "KinesisSpoutConfig.initial_timestamp: must be set exactly when initial_position is "
     "AT_TIMESTAMP"),
    ({"initial_position": "AT_TIMESTAMP", "initial_timestamp": -1},
     "KinesisSpoutConfig.initial_timestamp: must be a number of seconds since the epoch >= 0, "
     "got -1"),
    ({"endpoint_url": ""}, "KinesisSpoutConfig.endpoint_url: must be a non-empty string, got ''"),
    ({"region": " "}, "KinesisSpoutConfig.region: must be a non-empty string, got ' '"),
    ({"record_scheme": ""}, "KinesisSpoutConfig.record_scheme: must be a non-empty string, got ''"),
    ({"zookeeper_servers": ""},
     "KinesisSpoutConfig.zookeeper_servers: must be 'host:port,...' or a list of 'host:port', "
     "got ''"),
    ({"zookeeper_servers": []},
     "KinesisSpoutConfig.zookeeper_servers: must be 'host:port,...' or a list of 'host:port', "
     "got []"),
    ({"zookeeper_servers": ["zk:1", 2]},
     "KinesisSpoutConfig.zookeeper_servers: must be 'host:port,...' or a list of 'host:port', "
     "got ['zk:1', 2]"),
    ({"zookeeper_servers": 5},
     "KinesisSpoutConfig.zookeeper_servers: must be 'host:port,...' or a list of 'host:port', "
     "got 5"),
    ({"zookeeper_prefix": "kin"},
     "KinesisSpoutConfig.zookeeper_prefix: ZooKeeper root 'kin' must be an absolute path"),
    ({"checkpoint_store": "etcd"},
     "KinesisSpoutConfig.checkpoint_store: 'etcd' must be one of zookeeper, redis"),
    ({"redis_config": POOL},
     "KinesisSpoutConfig.redis_config: given, but checkpoint_store is 'zookeeper', not 'redis'"),
    ({"checkpoint_store": "redis", "redis_config": ["localhost"]},
     "KinesisSpoutConfig.redis_config: must be a map like topology.state.provider.config, got "
     "['localhost']"),
    ({"checkpoint_store": "redis", "redis_config": {"jedisPoolConfig": {"database": -1}}},
     "KinesisSpoutConfig.redis_config: jedisPoolConfig.database must be an index >= 0, got -1"),
])
def test_each_refusal_names_the_setting_its_value_and_the_rule(kw: dict[str, Any],
                                                               message: str) -> None:
    assert refusal(**kw) == message


def test_the_documented_bounds_of_every_integer_setting() -> None:
    assert _BOUNDS == {
        "records_per_get": (1, 10000), "empty_record_sleep_ms": (0, None),
        "checkpoint_interval_ms": (1, None), "max_retries": (0, None),
        "shard_list_refresh_ms": (1, None), "connect_timeout_ms": (1, None),
        "read_timeout_ms": (1, None), "client_retries": (0, 20), "zookeeper_timeout_ms": (1, None),
        "setup_retry_max_ms": (1, None)}


@pytest.mark.parametrize("key", sorted(_BOUNDS))
def test_each_integer_setting_is_taken_at_its_bounds_and_refused_past_them(key: str) -> None:
    low, high = _BOUNDS[key]
    span = f" in {low}..{high}" if high is not None else f" >= {low}"
    assert getattr(cfg(**{key: low}).validate(), key) == low
    assert refusal(**{key: low - 1}) == \
        f"KinesisSpoutConfig.{key}: must be an integer{span}, got {low - 1}"
    if high is not None:
        assert getattr(cfg(**{key: high}).validate(), key) == high
        assert refusal(**{key: high + 1}) == \
            f"KinesisSpoutConfig.{key}: must be an integer{span}, got {high + 1}"
    else:
        assert getattr(cfg(**{key: 10**9}).validate(), key) == 10**9
    assert refusal(**{key: True}) == f"KinesisSpoutConfig.{key}: must be an integer{span}, got True"


def test_accepted_shapes_of_the_optional_settings() -> None:
    at = cfg(initial_position="AT_TIMESTAMP", initial_timestamp=0)
    assert at.validate().initial_timestamp == 0
    assert cfg(zookeeper_servers="zk1:1,zk2:2").validate().zookeeper_servers == "zk1:1,zk2:2"
    assert cfg(zookeeper_servers=["zk1:1"]).validate().zookeeper_servers == ["zk1:1"]
    assert cfg(zookeeper_prefix="/").validate().zookeeper_prefix == "/"
    redis = cfg(checkpoint_store="redis", redis_config=POOL)
    assert redis.validate().redis_config == POOL


def test_zookeeper_servers_and_root_come_from_the_config_else_the_topology() -> None:
    conf = {"storm.zookeeper.servers": ["zk1", "zk2:2182"], "storm.zookeeper.port": 2000,
            "storm.zookeeper.root": "/shared/"}
    assert cfg().zookeeper_connect(conf) == "zk1:2000,zk2:2182"
    assert cfg(zookeeper_servers="own, other:3").zookeeper_connect(conf) == "own:2000,other:3"
    assert cfg().zookeeper_root(conf) == "/shared"
    assert cfg().zookeeper_root({}) == "/stormpy"
    assert cfg(zookeeper_prefix="/kin/").zookeeper_root(conf) == "/kin"
    with pytest.raises(SettingError) as err:
        cfg(zookeeper_servers=" , ").zookeeper_connect(conf)
    assert str(err.value) == "KinesisSpoutConfig.zookeeper_servers: names no ZooKeeper server: ' , '"


def test_the_redis_of_the_checkpoints() -> None:
    own = cfg(checkpoint_store="redis", redis_config=POOL)
    assert own.redis({"topology.state.provider": "memory"}) == \
        RedisConfig("redis.example", 6380, prefix="kin")
    shared = cfg(checkpoint_store="redis")
    assert shared.redis({"topology.state.provider": "redis"}) == RedisConfig()
    assert shared.redis({"topology.state.provider": "redis",
                         "topology.state.provider.config": POOL}) == \
        RedisConfig("redis.example", 6380, prefix="kin")
    with pytest.raises(SettingError) as err:
        shared.redis({})
    assert str(err.value) == (
        "KinesisSpoutConfig.redis_config: not given, and the topology's topology.state.provider "
        "is 'memory', not redis: name the Redis of the checkpoints")
    bad = KinesisSpoutConfig.__new__(KinesisSpoutConfig)
    object.__setattr__(bad, "redis_config", {"jedisPoolConfig": {"port": 0}})
    with pytest.raises(SettingError) as err:
        bad.redis({})
    assert err.value.setting == "KinesisSpoutConfig.redis_config"


# --- records and message ids -----------------------------------------------------------------
def test_sequence_numbers_are_integers_and_bad_ones_are_named() -> None:
    assert sequence_key("9") < sequence_key("10")
    assert sequence_key("0") == 0 and sequence_key(0) == 0 and sequence_key(12) == 12
    big = "4" * 56
    assert sequence_key(big) == int(big)
    for bad, why in ((-1, "is negative"), ("-1", "is not a decimal number"),
                     ("", "is not a decimal number"), ("1.5", "is not a decimal number"),
                     ("\u0663", "is not a decimal number"), (True, "is not a decimal number"),
                     (None, "is not a decimal number"), (1.0, "is not a decimal number")):
        with pytest.raises(ValueError) as err:
            sequence_key(bad)  # type: ignore[arg-type]
        assert str(err.value) == f"sequence number {bad!r} {why}"


def test_message_ids_name_shard_and_sequence_number() -> None:
    assert message_id("shardId-000000000001", "49590") == "shardId-000000000001:49590"
    assert parse_message_id("a:b:17") == ("a:b", "17")
    for bad in ("shard:", ":12", "12", None, "shard:1x"):
        with pytest.raises(ValueError) as err:
            parse_message_id(bad)
        assert str(err.value) == (f"message id {bad!r} is not of the form "
                                  "'<shard-id>:<sequence-number>'")


def test_a_record_keeps_what_kinesis_returned() -> None:
    r = KinesisRecord("s0", "7", "key", b"data")
    assert (r.shard_id, r.sequence_number, r.partition_key, r.data, r.arrival) == \
        ("s0", "7", "key", b"data", None)


# --- schemes -----------------------------------------------------------------------------------
class NoFields:
    fields: list[str] = []

    def deserialize(self, record: KinesisRecord) -> list[Any]:
        return [record.data]


class NotNames:
    fields = ["ok", 3]

    def deserialize(self, record: KinesisRecord) -> list[Any]:
        return [record.data]


class FieldsString:
    fields = "data"

    def deserialize(self, record: KinesisRecord) -> list[Any]:
        return [record.data]


class TupleFields:
    fields = ("key", "data")

    def deserialize(self, record: KinesisRecord) -> list[Any]:
        return [record.partition_key, record.data]


class FieldsMissing:
    def deserialize(self, record: KinesisRecord) -> list[Any]:
        return [record.data]


class NoDeserialize:
    fields = ["data"]
    deserialize = None


def test_the_default_scheme_emits_key_sequence_number_and_data() -> None:
    scheme = load_scheme("stormpy.connectors.kinesis:DefaultRecordScheme")
    assert isinstance(scheme, DefaultRecordScheme)
    assert scheme.fields == ["partition_key", "sequence_number", "data"]
    assert scheme.deserialize(KinesisRecord("s0", "42", "user-1", b"\x00x")) == \
        ["user-1", "42", b"\x00x"]


def test_a_scheme_is_built_from_its_path_and_a_bad_one_named() -> None:
    assert load_scheme(f"{__name__}:TupleFields").fields == ("key", "data")
    cases = {
        "no.such.module:Scheme": "cannot be imported",
        f"{__name__}:NoFields": "must have a non-empty 'fields' list of names",
        f"{__name__}:NotNames": "must have a non-empty 'fields' list of names",
        f"{__name__}:FieldsString": "must have a non-empty 'fields' list of names",
        f"{__name__}:FieldsMissing": "must have a non-empty 'fields' list of names",
        f"{__name__}:NoDeserialize": "is not a class with a deserialize(record) method",
        f"{__name__}:POOL": "is not a class with a deserialize(record) method",
    }
    for path, why in cases.items():
        with pytest.raises(SettingError) as err:
            load_scheme(path)
        assert err.value.setting == "KinesisSpoutConfig.record_scheme"
        assert err.value.problem.startswith(f"{path!r} {why}"), err.value.problem
    with pytest.raises(SettingError) as err:
        load_scheme("no.such.module:Scheme")
    assert "No module named 'no'" in err.value.problem


# --- errors ------------------------------------------------------------------------------------
def test_the_error_kinds_and_the_extra_they_name() -> None:
    assert KINESIS_EXTRA == "pip install 'stormpy-runtime[kinesis]'"
    for kind in (KinesisUnavailableError, KinesisStreamError, CheckpointError):
        assert issubclass(kind, KinesisError)
    assert issubclass(KinesisError, RuntimeError)
