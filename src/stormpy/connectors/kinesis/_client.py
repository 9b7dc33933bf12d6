"""The Kinesis client: boto3 imported lazily, every call bounded by short timeouts, and the
service's errors turned into ones naming the stream and endpoint.

Calls made here block the caller for at most about
``(client_retries + 1) * (connect_timeout_ms + read_timeout_ms)``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from stormpy.connectors.kinesis._config import KinesisSpoutConfig
from stormpy.connectors.kinesis._errors import (
    KINESIS_EXTRA,
    KinesisStreamError,
    KinesisUnavailableError,
)

THROTTLING = frozenset({"ProvisionedThroughputExceededException", "LimitExceededException",
                        "ThrottlingException", "KMSThrottlingException"})


def require_boto3() -> Any:
    """The boto3 module; KinesisUnavailableError naming the extra when it is missing."""
    try:
        return importlib.import_module("boto3")
    except ImportError as exc:
        raise KinesisUnavailableError(
            f"the Kinesis spout needs boto3, which cannot be imported ({exc}); install it with: "
            f"{KINESIS_EXTRA}") from exc


def make_client(config: KinesisSpoutConfig) -> Any:
    """A boto3 Kinesis client for ``config``'s endpoint and region with bounded timeouts.

    Each client comes from a session of its own: boto3's default session is not safe to use
    from several threads (spouts set up on the background pool) and would keep credentials it
    resolved once for the life of the process."""
    boto3 = require_boto3()
    from botocore.config import Config

    bounds = Config(connect_timeout=config.connect_timeout_ms / 1000.0,
                    read_timeout=config.read_timeout_ms / 1000.0,
                    retries={"max_attempts": config.client_retries, "mode": "standard"})
    try:
        return boto3.session.Session().client("kinesis", endpoint_url=config.endpoint_url,
                                              region_name=config.region, config=bounds)
    except Exception as exc:  # botocore raises several unrelated types for a bad setup
        raise KinesisStreamError(f"cannot create a Kinesis client for {where(config)}: {exc}") \
            from exc


def where(config: KinesisSpoutConfig) -> str:
    """``stream 'x' at <endpoint>`` for error messages."""
    endpoint = config.endpoint_url or f"the AWS endpoint of region {config.region or '(default)'}"
    return f"stream {config.stream!r} at {endpoint}"


def error_code(exc: BaseException) -> str | None:
    """The service error code of a botocore ClientError, else None."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def describe(exc: BaseException, config: KinesisSpoutConfig, action: str) -> KinesisStreamError:
    """A KinesisStreamError naming the stream and endpoint for a failed ``action``."""
    code = error_code(exc)
    name = type(exc).__name__
    if code == "ResourceNotFoundException":
        why = "the stream does not exist"
    elif name in ("EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError",
                  "ReadTimeoutError"):
        why = f"the endpoint cannot be reached ({exc})"
    elif name in ("NoCredentialsError", "PartialCredentialsError"):
        why = f"no AWS credentials were found ({exc}); configure boto3's credential chain"
    elif name == "NoRegionError":
        why = "no region is configured; set KinesisSpoutConfig.region or AWS_DEFAULT_REGION"
    else:
        why = f"{code or name}: {exc}"
    return KinesisStreamError(f"{action} failed for {where(config)}: {why}")


@dataclass(frozen=True)
class ShardInfo:
    """One shard of the stream as ListShards describes it."""

    shard_id: str
    parents: tuple[str, ...] = ()
    closed: bool = False

    def to_doc(self) -> dict[str, Any]:
        return {"id": self.shard_id, "parents": list(self.parents), "closed": self.closed}

    @classmethod
    def from_doc(cls, doc: Any) -> ShardInfo:
        return cls(str(doc["id"]), tuple(str(p) for p in doc.get("parents", ())),
                   bool(doc.get("closed", False)))


def list_shards(client: Any, config: KinesisSpoutConfig) -> list[ShardInfo]:
    """Every shard of the stream, sorted by id; KinesisStreamError naming stream and endpoint."""
    shards: list[ShardInfo] = []
    kwargs: dict[str, Any] = {"StreamName": config.stream}
    try:
        while True:
            page = client.list_shards(**kwargs)
            for s in page.get("Shards", []):
                parents = tuple(p for p in (s.get("ParentShardId"), s.get("AdjacentParentShardId"))
                                if p)
                closed = "EndingSequenceNumber" in s.get("SequenceNumberRange", {})
                shards.append(ShardInfo(s["ShardId"], parents, closed))
            token = page.get("NextToken")
            if not token:
                break
            kwargs = {"NextToken": token}
    except Exception as exc:
        raise describe(exc, config, "ListShards") from exc
    return sorted(shards, key=lambda s: s.shard_id)
