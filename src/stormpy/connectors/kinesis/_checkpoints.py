"""Where a Kinesis spout keeps its shard list and per-shard checkpoints: a store of the state
layer (:mod:`stormpy.state`), named by the spout's config name so it outlives topologies.

``CheckpointStore`` is the small interface the spout needs; :class:`StateCheckpointStore`
implements it on a store of the state layer, in the layout of :mod:`stormpy.cluster.paths` (a
connector's own state, ``ZkPaths.connector_checkpoints``)::

    <root>/checkpoints/kinesis:<spout-config-name>/<stream>                the shard list
    <root>/checkpoints/kinesis:<spout-config-name>/<stream>/<shard-id>     the checkpoint

The ``kinesis:`` prefix keeps these apart from ``checkpoints/<topology-id>``, which a topology's
kill removes: a config name equal to some topology id cannot lose its checkpoints. The store is
the topology's state backend (``context.state_backend.named_store("checkpoints", "kinesis",
name)``: the cluster's ZooKeeper on a cluster, the LocalCluster's own memory in local mode) unless
the config names ZooKeeper servers or a root of its own (:meth:`ZkCheckpointStore.connect`, on a
ZkStorage of its own), or ``checkpoint_store: redis`` (:meth:`StateCheckpointStore.on_redis`:
the same layout in Redis, below its key prefix; the shard list is watched by polling).

A checkpoint is ``{"sequence_number": "<seq>" or null, "shard_end": bool}`` (a state document of
:func:`~stormpy.topology._state.encode_state`): every record of the shard up to
``sequence_number`` is done, and ``shard_end`` says the shard (closed by resharding) was read to
its end and every record of it is done. Writes never move a stored checkpoint backwards (the
store's compare-and-set, ``update``), whichever task writes. A node holding anything else is a
CheckpointError naming its path, never a silent restart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from stormpy.cluster import paths
from stormpy.connectors.kinesis._client import ShardInfo
from stormpy.connectors.kinesis._errors import CheckpointError
from stormpy.connectors.kinesis._records import sequence_key
from stormpy.state._base import Store
from stormpy.state._redis_store import RedisConfig, open_redis_store
from stormpy.state._zookeeper import ZkStore, open_zk_store
from stormpy.topology._state import (
    CHECKPOINTS,
    CorruptStateError,
    StateBackend,
    StateStoreError,
    StateUnavailableError,
    decode_state,
    encode_state,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: the connector segment of the checkpoint paths (``checkpoints/kinesis:<name>/...``)
CONNECTOR = "kinesis"


@dataclass(frozen=True)
class Checkpoint:
    """Progress of one shard (see the module docstring)."""

    sequence_number: str | None
    shard_end: bool = False

    def ahead_of(self, other: Checkpoint | None) -> bool:
        """True when this checkpoint is further along than ``other``."""
        if other is None:
            return self.sequence_number is not None or self.shard_end
        mine = sequence_key(self.sequence_number) if self.sequence_number is not None else -1
        theirs = sequence_key(other.sequence_number) if other.sequence_number is not None else -1
        return mine > theirs or (mine == theirs and self.shard_end and not other.shard_end)

    def to_doc(self) -> dict[str, Any]:
        return {"sequence_number": self.sequence_number, "shard_end": self.shard_end}

    def encode(self) -> bytes:
        """The stored bytes (a state document)."""
        return encode_state("checkpoint", self.to_doc())

    @classmethod
    def decode(cls, data: bytes, path: str) -> Checkpoint:
        """Parse stored bytes; CheckpointError naming ``path`` when they are not a checkpoint."""
        try:
            doc = decode_state(path, data)
        except CorruptStateError as exc:
            raise CheckpointError(f"corrupt Kinesis checkpoint at {path}: {data[:80]!r} "
                                  f"({exc.problem}); fix or delete the node (deleting it restarts "
                                  "the shard at initial_position)") from None
        return cls.from_doc(doc, path)

    @classmethod
    def from_doc(cls, doc: Any, path: str) -> Checkpoint:
        """A stored checkpoint value; CheckpointError naming ``path`` when it is not one."""
        try:
            seq = doc["sequence_number"]
            end = doc.get("shard_end", False)
            if seq is not None:
                sequence_key(seq)
            if not isinstance(end, bool) or (seq is not None and not isinstance(seq, str)):
                raise ValueError("bad field types")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CheckpointError(
                f"corrupt Kinesis checkpoint at {path}: {str(doc)[:80]} ({exc}); fix or delete the "
                "node (deleting it restarts the shard at initial_position)") from None
        return cls(seq, end)


class CheckpointStore(Protocol):
    """What the spout needs from a checkpoint store. Methods may raise CheckpointError (corrupt
    data, naming it) or ``CheckpointUnavailable`` (the store cannot be reached now: retry later)."""

    def read(self, shard_id: str) -> Checkpoint | None: ...

    def write(self, shard_id: str, checkpoint: Checkpoint) -> bool: ...

    def read_shard_list(self) -> list[ShardInfo] | None: ...

    def write_shard_list(self, shards: list[ShardInfo]) -> None: ...

    def watch_shard_list(self, callback: Callable[[list[ShardInfo] | None], None]) -> None: ...

    def close(self) -> None: ...


class CheckpointUnavailable(Exception):
    """The store cannot be reached right now; the write or read should be retried later."""


class StateCheckpointStore:
    """CheckpointStore on ``store`` (a store of the state layer at
    ``checkpoints/kinesis:<name>``), for one stream. ``client``: the ZooKeeper storage when the
    store is in ZooKeeper (tests look at the nodes through it), else None."""

    def __init__(self, store: Store, stream: str) -> None:
        self.store = store
        self.stream = store.sub(stream)
        self.stream_path = self.stream.where("")
        self.client = store.storage if isinstance(store, ZkStore) else None
        self._watches: list[Callable[[], None]] = []

    @classmethod
    def on_backend(cls, backend: StateBackend, name: str, stream: str) -> StateCheckpointStore:
        """The checkpoints of config ``name`` in the topology's state ``backend``."""
        store = backend.named_store(CHECKPOINTS, CONNECTOR, name)
        if not isinstance(store, Store):
            raise CheckpointError(f"the state backend {backend.description} is not one of the "
                                  "state layer's")
        return cls(store, stream)

    @classmethod
    def on_redis(cls, config: RedisConfig, name: str, stream: str) -> StateCheckpointStore:
        """The checkpoints of config ``name`` in the Redis of ``config`` (a connection of its
        own, closed with the store; made on first use)."""
        return cls(open_redis_store(config, CHECKPOINTS, f"{CONNECTOR}:{name}"), stream)

    def path(self, shard_id: str) -> str:
        return self.stream.where(shard_id)

    def _call(self, path: str, fn: Callable[[], T]) -> T:
        if not self.stream.available():
            raise CheckpointUnavailable(f"{path}: the store is not connected")
        try:
            return fn()
        except StateUnavailableError as exc:
            raise CheckpointUnavailable(str(exc)) from exc
        except CorruptStateError as exc:
            raise CheckpointError(f"corrupt Kinesis checkpoint data at {path}: {exc.problem}; fix "
                                  "or delete the node (deleting a shard's checkpoint restarts the "
                                  "shard at initial_position)") from None
        except StateStoreError as exc:
            raise CheckpointError(f"Kinesis checkpoint store failed at {path}: {exc}") from exc

    def read(self, shard_id: str) -> Checkpoint | None:
        """The shard's stored checkpoint, or None when it has none."""
        path = self.path(shard_id)
        doc = self._call(path, lambda: self.stream.get(shard_id))
        return None if doc is None else Checkpoint.from_doc(doc, path)

    def write(self, shard_id: str, checkpoint: Checkpoint) -> bool:
        """Store ``checkpoint`` unless the stored one is already as far; True when written."""
        path = self.path(shard_id)

        def forwards(doc: Any) -> Any:
            stored = None if doc is None else Checkpoint.from_doc(doc, path)
            return checkpoint.to_doc() if checkpoint.ahead_of(stored) else None
        return self._call(path, lambda: self.stream.update(shard_id, forwards))

    def read_shard_list(self) -> list[ShardInfo] | None:
        """The shard list stored by the refreshing task, or None when none is stored yet."""
        return self._decode_list(self._call(
            f"{self.stream_path} (shard list)", lambda: self.stream.get("")))

    def _decode_list(self, doc: Any) -> list[ShardInfo] | None:
        if doc is None:
            return None
        try:
            return [ShardInfo.from_doc(d) for d in doc["shards"]]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CheckpointError(f"corrupt Kinesis shard list at {self.stream_path}: "
                                  f"{str(doc)[:80]} ({exc})") from None

    def write_shard_list(self, shards: list[ShardInfo]) -> None:
        doc = {"shards": [s.to_doc() for s in shards]}
        self._call(f"{self.stream_path} (shard list)", lambda: self.stream.put("", doc))

    def watch_shard_list(self, callback: Callable[[list[ShardInfo] | None], None]) -> None:
        """Call ``callback`` (on the store's thread) with the shard list now and whenever it
        changes; a corrupt list is logged and skipped."""
        def changed(doc: Any) -> None:
            try:
                callback(self._decode_list(doc))
            except CheckpointError as exc:
                log.error("%s", exc)

        self._watches.append(self._call(f"{self.stream_path} (shard list)",
                                        lambda: self.stream.watch("", changed)))

    def close(self) -> None:
        """Cancel the watches, and close what the store owns (a connection of its own)."""
        for cancel in self._watches:
            cancel()
        self._watches.clear()
        self.store.close()


class ZkCheckpointStore(StateCheckpointStore):
    """StateCheckpointStore on a ZooKeeper connection of its own (a config that names its
    servers or root)."""

    @classmethod
    def connect(cls, connect: str, root: str, name: str, stream: str,
                timeout_s: float) -> ZkCheckpointStore:
        """Connect to ``connect`` (ZkStorage); CheckpointError naming the servers when ZooKeeper
        does not answer within ``timeout_s`` (no hang, no client left running)."""
        try:
            store = open_zk_store(connect, root, paths.ZkPaths(root).connector_checkpoints(
                CONNECTOR, name), connect_timeout_secs=timeout_s,
                session_timeout_secs=max(timeout_s, 4.0))
        except StateStoreError as exc:
            raise CheckpointError(
                f"the Kinesis spout cannot reach ZooKeeper at {connect!r} within {timeout_s:g}s "
                f"({exc.problem}); set KinesisSpoutConfig.zookeeper_servers or the topology's "
                "storm.zookeeper.servers") from exc
        return cls(store, stream)
