"""Errors of the Kinesis connector; each message names what was wrong (stream, endpoint, path)."""

from __future__ import annotations

KINESIS_EXTRA = "pip install 'stormpy-runtime[kinesis]'"


class KinesisError(RuntimeError):
    """Base class of the Kinesis connector's errors."""


class KinesisUnavailableError(KinesisError):
    """boto3 is not installed (the ``stormpy-runtime[kinesis]`` extra)."""


class KinesisStreamError(KinesisError):
    """The stream cannot be read: unknown stream, unreachable endpoint, missing credentials."""


class CheckpointError(KinesisError):
    """ZooKeeper cannot be reached, or a checkpoint node holds something that is not a checkpoint."""
