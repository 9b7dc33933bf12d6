"""The transports a worker sends and receives frames through: none (one worker holds every task),
in-process (LocalCluster's several workers) and ZeroMQ (cluster workers; real sockets on
loopback). What each promises: frames arrive in order and whole, a full peer refuses a frame
instead of dropping it, ``wake`` cuts a ``wait`` short from another thread, ``close`` releases
what the transport holds."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import zmq

from stormpy.messaging.inproc import InprocHub
from stormpy.messaging.transport import NoTransport
from stormpy.messaging.zmq_transport import (
    DEFAULT_TRANSFER_BUFFER_SIZE,
    TRANSFER_BUFFER_KEY,
    ZmqTransport,
    tcp_endpoint,
)
from stormpy.testing import wait_for

LOOPBACK = "127.0.0.1"


def later(action: Any) -> threading.Thread:
    """``action`` on another thread, started now (joined by the caller)."""
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    return thread


# --- no transport -------------------------------------------------------------------------------

def test_a_worker_without_transport_has_no_peers_and_nothing_to_send_or_receive() -> None:
    none = NoTransport()
    none.set_peers({})
    with pytest.raises(ValueError) as refused:
        none.set_peers({"w2": "h:1"})
    assert str(refused.value) == "a worker without transport cannot have peers"
    with pytest.raises(RuntimeError) as no_send:
        none.send("w2", b"x")
    assert str(no_send.value) == "no transport to send to peer 'w2'"
    assert none.receive(10) == []
    assert none.sender(b"frame") == ""


def test_a_wake_ends_one_wait_of_a_worker_without_transport() -> None:
    none = NoTransport()
    waiter = later(lambda: none.wait(60))
    wait_for(lambda: waiter.is_alive(), 10, "the wait to start")
    none.wake()
    waiter.join(30)
    assert not waiter.is_alive()
    # the wake was used up: it does not end the next wait too
    assert not none._event.is_set()
    none.close()
    none.wait(60)  # closed: returns at once


# --- in-process -----------------------------------------------------------------------------------

def test_in_process_frames_arrive_in_order_at_most_max_frames_at_a_time() -> None:
    hub = InprocHub()
    a, b = hub.transport("a"), hub.transport("b")
    a.set_peers({"b": ""})
    assert all(a.send("b", bytes([i])) for i in range(5))
    assert b.receive(2) == [b"\x00", b"\x01"]
    assert b.receive(10) == [b"\x02", b"\x03", b"\x04"]
    assert b.receive(10) == [] and a.receive(10) == []
    assert b.sender(b"\x00") == ""


def test_an_in_process_peer_at_its_high_water_mark_refuses_the_frame_and_keeps_the_rest() -> None:
    hub = InprocHub()
    assert hub.high_water_mark == 1000
    a, b = hub.transport("a"), hub.transport("b")
    assert all(a.send("b", b"x") for _ in range(1000))
    assert a.send("b", b"y") is False
    assert len(b.receive(2000)) == 1000
    small = InprocHub(high_water_mark=2)
    c, d = small.transport("c"), small.transport("d")
    assert [c.send("d", b"1"), c.send("d", b"2"), c.send("d", b"3")] == [True, True, False]
    assert d.receive(5) == [b"1", b"2"]


def test_in_process_keys_are_unique_and_an_unknown_one_is_named() -> None:
    hub = InprocHub()
    a = hub.transport("a")
    assert a.key == "a"
    with pytest.raises(ValueError) as taken:
        hub.transport("a")
    assert str(taken.value) == "peer key 'a' is already in use"
    with pytest.raises(KeyError) as unknown:
        a.send("nobody", b"x")
    assert unknown.value.args == ("no in-process worker 'nobody'",)
    assert unknown.value.__suppress_context__


def test_an_in_process_frame_or_wake_ends_a_wait_and_a_pending_frame_skips_it() -> None:
    hub = InprocHub()
    a, b = hub.transport("a"), hub.transport("b")
    waiter = later(lambda: b.wait(60))
    wait_for(lambda: waiter.is_alive(), 10, "the wait to start")
    a.send("b", b"x")
    waiter.join(30)
    assert not waiter.is_alive()
    b.wait(60)  # a frame is waiting: no wait at all
    assert b.receive(5) == [b"x"]
    assert not b._event.is_set()  # the wait used up the frame's signal
    waiter = later(lambda: b.wait(60))
    wait_for(lambda: waiter.is_alive(), 10, "the wait to start")
    b.wake()
    waiter.join(30)
    assert not waiter.is_alive()
    b.close()
    waiter = later(lambda: b.wait(60))
    waiter.join(30)
    assert not waiter.is_alive()


def test_an_in_process_wait_with_nothing_coming_ends_at_its_timeout() -> None:
    b = InprocHub().transport("b")
    waiter = later(lambda: b.wait(0.01))
    waiter.join(30)
    assert not waiter.is_alive()


# --- ZeroMQ ------------------------------------------------------------------------------------

@pytest.fixture
def transports() -> Iterator[list[ZmqTransport]]:
    """Transports a test opens; closed after it."""
    opened: list[ZmqTransport] = []
    yield opened
    for transport in opened:
        transport.close()


def zmq_transport(opened: list[ZmqTransport], *args: Any, **kwargs: Any) -> ZmqTransport:
    transport = ZmqTransport(LOOPBACK, *args, **kwargs)
    opened.append(transport)
    return transport


def receive_all(transport: ZmqTransport, count: int) -> list[bytes]:
    got: list[bytes] = []

    def more() -> bool:
        transport.wait(0.05)
        got.extend(bytes(f) for f in transport.receive(count - len(got)))
        return len(got) >= count

    wait_for(more, 30, f"{count} frame(s)")
    return got


def test_peer_addresses_become_tcp_endpoints_and_bad_ones_are_named() -> None:
    assert tcp_endpoint("host-1:6700") == "tcp://host-1:6700"
    assert tcp_endpoint("tcp://10.0.0.1:1") == "tcp://10.0.0.1:1"
    assert tcp_endpoint("::1:6700") == "tcp://::1:6700"
    for bad in ("host", ":6700", "host:", "host:67x0", "host:-1"):
        with pytest.raises(ValueError) as refused:
            tcp_endpoint(bad)
        assert str(refused.value) == f"peer address {bad!r} is not of the form host:port"


def test_the_high_water_mark_comes_from_the_config_or_the_argument(transports: list[ZmqTransport]) -> None:
    assert DEFAULT_TRANSFER_BUFFER_SIZE == 1000 and TRANSFER_BUFFER_KEY == "topology.transfer.buffer.size"
    assert zmq_transport(transports, 0).hwm == 1000
    assert zmq_transport(transports, 0, {TRANSFER_BUFFER_KEY: None}).hwm == 1000
    configured = zmq_transport(transports, 0, {TRANSFER_BUFFER_KEY: 7})
    assert configured.hwm == 7 and configured._pull.getsockopt(zmq.RCVHWM) == 7
    assert configured._pull.getsockopt(zmq.LINGER) == 0
    assert zmq_transport(transports, 0, {TRANSFER_BUFFER_KEY: 7}, hwm=3).hwm == 3
    assert zmq_transport(transports, 0, hwm=1).hwm == 1
    for bad in (0, -5):
        with pytest.raises(ValueError) as refused:
            ZmqTransport(LOOPBACK, 0, hwm=bad)
        assert str(refused.value) == f"topology.transfer.buffer.size must be at least 1, got {bad}"


def test_a_curve_transport_refuses_a_context_it_does_not_own() -> None:
    from stormpy.messaging.curve import CurveKeyPair

    context: zmq.Context[Any] = zmq.Context()
    try:
        with pytest.raises(ValueError) as refused:
            ZmqTransport(LOOPBACK, 0, curve=CurveKeyPair.generate(), context=context)
        assert str(refused.value) == ("a CURVE transport owns its ZeroMQ context (its ZAP handler); "
                                      "do not pass one")
    finally:
        context.term()


def test_frames_go_to_the_peer_in_order_and_know_where_they_came_from(transports: list[ZmqTransport]) -> None:
    a, b = zmq_transport(transports, 0), zmq_transport(transports, 0)
    assert a.port > 0 and a.port != b.port and a.host == LOOPBACK
    a.set_peers({"b": f"{LOOPBACK}:{b.port}"})
    assert a.peers == {"b": f"tcp://{LOOPBACK}:{b.port}"}
    assert all(a.send("b", bytes([i])) for i in range(5))
    frames = []
    wait_for(lambda: (b.wait(0.05), frames.extend(b.receive(10)))[1] is None and len(frames) == 5,
             30, "five frames")
    assert [bytes(f) for f in frames] == [bytes([i]) for i in range(5)]
    assert all(isinstance(f, zmq.Frame) for f in frames)
    assert b.sender(frames[0]) == LOOPBACK
    assert b.sender(b"plain bytes") == ""
    assert b.sender(zmq.Frame(b"never received")) == ""


def test_receive_takes_at_most_max_frames_and_never_blocks(transports: list[ZmqTransport]) -> None:
    a, b = zmq_transport(transports, 0), zmq_transport(transports, 0)
    assert b.receive(10) == []
    a.set_peers({"b": f"{LOOPBACK}:{b.port}"})
    for i in range(4):
        a.send("b", bytes([i]))
    wait_for(lambda: b._pull.poll(0), 30, "a frame to arrive")
    first = receive_all(b, 1)
    assert len(first) == 1
    assert first + receive_all(b, 3) == [bytes([i]) for i in range(4)]
    assert b.receive(10) == []


def test_a_transport_on_a_given_port_binds_it_and_a_taken_port_is_an_os_error(
        transports: list[ZmqTransport]) -> None:
    first = zmq_transport(transports, 0)
    again = zmq_transport(transports, 0)
    port = again.port
    again.close()
    bound = zmq_transport(transports, port)
    assert bound.port == port
    with pytest.raises(OSError) as taken:
        ZmqTransport(LOOPBACK, first.port)
    assert str(taken.value).startswith(f"cannot bind the worker transport on {LOOPBACK}:{first.port}: ")
    assert isinstance(taken.value.__cause__, zmq.ZMQError)


def test_a_failed_bind_ends_the_context_the_transport_made_not_a_given_one(
        transports: list[ZmqTransport], monkeypatch: pytest.MonkeyPatch) -> None:
    first = zmq_transport(transports, 0)
    made: list[zmq.Context[Any]] = []
    real = zmq.Context

    def tracked(*args: Any, **kwargs: Any) -> zmq.Context[Any]:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(zmq, "Context", tracked)
    with pytest.raises(OSError):
        ZmqTransport(LOOPBACK, first.port)
    assert len(made) == 1 and made[0].closed
    monkeypatch.undo()
    given: zmq.Context[Any] = zmq.Context()
    with pytest.raises(OSError):
        ZmqTransport(LOOPBACK, first.port, context=given)
    assert not given.closed
    given.term()


def test_a_full_peer_queue_refuses_frames_and_keeps_them_until_the_peer_comes(
        transports: list[ZmqTransport]) -> None:
    spare = zmq_transport(transports, 0)
    port = spare.port
    spare.close()  # nobody listens on port now
    a = zmq_transport(transports, 0, hwm=2)
    a.set_peers({"b": f"{LOOPBACK}:{port}"})
    assert [a.send("b", b"1"), a.send("b", b"2"), a.send("b", b"3")] == [True, True, False]
    a.set_peers({"b": f"{LOOPBACK}:{port}"})  # unchanged: the same socket, the same queue
    assert a.send("b", b"3") is False
    b = zmq_transport(transports, port, hwm=2)
    assert receive_all(b, 2) == [b"1", b"2"]
    wait_for(lambda: a.send("b", b"3"), 30, "the queue to take a frame again")
    assert receive_all(b, 1) == [b"3"]


def test_a_peer_moved_or_removed_is_disconnected_and_frames_for_it_are_discarded_and_counted(
        transports: list[ZmqTransport], caplog: pytest.LogCaptureFixture) -> None:
    a, b, c = (zmq_transport(transports, 0) for _ in range(3))
    a.set_peers({"p": f"{LOOPBACK}:{b.port}"})
    a.send("p", b"to b")
    assert receive_all(b, 1) == [b"to b"]
    a.set_peers({"p": f"{LOOPBACK}:{c.port}"})
    assert a.peers == {"p": f"tcp://{LOOPBACK}:{c.port}"}
    a.send("p", b"to c")
    assert receive_all(c, 1) == [b"to c"]
    a.set_peers({})
    assert a.peers == {}
    caplog.set_level(logging.WARNING, "stormpy.messaging.zmq_transport")
    assert all(a.send("p", b"lost") for _ in range(2001))
    assert a.dropped_frames == 2001
    warned = [r.getMessage() for r in caplog.records if r.name == "stormpy.messaging.zmq_transport"]
    assert warned == [f"transport: discarded {n} frame(s) for unknown peer p (moved away?)"
                      for n in (1, 1000, 2000)]


def test_new_peers_are_connected_beside_the_ones_kept(transports: list[ZmqTransport]) -> None:
    a, b, c = (zmq_transport(transports, 0) for _ in range(3))
    a.set_peers({"b": f"{LOOPBACK}:{b.port}"})
    a.set_peers({"b": f"{LOOPBACK}:{b.port}", "c": f"{LOOPBACK}:{c.port}", "d": f"tcp://{LOOPBACK}:{c.port}"})
    assert a.peers == {"b": f"tcp://{LOOPBACK}:{b.port}", "c": f"tcp://{LOOPBACK}:{c.port}",
                       "d": f"tcp://{LOOPBACK}:{c.port}"}
    assert a.send("b", b"to b") and a.send("c", b"to c") and a.send("d", b"to d")
    assert a.dropped_frames == 0
    assert receive_all(b, 1) == [b"to b"]
    assert sorted(receive_all(c, 2)) == [b"to c", b"to d"]


def test_curve_transports_of_one_topology_exchange_frames(transports: list[ZmqTransport]) -> None:
    from stormpy.messaging.curve import CurveKeyPair

    keys = CurveKeyPair.generate()
    a, b = zmq_transport(transports, 0, curve=keys), zmq_transport(transports, 0, curve=keys)
    assert a.curve == keys
    a.set_peers({"b": f"{LOOPBACK}:{b.port}"})
    b.set_peers({"a": f"{LOOPBACK}:{a.port}"})
    a.send("b", b"sealed to b")
    b.send("a", b"sealed to a")
    assert receive_all(b, 1) == [b"sealed to b"]
    assert receive_all(a, 1) == [b"sealed to a"]


def test_a_given_context_holds_the_transports_sockets(transports: list[ZmqTransport]) -> None:
    context: zmq.Context[Any] = zmq.Context()
    a = ZmqTransport(LOOPBACK, 0, context=context)
    context.destroy(linger=0)  # closes every socket made in it
    with pytest.raises(zmq.ZMQError):
        a.receive(1)
    a.close()


def test_a_wake_from_another_thread_or_a_frame_ends_a_wait(transports: list[ZmqTransport]) -> None:
    a, b = zmq_transport(transports, 0), zmq_transport(transports, 0)
    waiter = later(lambda: b.wait(60))
    wait_for(lambda: waiter.is_alive(), 10, "the wait to start")
    b.wake()
    waiter.join(30)
    assert not waiter.is_alive()
    assert b._poller.poll(0) == []  # the wake-up was used up
    a.set_peers({"b": f"{LOOPBACK}:{b.port}"})
    waiter = later(lambda: b.wait(60))
    wait_for(lambda: waiter.is_alive(), 10, "the wait to start")
    a.send("b", b"x")
    waiter.join(30)
    assert not waiter.is_alive()


def test_many_wakes_never_block_and_one_wait_uses_them_all(transports: list[ZmqTransport]) -> None:
    b = zmq_transport(transports, 0)
    for _ in range(70_000):  # more than a pipe holds
        b.wake()
    b.wait(60)
    assert b._poller.poll(0) == []


def test_a_wait_is_given_to_zeromq_in_whole_milliseconds_rounded_up(
        transports: list[ZmqTransport], monkeypatch: pytest.MonkeyPatch) -> None:
    b = zmq_transport(transports, 0)
    asked: list[int] = []
    real = b._poller.poll
    monkeypatch.setattr(b._poller, "poll", lambda ms: (asked.append(ms), real(0))[1])
    for timeout in (0.0001, 0.25, 1.5, 0, -1):
        b.wait(timeout)
    assert asked == [1, 250, 1500, 0, 0]


def test_close_releases_every_socket_and_descriptor_and_may_be_repeated() -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = open_fds()
    a = ZmqTransport(LOOPBACK, 0)
    b = ZmqTransport(LOOPBACK, 0)
    a.set_peers({"b": f"{LOOPBACK}:{b.port}"})
    a.send("b", b"x")
    a.close()
    a.close()
    b.close()
    assert a.peers == {} and a._ctx.closed
    a.wake()  # after close: nothing to wake, no error
    assert open_fds() == before


def test_close_leaves_a_given_context_to_its_owner() -> None:
    context: zmq.Context[Any] = zmq.Context()
    a = ZmqTransport(LOOPBACK, 0, context=context)
    a.set_peers({"x": f"{LOOPBACK}:1"})
    a.close()
    assert not context.closed
    context.term()  # returns: the transport closed every socket it made in it
