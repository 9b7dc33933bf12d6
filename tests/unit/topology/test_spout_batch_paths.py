"""Spout batches on the paths the other batch tests do not take: batch roots pinned to the
spout's home acker whatever the random source gives, the acker's init sent to an acker in another
worker, the debug emit log, a task that gets a single tuple of a batch, and the errors of a bad
batch naming component, stream and what is wrong.

The random source of roots (``stormpy.worker.spout_roots``) is replaced in the root test (its extremes
cannot be reached otherwise)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest
from test_spout_roots_and_latency import ROOT_CASES, check_home_roots

from stormpy import Bolt, Spout, Stream, TopologyBuilder, Tuple
from stormpy.testing import Capture, LocalCluster
from stormpy.topology._errors import EmitError
from stormpy.topology.clock import SimulatedClock
from stormpy.worker import Worker, WorkerConfig

TIMEOUT = {"topology.message.timeout.secs": 10}
LOG: dict[str, list[Any]] = {}


def setup_function() -> None:
    LOG.clear()
    LOG.update(acked=[], failed=[], values=[], errors=[])


class Batches(Spout):
    """Emits ``batches`` batches of ``size`` records (ids ``(task, b, i)``) with emit_batch."""

    outputs = ["n"]

    def __init__(self, batches: int = 1, size: int = 2, ids: bool = True) -> None:
        self.batches = batches
        self.size = size
        self.ids = ids

    def open(self, conf: Mapping[str, Any], context: Any) -> None:
        self.task = context.task_id
        self.todo = list(range(self.batches))

    def next_tuple(self) -> None:
        if self.todo:
            b = self.todo.pop(0)
            ids = [(self.task, b, i) for i in range(self.size)]
            self.emit_batch([[b * 100 + i] for i in range(self.size)], ids if self.ids else None)

    def ack(self, msg_id: Any) -> None:
        LOG["acked"].append(msg_id)

    def fail(self, msg_id: Any) -> None:
        LOG["failed"].append(msg_id)


class Values(Bolt):
    """Per tuple: records its value and acks it."""

    def execute(self, tup: Tuple) -> None:
        LOG["values"].append(tup.values[0])
        self.ack(tup)


@pytest.mark.parametrize("ackers, drawn, root", ROOT_CASES)
def test_batch_roots_are_nonzero_62_bit_ids_of_the_home_acker_whatever_the_random_source_gives(
        ackers: int, drawn: int, root: int) -> None:
    """All ackers run in the spout's worker (spout task 4: home acker ``4 % ackers``); the
    batch's root is the drawn id moved to an id of that acker, and that acker alone holds it."""
    sink = Capture(ack=False)
    b = TopologyBuilder()
    b.set_spout("feeder", Batches)  # task 4 after three ackers
    b.set_bolt("sink", sink).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": ackers}),
                    clock=SimulatedClock())
    worker.open()
    for _ in range(3):
        worker.run_once()
    roots = [t.root for t in sink.tuples]
    assert len(roots) == 2 and roots[0] == roots[1]  # one tree for the batch
    check_home_roots(worker, roots, ackers, drawn, root)


def test_a_batch_whose_acker_is_in_another_worker_is_initialised_there_and_completes() -> None:
    """Two workers, one acker: the spout task in the worker without it sends the batch's init
    over the wire; every batch of both spout tasks completes, nothing is rejected."""
    b = TopologyBuilder()
    b.set_spout("spout", Batches, 2, kwargs={"batches": 5, "size": 3})
    b.set_bolt("sink", Values, 2).shuffle_grouping("spout")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", {**TIMEOUT, "topology.acker.executors": 1},
                                b.create_topology(), workers=2)
        cluster.wait_for(lambda: len(LOG["acked"]) == 30, 10, "30 ids acked")
        cluster.wait_until_quiet()
        workers = cluster.workers_of("t")
        ackers_here = [sum(1 for r in w.tasks.values() if r.component_id == "__acker")
                       for w in workers]
        spouts_here = [sum(1 for r in w.tasks.values() if r.component_id == "spout")
                       for w in workers]
        rejected = [w.rejected for w in workers]
        pending = [r.n_pending for w in workers for r in w.tasks.values()
                   if r.component_id == "spout"]
    assert sorted(ackers_here) == [0, 1] and spouts_here == [1, 1]  # one spout has no acker
    assert rejected == [{}, {}] and LOG["failed"] == [] and pending == [0, 0]
    assert sorted(LOG["values"]) == sorted(b * 100 + i for _ in range(2) for b in range(5)
                                           for i in range(3))


@pytest.mark.parametrize("acking", [True, False], ids=["tracked", "untracked"])
def test_a_task_that_gets_one_tuple_of_a_batch_gets_it_at_once(acking: bool) -> None:
    """Three records over two tuple bolts (shuffle): one task gets a single tuple; every
    value arrives exactly once."""
    b = TopologyBuilder()
    b.set_spout("spout", Batches, kwargs={"batches": 3, "size": 3})
    b.set_bolt("sink", Values, 2).shuffle_grouping("spout")
    conf = {**TIMEOUT, "topology.acker.executors": 1 if acking else 0}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        cluster.wait_for(lambda: len(LOG["values"]) == 9, 10, "9 values delivered")
        cluster.wait_for(lambda: len(LOG["acked"]) == 9, 10, "9 ids acked")
        cluster.wait_until_quiet()
    assert sorted(LOG["values"]) == [b * 100 + i for b in range(3) for i in range(3)]
    assert LOG["failed"] == []


def test_with_debug_every_record_of_a_batch_is_logged_with_its_targets(
        caplog: pytest.LogCaptureFixture) -> None:
    b = TopologyBuilder()
    b.set_spout("spout", Batches, kwargs={"batches": 1, "size": 2})
    b.set_bolt("sink", Values).shuffle_grouping("spout")
    with caplog.at_level(logging.INFO, logger="stormpy.worker"), \
            LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", {**TIMEOUT, "topology.debug": True},
                                         b.create_topology())
        cluster.wait_for(lambda: len(LOG["acked"]) == 2, 10, "2 ids acked")
        spout = next(r.task_id for r in worker.tasks.values() if r.component_id == "spout")
        sink = next(r.task_id for r in worker.tasks.values() if r.component_id == "sink")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("emitted spout")]
    assert lines == [f"emitted spout:{spout} default [0] -> [{sink}]",
                     f"emitted spout:{spout} default [1] -> [{sink}]"]


class Bad(Spout):
    """Emits the bad batch named by ``kind`` once; records the error."""

    outputs = [Stream(["n"]), Stream(["n"], name="direct", direct=True)]

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.done = False

    def next_tuple(self) -> None:
        if self.done:
            return
        self.done = True
        calls: dict[str, Any] = {
            "direct": lambda: self.emit_batch([[1]], ["a"], "direct"),
            "undeclared": lambda: self.emit_batch([[1]], ["a"], "nowhere"),
            "value": lambda: self.emit_batch([[1], [object()]], ["a", "b"]),
            "ids": lambda: self.emit_batch([[1]], "a"),
            "count": lambda: self.emit_batch([[1], [2]], ["a"]),
        }
        try:
            calls[self.kind]()
        except EmitError as exc:
            LOG["errors"].append(str(exc))


@pytest.mark.parametrize("kind, words", [
    ("direct", ["'spout'", "stream 'direct' is direct; use emit_direct"]),
    ("undeclared", ["'spout'", "undeclared stream 'nowhere'"]),
    ("value", ["'spout'", "'default'", "object"]),
    ("ids", ["'spout'", "'default'", "emit_batch takes a list of message ids (one per values), got str"]),
    ("count", ["'spout'", "'default'", "emit_batch got 1 message ids for 2 tuples"]),
])
def test_a_bad_batch_gets_an_error_naming_component_stream_and_problem(
        kind: str, words: list[str]) -> None:
    b = TopologyBuilder()
    b.set_spout("spout", Bad, kwargs={"kind": kind})
    b.set_bolt("sink", Values).shuffle_grouping("spout")
    b.set_bolt("direct-sink", Values).direct_grouping("spout", "direct")
    with LocalCluster(simulated_time=True) as cluster:
        worker = cluster.submit_topology("t", TIMEOUT, b.create_topology())
        cluster.wait_for(lambda: len(LOG["errors"]) == 1, 10, "the error")
        cluster.wait_until_quiet()
        assert worker.failure is None
    (error,) = LOG["errors"]
    for w in words:
        assert w in error, (w, error)
    assert LOG["values"] == []  # nothing of a bad batch was sent


def test_a_spout_round_goes_on_while_batches_are_emitted_and_reports_their_records() -> None:
    """``run_round`` calls ``next_tuple`` again after each call that emitted (a batch of the
    same size as the last one too) and returns the records emitted; the round ends at the
    first call that emits nothing."""
    b = TopologyBuilder()
    b.set_spout("a-spout", Batches, kwargs={"batches": 5, "size": 3})
    b.set_bolt("sink", Capture(ack=False)).shuffle_grouping("a-spout")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    worker.open()
    task = next(r for r in worker.tasks.values() if r.component_id == "a-spout")
    assert task.run_round() == 15 and task.n_pending == 15
    assert task.instance.todo == [] and task.run_round() == 0


def test_with_two_local_ackers_a_root_of_home_acker_0_is_moved_to_it() -> None:
    """Two ackers in the spout's worker, spout task 4 (after a sink at 3): home acker 0; a
    drawn id of acker 1 is moved down to acker 0's."""
    sink = Capture(ack=False)
    b = TopologyBuilder()
    b.set_spout("feeder", Batches)
    b.set_bolt("a-sink", sink).shuffle_grouping("feeder")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 2}),
                    clock=SimulatedClock())
    worker.open()
    task = next(r for r in worker.tasks.values() if r.component_id == "feeder")
    assert task.task_id == 4 and task.roots.home == 0
    assert task.roots.pin(5) == 4
    for _ in range(3):
        worker.run_once()
    (root, again) = [t.root for t in sink.tuples]
    assert root == again and root % 2 == 0
    assert [len(c.ledger) for c in worker.dispatch.acker_cores] == [1, 0]


def test_topology_debug_in_one_component_s_config_turns_on_its_emit_log_only() -> None:
    """``topology.debug`` in a component's own config turns its emit log on, not the others'."""
    class Loud(Bolt):
        outputs = ["n"]
        component_config = {"topology.debug": True}

        def execute(self, tup: Tuple) -> None:
            self.emit([tup.values[0]], tup)
            self.ack(tup)

    b = TopologyBuilder()
    b.set_spout("spout", Batches)
    b.set_bolt("loud", Loud).shuffle_grouping("spout")
    b.set_bolt("sink", Values).shuffle_grouping("loud")
    worker = Worker(WorkerConfig("t", b.create_topology(), {"topology.acker.executors": 1}),
                    clock=SimulatedClock())
    debug = {r.component_id: r.debug for r in worker.tasks.values()}
    assert debug["loud"] is True and debug["spout"] is False and debug["sink"] is False
