"""The state provider's settings (stormpy.config.state) at their edges: what each reader takes,
its defaults, and the error naming the key and entry for each bad value."""

from __future__ import annotations

from typing import Any

import pytest

from stormpy.config import SettingError
from stormpy.config.state import check_state_provider, positive_number, redis_config


@pytest.mark.parametrize(("value", "read"), [(None, 7.5), ("", 7.5), (0, 7.5), (0.0, 7.5), (3, 3.0),
                                             (0.25, 0.25)])
def test_a_positive_number_or_the_default_when_unset(value: Any, read: float) -> None:
    got = positive_number("my.key", value, 7.5)
    assert got == read and type(got) is float


@pytest.mark.parametrize("value", [-1, -0.5, False, True, "3", [1], float("nan")])
def test_anything_else_is_refused_naming_the_setting(value: Any) -> None:
    with pytest.raises(SettingError) as refused:
        positive_number("my.key", value, 7.5)
    assert str(refused.value) == f"my.key: must be a positive number, got {value!r}"


PROVIDER = "topology.state.provider"
CONFIG = "topology.state.provider.config"


def refused(conf: dict[str, Any]) -> SettingError:
    with pytest.raises(SettingError) as err:
        check_state_provider(conf)
    return err.value


def zookeeper(**config: Any) -> dict[str, Any]:
    return {PROVIDER: "zookeeper", CONFIG: {"servers": ["zk1"], **config}}


def test_a_zookeeper_port_is_a_number_in_1_to_65535_or_unset() -> None:
    for port in (1, 65535, "2181", None, ""):
        assert check_state_provider(zookeeper(port=port))[0] == "zookeeper"
    for port in (0, 65536, "x", True, "0"):
        err = refused(zookeeper(port=port))
        assert str(err) == f"{CONFIG} port: must be a port number in 1..65535, got {port!r}"


@pytest.mark.parametrize("servers", [" , ", ",", [" "], 5])
def test_zookeeper_servers_must_name_a_host(servers: Any) -> None:
    err = refused(zookeeper(servers=servers))
    assert str(err) == (f"{CONFIG} servers: must name ZooKeeper servers (a host, 'h1,h2' or a list "
                        f"of hosts), got {servers!r}")


def test_zookeeper_servers_may_be_one_string_of_hosts() -> None:
    assert check_state_provider(zookeeper(servers="zk1, ,zk2"))[0] == "zookeeper"


def test_a_storm_class_name_stormpy_does_not_know_is_refused_listing_the_ones_it_knows() -> None:
    err = refused({PROVIDER: "org.apache.storm.state.Other"})
    assert str(err) == (
        f"{PROVIDER}: must be one of memory, sqlite, zookeeper, redis or the import path of a "
        "factory (conf, namespace) -> store, got 'org.apache.storm.state.Other' (Storm's class "
        "names stormpy knows: org.apache.storm.redis.state.RedisKeyValueStateProvider, "
        "org.apache.storm.state.InMemoryKeyValueStateProvider)")


def test_a_redis_port_is_a_tcp_port() -> None:
    for port in (1, 65535):
        assert redis_config({"jedisPoolConfig": {"host": "r", "port": port}}).port == port
    for port in (0, 65536, -1, "6379", True):
        with pytest.raises(SettingError) as err:
            redis_config({"jedisPoolConfig": {"host": "r", "port": port}})
        assert str(err.value) == f"{CONFIG}: jedisPoolConfig.port must be a TCP port, got {port!r}"


def test_a_redis_timeout_is_positive_and_whole_milliseconds_rounded_up() -> None:
    for timeout, ms in ((0.5, 1), (1, 1), (1500.2, 1501), (2000.0, 2000)):
        got = redis_config({"jedisPoolConfig": {"host": "r", "timeout": timeout}}).timeout_ms
        assert got == ms and type(got) is int
    for timeout in (0, -0.5, "100", False):
        with pytest.raises(SettingError) as err:
            redis_config({"jedisPoolConfig": {"host": "r", "timeout": timeout}}, "my.key")
        assert str(err.value) == ("my.key: jedisPoolConfig.timeout must be a positive number of ms, "
                                  f"got {timeout!r}")


def test_a_redis_password_is_a_string_and_an_empty_one_is_none() -> None:
    assert redis_config({"jedisPoolConfig": {"host": "r", "password": "pw"}}).password == "pw"
    assert redis_config({"jedisPoolConfig": {"host": "r", "password": ""}}).password is None
    with pytest.raises(SettingError) as err:
        redis_config({"jedisPoolConfig": {"host": "r", "password": 1234}})
    assert str(err.value) == f"{CONFIG}: jedisPoolConfig.password must be a string"


def test_a_redis_pool_config_must_name_its_host() -> None:
    with pytest.raises(SettingError) as err:
        redis_config({"jedisPoolConfig": {"port": 6380}})
    assert str(err.value) == (f"{CONFIG}: jedisPoolConfig names no host: give the Redis server's "
                              "host (or leave jedisPoolConfig out for 127.0.0.1:6379)")
    assert redis_config({}).address == "127.0.0.1:6379"
