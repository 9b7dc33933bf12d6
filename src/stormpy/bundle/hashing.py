"""SHA-256 of files and streams, read in bounded chunks (never the whole file in memory)."""

from __future__ import annotations

import hashlib
import os
from typing import BinaryIO

__all__ = ["CHUNK_SIZE", "sha256_file", "sha256_stream"]

CHUNK_SIZE = 1024 * 1024


def sha256_stream(stream: BinaryIO, chunk_size: int = CHUNK_SIZE) -> tuple[str, int]:
    """Hex SHA-256 and byte count of everything left in ``stream``."""
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(chunk_size):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def sha256_file(path: str | os.PathLike[str], chunk_size: int = CHUNK_SIZE) -> str:
    """Hex SHA-256 of the file at ``path``; OSError propagates when it cannot be read."""
    with open(path, "rb") as stream:
        return sha256_stream(stream, chunk_size)[0]
