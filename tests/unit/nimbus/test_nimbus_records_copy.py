"""TopologyRecords, read and written directly: where each read is answered from (ZooKeeper before
``load`` and after ``drop``, memory in between), what each write leaves in memory, and how a
failed write or a failed load makes the copy load again."""

from __future__ import annotations

from typing import Any

import pytest
from nimbus_fakes import FakeClusterState

from stormpy.cluster import Assignment, ClusterStateError, StormBase
from stormpy.nimbus.leader_records import TopologyRecords


class ZkState(FakeClusterState):
    """A fake cluster state that logs every call Nimbus makes of it and fails the ones named in
    ``failing`` with ClusterStateError (a ZooKeeper timeout)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.failing: set[str] = set()

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if name in self.failing:
            raise ClusterStateError(f"ZooKeeper {name} timed out")

    def storm_bases(self) -> dict[str, StormBase]:
        self._call("storm_bases")
        return super().storm_bases()

    def storm_base(self, tid: str, callback: Any = None) -> StormBase | None:
        self._call("storm_base")
        return super().storm_base(tid)

    def active_storms(self) -> list[str]:
        self._call("active_storms")
        return super().active_storms()

    def assignments(self, callback: Any = None) -> dict[str, Assignment]:
        self._call("assignments")
        return super().assignments()

    def assignment(self, tid: str, callback: Any = None) -> Assignment | None:
        self._call("assignment")
        return super().assignment(tid)

    def set_storm_base(self, base: StormBase) -> None:
        self._call("set_storm_base")
        super().set_storm_base(base)

    def remove_storm_base(self, tid: str) -> None:
        self._call("remove_storm_base")
        super().remove_storm_base(tid)

    def set_assignment(self, assignment: Assignment) -> None:
        self._call("set_assignment")
        super().set_assignment(assignment)

    def remove_topology(self, tid: str) -> None:
        self._call("remove_topology")
        super().remove_topology(tid)


def base(tid: str, status: str = "active") -> StormBase:
    return StormBase(tid, f"name-{tid}", status, 1, 1.0, "owner", {"spout": 1})


def assignment(tid: str, port: int = 6700) -> Assignment:
    return Assignment(tid, tid, {(1, 1): ("sup-a", port)}, {"sup-a": "host-a"}, {(1, 1): 5.0})


@pytest.fixture
def state() -> ZkState:
    zk = ZkState()
    for tid in ("b-1", "a-1"):
        zk.bases[tid] = base(tid)
        zk.assigns[tid] = assignment(tid)
    return zk


def reads_all(records: TopologyRecords) -> tuple[Any, ...]:
    return (records.storm_bases(), records.storm_base("a-1"), records.storm_base("none"),
            records.topology_ids(), records.assignments(), records.assignment("b-1"),
            records.assignment("none"))


def expected_reads(state: ZkState) -> tuple[Any, ...]:
    return (dict(state.bases), state.bases["a-1"], None, ["a-1", "b-1"], dict(state.assigns),
            state.assigns["b-1"], None)


def test_before_load_every_read_goes_to_the_cluster_state(state: ZkState) -> None:
    records = TopologyRecords(state)
    assert records.in_memory is False and records.loads == 0
    assert reads_all(records) == expected_reads(state)
    assert state.calls == ["storm_bases", "storm_base", "storm_base", "active_storms", "assignments",
                           "assignment", "assignment"]
    state.bases["c-1"] = base("c-1")  # another writer (the leader) changed it: seen at once
    assert records.storm_base("c-1") == state.bases["c-1"]
    records.set_storm_base(base("d-1"))  # a write before leading reaches ZooKeeper alone
    records.set_assignment(assignment("d-1"))
    assert records.storm_base("d-1") == base("d-1") and records.assignment("d-1") == assignment("d-1")
    assert records.loads == 0 and records.in_memory is False


def test_a_loaded_copy_answers_every_read_from_memory(state: ZkState) -> None:
    records = TopologyRecords(state)
    records.load()
    assert records.in_memory is True and records.loads == 1
    assert state.calls == ["storm_bases", "assignments"]
    state.calls.clear()
    assert reads_all(records) == expected_reads(state)
    assert state.calls == []
    # reads are copies: changing what a read returned changes nothing held
    records.storm_bases().clear()
    records.assignments().clear()
    assert reads_all(records) == expected_reads(state)
    assert state.calls == []


def test_writes_go_to_the_cluster_state_then_into_memory(state: ZkState) -> None:
    records = TopologyRecords(state)
    records.load()
    state.calls.clear()
    records.set_storm_base(base("c-1", "inactive"))
    records.set_assignment(assignment("c-1", 6701))
    records.set_storm_base(base("a-1", "killed"))
    records.set_assignment(assignment("a-1", 6702))
    records.remove_storm_base("b-1")
    records.remove_storm_base("never-there")  # nothing to forget: no error
    assert state.calls == ["set_storm_base", "set_assignment", "set_storm_base", "set_assignment",
                           "remove_storm_base", "remove_storm_base"]
    state.calls.clear()
    assert records.storm_bases() == {"a-1": base("a-1", "killed"), "c-1": base("c-1", "inactive")}
    assert records.storm_base("b-1") is None
    assert records.topology_ids() == ["a-1", "c-1"]
    assert records.assignments() == {"a-1": assignment("a-1", 6702), "b-1": assignment("b-1"),
                                     "c-1": assignment("c-1", 6701)}
    records.remove_topology("a-1")
    records.remove_topology("never-there")
    assert state.calls == ["remove_topology", "remove_topology"]
    state.calls.clear()
    assert records.storm_bases() == {"c-1": base("c-1", "inactive")}
    assert records.assignments() == {"b-1": assignment("b-1"), "c-1": assignment("c-1", 6701)}
    assert records.assignment("a-1") is None
    assert state.calls == [] and records.loads == 1
    assert records.storm_bases() == state.bases and records.assignments() == state.assigns


@pytest.mark.parametrize("write", ["set_storm_base", "remove_storm_base", "set_assignment",
                                   "remove_topology"])
def test_a_failed_write_is_raised_and_the_next_read_loads_again(state: ZkState, write: str) -> None:
    records = TopologyRecords(state)
    records.load()
    state.failing.add(write)
    arg: Any = {"set_storm_base": base("a-1", "inactive"), "set_assignment": assignment("a-1", 6709)}.get(
        write, "a-1")
    with pytest.raises(ClusterStateError, match=f"ZooKeeper {write} timed out"):
        getattr(records, write)(arg)
    # ZooKeeper may still apply the write (here: another leader's change lands meanwhile)
    state.bases["z-1"] = base("z-1")
    state.assigns["z-1"] = assignment("z-1")
    state.calls.clear()
    assert records.in_memory is True
    assert records.storm_base("z-1") == base("z-1")
    assert state.calls == ["storm_bases", "assignments"] and records.loads == 2
    assert records.assignment("z-1") == assignment("z-1")
    assert state.calls == ["storm_bases", "assignments"]


def test_a_write_that_fails_otherwise_is_raised_and_leaves_the_copy(state: ZkState) -> None:
    records = TopologyRecords(state)
    records.load()

    def broken(_base: StormBase) -> None:
        raise ValueError("not a cluster state error")

    state.set_storm_base = broken  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="not a cluster state error"):
        records.set_storm_base(base("c-1"))
    assert records.storm_base("c-1") is None and records.loads == 1


def test_a_load_that_fails_leaves_no_copy_to_answer_from(state: ZkState) -> None:
    records = TopologyRecords(state)
    records.load()
    state.bases["c-1"] = base("c-1")
    state.failing.add("assignments")
    with pytest.raises(ClusterStateError):
        records.load()  # leading again, the read fails half-way: the old copy is gone too
    state.failing.clear()
    state.calls.clear()
    assert records.storm_base("c-1") == base("c-1")
    assert state.calls == ["storm_bases", "assignments"]
    assert records.loads == 2  # the failed load is not counted
    records.load()
    records.load()
    assert records.loads == 4


def test_dropping_the_copy_sends_reads_and_writes_to_the_cluster_state(state: ZkState) -> None:
    records = TopologyRecords(state)
    records.load()
    records.drop()
    assert records.in_memory is False
    state.calls.clear()
    assert reads_all(records) == expected_reads(state)
    assert "storm_bases" in state.calls and records.loads == 1
    records.set_storm_base(base("c-1"))  # a standby's write (e.g. a roll-back) reaches ZooKeeper
    records.set_assignment(assignment("c-1"))
    records.remove_storm_base("b-1")
    records.remove_topology("a-1")
    assert sorted(state.bases) == ["c-1"] and sorted(state.assigns) == ["b-1", "c-1"]
    assert records.storm_bases() == state.bases and records.assignments() == state.assigns
    assert records.topology_ids() == ["c-1"]
