"""KinesisSpoutConfig: every setting of the Kinesis spout, as plain data.

A settings class in the one style of :mod:`stormpy._settings`: ``validate()`` raises a
:class:`~stormpy.config.SettingError` naming the setting (``KinesisSpoutConfig.records_per_get:
...``). A topology carries component arguments as msgpack, so the config travels as the plain
dict of ``to_doc()`` (which validates) and is rebuilt and validated with ``from_doc()`` on the
worker; the record scheme is therefore an import path, not an object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from stormpy._settings import check_int, check_number, check_text, settings_from_doc
from stormpy.cluster.paths import normalize_root
from stormpy.cluster.zk_hosts import hosts_from_config
from stormpy.config import SettingError, setting
from stormpy.state._redis_store import RedisConfig, redis_config

#: where the checkpoints and the shard list live (``checkpoint_store``)
CHECKPOINT_STORES = ("zookeeper", "redis")

INITIAL_POSITIONS = ("TRIM_HORIZON", "LATEST", "AT_TIMESTAMP")
DEFAULT_SCHEME = "stormpy.connectors.kinesis:DefaultRecordScheme"
#: the integer settings and their bounds (None: unbounded)
_BOUNDS: dict[str, tuple[int, int | None]] = {
    "records_per_get": (1, 10000), "empty_record_sleep_ms": (0, None),
    "checkpoint_interval_ms": (1, None), "max_retries": (0, None), "shard_list_refresh_ms": (1, None),
    "connect_timeout_ms": (1, None), "read_timeout_ms": (1, None), "client_retries": (0, 20),
    "zookeeper_timeout_ms": (1, None), "setup_retry_max_ms": (1, None)}


@dataclass(frozen=True)
class KinesisSpoutConfig:
    """Settings of one Kinesis spout.

    ``name`` names this spout's state in ZooKeeper (checkpoints and shard list under
    ``<zookeeper_prefix>/checkpoints/<name>/<stream>/``): keep it stable across topology restarts
    to resume, and unique per consumer of the stream.

    * ``endpoint_url``/``region``: the Kinesis API endpoint (``None``: boto3's default for the
      region) and region (``None``: boto3's chain, e.g. ``AWS_DEFAULT_REGION``). Credentials come
      from boto3's usual chain.
    * ``initial_position``: where a shard without checkpoint starts: ``TRIM_HORIZON`` (oldest
      record), ``LATEST`` or ``AT_TIMESTAMP`` (``initial_timestamp``, seconds since the epoch).
    * ``record_scheme``: import path of a record scheme class (``fields`` and
      ``deserialize(record) -> values``); the default emits ``partition_key, sequence_number, data``.
    * ``records_per_get``: the batch size of one GetRecords call (1..10000).
    * ``empty_record_sleep_ms``: how long a shard is not polled after an empty GetRecords.
    * ``checkpoint_interval_ms``: how often changed checkpoints are written to ZooKeeper.
    * ``max_retries``: re-emissions of a failed record before it is given up on (0: no replay).
    * ``zookeeper_servers``: ``"host:port,..."`` or a list; ``None``: the topology's
      ``storm.zookeeper.servers``/``storm.zookeeper.port``. ``zookeeper_prefix``: the root
      (``None``: ``storm.zookeeper.root``, default ``/stormpy``).
    * ``shard_list_refresh_ms``: how often the shard list is refreshed from ListShards.
    * ``connect_timeout_ms``/``read_timeout_ms``/``client_retries``: bounds of one Kinesis call.
    * ``zookeeper_timeout_ms``: how long one attempt to connect to ZooKeeper waits.
    * ``setup_retry_max_ms``: the longest wait between attempts to set the spout up (connect to
      Kinesis and ZooKeeper, load the shard list) after a failure; the first wait is 0.5 s.
    * ``checkpoint_store``: ``"zookeeper"`` (the default: the settings above) or ``"redis"``:
      the checkpoints and shard list in Redis, a hash ``<keyPrefix>/checkpoints/kinesis:<name>/
      <stream>`` with one field per shard, through the state layer's Redis backend.
      ``redis_config``: where, in the shape of ``topology.state.provider.config`` for the
      ``redis`` provider (``{"jedisPoolConfig": {"host", "port", "timeout", "password",
      "database"}, "keyPrefix": ...}``); ``None``: the topology's own provider config (the
      topology's ``topology.state.provider`` must then be ``redis``).
    """

    name: str
    stream: str
    endpoint_url: str | None = None
    region: str | None = None
    initial_position: str = "TRIM_HORIZON"
    initial_timestamp: float | None = None
    record_scheme: str = DEFAULT_SCHEME
    records_per_get: int = 1000
    empty_record_sleep_ms: int = 500
    checkpoint_interval_ms: int = 5000
    max_retries: int = 3
    zookeeper_servers: str | list[str] | None = None
    zookeeper_prefix: str | None = None
    shard_list_refresh_ms: int = 30000
    connect_timeout_ms: int = 2000
    read_timeout_ms: int = 5000
    client_retries: int = 2
    zookeeper_timeout_ms: int = 10000
    setup_retry_max_ms: int = 30000
    checkpoint_store: str = "zookeeper"
    redis_config: dict[str, Any] | None = None

    def validate(self) -> KinesisSpoutConfig:
        """Self, or SettingError naming the first bad setting."""
        name = "KinesisSpoutConfig."
        for key in ("name", "stream"):
            check_text(name + key, getattr(self, key))
        if "/" in self.name:
            raise SettingError(name + "name", f"{self.name!r} must not contain '/'")
        if self.initial_position not in INITIAL_POSITIONS:
            raise SettingError(name + "initial_position", f"{self.initial_position!r} must be one "
                                                          f"of {', '.join(INITIAL_POSITIONS)}")
        if (self.initial_position == "AT_TIMESTAMP") != (self.initial_timestamp is not None):
            raise SettingError(name + "initial_timestamp",
                               "must be set exactly when initial_position is AT_TIMESTAMP")
        if self.initial_timestamp is not None:
            check_number(name + "initial_timestamp", self.initial_timestamp, 0,
                         unit="seconds since the epoch")
        for key, (low, high) in _BOUNDS.items():
            check_int(name + key, getattr(self, key), low, high)
        for key in ("endpoint_url", "region", "record_scheme"):
            if getattr(self, key) is not None:
                check_text(name + key, getattr(self, key))
        servers = self.zookeeper_servers
        if servers is not None and not (
                (isinstance(servers, str) and servers)
                or (isinstance(servers, list) and servers and all(isinstance(s, str) for s in servers))):
            raise SettingError(name + "zookeeper_servers",
                               f"must be 'host:port,...' or a list of 'host:port', got {servers!r}")
        if self.zookeeper_prefix is not None:
            try:
                normalize_root(self.zookeeper_prefix)
            except ValueError as exc:
                raise SettingError(name + "zookeeper_prefix", str(exc)) from None
        if self.checkpoint_store not in CHECKPOINT_STORES:
            raise SettingError(name + "checkpoint_store", f"{self.checkpoint_store!r} must be one "
                                                          f"of {', '.join(CHECKPOINT_STORES)}")
        if self.redis_config is not None:
            if self.checkpoint_store != "redis":
                raise SettingError(name + "redis_config", "given, but checkpoint_store is "
                                                          f"{self.checkpoint_store!r}, not 'redis'")
            if not isinstance(self.redis_config, Mapping):
                raise SettingError(name + "redis_config",
                                   f"must be a map like topology.state.provider.config, got "
                                   f"{self.redis_config!r}")
            redis_config(self.redis_config, name + "redis_config")
        return self

    def to_doc(self) -> dict[str, Any]:
        """The validated settings as plain data msgpack can carry (the spout's constructor
        argument)."""
        return asdict(self.validate())

    @classmethod
    def from_doc(cls, doc: Any) -> KinesisSpoutConfig:
        """Rebuild and validate a config from ``to_doc()`` output (or a hand-written mapping)."""
        return settings_from_doc(cls, doc)

    def zookeeper_connect(self, conf: Mapping[str, Any]) -> str:
        """The ZooKeeper connect string: this config's servers, else the topology's
        ``storm.zookeeper.servers``; a server without a port gets ``storm.zookeeper.port``."""
        return hosts_from_config(conf, servers=self.zookeeper_servers,
                                 servers_setting="KinesisSpoutConfig.zookeeper_servers")

    def redis(self, conf: Mapping[str, Any]) -> RedisConfig:
        """Where a ``checkpoint_store: redis`` spout keeps its checkpoints: ``redis_config``,
        else the topology's provider config; SettingError naming the setting when neither
        names a Redis."""
        if self.redis_config is not None:
            return redis_config(self.redis_config, "KinesisSpoutConfig.redis_config")
        provider = setting(conf, "topology.state.provider")
        if provider not in ("redis", "org.apache.storm.redis.state.RedisKeyValueStateProvider"):
            raise SettingError("KinesisSpoutConfig.redis_config",
                               "not given, and the topology's topology.state.provider is "
                               f"{provider!r}, not redis: name the Redis of the checkpoints")
        return redis_config(setting(conf, "topology.state.provider.config") or {})

    def zookeeper_root(self, conf: Mapping[str, Any]) -> str:
        """The ZooKeeper root: this config's prefix, else the topology's ``storm.zookeeper.root``."""
        return normalize_root(self.zookeeper_prefix or setting(conf, "storm.zookeeper.root"))
