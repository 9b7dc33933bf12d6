"""ZmqTransport on 127.0.0.1: frames cross, a full peer pushes back without loss, wake interrupts
wait, peers reconnect after a restart on the same port and move to new addresses."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from stormpy.messaging.zmq_transport import ZmqTransport, tcp_endpoint
from stormpy.testing import free_port, stays_unchanged, wait_for

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def transports() -> Iterator[Callable[..., ZmqTransport]]:
    made: list[ZmqTransport] = []

    def make(port: int = 0, **kwargs: object) -> ZmqTransport:
        t = ZmqTransport("127.0.0.1", port, **kwargs)  # type: ignore[arg-type]
        made.append(t)
        return t

    yield make
    for t in made:
        t.close()


def receive_all(t: ZmqTransport, n: int, deadline_secs: float = 20.0) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + deadline_secs
    while len(got) < n and time.monotonic() < deadline:
        t.wait(0.05)
        got.extend(bytes(f) for f in t.receive(64))
    return got


def send_until_taken(t: ZmqTransport, peer: str, frame: bytes, deadline_secs: float = 20.0) -> None:
    deadline = time.monotonic() + deadline_secs
    while not t.send(peer, frame):
        assert time.monotonic() < deadline, "peer never took the frame"
        time.sleep(0.01)


def test_two_transports_exchange_frames(transports: Callable[..., ZmqTransport]) -> None:
    a, b = transports(), transports()
    a.set_peers({"b": f"127.0.0.1:{b.port}"})
    b.set_peers({"a": f"127.0.0.1:{a.port}"})
    for i in range(100):
        send_until_taken(a, "b", b"a->b %d" % i)
        send_until_taken(b, "a", b"b->a %d" % i)
    assert receive_all(b, 100) == [b"a->b %d" % i for i in range(100)]
    assert receive_all(a, 100) == [b"b->a %d" % i for i in range(100)]


def test_full_peer_refuses_frames_and_loses_none(transports: Callable[..., ZmqTransport]) -> None:
    receiver = transports(hwm=4)
    sender = transports(hwm=4)
    sender.set_peers({"r": f"127.0.0.1:{receiver.port}"})
    frame_size = 256 * 1024
    frames = [bytes([i % 251]) * frame_size for i in range(300)]
    sent = 0
    deadline = time.monotonic() + 20
    while sent < len(frames) and time.monotonic() < deadline:  # the receiver never reads here
        if sender.send("r", frames[sent]):
            sent += 1
        else:
            break
    assert 0 < sent < len(frames), "the sender was never pushed back"
    assert not sender.send("r", frames[sent])  # still full while nobody reads
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < len(frames) and time.monotonic() < deadline:
        while sent < len(frames) and sender.send("r", frames[sent]):
            sent += 1
        receiver.wait(0.01)
        got.extend(bytes(f) for f in receiver.receive(64))
    assert len(got) == len(frames)
    assert got == frames


def blocked_in_poll(thread: threading.Thread) -> bool:
    """True when ``thread`` is inside ``ZmqTransport.wait``'s poll (the innermost Python frame is
    zmq's ``poll``, called from ``wait``)."""
    frame = sys._current_frames().get(thread.ident or -1)
    return (frame is not None and frame.f_code.co_name == "poll" and frame.f_back is not None
            and frame.f_back.f_code.co_name == "wait")


def test_wake_interrupts_wait(transports: Callable[..., ZmqTransport]) -> None:
    """Guarantee: ``wake()`` from another thread ends a ``wait()`` that is already blocked (not
    only one that starts after the wake)."""
    t = transports()
    t.wait(0)  # no wake-up pending
    done = threading.Event()

    def waiter() -> None:
        t.wait(600.0)
        done.set()

    thread = threading.Thread(target=waiter, daemon=True)
    thread.start()
    wait_for(lambda: blocked_in_poll(thread), 60, "the waiter to block in wait()'s poll")
    stays_unchanged(done.is_set, 0.2, "whether the waiter returned from wait(600) before wake()")
    t.wake()
    assert done.wait(60), "wake() did not interrupt wait()"
    thread.join(60)
    for _ in range(10000):  # many wakes never block the caller, even with nobody waiting
        t.wake()
    t.wait(0)  # drains them


def test_wake_after_close_is_harmless(transports: Callable[..., ZmqTransport]) -> None:
    t = transports()
    t.close()
    t.wake()
    t.close()


def test_peer_restarted_on_the_same_port_is_reached_again(
        transports: Callable[..., ZmqTransport]) -> None:
    port = free_port()
    sender = transports()
    first = transports(port)
    sender.set_peers({"p": f"127.0.0.1:{port}"})
    send_until_taken(sender, "p", b"one")
    assert receive_all(first, 1) == [b"one"]
    first.close()
    restarted = transports(port)
    sender.set_peers({"p": f"127.0.0.1:{port}"})  # unchanged map: the socket is kept
    send_until_taken(sender, "p", b"two")
    assert receive_all(restarted, 1) == [b"two"]


def test_set_peers_moves_and_removes_peers(transports: Callable[..., ZmqTransport]) -> None:
    sender, old, new = transports(), transports(), transports()
    sender.set_peers({"p": f"127.0.0.1:{old.port}"})
    send_until_taken(sender, "p", b"to old")
    assert receive_all(old, 1) == [b"to old"]
    sender.set_peers({"p": f"127.0.0.1:{new.port}"})
    assert sender.peers == {"p": f"tcp://127.0.0.1:{new.port}"}
    send_until_taken(sender, "p", b"to new")
    assert receive_all(new, 1) == [b"to new"]
    sender.set_peers({})
    assert sender.send("p", b"nowhere")  # discarded, counted, never blocks the worker
    assert sender.dropped_frames == 1
    assert old.receive(10) == []


def test_bind_conflict_is_an_oserror(transports: Callable[..., ZmqTransport]) -> None:
    t = transports()
    with pytest.raises(OSError, match=str(t.port)):
        ZmqTransport("127.0.0.1", t.port)


def test_tcp_endpoint() -> None:
    assert tcp_endpoint("h:1") == "tcp://h:1"
    assert tcp_endpoint("tcp://h:1") == "tcp://h:1"
    with pytest.raises(ValueError):
        tcp_endpoint("nohost")


def test_high_water_mark_comes_from_config(transports: Callable[..., ZmqTransport]) -> None:
    assert transports(conf={"topology.transfer.buffer.size": 7}).hwm == 7
    assert transports().hwm == 1000
    with pytest.raises(ValueError, match="topology.transfer.buffer.size"):
        ZmqTransport("127.0.0.1", 0, hwm=0)
