"""A worker never dies on what arrives on its port: invalid frames and tuples are dropped at the
transport boundary and counted (``worker/inbound.py``), the acker core refuses malformed values
without raising, and valid input keeps flowing. Includes a hypothesis fuzz of the frame decoder."""

from __future__ import annotations

from typing import Any

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transport_fakes import half_worker

from stormpy.acker.core import AckerCore
from stormpy.testing import Capture, FeederSpout
from stormpy.worker import Worker

ACKER_CONF = {"topology.acker.executors": 1}


def pack(*tuples: Any) -> bytes:
    return msgpack.packb(list(tuples), use_bin_type=True)


def worker_with_capture() -> tuple[Worker, Any, dict[str, list[int]], Capture]:
    feeder, capture = FeederSpout(["v", "meta"]), Capture()
    worker, transport, tasks = half_worker(feeder, capture, dict(ACKER_CONF))
    return worker, transport, tasks, capture


def test_invalid_frames_and_tuples_are_dropped_counted_and_the_rest_delivered() -> None:
    worker, transport, tasks, capture = worker_with_capture()
    f, sink, acker = tasks["f"][0], tasks["sink"][0], tasks["__acker"][0]
    good = [sink, "default", f, 0, 0, None, ["ok", 1]]
    transport.inbox += [
        b"\xc1 not msgpack",
        msgpack.packb({"a": 1}),
        pack([sink, "default", f, 0, ["ok", 1]]),                 # 5 items
        pack([999, "default", f, 0, 0, None, ["x", 1]]),          # unknown destination task
        pack([sink, "nope", f, 0, 0, None, ["x", 1]]),            # unknown stream
        pack([sink, "default", sink, 0, 0, None, ["x", 1]]),      # a stream sink does not emit
        pack([sink, "default", f, 0, 0, None, ["x"]]),            # wrong number of values
        pack([sink, "default", f, "r", 0, None, ["x", 1]]),       # root not an int
        pack([sink, "default", f, 0, 0, {"a": "b"}, ["x", 1]]),   # anchors not int -> int
        pack([[sink], "default", f, 0, 0, None, ["x", 1]]),       # unhashable destination
        pack([acker, "__ack_ack", -1, 0, 0, None, [1, 2, 3]]),    # odd pairs
        pack([acker, "__ack_ack", -1, 0, 0, None, ["a", "b"]]),   # not ints (the core refuses)
        pack([acker, "__ack_init", f, 0, 0, None, [1, 2]]),       # init without spout task
        pack([acker, "__ack_init", f, 0, 0, None, [1, 2, 424242]]),  # no such spout task
        pack([acker, "__ack_fail", f, 0, 0, None, []]),
        pack([f, "__ack_ack", acker, 0, 0, None, ["root"]]),      # reply with a str root
        pack([f, "default", f, 0, 0, None, [1, 2]]),              # user stream to a spout
        pack(good, [sink, "default", f, 0, 0, None, None], good),  # the good ones of a frame pass
    ]
    for _ in range(3):
        worker.run_once()
    assert worker.failure is None
    assert capture.values == [["ok", 1], ["ok", 1]]
    rejected = worker.rejected
    assert rejected["undecodable frame"] == 2
    assert rejected["unknown destination task"] == 1
    assert rejected["unexpected stream"] == 3
    assert rejected["wrong values"] == 6
    assert rejected["bad tuple ids"] == 2
    assert rejected["malformed tuple"] == 1
    assert rejected["not a wire tuple"] == 1
    core = worker.dispatch.acker_cores[0]
    assert core is not None and core.rejected == 2


def test_the_acker_core_refuses_malformed_values_without_raising() -> None:
    replies: list[tuple[int, str, list[int]]] = []
    core = AckerCore(lambda task, stream, values: replies.append((task, stream, values)))
    core.spout_tasks = frozenset({1})
    for stream, values in [("__ack_ack", [1]), ("__ack_ack", [1, "x"]), ("__ack_ack", "12"),
                           ("__ack_init", [5]), ("__ack_init", [5, 5, 9]), ("__ack_init", [5, 5, None]),
                           ("__ack_fail", []), ("__ack_fail", [1, 2]), ("__ack_reset_timeout", [[1]]),
                           ("__ack_fail", [1.5])]:
        core.handle(stream, values)  # type: ignore[arg-type]
    assert core.rejected == 10 and replies == [] and len(core.ledger) == 0
    core.handle("__ack_init", [7, 3, 1])
    core.handle("__ack_ack", [7, 3])
    assert replies == [(1, "__ack_ack", [7])]


wire_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats() | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.integers(-3, 3) | st.text(max_size=3),
                                                               inner, max_size=3),
    max_leaves=12)
streams = st.sampled_from(["default", "__ack_ack", "__ack_init", "__ack_fail", "__ack_reset_timeout",
                           "__tick", "nope"]) | wire_values
tasks_ = st.integers(-2, 8) | wire_values
wire_tuples = st.lists(tasks_, min_size=7, max_size=7).flatmap(
    lambda t: st.tuples(tasks_, streams, tasks_, st.integers(-2**63, 2**64 - 1) | wire_values,
                        st.integers(0, 2**64 - 1) | wire_values,
                        st.none() | st.dictionaries(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1),
                                                    max_size=2) | wire_values,
                        st.lists(wire_values, max_size=4) | wire_values).map(list))
frames = (st.binary(max_size=64)
          | st.lists(wire_tuples, max_size=5).map(lambda b: msgpack.packb(b, use_bin_type=True))
          | wire_values.map(lambda v: msgpack.packb(v, use_bin_type=True)))

_FUZZED: list[tuple[Worker, Any, dict[str, list[int]], Capture]] = []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(frames, min_size=1, max_size=4))
def test_no_frame_crashes_the_worker(batch: list[bytes]) -> None:
    if not _FUZZED:
        _FUZZED.append(worker_with_capture())
    worker, transport, tasks, capture = _FUZZED[0]
    transport.inbox += batch
    for _ in range(2):
        worker.run_once()  # raises WorkerError if any component (the acker included) failed
    assert worker.failure is None
    sink, f = tasks["sink"][0], tasks["f"][0]
    before = len(capture.values)
    transport.inbox.append(pack([sink, "default", f, 0, 0, None, ["still", "alive"]]))
    worker.run_once()
    assert capture.values[before:] == [["still", "alive"]]
