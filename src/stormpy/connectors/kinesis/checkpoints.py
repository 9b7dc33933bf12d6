"""Where a Kinesis spout keeps its shard list and per-shard checkpoints.

``CheckpointStore`` is the small interface the spout needs; ``ZkCheckpointStore`` implements it
on ZooKeeper with kazoo, in the layout of :mod:`stormpy.cluster.paths` (a connector's own state,
``ZkPaths.connector_checkpoints``)::

    <root>/checkpoints/kinesis:<spout-config-name>/<stream>                the shard list (JSON)
    <root>/checkpoints/kinesis:<spout-config-name>/<stream>/<shard-id>     the checkpoint (JSON)

The ``kinesis:`` prefix keeps these apart from ``checkpoints/<topology-id>``, which a topology's
kill removes: a config name equal to some topology id cannot lose its checkpoints.

A checkpoint is ``{"sequence_number": "<seq>" or null, "shard_end": bool}``: every record of the
shard up to ``sequence_number`` is done, and ``shard_end`` says the shard (closed by resharding)
was read to its end and every record of it is done. Writes never move a stored checkpoint
backwards (a compare-and-set on the node's version), whichever task writes. A node holding
anything else is a CheckpointError naming its path, never a silent restart.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from stormpy.cluster import paths
from stormpy.connectors.kinesis.client import ShardInfo
from stormpy.connectors.kinesis.errors import CheckpointError
from stormpy.connectors.kinesis.records import sequence_key

log = logging.getLogger(__name__)

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

    def encode(self) -> bytes:
        return json.dumps({"sequence_number": self.sequence_number,
                           "shard_end": self.shard_end}).encode()

    @classmethod
    def decode(cls, data: bytes, path: str) -> Checkpoint:
        """Parse a checkpoint node; CheckpointError naming ``path`` when it is not one."""
        try:
            doc = json.loads(data.decode())
            seq = doc["sequence_number"]
            end = doc.get("shard_end", False)
            if seq is not None:
                sequence_key(seq)
            if not isinstance(end, bool) or (seq is not None and not isinstance(seq, str)):
                raise ValueError("bad field types")
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            raise CheckpointError(
                f"corrupt Kinesis checkpoint at ZooKeeper node {path}: {data[:80]!r} ({exc}); fix or "
                "delete the node (deleting it restarts the shard at initial_position)") from None
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


class ZkCheckpointStore:
    """CheckpointStore on ZooKeeper (kazoo), for one spout config name and stream."""

    def __init__(self, client: Any, root: str, name: str, stream: str) -> None:
        self.client = client
        self.stream_path = paths.ZkPaths(root).connector_checkpoints(CONNECTOR, name, stream)
        self._name = name
        self._stream = stream
        self._root = root

    @classmethod
    def connect(cls, connect: str, root: str, name: str, stream: str,
                timeout_s: float) -> ZkCheckpointStore:
        """Start a kazoo client on ``connect``; CheckpointError naming the servers when ZooKeeper
        does not answer within ``timeout_s`` (no hang, no client left running)."""
        from kazoo.client import KazooClient

        client = KazooClient(hosts=connect, timeout=max(timeout_s, 4.0))
        try:
            client.start(timeout=timeout_s)
        except Exception as exc:
            client.stop()
            client.close()
            raise CheckpointError(
                f"the Kinesis spout cannot reach ZooKeeper at {connect!r} within {timeout_s:g}s "
                f"({type(exc).__name__}: {exc}); set KinesisSpoutConfig.zookeeper_servers or the "
                "topology's storm.zookeeper.servers") from exc
        return cls(client, root, name, stream)

    def path(self, shard_id: str) -> str:
        return paths.ZkPaths(self._root).connector_checkpoints(CONNECTOR, self._name, self._stream,
                                                              shard_id)

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        from kazoo.exceptions import ConnectionLoss, OperationTimeoutError, SessionExpiredError
        from kazoo.handlers.threading import KazooTimeoutError

        if not self.client.connected:
            raise CheckpointUnavailable("ZooKeeper is not connected")
        try:
            return fn(*args, **kwargs)
        except (ConnectionLoss, SessionExpiredError, OperationTimeoutError, KazooTimeoutError) as exc:
            raise CheckpointUnavailable(f"ZooKeeper: {type(exc).__name__}") from exc

    def read(self, shard_id: str) -> Checkpoint | None:
        """The shard's stored checkpoint, or None when it has none."""
        path = self.path(shard_id)
        found = self._call(self.client.exists, path)
        if found is None:
            return None
        data, _ = self._call(self.client.get, path)
        return Checkpoint.decode(data, path)

    def write(self, shard_id: str, checkpoint: Checkpoint) -> bool:
        """Store ``checkpoint`` unless the stored one is already as far; True when written."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        path = self.path(shard_id)
        for _ in range(10):
            try:
                data, stat = self._call(self.client.get, path)
            except NoNodeError:
                try:
                    self._call(self.client.create, path, checkpoint.encode(), makepath=True)
                    return True
                except NodeExistsError:
                    continue
            if not checkpoint.ahead_of(Checkpoint.decode(data, path)):
                return False
            try:
                self._call(self.client.set, path, checkpoint.encode(), version=stat.version)
                return True
            except (BadVersionError, NoNodeError):
                continue
        raise CheckpointUnavailable(f"{path}: too many concurrent updates")

    def read_shard_list(self) -> list[ShardInfo] | None:
        """The shard list stored by the refreshing task, or None when none is stored yet."""
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self._call(self.client.get, self.stream_path)
        except NoNodeError:
            return None
        return self._decode_list(data)

    def _decode_list(self, data: bytes | None) -> list[ShardInfo] | None:
        if not data:
            return None
        try:
            return [ShardInfo.from_doc(d) for d in json.loads(data.decode())["shards"]]
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            raise CheckpointError(f"corrupt Kinesis shard list at ZooKeeper node {self.stream_path}: "
                                  f"{data[:80]!r} ({exc})") from None

    def write_shard_list(self, shards: list[ShardInfo]) -> None:
        from kazoo.exceptions import NoNodeError

        data = json.dumps({"shards": [s.to_doc() for s in shards]}).encode()
        try:
            self._call(self.client.set, self.stream_path, data)
        except NoNodeError:
            self._call(self.client.ensure_path, self.stream_path)
            self._call(self.client.set, self.stream_path, data)

    def watch_shard_list(self, callback: Callable[[list[ShardInfo] | None], None]) -> None:
        """Call ``callback`` (on kazoo's thread) with the shard list now and whenever it changes;
        a corrupt list is logged and skipped."""
        def changed(data: bytes | None, _stat: Any) -> None:
            try:
                callback(self._decode_list(data))
            except CheckpointError as exc:
                log.error("%s", exc)

        self.client.DataWatch(self.stream_path, changed)

    def close(self) -> None:
        self.client.stop()
        self.client.close()
