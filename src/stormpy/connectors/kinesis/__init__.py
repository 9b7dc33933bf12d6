"""Kinesis spout (the ``[kinesis]`` extra): reads the shards of a Kinesis stream with at-least-once
delivery, replaying failed records and keeping per-shard checkpoints and the shard list in
ZooKeeper. boto3 is imported lazily: importing this package works without it; opening a spout
without it raises KinesisUnavailableError naming ``stormpy-runtime[kinesis]``.

See docs/kinesis.md.
"""

from stormpy._public import publish
from stormpy.connectors.kinesis._checkpoints import (
    Checkpoint,
    CheckpointStore,
    CheckpointUnavailable,
    ZkCheckpointStore,
)
from stormpy.connectors.kinesis._client import ShardInfo, require_boto3
from stormpy.connectors.kinesis._config import INITIAL_POSITIONS, KinesisSpoutConfig
from stormpy.connectors.kinesis._errors import (
    KINESIS_EXTRA,
    CheckpointError,
    KinesisError,
    KinesisStreamError,
    KinesisUnavailableError,
)
from stormpy.connectors.kinesis._getter import BufferedGetter, Position, ShardGetter
from stormpy.connectors.kinesis._records import KinesisRecord, message_id, parse_message_id
from stormpy.connectors.kinesis._scheme import DefaultRecordScheme
from stormpy.connectors.kinesis._spout import KinesisSpout
from stormpy.connectors.kinesis._tracker import InflightRecordTracker

__all__ = [
    "INITIAL_POSITIONS", "KINESIS_EXTRA", "BufferedGetter", "Checkpoint", "CheckpointError",
    "CheckpointStore", "CheckpointUnavailable", "DefaultRecordScheme", "InflightRecordTracker",
    "KinesisError", "KinesisRecord", "KinesisSpout", "KinesisSpoutConfig", "KinesisStreamError",
    "KinesisUnavailableError", "Position", "ShardGetter", "ShardInfo", "ZkCheckpointStore",
    "message_id", "parse_message_id", "require_boto3",
]

publish(__name__, globals())
