"""Free TCP ports for tests: the one free-port helper of the test kit.

A port is free when the kernel hands it out for an ephemeral bind; it is released before the
function returns, so a daemon started right after can bind it (a tiny race with other processes
remains, as with any such helper).
"""

from __future__ import annotations

import socket

__all__ = ["free_port", "free_ports"]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports on ``host`` that were free a moment ago."""
    if count < 0:
        raise ValueError(f"free_ports: count must be >= 0, got {count}")
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port(host: str = "127.0.0.1") -> int:
    """One port on ``host`` that was free a moment ago."""
    return free_ports(1, host)[0]
