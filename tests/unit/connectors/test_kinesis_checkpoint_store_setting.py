"""KinesisSpoutConfig's checkpoint_store / redis_config: validated with errors naming the
setting; where a ``redis`` spout's checkpoints live (its own config, else the topology's Redis
state provider, else an error naming what to set)."""

from __future__ import annotations

import pytest

from stormpy.config import SettingError
from stormpy.connectors.kinesis import KinesisSpoutConfig
from stormpy.state._redis_store import RedisConfig

POOL = {"jedisPoolConfig": {"host": "redis.example", "port": 6380}, "keyPrefix": "kin"}


def config(**overrides: object) -> KinesisSpoutConfig:
    return KinesisSpoutConfig(name="clicks", stream="s", **overrides)  # type: ignore[arg-type]


def test_zookeeper_is_the_default_and_the_setting_round_trips() -> None:
    assert config().validate().checkpoint_store == "zookeeper"
    doc = config(checkpoint_store="redis", redis_config=POOL).to_doc()
    assert KinesisSpoutConfig.from_doc(doc).redis_config == POOL


@pytest.mark.parametrize(("overrides", "match"), [
    ({"checkpoint_store": "etcd"}, r"KinesisSpoutConfig.checkpoint_store: 'etcd' must be one of "
                                   r"zookeeper, redis"),
    ({"redis_config": POOL}, r"KinesisSpoutConfig.redis_config: given, but checkpoint_store is "
                             r"'zookeeper'"),
    ({"checkpoint_store": "redis", "redis_config": {"jedisPoolConfig": {"port": "x"}}},
     r"KinesisSpoutConfig.redis_config: jedisPoolConfig.port must be a TCP port"),
    ({"checkpoint_store": "redis", "redis_config": ["localhost"]},
     r"KinesisSpoutConfig.redis_config: must be a map"),
])
def test_bad_settings_are_named(overrides: dict[str, object], match: str) -> None:
    with pytest.raises(SettingError, match=match):
        config(**overrides).validate()


def test_the_redis_comes_from_the_spout_else_from_the_topologys_state_provider() -> None:
    own = config(checkpoint_store="redis", redis_config=POOL)
    assert own.redis({}) == RedisConfig("redis.example", 6380, prefix="kin")
    shared = config(checkpoint_store="redis")
    topology = {"topology.state.provider": "org.apache.storm.redis.state.RedisKeyValueStateProvider",
                "topology.state.provider.config": POOL}
    assert shared.redis(topology) == RedisConfig("redis.example", 6380, prefix="kin")
    with pytest.raises(SettingError, match=r"KinesisSpoutConfig.redis_config: not given, and the "
                                           r"topology's topology.state.provider is 'memory'"):
        shared.redis({"topology.state.provider": "memory"})
