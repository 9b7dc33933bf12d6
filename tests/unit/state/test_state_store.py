"""The state handle components get from their context: the StateStore contract on the memory
backend, the state documents, and LocalCluster's choice of backend."""

from __future__ import annotations

import logging

import msgpack
import pytest

from state_store_kit import CountingSpout, counting_topology, memory_backend_held
from stormpy import TopologyBuilder, TopologyContext
from stormpy.state import MemoryBackend
from stormpy.testing import Capture, LocalCluster
from stormpy.testing._state import check_state_store
from stormpy.topology._state import (
    CHECKPOINTS,
    TRANSACTIONAL,
    CorruptStateError,
    StateUnavailableError,
    decode_state,
    encode_state,
)


def test_the_memory_store_keeps_the_contract() -> None:
    backend = MemoryBackend()
    check_state_store(backend.store(CHECKPOINTS, "t-1"))
    check_state_store(backend.store(TRANSACTIONAL, "t-1"))


def test_areas_and_topologies_are_kept_apart_and_dropped_together() -> None:
    backend = MemoryBackend()
    a, b = backend.store(CHECKPOINTS, "t-1"), backend.store(TRANSACTIONAL, "t-1")
    other = backend.store(CHECKPOINTS, "t-2")
    a.put("k", 1)
    b.put("k", 2)
    other.put("k", 3)
    assert (a.get("k"), b.get("k"), other.get("k")) == (1, 2, 3)
    assert backend.store(CHECKPOINTS, "t-1") is a
    backend.drop("t-1")
    assert (a.get("k"), b.get("k"), other.get("k")) == (None, None, 3)
    with pytest.raises(ValueError, match="unknown state area 'scratch'"):
        backend.store("scratch", "t-1")


def test_memory_state_is_announced_once_per_area(caplog: pytest.LogCaptureFixture) -> None:
    backend = MemoryBackend()
    with caplog.at_level(logging.WARNING, logger="stormpy.state"):
        backend.store(CHECKPOINTS, "t-1")
        backend.store(CHECKPOINTS, "t-1")
    [record] = caplog.records
    assert "t-1" in record.getMessage() and "memory only" in record.getMessage()
    assert "storm.zookeeper.servers" in record.getMessage()


def test_every_call_is_bounded_in_time() -> None:
    backend = MemoryBackend(timeout_secs=0.05)
    store = backend.store(CHECKPOINTS, "t-1")
    with memory_backend_held(backend), \
            pytest.raises(StateUnavailableError, match="memory:checkpoints/t-1/k: store busy"):
        store.get("k")


def test_state_documents_round_trip_and_corrupt_ones_name_their_path() -> None:
    assert decode_state("p", encode_state("p", [1, "a"])) == [1, "a"]
    with pytest.raises(CorruptStateError, match="state /x/y: not a msgpack document"):
        decode_state("/x/y", b"\xc1")
    with pytest.raises(CorruptStateError, match="state /x/y: not a state document"):
        decode_state("/x/y", msgpack.packb([1, 2]))
    with pytest.raises(CorruptStateError, match="newer"):
        decode_state("/x/y", msgpack.packb({"v": 99, "value": 1}))


def test_a_context_without_state_says_so() -> None:
    from stormpy.topology._layout import compute_layout

    b = TopologyBuilder()
    b.set_spout("s", CountingSpout)
    spec = b.create_topology()
    context = TopologyContext("t-1", spec, compute_layout(spec, {}), 1, [1], {})
    with pytest.raises(RuntimeError, match="no state backend"):
        context.state_store()


def test_components_in_a_plain_local_cluster_share_memory_state() -> None:
    capture = Capture()
    with LocalCluster() as cluster:
        assert isinstance(cluster.state, MemoryBackend)
        worker = cluster.submit_topology("t", {}, counting_topology(capture))
        cluster.wait_for(lambda: len(capture.values) == 2, 20, "both spout tasks to report")
        store = cluster.state.store(CHECKPOINTS, worker.topology_id)
        assert store.children() == ["counter"]
        assert store.children("counter") == ["0", "1"]
        assert store.get("counter/1") == {"opens": 1}
    assert sorted(v[1] for v in capture.values) == [1, 1]
    assert all(v[2] == sorted(v[2]) and len(v[2]) == 2 for v in capture.values)
    assert cluster.state.store(CHECKPOINTS, worker.topology_id).children() == []  # dropped
