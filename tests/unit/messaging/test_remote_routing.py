"""Tuples for tasks of other workers are batched, encoded and decoded losslessly."""

from __future__ import annotations

from transport_fakes import ScriptedTransport, half_worker, two_worker_topology

from stormpy.messaging.codec import decode_frame
from stormpy.testing import Capture, FeederSpout
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.inbound import wire_tuples


def test_local_or_shuffle_prefers_local_tasks_and_remote_tuples_are_encoded() -> None:
    feeder, capture = FeederSpout(["v", "meta"]), Capture()
    worker, transport, tasks = half_worker(feeder, capture, {"topology.acker.executors": 1})
    feeder.feed(["x", {"nested": [1, 2.5, None, b"\x00"]}], msg_id=1)
    for _ in range(5):
        worker.run_once()
    assert capture.values == [["x", {"nested": [1, 2.5, None, b"\x00"]}]]
    decoded = [t for _peer, frame in transport.sent for t in wire_tuples(decode_frame(frame))]
    # the remote "all" task got the tuple, anchored to one root with a nonzero edge
    (dest, stream, src, root, edge, anchors, values), = decoded
    assert dest == tasks["all"][1] and stream == "default" and src == tasks["f"][0]
    assert values == ["x", {"nested": [1, 2.5, None, b"\x00"]}]
    assert root != 0 and edge != 0 and anchors is None  # in one tree: root and edge, no map
    assert feeder.acked == []  # the remote task has not acked yet


def test_remote_ack_returning_through_the_transport_completes_the_root() -> None:
    feeder, capture = FeederSpout(["v", "meta"]), Capture()
    spec = two_worker_topology(feeder, capture)
    probe = Worker(WorkerConfig("t", spec, {"topology.acker.executors": 1}, local_tasks=[]))
    tasks = probe.layout.component_tasks
    all_tasks = set(probe.layout.task_component)
    here = [tasks["f"][0], tasks["sink"][0], tasks["all"][0], tasks["__acker"][0]]
    there = sorted(all_tasks - set(here))
    ta, tb = ScriptedTransport(), ScriptedTransport()
    conf = {"topology.acker.executors": 1}
    wa = Worker(WorkerConfig("t", spec, conf, local_tasks=here, task_peers={t: "b" for t in there}),
                transport=ta)
    wb = Worker(WorkerConfig("t", spec, conf, local_tasks=there, task_peers={t: "a" for t in here}),
                transport=tb)
    wa.open()
    wb.open()
    feeder.feed(["y", 1], msg_id="m")
    for _ in range(10):
        wa.run_once()
        tb.inbox.extend(f for _p, f in ta.sent)
        ta.sent.clear()
        wb.run_once()
        ta.inbox.extend(f for _p, f in tb.sent)
        tb.sent.clear()
    assert feeder.acked == ["m"]


def test_refused_frames_are_kept_and_spouts_pause() -> None:
    feeder, capture = FeederSpout(["v", "meta"]), Capture()
    transport = ScriptedTransport()
    transport.accept = False
    conf = {"topology.spout.max.batch.size": 1}  # backpressure is checked between spout rounds
    worker, transport, _tasks = half_worker(feeder, capture, conf, transport)
    for i in range(3):
        feeder.feed([i, None], msg_id=i)
    for _ in range(5):
        worker.run_once()
    assert transport.sent == [] and worker.stats()["f"]["emitted"] == 1  # paused after 1st
    transport.accept = True
    for _ in range(10):
        worker.run_once()
    frames = [t for _p, f in transport.sent for t in wire_tuples(decode_frame(f))]
    assert [v[0] for *_x, v in frames] == [0, 1, 2]  # nothing lost, order kept


def test_malformed_frames_are_dropped_and_the_worker_keeps_running() -> None:
    import msgpack

    feeder, capture = FeederSpout(["v", "meta"]), Capture()
    worker, transport, tasks = half_worker(feeder, capture)
    sink = tasks["sink"][0]
    good = [sink, "default", tasks["f"][0], 0, 0, None, ["ok", 1]]
    transport.inbox.extend([b"\xc1garbage", msgpack.packb({"not": "a list"}),
                            msgpack.packb([[1, 2]]), msgpack.packb([good])])
    for _ in range(3):
        worker.run_once()
    assert capture.values == [["ok", 1]]
    assert worker.failure is None


def test_spout_roots_are_tracked_by_an_acker_in_the_spouts_own_worker() -> None:
    feeder, capture = FeederSpout(["v", "meta"]), Capture()
    conf = {"topology.acker.executors": 3}
    worker, transport, tasks = half_worker(feeder, capture, conf)
    for i in range(50):
        feeder.feed([i, None], msg_id=i)
    for _ in range(10):
        worker.run_once()
    local_acker = worker.dispatch.acker_cores[0]
    assert local_acker is not None and worker.dispatch.acker_cores[1:] == [None, None]
    # every init went to the local acker: no acker message crossed to the peer worker
    sent = [t for _p, f in transport.sent for t in wire_tuples(decode_frame(f))]
    assert {stream for _d, stream, *_rest in sent} == {"default"}
    assert len(local_acker.ledger) == 50  # pending: the remote "all" tasks have not acked
