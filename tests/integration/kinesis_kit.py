"""Kinesis test servers and helpers; import the fixtures into a test module::

    from kinesis_kit import aws_env_fixture, kinesalite_fixture, moto_fixture  # noqa: F401

* ``moto_kinesis`` (session): moto's ThreadedMotoServer on 127.0.0.1 and a free port.
* ``kinesalite`` (session): kinesalite (Node.js, installed by ``make kinesalite`` into
  ``.tools/kinesalite``) on 127.0.0.1 and a free port, in memory, with short stream-update delays;
  it implements resharding (split/merge, closed parents, child shards) faithfully.

Both yield a :class:`KinesisEndpoint` (and need ``aws_env``, imported alongside). When a part is
missing the tests are skipped, or fail when the environment variable ``CI`` is ``true``. Dummy AWS
credentials and region are set for the session when none are configured.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from parts_kit import unavailable

ROOT = Path(__file__).resolve().parents[2]
KINESALITE_CLI = ROOT / ".tools" / "kinesalite" / "node_modules" / "kinesalite" / "cli.js"
REGION = "us-east-1"


def _missing(what: str) -> NoReturn:
    unavailable(what, "not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(condition: Any, timeout: float, what: str, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@dataclass
class KinesisEndpoint:
    """A running Kinesis-compatible server."""

    url: str
    region: str = REGION

    def client(self) -> Any:
        import boto3

        return boto3.client("kinesis", endpoint_url=self.url, region_name=self.region)

    def create_stream(self, shards: int, prefix: str = "s") -> str:
        """Create a stream with ``shards`` shards under a unique name; wait until it is ACTIVE."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        client = self.client()
        client.create_stream(StreamName=name, ShardCount=shards)
        self.wait_active(name)
        return name

    def wait_active(self, stream: str, timeout: float = 30.0) -> None:
        client = self.client()
        wait_until(lambda: client.describe_stream_summary(StreamName=stream)
                   ["StreamDescriptionSummary"]["StreamStatus"] == "ACTIVE", timeout,
                   f"stream {stream} to be ACTIVE")

    def put(self, stream: str, items: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
        """Put (partition key, data) records in order; returns (shard id, sequence number) each."""
        client = self.client()
        out: list[tuple[str, str]] = []
        for lo in range(0, len(items), 500):
            batch = items[lo:lo + 500]
            resp = client.put_records(StreamName=stream, Records=[
                {"PartitionKey": pk, "Data": data} for pk, data in batch])
            assert resp.get("FailedRecordCount", 0) == 0, resp
            out.extend((r["ShardId"], r["SequenceNumber"]) for r in resp["Records"])
        return out

    def put_one(self, stream: str, pk: str, data: bytes) -> tuple[str, str]:
        resp = self.client().put_record(StreamName=stream, PartitionKey=pk, Data=data)
        return resp["ShardId"], resp["SequenceNumber"]


@pytest.fixture(scope="session", name="aws_env")
def aws_env_fixture() -> Iterator[None]:
    """Dummy credentials and region for the session, unless some are configured."""
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                            "AWS_DEFAULT_REGION")}
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session", name="moto_kinesis")
def moto_fixture(aws_env: None) -> Iterator[KinesisEndpoint]:
    """moto in server mode on 127.0.0.1 (one per session; use unique stream names)."""
    try:
        import boto3  # noqa: F401
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        _missing(f"moto[server] and boto3 ({exc}; pip install -e '.[dev,kinesis]')")
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    # its request log (one INFO line per call) would bury a failing test's report
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    try:
        yield KinesisEndpoint(f"http://127.0.0.1:{port}")
    finally:
        server.stop()


@pytest.fixture(scope="session", name="kinesalite")
def kinesalite_fixture(aws_env: None,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[KinesisEndpoint]:
    """kinesalite on 127.0.0.1 (one per session; use unique stream names)."""
    node = shutil.which("node")
    if node is None or not KINESALITE_CLI.exists():
        _missing(f"kinesalite ({KINESALITE_CLI} via `make kinesalite`, needs Node.js)")
    try:
        import boto3  # noqa: F401
    except ImportError as exc:
        _missing(f"boto3 ({exc})")
    port = free_port()
    log_path = tmp_path_factory.mktemp("kinesalite") / "kinesalite.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            [str(node), str(KINESALITE_CLI), "--port", str(port), "--host", "127.0.0.1",
             "--createStreamMs", "20", "--deleteStreamMs", "20", "--updateStreamMs", "20",
             "--shardLimit", "50"], stdout=log_file, stderr=subprocess.STDOUT)
    try:
        def listening() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"kinesalite exited: {log_path.read_text()[-2000:]}")
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, 30.0, "kinesalite to listen")
        yield KinesisEndpoint(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
