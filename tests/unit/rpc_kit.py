"""Shared by the RPC tests: how long a test waits for an answer, and the ``zctx`` fixture (a
ZeroMQ context for the test's raw sockets, destroyed with linger 0 after it; import ``zctx_fixture``
into the test module)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import zmq

#: Generous bound for an answer on a busy machine (a test waits this long only when it fails).
#: Mutation runs (tools/mutate.py sets STORMPY_TEST_WAIT_CAP) cap it like every wait of the testing
#: kit: a mutant that loses an answer then fails its test in seconds, not after the whole bound.
ANSWER_SECS = min(20.0, float(os.environ.get("STORMPY_TEST_WAIT_CAP") or 20.0))


@pytest.fixture(name="zctx")
def zctx_fixture() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    """A ZeroMQ context for the test's own sockets, destroyed (linger 0) after the test."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        yield ctx
    finally:
        ctx.destroy(linger=0)
