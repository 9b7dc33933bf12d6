"""Which peer workers a worker connects to, read from its topology's assignment: every slot but its
own, keyed ``node:port`` and reached at ``<host of node>:port``; a node without a known host is left
out, and the slots after it (in any order) still count."""

from __future__ import annotations

from stormpy.cluster.records import Assignment
from stormpy.worker.peers import WorkerPeers, local_executors, peer_key, tasks_of, worker_peers


def assignment(executors: dict[tuple[int, int], tuple[str, int]], hosts: dict[str, str]) -> Assignment:
    return Assignment(topology_id="t", bundle_key="b", executors=executors, node_host=hosts)


def test_every_other_slot_is_a_peer_whatever_order_the_slots_come_in() -> None:
    # this worker's own slot and a host-less node sort before the other slots
    a = assignment({(1, 1): ("a", 6700), (2, 3): ("b", 6701), (4, 4): ("c", 6700),
                    (5, 6): ("d", 6702), (7, 7): ("a", 6700)},
                   {"a": "ha", "c": "hc", "d": "hd"})
    peers = worker_peers(a, "a", 6700)
    assert peers == WorkerPeers({4: "c:6700", 5: "d:6702", 6: "d:6702"},
                                {"c:6700": "hc:6700", "d:6702": "hd:6702"})


def test_a_worker_alone_in_its_assignment_has_no_peers() -> None:
    a = assignment({(1, 2): ("a", 6700), (3, 3): ("a", 6700)}, {"a": "ha"})
    assert worker_peers(a, "a", 6700) == WorkerPeers({}, {})
    assert local_executors(a, "a", 6700) == ((1, 2), (3, 3))
    assert local_executors(a, "a", 6701) == ()


def test_two_workers_on_one_node_are_peers_of_each_other() -> None:
    a = assignment({(1, 1): ("a", 6700), (2, 2): ("a", 6701)}, {"a": "ha"})
    assert worker_peers(a, "a", 6700) == WorkerPeers({2: "a:6701"}, {"a:6701": "ha:6701"})
    assert worker_peers(a, "a", 6701) == WorkerPeers({1: "a:6700"}, {"a:6700": "ha:6700"})


def test_tasks_of_lists_every_task_of_each_range_sorted() -> None:
    assert tasks_of([(5, 7), (1, 1), (2, 3)]) == [1, 2, 3, 5, 6, 7]
    assert tasks_of(()) == []


def test_peer_keys_and_addresses_name_the_port_as_an_integer() -> None:
    assert peer_key("node-1", 6700) == "node-1:6700"
    assert peer_key("node-1", "6700") == "node-1:6700"  # type: ignore[arg-type]
    a = assignment({(1, 1): ("a", 6700), (2, 2): ("b", "6701")},  # type: ignore[dict-item]
                   {"a": "ha", "b": "hb"})
    assert worker_peers(a, "a", 6700) == WorkerPeers({2: "b:6701"}, {"b:6701": "hb:6701"})
