"""The one chunked bundle transfer of the Nimbus protocol, both ways, with its sha256 check.

Contract (docs/cluster-contract.md, "Nimbus RPC"); ``call(method, **args)`` is any client's call
(:class:`~stormpy.rpc.RpcClient` or :class:`~stormpy.client.NimbusClient`):

* :func:`upload_bundle`: ``begin_upload(size)`` → ``upload_chunk(upload_id, data, offset)`` in the
  chunk size Nimbus asked for → ``finish_upload(upload_id, sha256)``; Nimbus checks the sha256
  and answers the bundle key. A chunk Nimbus acknowledges with another byte count than was sent
  is an :class:`~stormpy.rpc.errors.UploadError`.
* :func:`download_bundle`: ``begin_download(bundle_key)`` (size and sha256 announced) →
  ``download_chunk(download_id, offset)`` until an empty chunk. A bundle larger than
  ``max_bytes``, an announcement that differs from ``expected`` (what the caller was told before),
  more bytes than announced, fewer, or another sha256 is an UploadError naming the bundle key and
  the mismatch, and the partial file is removed.

``progress(done, total)`` is called after each chunk.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from stormpy.rpc.errors import UploadError

__all__ = ["BundleDigest", "Call", "Progress", "download_bundle", "upload_bundle"]

Progress = Callable[[int, int], Any]
Call = Callable[..., Any]


class BundleDigest(NamedTuple):
    """A bundle's size in bytes and its sha256 (hex)."""

    size: int
    sha256: str


def upload_bundle(call: Call, path: str | os.PathLike[str], progress: Progress | None = None) -> str:
    """Upload the bundle file in chunks through ``call``; return its bundle key."""
    file = Path(path)
    size = file.stat().st_size
    digest = hashlib.sha256()
    begun = call("begin_upload", size=size)
    upload_id, chunk_size = begun["upload_id"], int(begun["chunk_size"])
    sent = 0
    with open(file, "rb") as stream:
        while chunk := stream.read(chunk_size):
            digest.update(chunk)
            answer = call("upload_chunk", upload_id=upload_id, data=chunk, offset=sent)
            sent += len(chunk)
            if answer.get("received") != sent:
                raise UploadError(f"Nimbus acknowledged {answer.get('received')} bytes, expected {sent}")
            if progress is not None:
                progress(sent, size)
    result = call("finish_upload", upload_id=upload_id, sha256=digest.hexdigest())
    return str(result["bundle_key"])


def download_bundle(call: Call, bundle_key: str, dest: str | os.PathLike[str], *,
                    expected: BundleDigest | None = None, max_bytes: int | None = None,
                    progress: Progress | None = None) -> BundleDigest:
    """Download bundle ``bundle_key`` to ``dest`` through ``call`` and check it (see the module
    docstring); return its size and sha256."""
    begun = call("begin_download", bundle_key=bundle_key)
    announced = BundleDigest(int(begun["size"]), str(begun["sha256"]))
    if expected is not None and announced != expected:
        raise UploadError(f"bundle {bundle_key}: Nimbus announced two different bundles "
                          f"({expected.size} bytes/{expected.sha256} vs "
                          f"{announced.size} bytes/{announced.sha256})")
    if max_bytes is not None and announced.size > max_bytes:
        raise UploadError(f"bundle {bundle_key} of {announced.size} bytes exceeds "
                          f"nimbus.max.bundle.size.bytes ({max_bytes})")
    out = Path(dest)
    digest = hashlib.sha256()
    received = 0
    try:
        with open(out, "wb") as stream:
            while data := call("download_chunk", download_id=begun["download_id"],
                               offset=received)["data"]:
                received += len(data)
                if received > announced.size:
                    raise UploadError(f"bundle {bundle_key}: Nimbus sent more than the announced "
                                      f"{announced.size} bytes")
                stream.write(data)
                digest.update(data)
                if progress is not None:
                    progress(received, announced.size)
        if received != announced.size:
            raise UploadError(f"bundle {bundle_key} is corrupt: received {received} of "
                              f"{announced.size} bytes")
        if digest.hexdigest() != announced.sha256:
            raise UploadError(f"bundle {bundle_key} is corrupt: sha256 mismatch "
                              f"({digest.hexdigest()}, announced {announced.sha256})")
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    return announced
