"""The ZooKeeper backend's own parts that need no server: where each area of a topology lives,
how a lost write is judged, the errors it raises naming the znode."""

from __future__ import annotations

import pytest

from stormpy.cluster.errors import ClusterStateError, ZkConnectionError
from stormpy.state._zookeeper import (
    Contention,
    UnknownOutcome,
    _call,
    _lost_write_landed,
    area_path,
)
from stormpy.topology._state import CHECKPOINTS, TRANSACTIONAL, StateStoreError, StateUnavailableError


def test_each_area_of_a_topology_has_its_own_znode() -> None:
    assert area_path(CHECKPOINTS, "t-1", root="/r") == "/r/checkpoints/t-1"
    assert area_path(TRANSACTIONAL, "t-1", root="/r") == "/r/transactional/t-1"


def test_a_lost_write_is_judged_from_the_node_as_reread() -> None:
    assert _lost_write_landed((b"v", 3), b"v", 3) is True
    assert _lost_write_landed((b"v", 3), b"w", 3) is False  # another writer took that version
    assert _lost_write_landed((b"v", 3), b"old", 2) is False  # unchanged since the read
    assert _lost_write_landed((b"v", 0), None, None) is False  # a create that never landed
    with pytest.raises(UnknownOutcome, match="at version 5, the write would have made it 3"):
        _lost_write_landed((b"v", 3), b"x", 5)
    with pytest.raises(UnknownOutcome):
        _lost_write_landed((b"v", 3), None, None)


def test_zookeeper_errors_become_state_errors_naming_the_znode() -> None:
    def fail(exc: Exception) -> None:
        raise exc
    with pytest.raises(StateUnavailableError, match="^state /r/k: ZooKeeper unreachable: gone"):
        _call("/r/k", lambda: fail(ZkConnectionError("gone")))
    with pytest.raises(StateUnavailableError, match="^state /r/k: busy$"):
        _call("/r/k", lambda: fail(Contention("busy")))
    with pytest.raises(StateStoreError, match="^state /r/k: ZooKeeper failed: bad") as err:
        _call("/r/k", lambda: fail(ClusterStateError("bad")))
    assert not isinstance(err.value, StateUnavailableError)
    assert _call("/r/k", lambda: 7) == 7
