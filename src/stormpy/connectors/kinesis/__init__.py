"""Kinesis spout (the ``[kinesis]`` extra): reads the shards of a Kinesis stream with at-least-once
delivery, replaying failed records and keeping per-shard checkpoints in ZooKeeper.
"""

from stormpy.connectors.kinesis.records import KinesisRecord, message_id, parse_message_id
from stormpy.connectors.kinesis.tracker import InflightRecordTracker

__all__ = ["InflightRecordTracker", "KinesisRecord", "message_id", "parse_message_id"]
